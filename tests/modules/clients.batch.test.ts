import { beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { testApp, type TestApp } from '../helpers'

beforeAll(async () => {
  await testApp()
}, 120_000)

const batch = (t: TestApp, key: string, clients: unknown[], headers?: Record<string, string>) =>
  t.request('POST', '/api/clients/batch', { key, body: { clients }, headers })

async function tag(t: TestApp, key: string, name: string) {
  const res = await t.request('POST', '/api/tags', { key, body: { name, color: '#112233' } })
  expect(res.status).toBe(201)
  return res.body.id as number
}

const items = (vip: number, mayorista: number) => [
  { name: 'Caja Central', type: 0, accounts: [{ currency_name: 'ARS' }, { name: 'Dólares', currency_name: 'USD' }] },
  { name: 'Juan', description: 'cliente "mayorista", con \\ barra', type: 1, tag_ids: [vip, mayorista] },
  { name: 'Ana', type: 1, accounts: [{ currency_name: 'EUR' }], tag_ids: [mayorista] },
]

/** Audit rows of a company's clients, accounts and client tags without ids and times. */
async function auditOf(t: TestApp, companyId: number) {
  const rows = await t.ctx.database.rows<{ line: string }>(sql`
    select entity || ' ' || action || ' ' || coalesce(after->>'name', '') || ' ' || coalesce(after->>'currency_name', '') as line
    from audit_logs where company_id = ${companyId} and entity in ('clients', 'accounts', 'client_tags')`)
  return rows.map((r) => r.line).sort()
}

describe('POST /api/clients/batch', () => {
  test('creates every client with its accounts and tags, in order, as single creates would', async () => {
    const t = await testApp()
    const single = await t.newCompany()
    const batched = await t.newCompany()
    const singleItems = items(await tag(t, single.key, 'VIP'), await tag(t, single.key, 'Mayorista'))
    for (const body of singleItems) expect((await t.request('POST', '/api/clients', { key: single.key, body })).status).toBe(201)

    const res = await batch(t, batched.key, items(await tag(t, batched.key, 'VIP'), await tag(t, batched.key, 'Mayorista')))
    expect(res.status).toBe(201)
    const data = res.body.data as any[]
    expect(data.map((c) => c.name)).toEqual(['Caja Central', 'Juan', 'Ana'])
    expect(data[0].accounts.map((a: any) => [a.name, a.currency_name, a.balance])).toEqual([
      ['ARS', 'ARS', 0],
      ['Dólares', 'USD', 0],
    ])
    expect(data[1].description).toBe('cliente "mayorista", con \\ barra')
    expect(data[1].client_tags.map((ct: any) => ct.tag.name)).toEqual(['VIP', 'Mayorista'])
    for (const c of data) expect((await t.request('GET', `/api/clients/${c.id}`, { key: batched.key })).body).toEqual(c)
    expect(await auditOf(t, batched.id)).toEqual(await auditOf(t, single.id))
  })

  test('reports every bad item at once and writes nothing', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const other = await t.newCompany()
    const mine = await tag(t, c.key, 'Mío')
    const theirs = await tag(t, other.key, 'Ajeno')
    const res = await batch(t, c.key, [
      { name: 'Bien', type: 1, tag_ids: [mine] },
      { name: 'Ajeno', type: 1, tag_ids: [mine, theirs] },
      { name: 'Bien', type: 0 },
      { name: 'Inexistente', type: 1, tag_ids: [2147483647] },
    ])
    expect(res.status).toBe(422)
    expect(res.body.code).toBe('BATCH_ITEM_INVALID')
    expect(res.body.details).toMatchObject([
      { index: 1, code: 'UNKNOWN_TAG', details: [{ field: 'tag_ids', message: `unknown tag ${theirs}` }] },
      { index: 3, code: 'UNKNOWN_TAG' },
    ])
    const [{ n }] = await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from clients where company_id = ${c.id}`)
    expect(n).toBe(0)
  })

  test('bounds, Idempotency-Key over the whole batch, and the permission of the single create', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    expect((await batch(t, c.key, [])).status).toBe(400)
    expect((await batch(t, c.key, Array.from({ length: 1001 }, () => ({ name: 'x', type: 1 })))).status).toBe(400)
    expect((await batch(t, c.key, [{ type: 1 }])).status).toBe(400)
    const full = await batch(t, c.key, Array.from({ length: 1000 }, (_, i) => ({ name: `Cliente ${i}`, type: 1, accounts: [{ currency_name: 'ARS' }] })))
    expect(full.status).toBe(201)
    expect(full.body.data.map((x: any) => x.name)).toEqual(Array.from({ length: 1000 }, (_, i) => `Cliente ${i}`))

    const body = [{ name: 'Uno', type: 1 }]
    const first = await batch(t, c.key, body, { 'Idempotency-Key': 'alta-1' })
    const again = await batch(t, c.key, body, { 'Idempotency-Key': 'alta-1' })
    expect(again.status).toBe(201)
    expect(again.body.data[0].id).toBe(first.body.data[0].id)
    expect((await batch(t, c.key, [{ name: 'Dos', type: 1 }], { 'Idempotency-Key': 'alta-1' })).status).toBe(409)

    const viewer = await c.employee(['clients.view'])
    expect((await batch(t, viewer.key, body)).status).toBe(403)
    const editor = await c.employee(['clients.edit'])
    expect((await batch(t, editor.key, body)).status).toBe(201)
  })
})
