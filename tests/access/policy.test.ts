import { describe, expect, test } from 'bun:test'
import { Elysia, t } from 'elysia'
import { sql } from 'drizzle-orm'
import { routePolicy } from '../../server/access/policy'
import { testApp } from '../helpers'

describe('route policy', () => {
  test('a handler whose work fails late keeps nothing of it; one that succeeds commits all of it', async () => {
    const t0 = await testApp()
    const c = await t0.newCompany()
    const succeed = async (tx: any) => {
      await tx.execute(sql`select pg_sleep(0.05)`)
      await tx.execute(sql`insert into tags (company_id, name, color) values (current_setting('app.company_id')::int, 'probe', '#000000')`)
      return { ok: true }
    }
    const fail = async (tx: any) => {
      await tx.execute(sql`insert into tags (company_id, name, color) values (current_setting('app.company_id')::int, 'never', '#000000')`)
      await tx.execute(sql`select pg_sleep(0.05)`)
      throw new Error('late failure')
    }
    // Nothing in this handler's text tells the framework it is asynchronous: `run` owns the work either way.
    function probe({ run, body }: { run: (work: (tx: unknown) => Promise<unknown>) => Promise<unknown>; body: { fail: boolean } }) {
      return run((tx) => (body.fail ? fail(tx) : succeed(tx)))
    }
    const app = new Elysia().use(routePolicy(t0.ctx)).post('/probe', probe as never, { policy: { tx: 'write' }, body: t.Object({ fail: t.Boolean() }) })
    const call = (fail: boolean) =>
      app.handle(new Request('http://localhost/probe', { method: 'POST', headers: { 'x-api-key': c.key, 'content-type': 'application/json' }, body: JSON.stringify({ fail }) }))
    const ok = await call(false)
    expect(ok.status).toBe(200)
    expect(await ok.json()).toEqual({ ok: true })
    const tags = await t0.request('GET', '/api/tags', { key: c.key })
    expect(tags.body.data.map((x: { name: string }) => x.name)).toEqual(['probe'])
    const failed = await call(true)
    expect(failed.status).toBeGreaterThanOrEqual(400)
    const after = await t0.request('GET', '/api/tags', { key: c.key })
    expect(after.body.data.map((x: { name: string }) => x.name)).toEqual(['probe'])
  })

  test('routes with a body document application/json only, with the body schema', async () => {
    const t0 = await testApp()
    const doc = (await t0.request('GET', '/openapi.json')).body
    const body = doc.paths['/api/operations'].post.requestBody
    expect(Object.keys(body.content)).toEqual(['application/json'])
    expect(body.content['application/json'].schema.required).toContain('transactions')
  })
})

describe('Idempotency-Key scope', () => {
  test('repro: a key is replayed only to the caller that chose it; a scoped employee never gets another caller\'s operation', async () => {
    const t0 = await testApp()
    const c = await t0.newCompany()
    const type = (await t0.request('POST', '/api/operation-types', { key: c.key, body: { name: 'Mov', kind: 'other' } })).body
    const client = async (name: string) => (await t0.request('POST', '/api/clients', { key: c.key, body: { name, type: 1, accounts: [{ currency_name: 'ARS' }] } })).body
    const mine = await client('Propio')
    const theirs = await client('Ajeno')
    const scoped = await c.employee(['operations.create', 'operations.view'], [mine.id])
    const create = (key: string, clientRow: { id: number; accounts: { id: number }[] }, idempotencyKey: string) =>
      t0.request('POST', '/api/operations', {
        key,
        headers: { 'idempotency-key': idempotencyKey },
        body: { operation_type_id: type.id, client_id: clientRow.id, transactions: [{ account_id: clientRow.accounts[0].id, amount: '10' }] },
      })
    const shared = `shared-${Date.now()}`
    const first = await create(c.key, theirs, shared)
    expect(first.status).toBe(201)
    // The same request and key from the scoped employee: answered as without the key, never the company's 201.
    const withKey = await create(scoped.key, theirs, shared)
    const withoutKey = await create(scoped.key, theirs, `fresh-${Date.now()}`)
    expect(withKey.status).not.toBe(201)
    expect([withKey.status, withKey.body.code]).toEqual([withoutKey.status, withoutKey.body.code])
    expect(JSON.stringify(withKey.body)).not.toContain(`"id":${first.body.id},`)
    // Another body under the same key is the employee's own first use of it, not a conflict with someone else's.
    const own = await create(scoped.key, mine, shared)
    expect(own.status).toBe(201)
    expect(own.body.id).not.toBe(first.body.id)
    // Each caller's own replay still answers its own first response.
    expect((await create(scoped.key, mine, shared)).body.id).toBe(own.body.id)
    expect((await create(c.key, theirs, shared)).body.id).toBe(first.body.id)
    // Two company keys are the company itself: they share their keys.
    const second = (await t0.request('POST', '/api/api-keys', { key: c.key, body: { name: 'otra' } })).body.key
    expect((await create(second, theirs, shared)).body.id).toBe(first.body.id)
  })
})
