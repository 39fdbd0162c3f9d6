import { beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { testApp, type TestApp } from '../helpers'
import { balanceOf, ledgerCheck, ledgerSetup, seedClient } from './operations.fixtures'

type Setup = Awaited<ReturnType<typeof ledgerSetup>>

beforeAll(async () => {
  await testApp()
}, 120_000)

const batch = (t: TestApp, key: string, operations: unknown[], headers?: Record<string, string>) =>
  t.request('POST', '/api/operations/batch', { key, body: { operations }, headers })

/** A mix that moves one account several times: completed and pending, with and without client and type. */
function mix(s: Setup) {
  const [ars, usd] = s.caja.accounts
  const juan = s.cli.accounts[0]
  return [
    { operation_type_id: s.typeId, client_id: s.cli.id, status: 'completed', transactions: [{ account_id: ars, amount: '100.25' }, { account_id: juan, amount: '-100.25' }] },
    { operation_type_id: s.typeId, description: 'pendiente', transactions: [{ account_id: usd, amount: 7 }, { account_id: ars, amount: -7000 }] },
    { operation_type_id: s.typeId, status: 'completed', date: '2026-02-01', transactions: [{ account_id: ars, amount: '0.1' }, { account_id: ars, amount: '0.2' }, { account_id: juan, amount: '-0.3' }] },
    { operation_type_id: s.typeId, status: 'completed', transactions: [{ account_id: juan, amount: 50 }, { account_id: usd, amount: -1 }] },
  ]
}

/** The audit rows of a company without ids and times: what single creates and a batch must both leave. */
async function auditOf(t: TestApp, companyId: number) {
  const rows = await t.ctx.database.rows<{ entity: string; action: string; fields: string }>(sql`
    select entity, action,
      coalesce((select string_agg(c->>'field' || ':' || coalesce(c->>'before', '∅') || '→' || coalesce(c->>'after', '∅'), ',' order by c->>'field')
                from jsonb_array_elements(changes) c
                where c->>'field' in ('balance', 'amount', 'status', 'currency', 'description', 'is_commission')), '') as fields
    from audit_logs where company_id = ${companyId} and entity in ('operations', 'transactions', 'accounts')`)
  return rows.map((r) => `${r.entity} ${r.action} ${r.fields}`).sort()
}

describe('POST /api/operations/batch', () => {
  test('creates every operation in order, moves balances and writes the audit rows single creates write', async () => {
    const t = await testApp()
    const single = await ledgerSetup(t)
    const batched = await ledgerSetup(t)
    const seen: number[] = []
    t.ctx.events.on('operation.created', async (_tx, events) => {
      for (const e of events) if (e.companyId === batched.c.id) seen.push(e.object.id)
    })

    for (const body of mix(single)) expect((await t.request('POST', '/api/operations', { key: single.c.key, body })).status).toBe(201)
    const res = await batch(t, batched.c.key, mix(batched))
    expect(res.status).toBe(201)
    const data = res.body.data as any[]
    expect(data.map((o) => o.description)).toEqual(['', 'pendiente', '', ''])
    expect(data.map((o) => o.status)).toEqual(['completed', 'pending', 'completed', 'completed'])
    expect(data[0]).toMatchObject({ company_id: batched.c.id, client_id: batched.cli.id, operation_type_id: batched.typeId, attachments: [] })
    expect(data[2].date).toBe('2026-02-01T03:00:00.000Z')
    expect(data[2].transactions.map((x: any) => [x.account_id, x.amount, x.currency, x.status])).toEqual([
      [batched.caja.accounts[0], 0.1, 'ARS', 'completed'],
      [batched.caja.accounts[0], 0.2, 'ARS', 'completed'],
      [batched.cli.accounts[0], -0.3, 'ARS', 'completed'],
    ])
    expect(data[1].transactions[0].currency).toBe('USD')
    expect(seen).toEqual(data.map((o) => o.id))
    // Each answer is what GET answers for it.
    for (const op of data) expect((await t.request('GET', `/api/operations/${op.id}`, { key: batched.c.key })).body).toEqual(op)

    expect(await balanceOf(t, batched.caja.accounts[0])).toBe('100.550000')
    expect(await balanceOf(t, batched.cli.accounts[0])).toBe('-50.550000')
    expect(await balanceOf(t, batched.caja.accounts[1])).toBe('-1.000000')
    for (const s of [single, batched]) {
      const check = await ledgerCheck(t, [...s.caja.accounts, ...s.cli.accounts])
      for (const row of check) expect(row.balance).toBe(row.completed)
    }
    expect(await auditOf(t, batched.c.id)).toEqual(await auditOf(t, single.c.id))
  })

  test('reports every bad item at once and writes nothing', async () => {
    const t = await testApp()
    const s = await ledgerSetup(t)
    const other = await ledgerSetup(t)
    const good = mix(s)[0]
    const res = await batch(t, s.c.key, [
      good,
      { ...good, transactions: [{ account_id: other.caja.accounts[0], amount: 1 }] },
      good,
      { ...good, transactions: [{ account_id: s.caja.accounts[0], amount: '0.0000001' }] },
      { ...good, operation_type_id: other.typeId },
      { ...good, client_id: other.cli.id },
    ])
    expect(res.status).toBe(422)
    expect(res.body.code).toBe('BATCH_ITEM_INVALID')
    expect(res.body.details.map((d: any) => [d.index, d.code])).toEqual([
      [1, 'UNKNOWN_ACCOUNT'],
      [3, 'VALIDATION_ERROR'],
      [4, 'OPERATION_TYPE_NOT_FOUND'],
      [5, 'UNKNOWN_CLIENT'],
    ])
    for (const d of res.body.details) expect(typeof d.error).toBe('string')
    const [{ n }] = await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from operations where company_id = ${s.c.id}`)
    expect(n).toBe(0)
    expect(await balanceOf(t, s.caja.accounts[0])).toBe('0.000000')
  })

  test('bounds: 1 to 1,000 items, each a valid create body', async () => {
    const t = await testApp()
    const s = await ledgerSetup(t)
    const one = { operation_type_id: s.typeId, transactions: [{ account_id: s.caja.accounts[0], amount: 1 }] }
    expect((await batch(t, s.c.key, [])).status).toBe(400)
    expect((await batch(t, s.c.key, Array.from({ length: 1001 }, () => one))).status).toBe(400)
    expect((await batch(t, s.c.key, [{ ...one, transactions: [] }])).status).toBe(400)
    const full = await batch(t, s.c.key, Array.from({ length: 1000 }, () => one))
    expect(full.status).toBe(201)
    expect(full.body.data).toHaveLength(1000)
    const ids = full.body.data.map((o: any) => o.id)
    expect([...ids].sort((a: number, b: number) => a - b)).toEqual(ids)
  })

  test('one Idempotency-Key covers the whole batch', async () => {
    const t = await testApp()
    const s = await ledgerSetup(t)
    const body = mix(s)
    const first = await batch(t, s.c.key, body, { 'Idempotency-Key': 'lote-1' })
    expect(first.status).toBe(201)
    const again = await batch(t, s.c.key, body, { 'Idempotency-Key': 'lote-1' })
    expect(again.status).toBe(201)
    expect(again.body.data.map((o: any) => o.id)).toEqual(first.body.data.map((o: any) => o.id))
    expect(await balanceOf(t, s.caja.accounts[0])).toBe('100.550000')
    const changed = await batch(t, s.c.key, body.slice(1), { 'Idempotency-Key': 'lote-1' })
    expect(changed.status).toBe(409)
    expect(changed.body.code).toBe('IDEMPOTENCY_KEY_REUSED')
  })

  test('permissions and client scope are those of the single create', async () => {
    const t = await testApp()
    const s = await ledgerSetup(t)
    const outside = await seedClient(t, s.c, { name: 'Ajeno' })
    const viewer = await s.c.employee(['operations.view'])
    const scoped = await s.c.employee(['operations.create', 'operations.view'], [s.cli.id])
    const mine = { operation_type_id: s.typeId, transactions: [{ account_id: s.cli.accounts[0], amount: 1 }] }
    const notMine = { operation_type_id: s.typeId, transactions: [{ account_id: outside.accounts[0], amount: 1 }] }
    expect((await batch(t, viewer.key, [mine])).status).toBe(403)
    const refused = await batch(t, scoped.key, [mine, notMine])
    expect(refused.status).toBe(422)
    expect(refused.body.details).toMatchObject([{ index: 1, code: 'FORBIDDEN' }])
    const ok = await batch(t, scoped.key, [mine, mine])
    expect(ok.status).toBe(201)
    expect(ok.body.data[0].created_by).toBe(scoped.id)
  })
})
