import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { postgresTest, testApp, type TestApp } from '../helpers'

/*
 * A key's caller is remembered by the process after its first lookup and confirmed inside each request's own
 * transaction. These tests change the key's rows behind the process's back (straight in the database, as another
 * server process would) and check that the very next request is answered as a fresh lookup would answer it.
 */

const tagNames = async (t: TestApp, key: string) => (await t.request('GET', '/api/tags', { key })).body.data?.map((x: { name: string }) => x.name)

/** The clients page (one statement, no transaction, so its key is looked up at every request), with the log entries of the run gathered in `logged`. */
async function clientsPage(t: TestApp, logged: Record<string, unknown>[]) {
  const c = await t.newCompany()
  await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Alta', type: 1 } })
  const emp = await c.employee(['clients.view'])
  expect((await t.request('GET', '/api/clients', { key: emp.key })).body.count).toBe(1)

  await t.ctx.db.execute(sql`update employees set name = 'Renamed' where id = ${emp.id}`)
  const again = await t.request('GET', '/api/clients', { key: emp.key, headers: { 'x-request-id': 'page-after-rename' } })
  expect(again.status).toBe(200)
  expect(again.body.data.map((x: { name: string }) => x.name)).toEqual(['Alta'])
  // One request, answered once: nothing is made again behind the caller's back.
  expect(logged.filter((e) => e.msg === 'request' && e.id === 'page-after-rename').map((e) => e.status)).toEqual([200])

  await t.ctx.db.execute(sql`update employees set permissions = array[]::text[] where id = ${emp.id}`)
  const withdrawn = await t.request('GET', '/api/clients', { key: emp.key })
  expect(withdrawn.status).toBe(403)
  await t.ctx.db.execute(sql`update employees set permissions = array['clients.view'] where id = ${emp.id}`)
  expect((await t.request('GET', '/api/clients', { key: emp.key })).status).toBe(200)
  await t.ctx.db.execute(sql`update api_keys set revoked_at = now() where employee_id = ${emp.id}`)
  const revoked = await t.request('GET', '/api/clients', { key: emp.key })
  expect(revoked.status).toBe(401)
  expect(revoked.body.code).toBe('UNAUTHORIZED')
}

describe('remembered key callers', () => {
  test('a key revoked in the database is refused at its next request, and that request writes nothing', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const spare = await t.request('POST', `/api/superadmin/companies/${c.id}/api-keys`, { bearer: await t.superToken(), body: { name: 'spare' } })
    const key = spare.body.key as string
    expect((await t.request('POST', '/api/tags', { key, body: { name: 'first', color: '#000000' } })).status).toBe(201)
    expect(await tagNames(t, key)).toEqual(['first'])

    await t.ctx.db.execute(sql`update api_keys set revoked_at = now() where id = ${spare.body.id}`)
    const write = await t.request('POST', '/api/tags', { key, body: { name: 'second', color: '#000000' } })
    expect(write.status).toBe(401)
    expect(write.body.code).toBe('UNAUTHORIZED')
    const read = await t.request('GET', '/api/tags', { key })
    expect(read.status).toBe(401)
    expect(await tagNames(t, c.key)).toEqual(['first'])
  })

  test('a deleted employee, a withdrawn or granted permission and a changed scope take effect at the next request', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const mine = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Mine', type: 1 } })
    const theirs = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Theirs', type: 1 } })
    const emp = await c.employee(['clients.view', 'clients.edit'])
    const tag = async () => t.request('POST', '/api/tags', { key: emp.key, body: { name: `t${Math.random()}`, color: '#000000' } })
    expect((await tag()).status).toBe(201)

    await t.ctx.db.execute(sql`update employees set permissions = array['clients.view'] where id = ${emp.id}`)
    const withdrawn = await tag()
    expect(withdrawn.status).toBe(403)
    expect(withdrawn.body.code).toBe('FORBIDDEN')

    await t.ctx.db.execute(sql`update employees set permissions = array['clients.view', 'clients.edit'] where id = ${emp.id}`)
    expect((await tag()).status).toBe(201)

    // Still allowed, but limited to one client since the caller was remembered: the request is made again for the
    // caller as it now is, so the answer already follows the new scope.
    const before = await t.request('GET', `/api/clients/${theirs.body.id}`, { key: emp.key })
    expect(before.status).toBe(200)
    await t.ctx.db.execute(sql`update employees set client_ids = array[${mine.body.id}::int] where id = ${emp.id}`)
    expect((await t.request('GET', `/api/clients/${theirs.body.id}`, { key: emp.key })).status).toBe(404)
    const own = await t.request('GET', `/api/clients/${mine.body.id}`, { key: emp.key })
    expect(own.status).toBe(200)
    expect(own.body.name).toBe('Mine')

    await t.ctx.db.execute(sql`update employees set deleted_at = now() where id = ${emp.id}`)
    expect((await t.request('GET', `/api/clients/${mine.body.id}`, { key: emp.key })).status).toBe(401)
  })

  test('the clients page, which runs no transaction, answers every change of its key at the next request', async () => {
    const logged: Record<string, unknown>[] = []
    const t = await testApp()
    const log = t.ctx.log
    t.ctx.log = (entry) => {
      logged.push(entry)
      log(entry)
    }
    try {
      await clientsPage(t, logged)
    } finally {
      t.ctx.log = log
    }
  })

  postgresTest('under concurrent requests, none sent after a revocation committed is answered as the key', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const spare = await t.request('POST', `/api/superadmin/companies/${c.id}/api-keys`, { bearer: await t.superToken(), body: { name: 'busy' } })
    const key = spare.body.key as string
    expect((await t.request('GET', '/api/tags', { key })).status).toBe(200)
    let revokedAt = Infinity
    let n = 0
    const answers: { sent: number; status: number; tag?: string }[] = []
    const worker = async () => {
      while (n < 600) {
        const i = n++
        const tag = i % 2 === 0 ? `w${i}` : undefined
        const sent = performance.now()
        const r = tag ? await t.request('POST', '/api/tags', { key, body: { name: tag, color: '#000000' } }) : await t.request('GET', '/api/tags', { key })
        answers.push({ sent, status: r.status, tag })
        if (answers.length === 200) {
          await t.ctx.db.execute(sql`update api_keys set revoked_at = now() where id = ${spare.body.id}`)
          revokedAt = performance.now()
        }
      }
    }
    await Promise.all(Array.from({ length: 8 }, worker))
    const after = answers.filter((a) => a.sent > revokedAt)
    expect(after.length).toBeGreaterThan(100)
    expect(after.filter((a) => a.status !== 401)).toEqual([])
    expect(answers.filter((a) => a.status !== 200 && a.status !== 201 && a.status !== 401)).toEqual([])
    // Nothing asked for after the revocation committed was written; what was answered 201 before it was.
    const names = new Set((await tagNames(t, c.key)) as string[])
    expect(after.filter((a) => a.tag && names.has(a.tag))).toEqual([])
    expect(answers.filter((a) => a.status === 201 && !names.has(a.tag!))).toEqual([])
  })

  test('a company module switched in the database is followed at the next request, both ways', async () => {
    const t = await testApp()
    const c = await t.newCompany({ mesas: true })
    expect((await t.request('GET', '/api/mesas', { key: c.key })).status).toBe(200)
    await t.ctx.db.execute(sql`update companies set mesas_enabled = false where id = ${c.id}`)
    const off = await t.request('GET', '/api/mesas', { key: c.key })
    expect(off.status).toBe(403)
    expect(off.body.code).toBe('MESAS_DISABLED')
    await t.ctx.db.execute(sql`update companies set mesas_enabled = true where id = ${c.id}`)
    expect((await t.request('GET', '/api/mesas', { key: c.key })).status).toBe(200)
  })

  test('a changed caller whose work is run again writes once and answers as a fresh lookup would have', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const emp = await c.employee(['clients.view', 'clients.edit'])
    expect((await t.request('GET', '/api/tags', { key: emp.key })).status).toBe(200)
    await t.ctx.db.execute(sql`update employees set name = 'Renamed' where id = ${emp.id}`)
    const created = await t.request('POST', '/api/tags', { key: emp.key, headers: { 'idempotency-key': 'once' }, body: { name: 'only', color: '#000000' } })
    expect(created.status).toBe(201)
    expect(created.body.name).toBe('only')
    expect(await tagNames(t, c.key)).toEqual(['only'])
    const replayed = await t.request('POST', '/api/tags', { key: emp.key, headers: { 'idempotency-key': 'once' }, body: { name: 'only', color: '#000000' } })
    expect(replayed.status).toBe(201)
    expect(replayed.body.id).toBe(created.body.id)
    expect(await tagNames(t, c.key)).toEqual(['only'])
  })
})
