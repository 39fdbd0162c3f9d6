import { randomBytes } from 'node:crypto'
import { and, eq, gt, isNull, sql } from 'drizzle-orm'
import { companies, employees, employeeSessions } from '../../db/schema'
import type { Database, Db, Executor } from '../../db/client'
import { ApiError, forbidden, unauthorized } from '../lib/errors'
import { sha256 } from '../lib/secrets'
import { tenantTx } from '../lib/write'
import type { AppContext } from '../context'
import type { Caller } from './caller'
import { hashPassword, verifyPassword } from './passwords'
import { attemptFailed, attemptSucceeded, beginAttempt, forgetAttempt, type DeviceCookies } from './throttle'

export const SESSION_COOKIE = 'fos_session'
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000

/**
 * Verified against when the e-mail matches nobody (or somebody without a password), so an unknown e-mail costs
 * the same time as a wrong password and the answer cannot tell the two apart.
 */
let decoy: Promise<string> | undefined
const decoyHash = () =>
  (decoy ??= hashPassword(randomBytes(18).toString('base64url')).catch((e) => {
    decoy = undefined
    throw e
  }))

/** The session cookie's value, if the request carries one of the right shape. */
export function sessionToken(request: Request): string | null {
  const header = request.headers.get('cookie')
  if (!header || !header.includes(SESSION_COOKIE)) return null
  for (const part of header.split(';')) {
    const at = part.indexOf('=')
    if (at < 0 || part.slice(0, at).trim() !== SESSION_COOKIE) continue
    const value = part.slice(at + 1).trim()
    return /^[A-Za-z0-9_-]{43}$/.test(value) ? value : null
  }
  return null
}

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/**
 * A browser sends the cookie with any request to this origin, even one a foreign page starts; a write made with
 * it must say it comes from our own pages.
 */
export function checkOrigin(request: Request, publicBaseUrl: string) {
  if (!UNSAFE.has(request.method)) return
  if (request.headers.get('origin') !== new URL(publicBaseUrl).origin)
    throw forbidden('A write authenticated by the session cookie needs the Origin of this service')
}

export interface SessionCaller extends Caller {
  /** The session, and the company it was opened in as the apps show it (its name, and its time zone for dates). */
  session: { id: number; expiresAt: Date; company: { name: string; timezone: string } }
}

const lookups = new WeakMap<object, ReturnType<typeof sessionLookup>>()

function sessionLookup(db: Db) {
  return db
    .select({
      id: employeeSessions.id,
      companyId: employeeSessions.companyId,
      expiresAt: employeeSessions.expiresAt,
      employeeId: employees.id,
      email: employees.email,
      name: employees.name,
      permissions: employees.permissions,
      clientIds: employees.clientIds,
      mesas: companies.mesasEnabled,
      ventanilla: companies.ventanillaEnabled,
      companyName: companies.name,
      timezone: companies.timezone,
    })
    .from(employeeSessions)
    .innerJoin(employees, and(eq(employees.id, employeeSessions.employeeId), isNull(employees.deletedAt)))
    .innerJoin(companies, eq(companies.id, employeeSessions.companyId))
    .where(
      and(
        eq(employeeSessions.tokenHash, sql.placeholder('hash')),
        isNull(employeeSessions.revokedAt),
        gt(employeeSessions.expiresAt, sql.placeholder('now')),
      ),
    )
    .limit(1)
    .prepare('auth_session_lookup')
}

/**
 * The employee behind a session cookie, as the same Caller their API key would give: same permissions, client
 * scope and audit actor. Looked up on every request, so a sign-out or revocation holds on every process at once.
 */
export async function authenticateSession(db: Db, token: string, now: Date): Promise<SessionCaller> {
  let lookup = lookups.get(db)
  if (!lookup) {
    lookup = sessionLookup(db)
    lookups.set(db, lookup)
  }
  const [row] = await lookup.execute({ hash: sha256(token), now: now.toISOString() })
  if (!row) throw unauthorized('The session has ended; sign in again')
  return {
    companyId: row.companyId,
    keyId: 0,
    modules: { mesas: row.mesas, ventanilla: row.ventanilla },
    employee: { id: row.employeeId, email: row.email, name: row.name, permissions: row.permissions ?? [], clientIds: row.clientIds ?? [] },
    session: { id: row.id, expiresAt: row.expiresAt, company: { name: row.companyName, timezone: row.timezone } },
  }
}

export const isSession = (caller: Caller): caller is SessionCaller => 'session' in caller

/** Ends every session of an employee: done when their password changes or they are deleted. */
export async function endSessions(tx: Executor, employeeId: number, now: Date) {
  await tx
    .update(employeeSessions)
    .set({ revokedAt: now, updatedAt: now })
    .where(and(eq(employeeSessions.employeeId, employeeId), isNull(employeeSessions.revokedAt)))
}

export async function endSession(db: Executor, sessionId: number, now: Date) {
  await db.update(employeeSessions).set({ revokedAt: now, updatedAt: now }).where(eq(employeeSessions.id, sessionId))
}


/** Where a sign-in comes from: its client address and the cookies its browser sent (device cookies among them). */
export interface SignInOrigin {
  address: string
  cookies: string | null
}

/**
 * Checks an e-mail and password of a company and opens a session. An attempt naming a company that does not exist
 * costs the same password check and gets the same 401, but is written down nowhere. Otherwise it is throttled first
 * (server/access/throttle.ts: a browser with the account's device cookie by that cookie, any other per account), and
 * its password is checked in the bounded hashing pool (server/access/passwords.ts), whose refusal is no failure. A
 * success also hands the browser a new device cookie for the account.
 */
export async function signIn(app: AppContext, devices: DeviceCookies, input: { company_id: number; email: string; password: string }, from: SignInOrigin) {
  const db = app.db
  const now = app.clock()
  const email = input.email.trim().toLowerCase()
  const account = email.normalize('NFKC')
  const [row] = await db
    .select({ companyId: companies.id, companyName: companies.name, timezone: companies.timezone, id: employees.id, email: employees.email, name: employees.name, permissions: employees.permissions, clientIds: employees.clientIds, passwordHash: employees.passwordHash })
    .from(companies)
    .leftJoin(employees, and(eq(employees.companyId, companies.id), sql`lower(${employees.email}) = ${email}`, isNull(employees.deletedAt)))
    .where(eq(companies.id, input.company_id))
    .limit(1)
  if (!row) {
    await verifyPassword(input.password, await decoyHash())
    throw unauthorized('Wrong e-mail or password')
  }
  const device = devices.trusted(from.cookies, input.company_id, account)
  const attempt = await beginAttempt(app.database, { companyId: input.company_id, email: account, address: from.address, device }, now)
  let ok: boolean
  try {
    ok = await verifyPassword(input.password, row.passwordHash ?? (await decoyHash()))
  } catch (e) {
    if (e instanceof ApiError) await forgetAttempt(app.database, attempt)
    throw e
  }
  if (row.id === null || !row.passwordHash || !ok) {
    await attemptFailed(app.database, attempt, app.clock())
    throw unauthorized('Wrong e-mail or password')
  }
  await attemptSucceeded(app.database, attempt)

  const employee = { id: row.id, email: row.email!, name: row.name!, permissions: row.permissions ?? [], client_ids: row.clientIds ?? [] }
  // As the employee, so the audit trail names who signed in.
  const caller: Caller = {
    companyId: input.company_id,
    keyId: 0,
    modules: { mesas: false, ventanilla: false },
    employee: { id: row.id, email: employee.email, name: employee.name, permissions: employee.permissions, clientIds: employee.client_ids },
  }
  const { token, expiresAt } = await tenantTx(app, caller, 'write', (tx) => openSession(tx, input.company_id, row.id!, now))
  return {
    token,
    deviceCookie: devices.issue(input.company_id, account),
    session: {
      employee,
      company: { id: input.company_id, name: row.companyName, timezone: row.timezone },
      expires_at: expiresAt.toISOString(),
    },
  }
}

/** A new session of an employee: its cookie value (kept only as a digest) and when it ends. */
export async function openSession(tx: Executor, companyId: number, employeeId: number, now: Date) {
  const token = randomBytes(32).toString('base64url')
  const expiresAt = new Date(now.getTime() + SESSION_TTL_MS)
  await tx.insert(employeeSessions).values({ companyId, employeeId, tokenHash: sha256(token), expiresAt, createdAt: now, updatedAt: now })
  return { token, expiresAt }
}

export function sessionCookie(token: string, publicBaseUrl: string, maxAgeS = SESSION_TTL_MS / 1000) {
  const secure = publicBaseUrl.startsWith('https:') ? '; Secure' : ''
  return `${SESSION_COOKIE}=${token}; Path=/; Max-Age=${maxAgeS}; HttpOnly; SameSite=Strict${secure}`
}

export const clearedCookie = (publicBaseUrl: string) => sessionCookie('', publicBaseUrl, 0)

const idList = (ids: number[]) => `{${ids.map(Number).join(',')}}`

/**
 * Of some sessions and API keys, those that still authenticate (not revoked or expired, employee not deleted): a
 * long-lived stream opened with one of them asks this now and then, so it ends soon after its credential does.
 */
export async function liveCredentials(database: Database, sessionIds: number[], keyIds: number[], now: Date) {
  const sessions = sessionIds.length
    ? await database.rows<{ id: number }>(
        sql`select s.id from employee_sessions s join employees e on e.id = s.employee_id
            where s.id = any(${idList(sessionIds)}::int[]) and s.revoked_at is null and s.expires_at > ${now.toISOString()}::timestamptz and e.deleted_at is null`,
      )
    : []
  const keys = keyIds.length
    ? await database.rows<{ id: number }>(
        sql`select k.id from api_keys k left join employees e on e.id = k.employee_id
            where k.id = any(${idList(keyIds)}::int[]) and k.revoked_at is null and e.deleted_at is null`,
      )
    : []
  return { sessions: new Set(sessions.map((r) => Number(r.id))), keys: new Set(keys.map((r) => Number(r.id))) }
}
