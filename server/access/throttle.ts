import { and, eq, lt, sql } from 'drizzle-orm'
import { signInFailures } from '../../db/schema'
import type { Database } from '../../db/client'
import { rateLimited } from '../lib/errors'

/**
 * Sign-in throttling (OWASP Authentication Cheat Sheet: slow online guessing down without giving an attacker a
 * way to lock someone else out). Every attempt is written down as a failure before its password is checked
 * (committed at once, so concurrent attempts on any process see each other) and struck off when it succeeds or is
 * refused without a check. Failures count over a sliding window along three keys:
 *
 * - the account (company and e-mail, as the attempt named them) from one client address: a few free failures,
 *   then each attempt waits twice as long after the last failure, up to the window;
 * - one client address against any account: the same, with more free failures, against password spraying;
 * - the account from every address: the same, but only for an address that has failed against it itself, and never
 *   longer than ACCOUNT_MAX_WAIT_MS. Someone else's failures, from other addresses, never keep the employee from
 *   signing in where they have not failed, and at worst slow them down by seconds where they have.
 *
 * An attempt naming a company that does not exist counts against that (company, e-mail) pair and its address only,
 * so it can never throttle the real employee of that e-mail.
 */
export const SIGN_IN_WINDOW_MS = 15 * 60 * 1000
/** Failures of one account from one address before the waits start. */
export const PAIR_FREE_FAILURES = 5
/** Failures from one address, over all accounts, before the waits start. */
export const ADDRESS_FREE_FAILURES = 20
/** Failures of one account, over all addresses, before an address that failed there itself has to wait. */
export const ACCOUNT_FREE_FAILURES = 10
/** The longest such an address waits, however many failures the account has from elsewhere. */
export const ACCOUNT_MAX_WAIT_MS = 30_000

/** The wait after `failures` failures, the last at `last`: none up to `free`, then 1 s, 2 s, 4 s… up to `cap`. */
export function backoffUntil(failures: number, last: number | null, free: number, cap: number): number {
  if (failures < free || last === null) return 0
  return last + Math.min(cap, 1000 * 2 ** Math.min(failures - free, 30))
}

export interface Attempt {
  id: number
  companyId: number
  email: string
  address: string
}

interface Counts {
  pair: number
  pair_last: number | null
  account: number
  account_last: number | null
  by_address: number
  address_last: number | null
}

const ms = (value: unknown) => (value === null || value === undefined ? null : Number(value))

/**
 * Writes the attempt down and decides whether it may check a password now; if not, strikes it off again and
 * throws 429 RATE_LIMITED with Retry-After (seconds until the longest of the waits that apply ends).
 */
export async function beginAttempt(database: Database, key: Omit<Attempt, 'id'>, now: Date): Promise<Attempt> {
  const db = database.db
  const since = new Date(now.getTime() - SIGN_IN_WINDOW_MS)
  const [row] = await db
    .insert(signInFailures)
    .values({ companyId: key.companyId, email: key.email, address: key.address, failedAt: now })
    .returning({ id: signInFailures.id })
  const attempt = { ...key, id: row.id }
  // Rows only count within the window; every hundredth attempt sweeps out the older ones of everyone.
  if (attempt.id % 100 === 0) await db.delete(signInFailures).where(lt(signInFailures.failedAt, since))
  const [c] = await database.rows<Counts>(sql`
    select count(*) filter (where pair)::int as pair,
           (extract(epoch from max(failed_at) filter (where pair)) * 1000)::float8 as pair_last,
           count(*) filter (where account)::int as account,
           (extract(epoch from max(failed_at) filter (where account)) * 1000)::float8 as account_last,
           count(*) filter (where by_address)::int as by_address,
           (extract(epoch from max(failed_at) filter (where by_address)) * 1000)::float8 as address_last
      from (select failed_at,
                   company_id = ${key.companyId} and email = ${key.email} and address = ${key.address} as pair,
                   company_id = ${key.companyId} and email = ${key.email} as account,
                   address = ${key.address} as by_address
              from sign_in_failures
             where failed_at > ${since.toISOString()}::timestamptz and id <> ${attempt.id}
               and ((company_id = ${key.companyId} and email = ${key.email}) or address = ${key.address})) f`)
  const pair = Number(c.pair)
  const until = Math.max(
    backoffUntil(pair, ms(c.pair_last), PAIR_FREE_FAILURES, SIGN_IN_WINDOW_MS),
    backoffUntil(Number(c.by_address), ms(c.address_last), ADDRESS_FREE_FAILURES, SIGN_IN_WINDOW_MS),
    pair > 0 ? backoffUntil(Number(c.account), ms(c.account_last), ACCOUNT_FREE_FAILURES, ACCOUNT_MAX_WAIT_MS) : 0,
  )
  if (until > now.getTime()) {
    await forgetAttempt(database, attempt)
    throw rateLimited('Too many failed sign-ins; retry later', (until - now.getTime()) / 1000)
  }
  return attempt
}

/** An attempt refused before its password was checked (the hashing pool was full) is no failure. */
export async function forgetAttempt(database: Database, attempt: Attempt) {
  await database.db.delete(signInFailures).where(eq(signInFailures.id, attempt.id))
}

/** A success clears the failures of its account from its address; failures from elsewhere still count. */
export async function attemptSucceeded(database: Database, attempt: Attempt) {
  await database.db
    .delete(signInFailures)
    .where(and(eq(signInFailures.companyId, attempt.companyId), eq(signInFailures.email, attempt.email), eq(signInFailures.address, attempt.address)))
}

/**
 * The client's address: the last X-Forwarded-For entry when a balancer we trust appended it (TRUST_PROXY), else
 * the connection's peer.
 */
export function clientAddress(request: Request, server: { requestIP(r: Request): { address: string } | null } | null | undefined, trustProxy: boolean): string {
  const forwarded = trustProxy ? request.headers.get('x-forwarded-for')?.split(',').pop()?.trim() : undefined
  return forwarded || server?.requestIP(request)?.address || 'unknown'
}
