import { Elysia } from 'elysia'
import { sql } from 'drizzle-orm'
import type { Database } from '../../db/client'
import { sha256 } from '../lib/secrets'

export interface RateLimits {
  /** Requests per minute per API key or bearer credential; 0 turns the limit off. */
  perKey: number
  /** Requests per minute per client address for requests without a credential; 0 turns it off. */
  perIp: number
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

/** The probes: liveness, readiness and the metrics scrape (which has its own token). */
const PROBE = /^[a-z]+:\/\/[^/]+\/(health|health\/ready|metrics)(\?|$)/

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
  /** Told of each refusal: by a credential's bucket or an address's. */
  refused?: (limit: 'credential' | 'address') => void
}

/** The policy as the RateLimit fields name it (draft-ietf-httpapi-ratelimit-headers-09 and later). */
export const KEY_POLICY = 'per-credential'

/**
 * Budget headers of an answer. `RateLimit-Policy` (`"per-credential";q=6000;w=60`: a burst of q, refilled over w
 * seconds) and `RateLimit` (`"per-credential";r=<left>;t=<seconds>`) as the current IETF draft writes them; the
 * three fields of its earlier drafts (RateLimit-Limit, -Remaining, -Reset) stay one more release, deprecated. On a
 * refusal the reset is the wait Retry-After names, so every field agrees on when to come back.
 */
export function budgetHeaders(policy: string, v: Verdict): Record<string, string> {
  const reset = v.ok ? v.reset : v.retryAfter
  const remaining = v.ok ? v.remaining : 0
  return {
    'ratelimit-policy': `"${policy}";q=${v.limit};w=60`,
    ratelimit: `"${policy}";r=${remaining};t=${reset}`,
    'ratelimit-limit': String(v.limit),
    'ratelimit-remaining': String(remaining),
    'ratelimit-reset': String(reset),
  }
}

/**
 * Token buckets per credential (keyed by its public prefix, never the secret) or, without one, per client address:
 * a burst up to the per-minute figure, refilled continuously, counted in `store`. Answers to a credential carry the
 * budget headers (`budgetHeaders`); a refusal is 429 RATE_LIMITED with Retry-After.
 */
export function rateLimit(limits: RateLimits, opts: RateLimitOptions) {
  const take = limiter(opts.store, opts.clock)
  return new Elysia({ name: 'rate-limit' }).onRequest(async ({ request, server, set }) => {
    // A balancer probes every process from one address; refusing it would take healthy processes out of rotation.
    // A scrape must not wait for a bucket in the database it may be reporting as down.
    if (PROBE.test(request.url)) return
    const credential =
      request.headers.get('x-api-key') ?? /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1] ?? null
    let v: Verdict | null = null
    if (credential) {
      if (limits.perKey > 0) {
        v = await take(`k:${bucketId(credential)}`, limits.perKey)
        Object.assign(set.headers, budgetHeaders(KEY_POLICY, v))
      }
    } else if (limits.perIp > 0) {
      const forwarded = opts.trustProxy ? request.headers.get('x-forwarded-for')?.split(',').pop()?.trim() : undefined
      v = await take(`ip:${forwarded || server?.requestIP(request)?.address || 'unknown'}`, limits.perIp)
    }
    if (v && !v.ok) {
      opts.refused?.(credential ? 'credential' : 'address')
      const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8', 'retry-after': String(v.retryAfter) }
      if (credential) Object.assign(headers, budgetHeaders(KEY_POLICY, v))
      return new Response(JSON.stringify({ error: 'Too many requests; retry later', code: 'RATE_LIMITED' }), { status: 429, headers })
    }
  })
}
