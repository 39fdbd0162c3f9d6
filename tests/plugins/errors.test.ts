import { afterAll, describe, expect, test } from 'bun:test'
import { createServer } from 'node:net'
import { Elysia } from 'elysia'
import postgres from 'postgres'
import { errors } from '../../server/plugins/errors'
import { postgresTest, testApp } from '../helpers'

/** A loopback port nothing listens on: bound once, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

describe('database failures that are not the caller’s fault', () => {
  const logged: Record<string, unknown>[] = []
  const clients: postgres.Sql[] = []
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.end({ timeout: 1 })))
  })

  const appRunning = (work: () => Promise<unknown>) =>
    new Elysia().use(errors((entry) => logged.push(entry))).get('/work', async () => {
      await work()
      return { ok: true }
    })

  test('a database that refuses the connection answers 503 with Retry-After, not 500', async () => {
    const sql = postgres(`postgres://postgres@127.0.0.1:${await closedPort()}/none`, { max: 1, connect_timeout: 2, onnotice: () => {} })
    clients.push(sql)
    const res = await appRunning(() => sql`select 1`).handle(new Request('http://local/work'))
    expect(res.status).toBe(503)
    expect(res.headers.get('retry-after')).toBe('1')
    expect(await res.json()).toEqual({ error: 'The service is busy; retry shortly', code: 'SERVICE_UNAVAILABLE' })
    expect(logged.at(-1)).toMatchObject({ level: 'warn', msg: 'database unavailable' })
  })

  postgresTest('a statement cancelled by its timeout answers 503, not 500', async () => {
    const sql = postgres(process.env.TEST_DATABASE_URL!, { max: 1, onnotice: () => {} })
    clients.push(sql)
    const res = await appRunning(() =>
      sql.begin(async (tx) => {
        await tx`set local statement_timeout = 50`
        await tx`select pg_sleep(2)`
      }),
    ).handle(new Request('http://local/work'))
    expect(res.status).toBe(503)
    expect((await res.json()).code).toBe('SERVICE_UNAVAILABLE')
  })

  test('other database failures stay 500 and are logged as unhandled', async () => {
    const failure = Object.assign(new Error('relation "nowhere" does not exist'), { code: '42P01' })
    const res = await appRunning(() => Promise.reject(failure)).handle(new Request('http://local/work'))
    expect(res.status).toBe(500)
    expect(logged.at(-1)).toMatchObject({ level: 'error', msg: 'unhandled' })
  })
})

describe('validation answers name what is wrong with the body as sent', () => {
  test('a field of the wrong type is one error at that field, not one per character of it; unknown fields stay ignored', async () => {
    const t = await testApp()
    const c = await t.newCompany({ ventanilla: true })
    const rates = await t.request('PUT', '/api/ventanilla/rates', { key: c.key, body: { rates: 'USD', note: 'ignored' } })
    expect([rates.status, rates.body.code]).toEqual([400, 'VALIDATION_ERROR'])
    expect(rates.body.details).toEqual([{ field: 'rates', message: 'must be an array' }])
    const number = await t.request('PUT', '/api/ventanilla/rates', { key: c.key, body: { rates: 7 } })
    expect(number.body.details).toEqual([{ field: 'rates', message: 'must be an array' }])
    // Any route, any depth.
    const accounts = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Ana', type: 1, accounts: 'USD' } })
    expect([accounts.status, accounts.body.details]).toEqual([400, [{ field: 'accounts', message: 'must be an array' }]])
    const item = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Ana', type: 1, accounts: ['USD'] } })
    expect([item.status, item.body.details]).toEqual([400, [{ field: 'accounts.0', message: 'must be an object' }]])
    // What is really wrong inside a well-formed array is still named item by item.
    const missing = await t.request('PUT', '/api/ventanilla/rates', { key: c.key, body: { rates: [{ currency: 'USD', buy: 1 }] } })
    expect(missing.body.details).toEqual([{ field: 'rates.0.sell', message: 'required' }])
  })
})
