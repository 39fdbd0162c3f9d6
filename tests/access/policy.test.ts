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
