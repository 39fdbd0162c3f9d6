import { and, eq, inArray, isNull, sql } from 'drizzle-orm'
import { apiKeys, apiKeyUses, clients, employees } from '../../../db/schema'
import type { Executor, Tx } from '../../../db/client'
import { actsAsCompany, type Caller } from '../../access/caller'
import { checkDelegation } from '../../access/delegation'
import { issueKey } from '../../access/keys'
import { hashPassword } from '../../access/passwords'
import { endSessions } from '../../access/sessions'
import { conflict, forbidden, notFound, unprocessable } from '../../lib/errors'
import { pagination } from '../../lib/models'

type Row = typeof employees.$inferSelect

export const employeeDto = (e: Row) => ({
  id: e.id,
  email: e.email,
  name: e.name,
  permissions: e.permissions,
  client_ids: e.clientIds,
})

async function checkClients(tx: Tx, companyId: number, ids: number[] | undefined) {
  if (!ids?.length) return
  const found = await tx
    .select({ id: clients.id })
    .from(clients)
    .where(and(eq(clients.companyId, companyId), inArray(clients.id, ids), isNull(clients.deletedAt)))
  if (found.length !== ids.length) {
    const known = new Set(found.map((c) => c.id))
    throw unprocessable('UNKNOWN_CLIENT', 'Unknown client in client_ids', ids.filter((id) => !known.has(id)).map((id) => ({ field: 'client_ids', message: `unknown client ${id}` })))
  }
}

async function emailTaken(tx: Tx, companyId: number, email: string, exceptId?: number) {
  const [row] = await tx
    .select({ id: employees.id })
    .from(employees)
    .where(and(eq(employees.companyId, companyId), sql`lower(${employees.email}) = lower(${email})`, isNull(employees.deletedAt)))
  return row && row.id !== exceptId
}

export async function createEmployee(
  tx: Tx,
  caller: Caller,
  input: { email: string; name: string; permissions: string[]; client_ids?: number[]; password?: string },
) {
  checkDelegation(caller, { permissions: input.permissions, clientIds: input.client_ids ?? [] })
  await checkClients(tx, caller.companyId, input.client_ids)
  if (await emailTaken(tx, caller.companyId, input.email)) throw conflict('CONFLICT', 'An employee with this email exists')
  const passwordHash = input.password === undefined ? null : await hashPassword(input.password)
  const [row] = await tx
    .insert(employees)
    .values({
      companyId: caller.companyId,
      email: input.email.toLowerCase(),
      name: input.name,
      permissions: input.permissions,
      clientIds: input.client_ids ?? [],
      passwordHash,
    })
    .returning()
  return employeeDto(row)
}

export async function listEmployees(db: Executor, caller: Caller) {
  const rows = await db
    .select()
    .from(employees)
    .where(and(eq(employees.companyId, caller.companyId), isNull(employees.deletedAt)))
    .orderBy(employees.id)
  return rows.map(employeeDto)
}

/** A live employee of the caller's company; `lock` holds the row until the change made on it commits. */
export async function getEmployee(db: Executor, caller: Caller, id: number, lock = false) {
  const q = db
    .select()
    .from(employees)
    .where(and(eq(employees.id, id), eq(employees.companyId, caller.companyId), isNull(employees.deletedAt)))
  const [row] = lock ? await q.for('update') : await q
  if (!row) throw notFound('Employee')
  return row
}

/** A key for an employee, issued only by a caller that may act for that employee, within the company's key total. */
export async function issueEmployeeKey(tx: Tx, caller: Caller, id: number, name: string, maxLive: number) {
  checkDelegation(caller, { target: await getEmployee(tx, caller, id, true) })
  return issueKey(tx, caller.companyId, id, name, maxLive)
}

/** The company's live keys, without their values, oldest first, a page of them; `employee_id` null for a company key. */
export async function listKeys(db: Executor, caller: Caller, page: number, pageSize: number) {
  const live = and(eq(apiKeys.companyId, caller.companyId), isNull(apiKeys.revokedAt), isNull(employees.deletedAt))
  const [{ total }] = await db
    .select({ total: sql<number>`count(*)::int` })
    .from(apiKeys)
    .leftJoin(employees, eq(employees.id, apiKeys.employeeId))
    .where(live)
  const rows = await db
    .select({
      id: apiKeys.id,
      name: apiKeys.name,
      prefix: apiKeys.prefix,
      employeeId: apiKeys.employeeId,
      createdAt: apiKeys.createdAt,
      lastUsedAt: apiKeyUses.lastUsedAt,
    })
    .from(apiKeys)
    .leftJoin(employees, eq(employees.id, apiKeys.employeeId))
    .leftJoin(apiKeyUses, eq(apiKeyUses.apiKeyId, apiKeys.id))
    .where(live)
    .orderBy(apiKeys.id)
    .limit(pageSize)
    .offset((page - 1) * pageSize)
  const data = rows.map((r) => ({
    id: r.id,
    name: r.name,
    prefix: r.prefix,
    employee_id: r.employeeId,
    created_at: r.createdAt.toISOString(),
    last_used_at: r.lastUsedAt ? r.lastUsedAt.toISOString() : null,
  }))
  return { data, pagination: pagination(page, pageSize, Number(total)) }
}

export async function updateEmployee(
  tx: Tx,
  caller: Caller,
  id: number,
  input: { email?: string; name?: string; permissions?: string[]; client_ids?: number[]; password?: string },
) {
  checkDelegation(caller, { target: await getEmployee(tx, caller, id, true), permissions: input.permissions, clientIds: input.client_ids })
  await checkClients(tx, caller.companyId, input.client_ids)
  if (input.email && (await emailTaken(tx, caller.companyId, input.email, id)))
    throw conflict('CONFLICT', 'An employee with this email exists')
  const [row] = await tx
    .update(employees)
    .set({
      ...(input.email !== undefined && { email: input.email.toLowerCase() }),
      ...(input.name !== undefined && { name: input.name }),
      ...(input.permissions !== undefined && { permissions: input.permissions }),
      ...(input.client_ids !== undefined && { clientIds: input.client_ids }),
      ...(input.password !== undefined && { passwordHash: await hashPassword(input.password) }),
      updatedAt: new Date(),
    })
    .where(eq(employees.id, id))
    .returning()
  // A new password signs the employee out everywhere: whoever knew the old one loses the sessions it opened.
  if (input.password !== undefined) await endSessions(tx, id, new Date())
  return employeeDto(row)
}

/** Soft delete; the employee's keys and sessions stop working at once because authentication checks `deleted_at`. */
export async function deleteEmployee(tx: Tx, caller: Caller, id: number) {
  checkDelegation(caller, { target: await getEmployee(tx, caller, id, true) })
  await tx.update(employees).set({ deletedAt: new Date(), updatedAt: new Date() }).where(eq(employees.id, id))
  await endSessions(tx, id, new Date())
  return { deleted: true as const }
}

export async function revokeKey(tx: Tx, caller: Caller, id: number) {
  const [key] = await tx
    .select({ employeeId: apiKeys.employeeId })
    .from(apiKeys)
    .where(and(eq(apiKeys.id, id), eq(apiKeys.companyId, caller.companyId), isNull(apiKeys.revokedAt)))
  if (!key) throw notFound('API key')
  if (!actsAsCompany(caller)) {
    // A company key is the company's own: only a company key or an owner takes it away.
    if (key.employeeId == null) throw forbidden('Only a company key or an owner may revoke a company key')
    checkDelegation(caller, { target: await getEmployee(tx, caller, key.employeeId, true) })
  }
  const [row] = await tx
    .update(apiKeys)
    .set({ revokedAt: new Date(), updatedAt: new Date() })
    .where(and(eq(apiKeys.id, id), eq(apiKeys.companyId, caller.companyId), isNull(apiKeys.revokedAt)))
    .returning({ id: apiKeys.id })
  if (!row) throw notFound('API key')
  return { deleted: true as const }
}
