import { describe, expect, test } from 'bun:test'
import { buildTestApp } from '../helpers'

describe('rate limits', () => {
  test('a key over its per-minute budget gets 429 with Retry-After; another key is unaffected', async () => {
    // Companies come from the limited app itself: on PGlite every app has its own in-memory database.
    const t = await buildTestApp({ rateLimit: { perKey: 100, perIp: 0 } })
    const c = await t.newCompany()
    const other = await t.newCompany()
    t.ctx.config.rateLimit.perKey = 3
    const statuses: number[] = []
    for (let i = 0; i < 5; i++) statuses.push((await t.request('GET', '/api/employees', { key: c.key })).status)
    expect(statuses).toEqual([200, 200, 200, 429, 429])
    const limited = await t.request('GET', '/api/employees', { key: c.key })
    expect(limited.body).toEqual({ error: expect.any(String), code: 'RATE_LIMITED' })
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect((await t.request('GET', '/api/employees', { key: other.key })).status).toBe(200)
  }, 60_000)

  test('requests without a credential are limited per address', async () => {
    const t = await buildTestApp({ rateLimit: { perKey: 0, perIp: 2 } })
    const statuses: number[] = []
    for (let i = 0; i < 3; i++) statuses.push((await t.request('GET', '/health')).status)
    expect(statuses).toEqual([200, 200, 429])
  }, 60_000)
})
