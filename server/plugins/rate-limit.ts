import { Elysia } from 'elysia'
import { sql } from 'drizzle-orm'
import type { Database } from '../../db/client'
import { LRUCache } from 'lru-cache'
import type { AppContext } from '../context'
import { telemetryOf } from '../infra/telemetry'
import { clientAddress, isProbe, type Peer } from '../access/address'
import { authenticateGrant, authenticateKey, GRANT_KIND } from '../access/caller'
import { superadminVerifier } from '../modules/superadmin/service'
import { authenticateSession, sessionToken } from '../access/sessions'
import { ApiError } from '../lib/errors'
import { sha256 } from '../lib/secrets'
import { apiErrorResponse } from './errors'

export interface RateLimits {
  /** Requests per minute per API key or bearer credential; 0 turns the limit off. */
  perKey: number
  /** Requests per minute per client address for requests without a known credential; 0 turns it off. */
  perIp: number
  /** Requests per minute per company, over all its credentials together; 0 turns the limit off. */
  perCompany: number
}

/**
 * Where the buckets live: one per process (embedded database) or shared by every process on one Postgres.
 *
 * Not rate-limiter-flexible's stores, though the project prefers a kept library for generic work: its
 * RateLimiterPostgres drives node-postgres, Knex, Sequelize, TypeORM or Prisma clients, not the postgres.js client
 * this service runs on (its RateLimiterDrizzle would fit the client), and every one of its stores, RateLimiterMemory
 * included, counts fixed windows. A fixed window lets a credential spend one minute's budget at the end of a window
 * and the next minute's at the start of the following one, twice "bursts to that minute's budget" (contract §13),
 * and its Drizzle store stamps each window's end with the clock of whichever process opened it, so processes whose
 * clocks differ disagree on when it ends. A token bucket refilled continuously, in one statement whose time is the
 * database's, bounds any 60 s to the budget and needs no clock but Postgres's.
 */
export interface BucketStore {
  /**
   * Takes up to `want` tokens from the bucket, which refills at `perMinute / 60` a second up to `perMinute`:
   * how many were granted (0 when the bucket is empty) and how many are left in it.
   */
  take(bucket: string, perMinute: number, want: number): Promise<{ granted: number; remaining: number }>
  /** Forgets buckets idle long enough to be full again. */
  sweep(): Promise<void>
}

/** The shared store: db/sql/rate-limit.sql, one statement per lease. */
export function postgresBuckets(database: Database): BucketStore {
  return {
    async take(bucket, perMinute, want) {
      const [row] = await database.rows<{ granted: number; remaining: number }>(
        sql`select granted, remaining from rate_limit_take(${bucket}, ${perMinute}::float8, ${want}::int)`,
      )
      return { granted: Number(row.granted), remaining: Number(row.remaining) }
    },
    async sweep() {
      await database.db.execute(sql`delete from rate_limit_buckets where updated_at < now() - interval '2 minutes'`)
    },
  }
}

/** The same buckets in this process's memory, for the embedded database (which one process owns anyway). */
export function memoryBuckets(clock: () => number = () => Date.now()): BucketStore {
  const buckets = new Map<string, { tokens: number; at: number }>()
  return {
    async take(bucket, perMinute, want) {
      const now = clock()
      const b = buckets.get(bucket) ?? { tokens: perMinute, at: now }
      const have = Math.min(perMinute, b.tokens + (Math.max(0, now - b.at) * perMinute) / 60_000)
      const granted = have < 1 ? 0 : Math.min(want, Math.max(1, Math.floor(have / 4)))
      buckets.set(bucket, { tokens: have - granted, at: Math.max(now, b.at) })
      return { granted, remaining: have - granted }
    },
    async sweep() {
      const now = clock()
      for (const [k, b] of buckets) if (now - b.at > 120_000) buckets.delete(k)
    },
  }
}

/** Our credentials carry a public prefix; anything else (a JWT) is reduced to a digest. */
const bucketId = (credential: string) => /^[a-z]+_[0-9a-f]{12}_/.exec(credential)?.[0] ?? sha256(credential).slice(0, 32)

/** Tokens a process takes from a shared bucket at once: one round trip per this many requests at most. */
export const leaseSize = (perMinute: number) => Math.max(1, Math.min(100, Math.floor(perMinute / 100)))
/** Leased tokens not spent within this time are dropped, so a key's budget does not sit idle in one process. */
const LEASE_MS = 5_000

interface Lease {
  tokens: number
  at: number
  /** The shared bucket's level after the last lease. */
  shared: number
  /** While the bucket is empty: when the next token is due; requests until then are refused without asking. */
  deniedUntil: number
  pending: Promise<void> | null
  seen: number
}

export interface Verdict {
  ok: boolean
  limit: number
  /** An estimate: this process's leased tokens plus what the shared bucket held at the last lease. */
  remaining: number
  /** Seconds until the bucket is full again. */
  reset: number
  /** Seconds until a refused request may be retried. */
  retryAfter: number
}

/**
 * The local fast path over a bucket store: each process leases a slice of a bucket's tokens and spends them without a
 * round trip; concurrent requests that find the slice spent wait on one lease. Everything leased is spent for the
 * bucket, so all processes together accept at most what the bucket gives out.
 */
export function limiter(store: BucketStore, clock: () => number = () => Date.now()) {
  const leases = new Map<string, Lease>()
  let lastSweep = clock()

  async function lease(l: Lease, id: string, perMinute: number) {
    let got: { granted: number; remaining: number }
    try {
      got = await store.take(id, perMinute, leaseSize(perMinute))
    } catch {
      // The limit is a guard for the database, not a reason to fail requests the database may still answer.
      got = { granted: 1, remaining: 0 }
    }
    const now = clock()
    l.tokens = got.granted
    l.at = now
    l.shared = got.remaining
    l.deniedUntil = got.granted > 0 ? 0 : now + Math.ceil(((1 - got.remaining) * 60_000) / perMinute)
  }

  function verdict(l: Lease, perMinute: number, ok: boolean, now: number): Verdict {
    const remaining = Math.max(0, Math.floor(l.tokens + l.shared))
    return {
      ok,
      limit: perMinute,
      remaining,
      reset: Math.ceil(((perMinute - remaining) * 60) / perMinute),
      retryAfter: ok ? 0 : Math.max(1, Math.ceil((l.deniedUntil - now) / 1000)),
    }
  }

  return async function take(id: string, perMinute: number): Promise<Verdict> {
    let now = clock()
    if (now - lastSweep > 60_000) {
      lastSweep = now
      for (const [k, l] of leases) if (now - l.seen > 120_000 && !l.pending) leases.delete(k)
      store.sweep().catch(() => {})
    }
    let l = leases.get(id)
    if (!l) leases.set(id, (l = { tokens: 0, at: 0, shared: perMinute, deniedUntil: 0, pending: null, seen: now }))
    l.seen = now
    // Waiters on a lease smaller than their number go round again; every round either spends a token or refuses.
    for (;;) {
      if (l.deniedUntil > now) return verdict(l, perMinute, false, now)
      if (l.tokens >= 1 && now - l.at < LEASE_MS) {
        l.tokens -= 1
        return verdict(l, perMinute, true, now)
      }
      l.pending ??= lease(l, id, perMinute).finally(() => {
        l.pending = null
      })
      await l.pending
      now = clock()
    }
  }
}

export interface RateLimitOptions {
  store: BucketStore
  /** Take the client address from the last X-Forwarded-For entry (the one our balancer appended). */
  trustProxy?: boolean
  clock?: () => number
  /**
   * Whom a credential authenticates, looked up afresh: its company (null for a platform operator); a throw when it
   * authenticates nobody. Asked only for a credential not yet known whose address's anonymous bucket is empty (see
   * `RequestLimits`).
   */
  resolve?: (credential: Credential) => Promise<{ companyId: number | null }>
  /** Told of each refusal: by a credential's bucket (its own or its company's) or an address's. */
  refused?: (limit: 'credential' | 'address') => void
}

/** The policies as the RateLimit fields name them (draft-ietf-httpapi-ratelimit-headers-09 and later). */
export const KEY_POLICY = 'per-credential'
export const ADDRESS_POLICY = 'per-address'
/** The budget every credential of one company draws from as well. */
export const COMPANY_POLICY = 'per-company'

/** The current draft's two fields: the policy (a burst of q, refilled over w seconds) and what is left of it. */
function draftHeaders(policy: string, v: Verdict): Record<string, string> {
  const reset = v.ok ? v.reset : v.retryAfter
  return { 'ratelimit-policy': `"${policy}";q=${v.limit};w=60`, ratelimit: `"${policy}";r=${v.ok ? v.remaining : 0};t=${reset}` }
}

/**
 * Budget headers of an answer. `RateLimit-Policy` (`"per-credential";q=6000;w=60`: a burst of q, refilled over w
 * seconds) and `RateLimit` (`"per-credential";r=<left>;t=<seconds>`) as the current IETF draft writes them; the
 * three fields of its earlier drafts (RateLimit-Limit, -Remaining, -Reset) stay one more release, deprecated. On a
 * refusal the reset is the wait Retry-After names, so every field agrees on when to come back.
 */
export function budgetHeaders(policy: string, v: Verdict): Record<string, string> {
  return {
    ...draftHeaders(policy, v),
    'ratelimit-limit': String(v.limit),
    'ratelimit-remaining': String(v.ok ? v.remaining : 0),
    'ratelimit-reset': String(v.ok ? v.reset : v.retryAfter),
  }
}

/** A credential as a request carries it: an API key, a bearer token (grant or superadmin JWT), or a session cookie. */
export interface Credential {
  kind: 'key' | 'bearer' | 'session'
  value: string
}

/** The credential the limits charge a request to: `x-api-key`, else a bearer, else the session cookie. */
export function credentialOf(request: Request): Credential | null {
  const key = request.headers.get('x-api-key')
  if (key !== null) return { kind: 'key', value: key }
  const bearer = /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1]
  if (bearer !== undefined) return { kind: 'bearer', value: bearer }
  const session = sessionToken(request)
  return session === null ? null : { kind: 'session', value: session }
}

/** A credential's bucket: our keys and grants by their public prefix (never the secret), anything else by a digest. */
const bucketOf = (c: Credential) => (c.kind === 'session' ? `s:${sha256(c.value).slice(0, 32)}` : `k:${bucketId(c.value)}`)
const memoryId = (c: Credential) => `${c.kind}:${sha256(c.value)}`

const refusal = (v: Verdict, headers: Record<string, string>) =>
  new ApiError(429, 'RATE_LIMITED', 'Too many requests; retry later', undefined, { 'retry-after': String(v.retryAfter), ...headers })

/** How many credentials that authenticated a process remembers (with their company), the least recently seen going first. */
const REMEMBERED = 10_000

/**
 * Token buckets (a burst up to the per-minute figure, refilled continuously, counted in `store`) along three keys:
 *
 * - a credential the service knows (`RATE_LIMIT_PER_MINUTE`), and its company's total over all its credentials
 *   (`RATE_LIMIT_COMPANY_PER_MINUTE`), so minting keys multiplies nothing;
 * - the client address (`RATE_LIMIT_IP_PER_MINUTE`) for everything else: requests with no credential, and requests
 *   whose credential this process has not seen authenticate. A junk `x-api-key` or bearer therefore draws from its
 *   address's anonymous bucket, as if it had sent none, and leaves no bucket (no database row) of its own behind.
 *
 * A credential is known once it authenticated in this process (`authenticated`, called by the route policy and the
 * superadmin check); until then, its request is charged to its address on arrival and to the credential and company
 * once it authenticates, before its body is read. Known credentials are charged on arrival, with no lookup. When the
 * address's anonymous bucket is empty, a credential not yet known is looked up there and then (`resolve`), so someone
 * draining the anonymous budget of an address shared with others (a branch behind one NAT) cannot keep their keys
 * and sessions from their first request in a process; only a credential that authenticates nobody is then refused.
 * Answers to a known credential carry the budget headers (`budgetHeaders`), answers charged to an address that
 * address's (`draftHeaders`); a refusal is 429 RATE_LIMITED with Retry-After. The probes (`isProbe`) are never charged.
 */
export class RequestLimits {
  private readonly take: ReturnType<typeof limiter>
  private readonly known = new LRUCache<string, { companyId: number | null }>({ max: REMEMBERED })
  /** Requests already charged to their credential (and company), which `authenticated` must not charge again. */
  private readonly charged = new WeakSet<Request>()

  constructor(
    private readonly limits: RateLimits,
    private readonly opts: RateLimitOptions,
  ) {
    this.take = limiter(opts.store, opts.clock)
  }

  /** The company a request's credential authenticated as before, in this process; undefined when it never did. */
  recognised(request: Request): { companyId: number | null } | undefined {
    const c = credentialOf(request)
    return c ? this.known.get(memoryId(c)) : undefined
  }

  /** Charges an arriving request; the 429 answer when a bucket is empty. */
  async arrival(request: Request, server: Peer, headers: Record<string, string | number>): Promise<Response | undefined> {
    if (isProbe(request)) return
    const credential = credentialOf(request)
    const known = credential ? this.known.get(memoryId(credential)) : undefined
    if (credential && known) {
      this.charged.add(request)
      try {
        await this.charge(credential, known.companyId, headers)
      } catch (e) {
        if (e instanceof ApiError) return apiErrorResponse(e)
        throw e
      }
      return
    }
    if (this.limits.perIp <= 0) return
    const v = await this.take(`ip:${clientAddress(request, server, this.opts.trustProxy ?? false) ?? 'unknown'}`, this.limits.perIp)
    // The address's budget is told in the current draft's fields only.
    Object.assign(headers, draftHeaders(ADDRESS_POLICY, v))
    if (v.ok) return
    const whose = credential && this.opts.resolve ? await this.opts.resolve(credential).catch(() => null) : null
    if (whose === null) {
      this.opts.refused?.('address')
      return apiErrorResponse(refusal(v, draftHeaders(ADDRESS_POLICY, v)))
    }
    try {
      await this.authenticated(request, credential!, whose.companyId, headers)
    } catch (e) {
      if (e instanceof ApiError) return apiErrorResponse(e)
      throw e
    }
  }

  /**
   * A request's credential authenticated as a caller of `companyId`: remembered, and charged now unless it was on
   * arrival. Throws 429 RATE_LIMITED when the credential's or the company's bucket is empty.
   */
  async authenticated(request: Request, credential: Credential, companyId: number | null, headers: Record<string, string | number>) {
    this.known.set(memoryId(credential), { companyId })
    if (this.charged.has(request)) return
    this.charged.add(request)
    await this.charge(credential, companyId, headers)
  }

  private async charge(credential: Credential, companyId: number | null, headers: Record<string, string | number>) {
    const { perKey, perCompany } = this.limits
    if (perKey > 0) {
      const v = await this.take(bucketOf(credential), perKey)
      Object.assign(headers, budgetHeaders(KEY_POLICY, v))
      if (!v.ok) {
        this.opts.refused?.('credential')
        throw refusal(v, budgetHeaders(KEY_POLICY, v))
      }
    }
    if (perCompany > 0 && companyId !== null) {
      const v = await this.take(`c:${companyId}`, perCompany)
      if (!v.ok) {
        this.opts.refused?.('credential')
        Object.assign(headers, budgetHeaders(COMPANY_POLICY, v))
        throw refusal(v, budgetHeaders(COMPANY_POLICY, v))
      }
    }
  }
}

const registry = new WeakMap<AppContext, RequestLimits>()

/** The limits of one app: one set of buckets, shared by the plugin and by whoever authenticates a credential. */
export function requestLimits(app: AppContext): RequestLimits {
  const made = registry.get(app)
  if (made) return made
  const telemetry = telemetryOf(app)
  const operators = superadminVerifier(app.config.superadmin)
  const limits = new RequestLimits(app.config.rateLimit, {
    store: app.database.kind === 'postgres' ? postgresBuckets(app.database) : memoryBuckets(),
    trustProxy: app.config.trustProxy,
    refused: telemetry && ((limit) => telemetry.rateLimited.inc({ limit })),
    resolve: async (c) => {
      if (c.kind === 'key') return authenticateKey(app.db, c.value)
      if (c.kind === 'session') return authenticateSession(app.db, c.value, app.clock())
      if (c.value.startsWith(`${GRANT_KIND}_`)) return authenticateGrant(app.db, c.value, app.clock())
      await operators(`Bearer ${c.value}`)
      return { companyId: null }
    },
  })
  registry.set(app, limits)
  return limits
}

/** The limits of `requestLimits`, charged on every request's arrival (the probes excepted). */
export function rateLimit(limits: RequestLimits) {
  return new Elysia({ name: 'rate-limit' }).onRequest(({ request, server, set }) => limits.arrival(request, server, set.headers))
}
