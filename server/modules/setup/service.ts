import { randomBytes } from 'node:crypto'
import { and, eq, gt, isNull, lt, sql } from 'drizzle-orm'
import { companies, employees, setupTokens } from '../../../db/schema'
import type { Executor, Tx } from '../../../db/client'
import type { Caller } from '../../access/caller'
import { hashPassword } from '../../access/passwords'
import { endSessions } from '../../access/sessions'
import { conflict, invalid, notFound, unauthorized } from '../../lib/errors'
import { sha256 } from '../../lib/secrets'
import { validTimezone } from '../../lib/time'
import { createClient } from '../clients/service'
import { employeeDto } from '../employees/service'
import { createOperationType, createTransactionType } from '../operations/service'
import { companyDto } from '../superadmin/service'

/**
 * What onboarding does without a programmer: the first-run setup page and the operator CLI (server/cli/admin.ts)
 * both create companies and owners through these. They act as the database owner, not as a tenant: there is no
 * company (or no caller of it) yet; the transaction that runs them says who acts (`app.actor_email`, `app.channel`).
 */

export const MODULES = ['mesas', 'ventanilla'] as const
export type ModuleName = (typeof MODULES)[number]
export type Modules = Partial<Record<ModuleName, boolean>>

/** How long a setup link printed at start works. */
export const SETUP_TOKEN_TTL_MS = 24 * 60 * 60 * 1000

/** The permission that makes an owner (server/access/caller.ts). */
export const OWNER_PERMISSIONS = ['company.admin']

export async function anyCompany(db: Executor): Promise<boolean> {
  const [row] = await db.select({ id: companies.id }).from(companies).limit(1)
  return row !== undefined
}

/**
 * While no company exists: a fresh setup token, stored only as its digest, and the line that tells the operator
 * where to go. Null once a company exists: nothing is printed again. Expired tokens are swept here.
 */
export async function newSetupLink(db: Executor, publicBaseUrl: string, now: Date): Promise<string | null> {
  if (await anyCompany(db)) return null
  const token = randomBytes(32).toString('base64url')
  await db.delete(setupTokens).where(lt(setupTokens.expiresAt, now))
  await db.insert(setupTokens).values({ tokenHash: sha256(token), expiresAt: new Date(now.getTime() + SETUP_TOKEN_TTL_MS), createdAt: now })
  return `Set up this service: ${publicBaseUrl}/setup#${token}`
}

export interface CompanyInput {
  name: string
  timezone?: string
  modules?: Modules
}

export interface OwnerInput {
  email: string
  name: string
  password: string
}

/**
 * The first company and its owner, from the setup page. One setup at a time (a transaction-scoped advisory lock),
 * and the lock holder looks for a company before anything else: of two racing setups, the second finds the first's
 * company and answers 404, whatever its token. A wrong or expired token is 401; a used one is gone with the others.
 */
export async function runSetup(tx: Tx, token: string, input: { company: CompanyInput; owner: OwnerInput; starter?: boolean }, now: Date) {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext('fos.setup'))`)
  if (await anyCompany(tx)) throw notFound()
  const [valid] = await tx
    .select({ id: setupTokens.id })
    .from(setupTokens)
    .where(and(eq(setupTokens.tokenHash, sha256(token)), gt(setupTokens.expiresAt, now)))
  if (!valid) throw unauthorized('This setup link is wrong or has expired; restart the service for a new one')
  checkCompany(input.company)
  // The audit trail names the owner for everything the setup writes.
  await tx.execute(sql`select set_config('app.actor_email', ${input.owner.email.toLowerCase()}, true), set_config('app.channel', 'setup', true)`)
  const company = await createCompanyRecord(tx, input.company, now)
  const employee = await createOwner(tx, company.id, input.owner, now)
  if (input.starter) await createStarterSet(tx, company)
  await tx.delete(setupTokens)
  return { company, employee }
}

/**
 * A ready start (contract §18): what a casa de cambio needs to record its first purchase. Names are the ones the
 * exchange (§19) and the till (§20) look for, so they are exact.
 */
export const STARTER = {
  caja: { name: 'Caja principal', currencies: ['ARS', 'USD', 'EUR', 'BRL'] },
  operationTypes: [
    { name: 'Compra de divisas', kind: 'exchange' },
    { name: 'Venta de divisas', kind: 'exchange' },
    { name: 'Ingreso', kind: 'up_down' },
    { name: 'Egreso', kind: 'up_down' },
    { name: 'Ajuste de caja', kind: 'other' },
  ],
  transactionTypes: [
    { name: 'Capital', is_commission: false },
    { name: 'Comisión', is_commission: true },
  ],
} as const

/**
 * Creates the starter set in the open transaction through the same services the API uses, so its rows, audit trail
 * and events (`client.created`, `account.created`) are those of a company key making them one by one.
 */
export async function createStarterSet(tx: Tx, company: { id: number; modules: Record<ModuleName, boolean> }) {
  const caller: Caller = { companyId: company.id, keyId: 0, employee: null, modules: company.modules }
  const caja = await createClient(tx, caller, {
    name: STARTER.caja.name,
    type: 0,
    accounts: STARTER.caja.currencies.map((currency_name) => ({ currency_name })),
  })
  const operationTypes = []
  for (const type of STARTER.operationTypes) operationTypes.push(await createOperationType(tx, caller, type))
  const transactionTypes = []
  for (const type of STARTER.transactionTypes) transactionTypes.push(await createTransactionType(tx, caller, type))
  return { caja, operationTypes, transactionTypes }
}

function checkCompany(input: CompanyInput) {
  if (input.timezone !== undefined && !validTimezone(input.timezone))
    throw invalid(`Unknown time zone "${input.timezone}"`, [{ field: 'company.timezone', message: 'not an IANA time zone (e.g. America/Argentina/Buenos_Aires)' }])
}

export async function createCompanyRecord(tx: Tx, input: CompanyInput, now: Date) {
  checkCompany(input)
  const [row] = await tx
    .insert(companies)
    .values({
      name: input.name,
      ...(input.timezone && { timezone: input.timezone }),
      mesasEnabled: input.modules?.mesas ?? false,
      ventanillaEnabled: input.modules?.ventanilla ?? false,
      createdAt: now,
      updatedAt: now,
    })
    .returning()
  return companyDto(row)
}

export async function companyById(db: Executor, id: number) {
  const [row] = await db.select().from(companies).where(eq(companies.id, id))
  if (!row) throw notFound('Company')
  return row
}

/** Switches modules on and off; a module named in both lists is a mistake, not a toggle. */
export async function setModules(tx: Tx, companyId: number, on: ModuleName[], off: ModuleName[], now: Date) {
  await companyById(tx, companyId)
  const [row] = await tx
    .update(companies)
    .set({
      ...(on.includes('mesas') && { mesasEnabled: true }),
      ...(off.includes('mesas') && { mesasEnabled: false }),
      ...(on.includes('ventanilla') && { ventanillaEnabled: true }),
      ...(off.includes('ventanilla') && { ventanillaEnabled: false }),
      updatedAt: now,
    })
    .where(eq(companies.id, companyId))
    .returning()
  // Open waiting-room screens of the company follow at once (server/modules/ventanilla, which listens per company).
  await tx.execute(sql`select pg_notify(${`ventanilla_${companyId}`}, 'change')`)
  return companyDto(row)
}

async function liveEmployee(db: Executor, companyId: number, email: string) {
  const [row] = await db
    .select()
    .from(employees)
    .where(and(eq(employees.companyId, companyId), sql`lower(${employees.email}) = ${email.trim().toLowerCase()}`, isNull(employees.deletedAt)))
  return row
}

/** An owner: an employee holding `company.admin`, with a password to sign in to /manage. */
export async function createOwner(tx: Tx, companyId: number, input: OwnerInput, now: Date) {
  if (await liveEmployee(tx, companyId, input.email)) throw conflict('CONFLICT', `An employee with the e-mail ${input.email} exists in this company`)
  const [row] = await tx
    .insert(employees)
    .values({
      companyId,
      email: input.email.trim().toLowerCase(),
      name: input.name,
      permissions: OWNER_PERMISSIONS,
      passwordHash: await hashPassword(input.password),
      createdAt: now,
      updatedAt: now,
    })
    .returning()
  return employeeDto(row)
}

/** A new password for an employee; every session opened with the old one ends. */
export async function resetPassword(tx: Tx, companyId: number, email: string, password: string, now: Date) {
  const row = await liveEmployee(tx, companyId, email)
  if (!row) throw notFound('Employee')
  await tx.update(employees).set({ passwordHash: await hashPassword(password), updatedAt: now }).where(eq(employees.id, row.id))
  await endSessions(tx, row.id, now)
  return employeeDto(row)
}

/** A password to hand over once: 20 URL-safe characters, 120 random bits. */
export const generatePassword = () => randomBytes(15).toString('base64url')
