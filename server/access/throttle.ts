import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto'
import { and, eq, isNull, lt, sql } from 'drizzle-orm'
import { signInFailures } from '../../db/schema'
import type { Database } from '../../db/client'
import { rateLimited } from '../lib/errors'

/**
 * Sign-in throttling: OWASP's "Slow Down Online Guessing Attacks with Device Cookies", with progressive back-off.
 *
 * A browser that signed in successfully as an employee carries a device cookie for that account (`fos_device_…`,
 * signed by the service, sent only to /api/sessions). An attempt that presents a valid one for the account it names
 * is a *trusted device*: only that cookie's own failures slow it down, whatever is tried from other browsers or from
 * its own address. Every other attempt is an *untrusted device*, and backs off per account (company and e-mail):
 *
 * - from one client address: PAIR_FREE_FAILURES free failures, then each attempt from there waits 1 s, 2 s, 4 s…
 *   (up to the window) after the last failure;
 * - from everywhere: past ACCOUNT_FREE_FAILURES, an address that has failed against the account itself waits too,
 *   never longer than ACCOUNT_MAX_WAIT_MS. Failures from other addresses never hold back an address (or a browser)
 *   that has not failed there.
 *
 * Nothing counts per address alone: failures against other accounts, or naming a company that does not exist (those
 * are not even written down), never slow down anyone at the same address. Guessing across many accounts from one
 * address is bounded by the anonymous request rate of that address (RATE_LIMIT_IP_PER_MINUTE) and by the
 * password-hashing pool, which refuse requests, not people.
 *
 * Every attempt is written down as a failure before its password is checked (committed at once, so concurrent
 * attempts on any process see each other), dated again when its check fails, and struck off when it succeeds or is
 * refused without a check.
 *
 * Written here rather than on rate-limiter-flexible (a dependency, whose login-protection recipe counts consecutive
 * failures per key): its stores count points in fixed windows whose ends are stamped with the clock of the process
 * that opened them, while a doubling wait needs the time of the last failure and the count within a sliding window;
 * an attempt must also be counted before its password is checked and struck off when the check is refused, which
 * one row per attempt in one table, counted by one statement, gives directly.
 */
export const SIGN_IN_WINDOW_MS = 15 * 60 * 1000
/** Failures of one account from one address (or from one trusted browser) before the waits start. */
export const PAIR_FREE_FAILURES = 5
/** Failures of one account, over all addresses, before an address that failed there itself has to wait. */
export const ACCOUNT_FREE_FAILURES = 10
/** The longest such an address waits, however many failures the account has from elsewhere. */
export const ACCOUNT_MAX_WAIT_MS = 30_000
/** How long a device cookie is kept by the browser; each success replaces it with a new one. */
export const DEVICE_COOKIE_DAYS = 180

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
  /** The nonce of the attempt's valid device cookie for this account; null for an untrusted device. */
  device: string | null
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
    .values({ companyId: key.companyId, email: key.email, address: key.address, device: key.device, failedAt: now })
    .returning({ id: signInFailures.id })
  const attempt = { ...key, id: row.id }
  // Rows only count within the window; every hundredth attempt sweeps out the older ones of everyone.
  if (attempt.id % 100 === 0) await db.delete(signInFailures).where(lt(signInFailures.failedAt, since))
  const until = key.device === null ? await untrustedUntil(database, attempt, since) : await deviceUntil(database, attempt, since)
  if (until > now.getTime()) {
    await forgetAttempt(database, attempt)
    throw rateLimited('Too many failed sign-ins; retry later', (until - now.getTime()) / 1000)
  }
  return attempt
}

/** A trusted device waits on its own cookie's failures only. */
async function deviceUntil(database: Database, attempt: Attempt, since: Date) {
  const [c] = await database.rows<{ n: number; last: number | null }>(sql`
    select count(*)::int as n, (extract(epoch from max(failed_at)) * 1000)::float8 as last
      from sign_in_failures
     where device = ${attempt.device} and failed_at > ${since.toISOString()}::timestamptz and id <> ${attempt.id}`)
  return backoffUntil(Number(c.n), ms(c.last), PAIR_FREE_FAILURES, SIGN_IN_WINDOW_MS)
}

/** An untrusted device waits on the account's untrusted failures from its address, and from everywhere once it failed itself. */
async function untrustedUntil(database: Database, attempt: Attempt, since: Date) {
  const [c] = await database.rows<{ pair: number; pair_last: number | null; account: number; account_last: number | null }>(sql`
    select count(*) filter (where address = ${attempt.address})::int as pair,
           (extract(epoch from max(failed_at) filter (where address = ${attempt.address})) * 1000)::float8 as pair_last,
           count(*)::int as account,
           (extract(epoch from max(failed_at)) * 1000)::float8 as account_last
      from sign_in_failures
     where company_id = ${attempt.companyId} and email = ${attempt.email} and device is null
       and failed_at > ${since.toISOString()}::timestamptz and id <> ${attempt.id}`)
  const pair = Number(c.pair)
  return Math.max(
    backoffUntil(pair, ms(c.pair_last), PAIR_FREE_FAILURES, SIGN_IN_WINDOW_MS),
    pair > 0 ? backoffUntil(Number(c.account), ms(c.account_last), ACCOUNT_FREE_FAILURES, ACCOUNT_MAX_WAIT_MS) : 0,
  )
}

/**
 * A failed check is dated when it ended, not when the attempt began: the waits run from the failure, so a slow
 * check (a busy machine, a full hashing pool) never eats into the wait that follows it.
 */
export async function attemptFailed(database: Database, attempt: Attempt, at: Date) {
  await database.db.update(signInFailures).set({ failedAt: at }).where(eq(signInFailures.id, attempt.id))
}

/** An attempt refused before its password was checked (the hashing pool was full) is no failure. */
export async function forgetAttempt(database: Database, attempt: Attempt) {
  await database.db.delete(signInFailures).where(eq(signInFailures.id, attempt.id))
}

/**
 * A success clears what held its browser back: a trusted device's cookie failures (the cookie is replaced anyway),
 * or the untrusted failures of its account from its address. Failures from elsewhere still count.
 */
export async function attemptSucceeded(database: Database, attempt: Attempt) {
  const f = signInFailures
  await database.db
    .delete(f)
    .where(
      attempt.device !== null
        ? eq(f.device, attempt.device)
        : and(eq(f.companyId, attempt.companyId), eq(f.email, attempt.email), eq(f.address, attempt.address), isNull(f.device)),
    )
}

/**
 * Device cookies: one per account a browser signed in as, named after the account (an HMAC of company and e-mail, so
 * the name says nothing about either), holding a random nonce and its HMAC over the account. Only this service can
 * make one; a copied cookie is worth to a guesser no more than its own free failures.
 */
export class DeviceCookies {
  private readonly key: Buffer

  constructor(
    signingSecret: string,
    private readonly publicBaseUrl: string,
  ) {
    this.key = Buffer.from(hkdfSync('sha256', signingSecret, 'fos-sign-in-device-cookies', 'device', 32))
  }

  private mac(text: string) {
    return createHmac('sha256', this.key).update(text).digest('base64url')
  }

  /** The cookie's name for an account. */
  name(companyId: number, email: string) {
    return `fos_device_${this.mac(`name\u0000${companyId}\u0000${email}`).replace(/[^A-Za-z0-9]/g, '').slice(0, 16)}`
  }

  /** The nonce of a valid device cookie for the account among the request's cookies, or null. */
  trusted(cookieHeader: string | null, companyId: number, email: string): string | null {
    if (!cookieHeader) return null
    const name = this.name(companyId, email)
    for (const part of cookieHeader.split(';')) {
      const at = part.indexOf('=')
      if (at < 0 || part.slice(0, at).trim() !== name) continue
      const m = /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/.exec(part.slice(at + 1).trim())
      if (!m) return null
      const expected = Buffer.from(this.mac(`device\u0000${companyId}\u0000${email}\u0000${m[1]}`))
      const given = Buffer.from(m[2])
      return expected.length === given.length && timingSafeEqual(expected, given) ? m[1] : null
    }
    return null
  }

  /** A fresh device cookie for an account that just signed in, as a Set-Cookie value. */
  issue(companyId: number, email: string) {
    const nonce = randomBytes(16).toString('base64url')
    const secure = this.publicBaseUrl.startsWith('https:') ? '; Secure' : ''
    const value = `${nonce}.${this.mac(`device\u0000${companyId}\u0000${email}\u0000${nonce}`)}`
    return `${this.name(companyId, email)}=${value}; Path=/api/sessions; Max-Age=${DEVICE_COOKIE_DAYS * 86_400}; HttpOnly; SameSite=Strict${secure}`
  }
}
