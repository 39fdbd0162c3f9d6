import { Elysia } from 'elysia'
import { sha256 } from '../lib/secrets'

export interface RateLimits {
  /** Requests per minute per API key or bearer credential; 0 turns the limit off. */
  perKey: number
  /** Requests per minute per client address for requests without a credential; 0 turns it off. */
  perIp: number
}

/** Our credentials carry a public prefix; anything else (a JWT) is reduced to a digest. */
const bucketId = (credential: string) => /^[a-z]+_[0-9a-f]{12}_/.exec(credential)?.[0] ?? sha256(credential).slice(0, 32)

interface Bucket {
  tokens: number
  at: number
}

/**
 * Token buckets in this process: a burst up to the per-minute figure, refilled continuously.
 * Keyed by the credential's public prefix (never the secret) or by address.
 */
export function rateLimit(limits: RateLimits, clock: () => number = () => Date.now()) {
  const buckets = new Map<string, Bucket>()
  let lastSweep = clock()

  function take(id: string, perMinute: number): number {
    const now = clock()
    if (now - lastSweep > 60_000) {
      for (const [k, b] of buckets) if (now - b.at > 120_000) buckets.delete(k)
      lastSweep = now
    }
    const rate = perMinute / 60_000
    const b = buckets.get(id) ?? { tokens: perMinute, at: now }
    b.tokens = Math.min(perMinute, b.tokens + (now - b.at) * rate)
    b.at = now
    buckets.set(id, b)
    if (b.tokens >= 1) {
      b.tokens -= 1
      return 0
    }
    return Math.ceil((1 - b.tokens) / rate / 1000)
  }

  return new Elysia({ name: 'rate-limit' }).onRequest(({ request, server }) => {
    const credential =
      request.headers.get('x-api-key') ?? /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1] ?? null
    let wait = 0
    if (credential) {
      if (limits.perKey > 0) wait = take(`k:${bucketId(credential)}`, limits.perKey)
    } else if (limits.perIp > 0) {
      wait = take(`ip:${server?.requestIP(request)?.address ?? 'unknown'}`, limits.perIp)
    }
    if (wait > 0)
      return new Response(JSON.stringify({ error: 'Too many requests; retry later', code: 'RATE_LIMITED' }), {
        status: 429,
        headers: { 'content-type': 'application/json; charset=utf-8', 'retry-after': String(wait) },
      })
  })
}
