import { Elysia } from 'elysia'
import { and, eq, isNull, sql } from 'drizzle-orm'
import { apiKeys, employees } from '../../db/schema'
import { forbidden, unauthorized } from '../lib/errors'
import { credentialPrefix, sameDigest, sha256 } from '../lib/secrets'
import type { AppContext } from '../context'

export const PERMISSIONS = [
  'clients.view',
  'clients.edit',
  'operations.view',
  'operations.create',
  'operations.approve',
  'attachments.edit',
  'cost_centers.view',
  'cost_centers.edit',
  'messaging.manage',
  'messaging.run',
  'mesas.view',
  'mesas.manage',
  'audit.view',
  'metrics.view',
  'ventanilla.manage',
  'ventanilla.call',
] as const
export type Permission = (typeof PERMISSIONS)[number]

export interface EmployeeIdentity {
  id: number
  email: string
  name: string
  permissions: string[]
  clientIds: number[]
}

/** Who is calling: a company key (employee null, every permission) or an employee key. */
export interface Caller {
  companyId: number
  keyId: number
  employee: EmployeeIdentity | null
}

export const KEY_KIND = 'fos'

/**
 * The key lookup every authenticated request makes, built once per database handle: Drizzle then skips
 * rebuilding the SQL text per call (a measurable share of a small request's CPU). It still runs on every
 * request, so a revoked key or deleted employee is refused on the next call, whichever process revoked it.
 */
const lookups = new WeakMap<object, ReturnType<typeof keyLookup>>()

function keyLookup(db: AppContext['db']) {
  return db
    .select({
      id: apiKeys.id,
      companyId: apiKeys.companyId,
      keyHash: apiKeys.keyHash,
      revokedAt: apiKeys.revokedAt,
      employeeId: apiKeys.employeeId,
      email: employees.email,
      name: employees.name,
      permissions: employees.permissions,
      clientIds: employees.clientIds,
      employeeDeletedAt: employees.deletedAt,
    })
    .from(apiKeys)
    .leftJoin(employees, eq(employees.id, apiKeys.employeeId))
    .where(and(eq(apiKeys.prefix, sql.placeholder('prefix')), isNull(apiKeys.revokedAt)))
    .limit(1)
    .prepare('auth_key_lookup')
}

export async function authenticate(app: AppContext, rawKey: string | undefined): Promise<Caller> {
  const prefix = credentialPrefix(KEY_KIND, rawKey)
  if (!prefix) throw unauthorized()
  let lookup = lookups.get(app.db)
  if (!lookup) {
    lookup = keyLookup(app.db)
    lookups.set(app.db, lookup)
  }
  const [row] = await lookup.execute({ prefix })
  if (!row || !sameDigest(sha256(rawKey!), row.keyHash)) throw unauthorized()
  if (row.employeeId == null) return { companyId: row.companyId, keyId: row.id, employee: null }
  if (row.employeeDeletedAt) throw unauthorized()
  return {
    companyId: row.companyId,
    keyId: row.id,
    employee: {
      id: row.employeeId,
      email: row.email!,
      name: row.name!,
      permissions: row.permissions ?? [],
      clientIds: row.clientIds ?? [],
    },
  }
}

export function can(caller: Caller, permission: Permission): boolean {
  return caller.employee == null || caller.employee.permissions.includes(permission)
}

export function requirePermission(caller: Caller, ...anyOf: Permission[]): void {
  if (!anyOf.some((p) => can(caller, p))) throw forbidden(`Missing permission ${anyOf.join(' or ')}`)
}

export function requireCompanyKey(caller: Caller): void {
  if (caller.employee) throw forbidden('Only a company key may do this')
}

/** The client ids an employee is limited to, or null when the caller sees every client. */
export const clientScope = (caller: Caller): number[] | null =>
  caller.employee && caller.employee.clientIds.length > 0 ? caller.employee.clientIds : null

/**
 * Resolves the caller from `x-api-key` before anything else runs (derive runs ahead of validation),
 * so an unauthenticated request gets 401 whatever else is wrong with it.
 */
export const auth = (app: AppContext) =>
  new Elysia()
    .derive({ as: 'scoped' }, async ({ headers }) => ({ caller: await authenticate(app, headers['x-api-key']) }))
