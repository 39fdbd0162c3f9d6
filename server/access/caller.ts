import { eq, sql, type Placeholder } from 'drizzle-orm'
import { companies, externalGrants } from '../../db/schema'
import { rowsOf, type Db } from '../../db/client'
import { fixedStatement } from '../../db/statement'
import { ApiError, unauthorized } from '../lib/errors'
import { credentialPrefix, sameDigest, sha256 } from '../lib/secrets'

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
  'webhooks.manage',
  'company.admin',
  'employees.manage',
  'exchanges.rate',
  'tills.operate',
  'tills.supervise',
] as const
export type Permission = (typeof PERMISSIONS)[number]

/** Company modules a route can be gated on; off → 403 with the module's own code. */
export type CompanyModule = 'mesas' | 'ventanilla'

export interface EmployeeIdentity {
  id: number
  email: string
  name: string
  permissions: string[]
  clientIds: number[]
}

/**
 * Who is calling: a company key (employee null, every permission), an employee key, or an external grant
 * bound to one client (statements only: `grant` set, no permission at all).
 */
export interface Caller {
  companyId: number
  keyId: number
  employee: EmployeeIdentity | null
  modules: Record<CompanyModule, boolean>
  grant?: { id: number; clientId: number }
}

export const KEY_KIND = 'fos'
export const GRANT_KIND = 'fxg'

interface KeyRow {
  id: number
  company_id: number
  key_hash: string
  employee_id: number | null
  email: string | null
  name: string | null
  permissions: string[] | null
  client_ids: number[] | null
  employee_deleted: boolean | null
  mesas: boolean
  ventanilla: boolean
  state: string
}

const KEY_CALLER = fixedStatement<{ prefix: string }>((p) => sql`select * from api_key_caller(${p.prefix}::text)`)

/**
 * Whether the key of `prefix` still resolves to the caller that `state` fingerprints (db/sql/access.sql,
 * api_key_callers); true when no key is given. A column for the first statement of a request's work, so a caller
 * the process remembers is confirmed at no round trip of its own.
 */
export const keyHolds = (prefix: Placeholder, state: Placeholder) =>
  sql`(${prefix}::text is null or exists (select from api_key_callers v where v.prefix = ${prefix}::text and v.state = ${state}::text))`

/** A key's caller as one lookup found it, with what `keyHolds` needs to tell later whether it still holds. */
export interface KeyLookup {
  caller: Caller
  prefix: string
  state: string
}

/**
 * The key lookup, by a database function (db/sql/access.sql) whose plan the session keeps, behind a pooler too; the
 * company's module flags come in the same round trip. A request makes it unless the process remembers the key's
 * caller and the route confirms that inside its own work (server/access/policy.ts), so a revoked key or deleted
 * employee is refused on the next call either way, whichever process revoked it.
 */
export const authenticateKey = async (db: Db, rawKey: string | undefined | null): Promise<Caller> => (await lookupKey(db, rawKey, rawKey ? sha256(rawKey) : '')).caller

/** The same lookup, given the key's digest (`sha256`) the caller has already computed. */
export async function lookupKey(db: Db, rawKey: string | undefined | null, digest: string): Promise<KeyLookup> {
  const prefix = credentialPrefix(KEY_KIND, rawKey)
  if (!prefix) throw unauthorized()
  const [row] = rowsOf<KeyRow>(await KEY_CALLER(db, { prefix }))
  if (!row || !sameDigest(digest, row.key_hash)) throw unauthorized()
  const modules = { mesas: row.mesas, ventanilla: row.ventanilla }
  const found = (caller: Caller) => ({ caller, prefix, state: row.state })
  if (row.employee_id == null) return found({ companyId: row.company_id, keyId: row.id, employee: null, modules })
  if (row.employee_deleted) throw unauthorized()
  return found({
    companyId: row.company_id,
    keyId: row.id,
    modules,
    employee: {
      id: row.employee_id,
      email: row.email!,
      name: row.name!,
      permissions: row.permissions ?? [],
      clientIds: row.client_ids ?? [],
    },
  })
}

/**
 * Resolves a bearer grant; unknown, revoked and expired grants are all 401s. A real grant's token that no longer
 * works says why in `details` (`{ reason: 'revoked' | 'expired', at }`), so the statement page can tell its reader
 * in words; only the holder of the token learns it.
 */
export async function authenticateGrant(db: Db, token: string | undefined, now: Date): Promise<Caller> {
  const prefix = credentialPrefix(GRANT_KIND, token)
  if (!prefix) throw unauthorized('Missing or invalid credentials')
  const [row] = await db
    .select({
      id: externalGrants.id,
      companyId: externalGrants.companyId,
      clientId: externalGrants.clientId,
      tokenHash: externalGrants.tokenHash,
      revokedAt: externalGrants.revokedAt,
      expiresAt: externalGrants.expiresAt,
      mesas: companies.mesasEnabled,
      ventanilla: companies.ventanillaEnabled,
    })
    .from(externalGrants)
    .innerJoin(companies, eq(companies.id, externalGrants.companyId))
    .where(eq(externalGrants.prefix, prefix))
    .limit(1)
  if (!row || !sameDigest(sha256(token!), row.tokenHash)) throw unauthorized('Missing or invalid credentials')
  if (row.revokedAt) throw new ApiError(401, 'UNAUTHORIZED', 'This grant was revoked', { reason: 'revoked', at: row.revokedAt.toISOString() })
  if (row.expiresAt.getTime() <= now.getTime()) throw new ApiError(401, 'UNAUTHORIZED', 'This grant has expired', { reason: 'expired', at: row.expiresAt.toISOString() })
  return {
    companyId: row.companyId,
    keyId: 0,
    employee: null,
    modules: { mesas: row.mesas, ventanilla: row.ventanilla },
    grant: { id: row.id, clientId: row.clientId },
  }
}

/** An owner: an employee holding `company.admin`. */
export const isOwner = (caller: Caller) => !caller.grant && caller.employee?.permissions.includes('company.admin') === true

/**
 * Whether the caller may do all a company key may: a company key, or an owner, who is the company key in person
 * (the audit trail still names the owner, since its caller keeps its employee).
 */
export const actsAsCompany = (caller: Caller) => !caller.grant && (caller.employee == null || isOwner(caller))

export function can(caller: Caller, permission: Permission): boolean {
  if (caller.grant) return false
  return actsAsCompany(caller) || caller.employee!.permissions.includes(permission)
}

/** The client ids a caller is limited to (a scoped employee's, a grant's one client), or null for every client. */
export function clientScope(caller: Caller): number[] | null {
  if (caller.grant) return [caller.grant.clientId]
  if (actsAsCompany(caller)) return null
  return caller.employee && caller.employee.clientIds.length > 0 ? caller.employee.clientIds : null
}
