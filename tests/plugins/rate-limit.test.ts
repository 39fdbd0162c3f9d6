import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { buildTestApp, postgresTest } from '../helpers'
import { loadConfig } from '../../server/config'
import { limiter, memoryBuckets, postgresBuckets, type BucketStore } from '../../server/plugins/rate-limit'

describe('rate limits', () => {
  test('a key over its per-minute budget gets 429 with Retry-After; another key is unaffected', async () => {
    // Companies come from the limited app itself: on PGlite every app has its own in-memory database.
    const t = await buildTestApp({ rateLimit: { perKey: 100, perIp: 0, perCompany: 0 } })
    const c = await t.newCompany()
    const other = await t.newCompany()
    t.ctx.config.rateLimit.perKey = 3
    const statuses: number[] = []
    for (let i = 0; i < 5; i++) statuses.push((await t.request('GET', '/api/employees', { key: c.key })).status)
    expect(statuses).toEqual([200, 200, 200, 429, 429])
    const limited = await t.request('GET', '/api/employees', { key: c.key })
    expect(limited.body).toEqual({ error: expect.any(String), code: 'RATE_LIMITED' })
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    // Every field agrees on when to come back.
    const wait = limited.headers.get('retry-after')
    expect(limited.headers.get('ratelimit-reset')).toBe(wait)
    expect(limited.headers.get('ratelimit')).toBe(`"per-credential";r=0;t=${wait}`)
    expect(limited.headers.get('ratelimit-policy')).toBe('"per-credential";q=3;w=60')
    expect((await t.request('GET', '/api/employees', { key: other.key })).status).toBe(200)
  }, 60_000)

  test('answers to a credential carry RateLimit-Limit, -Remaining and -Reset, errors included', async () => {
    const t = await buildTestApp({ rateLimit: { perKey: 100, perIp: 0, perCompany: 0 } })
    const c = await t.newCompany()
    const first = await t.request('GET', '/api/employees', { key: c.key })
    const second = await t.request('GET', '/api/employees', { key: c.key })
    expect(first.headers.get('ratelimit-limit')).toBe('100')
    const [r1, r2] = [Number(first.headers.get('ratelimit-remaining')), Number(second.headers.get('ratelimit-remaining'))]
    expect(r1).toBeLessThan(100)
    expect(r2).toBe(r1 - 1)
    expect(Number(second.headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(1)
    // The IETF draft's fields say the same: the policy, and what is left of it.
    expect(second.headers.get('ratelimit-policy')).toBe('"per-credential";q=100;w=60')
    expect(second.headers.get('ratelimit')).toBe(`"per-credential";r=${r2};t=${second.headers.get('ratelimit-reset')}`)
    // A key nobody has is no credential of anyone's: charged to its address, with no budget of its own to report.
    const unknown = await t.request('GET', '/api/employees', { key: 'fos_000000000000_nothing' })
    expect(unknown.status).toBe(401)
    expect(unknown.headers.get('ratelimit-limit')).toBeNull()
    // Answers without a credential carry no credential budget.
    expect((await t.request('GET', '/openapi.json')).headers.get('ratelimit-limit')).toBeNull()
  }, 60_000)

  test('requests without a credential are limited per address, and told the address\'s budget in the draft\'s fields', async () => {
    const t = await buildTestApp({ rateLimit: { perKey: 0, perIp: 2, perCompany: 0 } })
    const answers = []
    for (let i = 0; i < 3; i++) answers.push(await t.request('GET', '/openapi.json'))
    expect(answers.map((a) => a.status)).toEqual([200, 200, 429])
    expect(answers[0].headers.get('ratelimit-policy')).toBe('"per-address";q=2;w=60')
    expect(answers[1].headers.get('ratelimit')).toMatch(/^"per-address";r=0;t=[0-9]+$/)
    expect(answers[0].headers.get('ratelimit-limit')).toBeNull()
    const wait = answers[2].headers.get('retry-after')
    expect(answers[2].headers.get('ratelimit')).toBe(`"per-address";r=0;t=${wait}`)
    // Health checks of a balancer come from one address and must never be refused.
    for (let i = 0; i < 3; i++) expect((await t.request('GET', '/health')).status).toBe(200)
  }, 60_000)

  postgresTest('repro: junk x-api-key and Bearer values draw from their address\'s anonymous bucket and leave no row behind', async () => {
    const t = await buildTestApp({ trustProxy: true, rateLimit: { perKey: 100, perIp: 0, perCompany: 0 } })
    const c = await t.newCompany()
    const from = (address: string, headers: Record<string, string>) => t.request('GET', '/api/tags', { headers: { 'x-forwarded-for': address, ...headers } })
    const address = `198.51.100.${process.pid % 250}`
    const rows = async () =>
      Number((await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from rate_limit_buckets`))[0].n)
    const before = await rows()
    t.ctx.config.rateLimit.perIp = 4
    const statuses: number[] = []
    for (let i = 0; i < 6; i++) statuses.push((await from(address, { 'x-api-key': `fos_${String(i).padStart(12, '0')}_${'j'.repeat(32)}` })).status)
    for (let i = 0; i < 3; i++) statuses.push((await from(address, { authorization: `Bearer junk-${i}-${Date.now()}` })).status)
    // Four anonymous tokens, whatever each request claimed to be: then 429, as without a header at all.
    expect(statuses).toEqual([401, 401, 401, 401, 429, 429, 429, 429, 429])
    expect((await from(address, {})).status).toBe(429)
    // One bucket row for the address, none per junk value.
    expect((await rows()) - before).toBe(1)
    // A real key of the company is served from that address all the same: looked up once, then charged to itself.
    const served = await from(address, { 'x-api-key': c.key })
    expect(served.status).toBe(200)
    expect(served.headers.get('ratelimit-limit')).toBe('100')
    expect((await from(address, { 'x-api-key': c.key })).status).toBe(200)
    // Another address is unaffected.
    expect((await from(`${address}1`, { 'x-api-key': 'fos_000000000000_nothing' })).status).toBe(401)
  }, 60_000)

  test('one company\'s keys share a company total: minting keys multiplies nothing; other companies are unaffected', async () => {
    const t = await buildTestApp({ rateLimit: { perKey: 100, perIp: 0, perCompany: 0 } })
    const c = await t.newCompany()
    const other = await t.newCompany()
    const keys = [c.key]
    for (let i = 0; i < 2; i++) keys.push((await t.request('POST', '/api/api-keys', { key: c.key, body: { name: `k${i}` } })).body.key)
    t.ctx.config.rateLimit.perCompany = 6
    const statuses: number[] = []
    for (let i = 0; i < 9; i++) statuses.push((await t.request('GET', '/api/tags', { key: keys[i % 3] })).status)
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429, 429])
    const limited = await t.request('GET', '/api/tags', { key: keys[2] })
    expect(limited.body).toEqual({ error: expect.any(String), code: 'RATE_LIMITED' })
    expect(limited.headers.get('ratelimit-policy')).toBe('"per-company";q=6;w=60')
    expect(limited.headers.get('retry-after')).toBe(limited.headers.get('ratelimit-reset'))
    expect((await t.request('GET', '/api/tags', { key: other.key })).status).toBe(200)
  }, 60_000)

  test('RATE_LIMIT_COMPANY_PER_MINUTE defaults to four times the per-key figure', () => {
    expect(loadConfig({}).rateLimit).toEqual({ perKey: 6000, perIp: 600, perCompany: 24_000 })
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: '100' }).rateLimit.perCompany).toBe(400)
    expect(loadConfig({ RATE_LIMIT_COMPANY_PER_MINUTE: '50' }).rateLimit.perCompany).toBe(50)
  })

  test('a bucket refills at the per-minute rate, up to the per-minute figure', async () => {
    let now = 1_000_000
    const take = limiter(memoryBuckets(() => now), () => now)
    let accepted = 0
    for (let i = 0; i < 80; i++) if ((await take('k', 60)).ok) accepted++
    expect(accepted).toBe(60)
    const refused = await take('k', 60)
    expect(refused.ok).toBe(false)
    expect(refused.retryAfter).toBe(1)
    now += 10_000
    accepted = 0
    for (let i = 0; i < 20; i++) if ((await take('k', 60)).ok) accepted++
    expect(accepted).toBe(10)
  })

  postgresTest('processes share one budget through Postgres, and most requests make no round trip', async () => {
    const t = await buildTestApp()
    let leases = 0
    const shared = postgresBuckets(t.ctx.database)
    const counted: BucketStore = { ...shared, take: (...a) => (leases++, shared.take(...a)) }
    // Three processes: three limiters with their own leases over the one table.
    const processes = [limiter(counted), limiter(counted), limiter(counted)]
    const bucket = `k:test_${process.pid}_${Date.now()}`
    const started = performance.now()
    let accepted = 0
    const perMinute = 600
    await Promise.all(
      processes.map(async (take) => {
        for (let i = 0; i < 400; i++) if ((await take(bucket, perMinute)).ok) accepted++
      }),
    )
    const refill = ((performance.now() - started) / 60_000) * perMinute
    expect(accepted).toBeLessThanOrEqual(perMinute + Math.ceil(refill))
    // Leases shrink near the bottom of the bucket rather than strand tokens in one process.
    expect(accepted).toBeGreaterThanOrEqual(perMinute * 0.9)

    // The common case: a generous budget costs one round trip per lease (100 tokens at this size), not per request.
    leases = 0
    const busy = `k:busy_${process.pid}_${Date.now()}`
    for (let i = 0; i < 1000; i++) expect((await processes[i % 3](busy, 60_000)).ok).toBe(true)
    expect(leases).toBeLessThanOrEqual(15)
  }, 60_000)
})
