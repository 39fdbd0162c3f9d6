import { beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { testApp, type TestApp } from '../helpers'
import { balanceOf, ledgerSetup, seedClient } from './operations.fixtures'

type Setup = Awaited<ReturnType<typeof ledgerSetup>>

function twoLegs(s: Setup, amount: string | number = '100.5', extra: Record<string, unknown> = {}) {
  return {
    operation_type_id: s.typeId,
    client_id: s.cli.id,
    transactions: [
      { account_id: s.caja.accounts[0], amount },
      { account_id: s.cli.accounts[0], amount: typeof amount === 'number' ? -amount : `-${amount}` },
    ],
    ...extra,
  }
}

async function create(t: TestApp, key: string, body: unknown, headers?: Record<string, string>) {
  return t.request('POST', '/api/operations', { key, body, headers })
}

// Building the shared app (migrations included) can take long on a busy machine; it is not a test's own time.
beforeAll(async () => {
  await testApp()
}, 120_000)

describe('operation and transaction types', () => {
  test('create and list, company-scoped, validated', async () => {
    const t = await testApp()
    const a = await t.newCompany()
    const b = await t.newCompany()
    const ot = await t.request('POST', '/api/operation-types', { key: a.key, body: { name: 'Subida', kind: 'up_down' } })
    expect(ot.status).toBe(201)
    expect(ot.body).toMatchObject({ name: 'Subida', kind: 'up_down', company_id: a.id })
    const tt = await t.request('POST', '/api/transaction-types', { key: a.key, body: { name: 'Comisión', is_commission: true } })
    expect(tt.status).toBe(201)
    expect(tt.body).toMatchObject({ name: 'Comisión', is_commission: true, company_id: a.id })
    expect((await t.request('GET', '/api/operation-types', { key: a.key })).body.data.map((x: any) => x.id)).toEqual([ot.body.id])
    expect((await t.request('GET', '/api/transaction-types', { key: a.key })).body.data.map((x: any) => x.id)).toEqual([tt.body.id])
    expect((await t.request('GET', '/api/operation-types', { key: b.key })).body).toEqual({ data: [] })
    const badKind = await t.request('POST', '/api/operation-types', { key: a.key, body: { name: 'X', kind: 'sideways' } })
    expect(badKind.status).toBe(400)
    expect(badKind.body.code).toBe('VALIDATION_ERROR')
    expect(badKind.body.details.length).toBeGreaterThan(0)
    expect((await t.request('GET', '/api/transaction-types')).status).toBe(401)
    const viewer = await a.employee(['operations.view'])
    expect((await t.request('GET', '/api/operation-types', { key: viewer.key })).status).toBe(200)
    const denied = await t.request('POST', '/api/transaction-types', { key: viewer.key, body: { name: 'Y' } })
    expect(denied.status).toBe(403)
    expect(denied.body.code).toBe('FORBIDDEN')
  })
})

describe('operations ledger', () => {
  test('create, read, approve moves balances once', async () => {
    const t = await testApp()
    const s = await ledgerSetup(t)
    const created = await create(t, s.c.key, twoLegs(s, '100.5', { description: 'compra' }))
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({
      company_id: s.c.id,
      operation_type_id: s.typeId,
      client_id: s.cli.id,
      cost_center_id: null,
      description: 'compra',
      status: 'pending',
      created_by: null,
      attachments: [],
    })
    expect(created.body.date).toMatch(/Z$/)
    expect(created.body.transactions.map((x: any) => [x.amount, x.currency, x.status, x.is_commission])).toEqual([
      [100.5, 'ARS', 'pending', false],
      [-100.5, 'ARS', 'pending', false],
    ])
    expect(await balanceOf(t, s.caja.accounts[0])).toBe('0.000000')
    const got = await t.request('GET', `/api/operations/${created.body.id}`, { key: s.c.key })
    expect(got.status).toBe(200)
    expect(got.body).toEqual(created.body)
    const ok = await t.request('POST', `/api/operations/${created.body.id}/approve`, { key: s.c.key })
    expect(ok.status).toBe(200)
    expect(ok.body).toEqual({ operation_id: created.body.id, message: expect.any(String), approved_transactions: 2 })
    expect(await balanceOf(t, s.caja.accounts[0])).toBe('100.500000')
    expect(await balanceOf(t, s.cli.accounts[0])).toBe('-100.500000')
    const again = await t.request('POST', `/api/operations/${created.body.id}/approve`, { key: s.c.key })
    expect(again.status).toBe(409)
    expect(again.body.code).toBe('NOT_ALL_PENDING')
    expect(await balanceOf(t, s.caja.accounts[0])).toBe('100.500000')
    const after = await t.request('GET', `/api/operations/${created.body.id}`, { key: s.c.key })
    expect(after.body.status).toBe('completed')
    expect(after.body.transactions.every((x: any) => x.status === 'completed')).toBe(true)
  })

  test('revert and cancel follow the state rules and keep balances exact', async () => {
    const t = await testApp()
    const s = await ledgerSetup(t)
    const op = (await create(t, s.c.key, twoLegs(s, '10'))).body.id
    const path = (a: string) => `/api/operations/${op}/${a}`
    const notCompleted = await t.request('POST', path('revert'), { key: s.c.key })
    expect(notCompleted.status).toBe(409)
    expect(notCompleted.body.code).toBe('NOT_ALL_COMPLETED')
    expect((await t.request('POST', path('approve'), { key: s.c.key })).status).toBe(200)
    const reverted = await t.request('POST', path('revert'), { key: s.c.key })
    expect(reverted.status).toBe(200)
    expect(reverted.body).toEqual({ operation_id: op, message: expect.any(String), reverted_transactions: 2 })
    expect(await balanceOf(t, s.caja.accounts[0])).toBe('0.000000')
    expect((await t.request('GET', `/api/operations/${op}`, { key: s.c.key })).body.status).toBe('pending')
    expect((await t.request('POST', path('approve'), { key: s.c.key })).status).toBe(200)
    expect(await balanceOf(t, s.caja.accounts[0])).toBe('10.000000')
    const cancelled = await t.request('POST', path('cancel'), { key: s.c.key })
    expect(cancelled.status).toBe(200)
    expect(cancelled.body).toEqual({ operation_id: op, message: expect.any(String), cancelled_transactions: 2 })
    expect(await balanceOf(t, s.caja.accounts[0])).toBe('0.000000')
    expect(await balanceOf(t, s.cli.accounts[0])).toBe('0.000000')
    const view = await t.request('GET', `/api/operations/${op}`, { key: s.c.key })
    expect(view.body.status).toBe('cancelled')
    expect(view.body.transactions.map((x: any) => x.status)).toEqual(['cancelled', 'cancelled'])
    const twice = await t.request('POST', path('cancel'), { key: s.c.key })
    expect(twice.status).toBe(409)
    expect(twice.body.code).toBe('ALREADY_CANCELLED')
    expect((await t.request('POST', path('approve'), { key: s.c.key })).body.code).toBe('NOT_ALL_PENDING')
    expect((await t.request('POST', path('revert'), { key: s.c.key })).body.code).toBe('NOT_ALL_COMPLETED')

    const pendingOp = (await create(t, s.c.key, twoLegs(s, '3'))).body.id
    const cancelPending = await t.request('POST', `/api/operations/${pendingOp}/cancel`, { key: s.c.key })
    expect(cancelPending.status).toBe(200)
    expect(await balanceOf(t, s.caja.accounts[0])).toBe('0.000000')
  })

  test('status completed on create moves balances at once; commission flag comes from the type', async () => {
    const t = await testApp()
    const s = await ledgerSetup(t)
    const fee = await t.request('POST', '/api/transaction-types', { key: s.c.key, body: { name: 'Comisión', is_commission: true } })
    const body = twoLegs(s, '7.25', { status: 'completed' })
    body.transactions.push({ account_id: s.caja.accounts[1], amount: '-1', transaction_type_id: fee.body.id } as any)
    const created = await create(t, s.c.key, body)
    expect(created.status).toBe(201)
    expect(created.body.status).toBe('completed')
    expect(created.body.transactions[2]).toMatchObject({ currency: 'USD', is_commission: true, transaction_type_id: fee.body.id, amount: -1 })
    expect(await balanceOf(t, s.caja.accounts[0])).toBe('7.250000')
    expect(await balanceOf(t, s.caja.accounts[1])).toBe('-1.000000')
    const [row] = await t.ctx.database.rows<{ n: number }>(
      sql`select count(*)::int as n from transactions where operation_id = ${created.body.id} and completed_at is not null`,
    )
    expect(row.n).toBe(3)
  })

  test('0.1 + 0.2 is exactly 0.3, and extra decimals round half away from zero', async () => {
    const t = await testApp()
    const s = await ledgerSetup(t)
    const acc = s.caja.accounts[0]
    for (const amount of [0.1, '0.2']) {
      const r = await create(t, s.c.key, { operation_type_id: s.typeId, status: 'completed', transactions: [{ account_id: acc, amount }] })
      expect(r.status).toBe(201)
    }
    expect(await balanceOf(t, acc)).toBe('0.300000')

    const cases: [string | number, string, number][] = [
      ['1.0000005', '1.000001', 1.000001],
      ['-1.0000005', '-1.000001', -1.000001],
      ['2.12345649', '2.123456', 2.123456],
      [0.0000015, '0.000002', 0.000002],
      ['123456789012345.1234567', '123456789012345.123457', 123456789012345.123457],
    ]
    const acc2 = s.caja.accounts[1]
    for (const [input, stored, json] of cases) {
      const before = await balanceOf(t, acc2)
      const r = await create(t, s.c.key, { operation_type_id: s.typeId, status: 'completed', transactions: [{ account_id: acc2, amount: input }] })
      expect(r.status).toBe(201)
      expect(r.body.transactions[0].amount).toBe(json)
      const [row] = await t.ctx.database.rows<{ amount: string; moved: string }>(
        sql`select amount::text as amount, (balance - ${before}::numeric)::text as moved from transactions, accounts where transactions.id = ${r.body.transactions[0].id} and accounts.id = ${acc2}`,
      )
      expect(row.amount).toBe(stored)
      expect(row.moved).toBe(stored)
    }
    const tiny = await create(t, s.c.key, { operation_type_id: s.typeId, transactions: [{ account_id: acc, amount: '0.0000004' }] })
    expect(tiny.status).toBe(400)
    expect(tiny.body.code).toBe('VALIDATION_ERROR')
    expect(tiny.body.details[0].field).toBe('transactions.0.amount')
  })

  test('bad bodies answer 400 with details and write nothing', async () => {
    const t = await testApp()
    const s = await ledgerSetup(t)
    const bodies: unknown[] = [
      {},
      { operation_type_id: s.typeId, transactions: [] },
      { operation_type_id: s.typeId },
      twoLegs(s, 0),
      twoLegs(s, '0.000'),
      { operation_type_id: s.typeId, transactions: [{ account_id: s.caja.accounts[0], amount: 'abc' }] },
      { operation_type_id: s.typeId, transactions: [{ account_id: s.caja.accounts[0], amount: '1e5' }] },
      { operation_type_id: s.typeId, transactions: [{ account_id: s.caja.accounts[0] }] },
      { operation_type_id: 'x', transactions: [{ account_id: s.caja.accounts[0], amount: 1 }] },
      twoLegs(s, '1', { status: 'cancelled' }),
      twoLegs(s, '1', { date: 'yesterday' }),
    ]
    for (const body of bodies) {
      const r = await create(t, s.c.key, body)
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('VALIDATION_ERROR')
      expect(Array.isArray(r.body.details) && r.body.details.length > 0).toBe(true)
    }
    const malformed = await t.request('POST', '/api/operations', { key: s.c.key, raw: '{"operation', headers: { 'content-type': 'application/json' } })
    expect(malformed.status).toBe(400)
    const list = await t.request('GET', '/api/operations', { key: s.c.key })
    expect(list.body.pagination.total).toBe(0)
    expect((await t.request('GET', '/api/operations?pageSize=201', { key: s.c.key })).status).toBe(400)
    expect((await t.request('GET', '/api/operations?status=weird', { key: s.c.key })).body.code).toBe('VALIDATION_ERROR')
    expect((await t.request('GET', '/api/operations?client_id=1e3', { key: s.c.key })).body.code).toBe('VALIDATION_ERROR')
    expect((await t.request('GET', '/api/operations?from=someday', { key: s.c.key })).body.code).toBe('VALIDATION_ERROR')
    expect((await t.request('GET', '/api/operations/abc', { key: s.c.key })).body.code).toBe('INVALID_ID')
    expect((await t.request('POST', '/api/operations/0/approve', { key: s.c.key })).body.code).toBe('INVALID_ID')
  })

  test('references of another company or unknown answer 422 UNKNOWN_*', async () => {
    const t = await testApp()
    const s = await ledgerSetup(t)
    const other = await ledgerSetup(t)
    const otherType = await t.request('POST', '/api/transaction-types', { key: other.c.key, body: { name: 'T' } })
    const cases: [unknown, string][] = [
      [twoLegs(s, '1', { operation_type_id: other.typeId }), 'OPERATION_TYPE_NOT_FOUND'],
      [twoLegs(s, '1', { client_id: other.cli.id }), 'UNKNOWN_CLIENT'],
      [twoLegs(s, '1', { client_id: 2147483647 }), 'UNKNOWN_CLIENT'],
      [twoLegs(s, '1', { cost_center_id: 2147483647 }), 'UNKNOWN_COST_CENTER'],
      [{ operation_type_id: s.typeId, transactions: [{ account_id: other.caja.accounts[0], amount: 1 }] }, 'UNKNOWN_ACCOUNT'],
      [
        { operation_type_id: s.typeId, transactions: [{ account_id: s.caja.accounts[0], amount: 1, transaction_type_id: otherType.body.id }] },
        'UNKNOWN_TRANSACTION_TYPE',
      ],
    ]
    for (const [body, code] of cases) {
      const r = await create(t, s.c.key, body)
      expect(r.status).toBe(422)
      expect(r.body.code).toBe(code)
    }
    const unknownAccount = await create(t, s.c.key, cases[4][0])
    expect(unknownAccount.body.details).toEqual([{ field: 'transactions.0.account_id', message: expect.any(String) }])
    expect((await t.request('GET', '/api/operations', { key: s.c.key })).body.pagination.total).toBe(0)
  })

  test('authentication, permissions and tenant isolation', async () => {
    const t = await testApp()
    const s = await ledgerSetup(t)
    const other = await ledgerSetup(t)
    const op = (await create(t, s.c.key, twoLegs(s))).body.id
    expect((await t.request('GET', `/api/operations/${op}`)).status).toBe(401)
    expect((await t.request('POST', '/api/operations', { body: twoLegs(s) })).status).toBe(401)
    expect((await t.request('POST', `/api/operations/${op}/approve`, { key: 'fos_nope_nope' })).status).toBe(401)

    const viewer = await s.c.employee(['operations.view'])
    const creator = await s.c.employee(['operations.create'])
    expect((await t.request('GET', `/api/operations/${op}`, { key: viewer.key })).status).toBe(200)
    for (const action of ['approve', 'revert', 'cancel']) {
      const r = await t.request('POST', `/api/operations/${op}/${action}`, { key: viewer.key })
      expect(r.status).toBe(403)
      expect(r.body.code).toBe('FORBIDDEN')
    }
    expect((await create(t, viewer.key, twoLegs(s))).status).toBe(403)
    expect((await t.request('GET', `/api/operations/${op}`, { key: creator.key })).status).toBe(403)
    expect((await t.request('GET', '/api/operations', { key: creator.key })).status).toBe(403)
    const mine = await create(t, creator.key, twoLegs(s))
    expect(mine.status).toBe(201)
    expect(mine.body.created_by).toBe(creator.id)

    for (const [method, path] of [
      ['GET', `/api/operations/${op}`],
      ['POST', `/api/operations/${op}/approve`],
      ['POST', `/api/operations/${op}/revert`],
      ['POST', `/api/operations/${op}/cancel`],
    ]) {
      const r = await t.request(method, path, { key: other.c.key })
      expect(r.status).toBe(404)
      expect(r.body.code).toBe('NOT_FOUND')
    }
    expect((await t.request('GET', '/api/operations/2147483647', { key: s.c.key })).status).toBe(404)
    expect((await t.request('GET', '/api/operations', { key: other.c.key })).body.pagination.total).toBe(0)
    expect(await balanceOf(t, s.caja.accounts[0])).toBe('0.000000')
  })

  test('client scope: operations outside the employee clients are 404 and absent from lists', async () => {
    const t = await testApp()
    const s = await ledgerSetup(t)
    const stranger = await seedClient(t, s.c, { name: 'Ajeno' })
    const inScopeByClient = (await create(t, s.c.key, { operation_type_id: s.typeId, client_id: s.cli.id, transactions: [{ account_id: s.caja.accounts[0], amount: 5 }] })).body.id
    const inScopeByAccount = (await create(t, s.c.key, { operation_type_id: s.typeId, transactions: [{ account_id: s.cli.accounts[0], amount: 5 }] })).body.id
    const outside = (await create(t, s.c.key, { operation_type_id: s.typeId, client_id: stranger.id, transactions: [{ account_id: stranger.accounts[0], amount: 5 }, { account_id: s.caja.accounts[0], amount: -5 }] })).body.id
    const scoped = await s.c.employee(['operations.view', 'operations.create', 'operations.approve'], [s.cli.id])

    expect((await t.request('GET', `/api/operations/${inScopeByClient}`, { key: scoped.key })).status).toBe(200)
    expect((await t.request('GET', `/api/operations/${inScopeByAccount}`, { key: scoped.key })).status).toBe(200)
    for (const [method, path] of [
      ['GET', `/api/operations/${outside}`],
      ['POST', `/api/operations/${outside}/approve`],
      ['POST', `/api/operations/${outside}/revert`],
      ['POST', `/api/operations/${outside}/cancel`],
    ]) {
      const r = await t.request(method, path, { key: scoped.key })
      expect(r.status).toBe(404)
      expect(r.body.code).toBe('NOT_FOUND')
    }
    const list = await t.request('GET', '/api/operations', { key: scoped.key })
    expect(list.body.data.map((o: any) => o.id).sort()).toEqual([inScopeByClient, inScopeByAccount].sort())
    expect(list.body.pagination.total).toBe(2)
    expect((await t.request('POST', `/api/operations/${inScopeByAccount}/approve`, { key: scoped.key })).status).toBe(200)
    expect(await balanceOf(t, stranger.accounts[0])).toBe('0.000000')

    const outsideCreate = await create(t, scoped.key, { operation_type_id: s.typeId, client_id: stranger.id, transactions: [{ account_id: stranger.accounts[0], amount: 1 }] })
    expect(outsideCreate.status).toBe(403)
    expect(outsideCreate.body.code).toBe('FORBIDDEN')
    const insideCreate = await create(t, scoped.key, { operation_type_id: s.typeId, transactions: [{ account_id: s.cli.accounts[0], amount: 1 }, { account_id: s.caja.accounts[0], amount: -1 }] })
    expect(insideCreate.status).toBe(201)
  })

  test('list: paging, filters by status, client and date', async () => {
    const t = await testApp()
    const s = await ledgerSetup(t)
    const other = await seedClient(t, s.c, { name: 'Otro' })
    const ids: number[] = []
    for (const [date, clientAcc] of [
      ['2026-01-10T12:00:00Z', s.cli.accounts[0]],
      ['2026-01-11T12:00:00Z', other.accounts[0]],
      ['2026-01-12T12:00:00Z', s.cli.accounts[0]],
    ] as const) {
      const r = await create(t, s.c.key, { operation_type_id: s.typeId, date, transactions: [{ account_id: clientAcc, amount: 1 }] })
      expect(r.status).toBe(201)
      expect(r.body.date).toBe(new Date(date).toISOString())
      ids.push(r.body.id)
    }
    await t.request('POST', `/api/operations/${ids[1]}/approve`, { key: s.c.key })
    const all = await t.request('GET', '/api/operations?pageSize=2', { key: s.c.key })
    expect(all.body.data.map((o: any) => o.id)).toEqual([ids[2], ids[1]])
    expect(all.body.pagination).toEqual({ page: 1, pageSize: 2, total: 3, totalPages: 2 })
    expect(all.body.data[0].transactions).toHaveLength(1)
    const p2 = await t.request('GET', '/api/operations?pageSize=2&page=2', { key: s.c.key })
    expect(p2.body.data.map((o: any) => o.id)).toEqual([ids[0]])
    const completed = await t.request('GET', '/api/operations?status=completed', { key: s.c.key })
    expect(completed.body.data.map((o: any) => o.id)).toEqual([ids[1]])
    const byClient = await t.request('GET', `/api/operations?client_id=${s.cli.id}`, { key: s.c.key })
    expect(byClient.body.data.map((o: any) => o.id)).toEqual([ids[2], ids[0]])
    const range = await t.request('GET', '/api/operations?from=2026-01-11&to=2026-01-11', { key: s.c.key })
    expect(range.body.data.map((o: any) => o.id)).toEqual([ids[1]])
    const instants = await t.request('GET', '/api/operations?from=2026-01-10T12:00:00Z&to=2026-01-11T12:00:00Z', { key: s.c.key })
    expect(instants.body.data.map((o: any) => o.id)).toEqual([ids[1], ids[0]])
    const dateOnly = await create(t, s.c.key, { operation_type_id: s.typeId, date: '2026-02-01', transactions: [{ account_id: s.cli.accounts[0], amount: 1 }] })
    expect(dateOnly.body.date).toBe('2026-02-01T03:00:00.000Z')
  })

  test('Idempotency-Key replays the first answer and refuses a different body', async () => {
    const t = await testApp()
    const s = await ledgerSetup(t)
    const headers = { 'idempotency-key': `op-${crypto.randomUUID()}` }
    const first = await create(t, s.c.key, twoLegs(s, '12'), headers)
    expect(first.status).toBe(201)
    const replay = await create(t, s.c.key, twoLegs(s, '12'), headers)
    expect(replay.status).toBe(201)
    expect(replay.body.id).toBe(first.body.id)
    expect(replay.body.transactions.map((x: any) => x.id)).toEqual(first.body.transactions.map((x: any) => x.id))
    const reused = await create(t, s.c.key, twoLegs(s, '13'), headers)
    expect(reused.status).toBe(409)
    expect(reused.body.code).toBe('IDEMPOTENCY_KEY_REUSED')
    expect((await t.request('GET', '/api/operations', { key: s.c.key })).body.pagination.total).toBe(1)
    const completedTwice = { ...twoLegs(s, '4'), status: 'completed' }
    const k2 = { 'idempotency-key': `op-${crypto.randomUUID()}` }
    await create(t, s.c.key, completedTwice, k2)
    await create(t, s.c.key, completedTwice, k2)
    expect(await balanceOf(t, s.caja.accounts[0])).toBe('4.000000')
  })

  test('audit rows record create, update, revert and cancel for operations and transactions', async () => {
    const t = await testApp()
    const s = await ledgerSetup(t)
    const emp = await s.c.employee(['operations.view', 'operations.create', 'operations.approve'])
    const op = (await create(t, emp.key, twoLegs(s))).body.id
    for (const a of ['approve', 'revert', 'cancel']) expect((await t.request('POST', `/api/operations/${op}/${a}`, { key: emp.key })).status).toBe(200)
    const rows = await t.ctx.database.rows<{ entity: string; action: string; actor_email: string | null; company_id: number }>(sql`
      select entity, action, actor_email, company_id from audit_logs
      where (entity = 'operations' and entity_id = ${op})
         or (entity = 'transactions' and entity_id in (select id from transactions where operation_id = ${op}))
      order by id`)
    const actions = (entity: string) => rows.filter((r) => r.entity === entity).map((r) => r.action)
    expect(actions('operations')).toEqual(['create', 'update', 'revert', 'cancel'])
    expect(actions('transactions')).toEqual(['create', 'create', 'update', 'update', 'revert', 'revert', 'cancel', 'cancel'])
    expect(rows.every((r) => r.actor_email === emp.email && r.company_id === s.c.id)).toBe(true)
  })

  test('an operation embeds its attachments with signed links', async () => {
    const t = await testApp()
    const s = await ledgerSetup(t)
    const op = (await create(t, s.c.key, twoLegs(s))).body.id
    const form = new FormData()
    form.append('file', new Blob(['recibo'], { type: 'text/plain' }), 'recibo.txt')
    const up = await t.request('POST', `/api/operations/${op}/attachments`, { key: s.c.key, raw: form })
    expect(up.status).toBe(201)
    const got = await t.request('GET', `/api/operations/${op}`, { key: s.c.key })
    expect(got.body.attachments).toEqual([expect.objectContaining({ id: up.body.id, file_name: 'recibo.txt', signed_url: expect.any(String) })])
    const listed = await t.request('GET', '/api/operations', { key: s.c.key })
    expect(listed.body.data[0].attachments.map((a: any) => a.id)).toEqual([up.body.id])
  })

  test('cost_center_id must name a cost center of the company', async () => {
    const t = await testApp()
    const s = await ledgerSetup(t)
    const other = await ledgerSetup(t)
    const mine = await t.request('POST', '/api/cost-centers', { key: s.c.key, body: { name: 'Sueldos', client_id: s.cli.id, default_currency: 'ARS' } })
    expect(mine.status).toBe(201)
    const theirs = await t.request('POST', '/api/cost-centers', { key: other.c.key, body: { name: 'Otro', client_id: other.cli.id, default_currency: 'ARS' } })
    expect(theirs.status).toBe(201)
    const ok = await create(t, s.c.key, twoLegs(s, '1', { cost_center_id: mine.body.id }))
    expect(ok.status).toBe(201)
    expect(ok.body.cost_center_id).toBe(mine.body.id)
    const foreign = await create(t, s.c.key, twoLegs(s, '1', { cost_center_id: theirs.body.id }))
    expect(foreign.status).toBe(422)
    expect(foreign.body.code).toBe('UNKNOWN_COST_CENTER')
  })
})
