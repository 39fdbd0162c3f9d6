import { beforeAll, describe, expect, test } from 'bun:test'
import { postgresTest, testApp, type Company, type TestApp } from '../helpers'

// The first use builds the shared app and migrates its database, which can take a while on PGlite.
beforeAll(async () => {
  await testApp()
}, 120_000)

interface Account {
  id: number
  currency_name: string
}

/** A company with one operation type per kind, two cajas, an external client, a payer and a cost center. */
async function world(t: TestApp) {
  const c = await t.newCompany()
  const post = async (path: string, body: unknown) => {
    const r = await t.request('POST', path, { key: c.key, body })
    if (r.status !== 201) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`)
    return r.body
  }
  const types: Record<string, number> = {}
  for (const kind of ['up_down', 'exchange', 'budget', 'other']) types[kind] = (await post('/api/operation-types', { name: `Tipo ${kind}`, kind })).id
  const client = async (name: string, type: 0 | 1, currencies: string[]) => {
    const body = await post('/api/clients', { name, type, accounts: currencies.map((currency_name) => ({ currency_name })) })
    const acc = Object.fromEntries((body.accounts as Account[]).map((a) => [a.currency_name, a.id])) as Record<string, number>
    return { id: body.id as number, name, acc }
  }
  const caja = await client('Caja central', 0, ['ARS', 'USD'])
  const caja2 = await client('Caja sucursal', 0, ['ARS', 'USD'])
  const juan = await client('Juan Pérez', 1, ['ARS', 'USD'])
  const payer = await client('Proveedor SA', 1, ['ARS'])
  const cc = await post('/api/cost-centers', { name: 'Sueldos', client_id: caja.id, default_currency: 'ARS' })
  return { c, types, caja, caja2, juan, payer, cc: cc as { id: number; default_internal_account_id: number } }
}
type World = Awaited<ReturnType<typeof world>>

const requestedBy = { contact_id: 77, phone: '+5491155550000' }

async function createTool(t: TestApp, key: string, body: unknown) {
  return t.request('POST', '/api/messaging/tools', { key, body })
}

async function tool(t: TestApp, w: World, body: Record<string, unknown>) {
  const r = await createTool(t, w.c.key, body)
  if (r.status !== 201) throw new Error(`tool create: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body as { id: number; slug: string }
}

async function run(t: TestApp, key: string, id: number, body: Record<string, unknown>, headers?: Record<string, string>) {
  return t.request('POST', `/api/messaging/tools/${id}/run`, { key, body: { requested_by: requestedBy, ...body }, headers })
}

async function balances(t: TestApp, c: Company, clientId: number) {
  const r = await t.request('GET', `/api/clients/${clientId}`, { key: c.key })
  return Object.fromEntries((r.body.accounts as (Account & { balance: number })[]).map((a) => [a.currency_name, a.balance]))
}

async function approve(t: TestApp, c: Company, operationId: number) {
  const r = await t.request('POST', `/api/operations/${operationId}/approve`, { key: c.key })
  expect(r.status).toBe(200)
}

const legs = (op: { transactions: { account_id: number; amount: number; currency: string }[] }) =>
  op.transactions.map((x) => [x.account_id, x.amount, x.currency])

describe('messaging tools: CRUD', () => {
  test('create answers 201 with the tool; list includes disabled, get, patch, soft delete', async () => {
    const t = await testApp()
    const w = await world(t)
    const created = await createTool(t, w.c.key, {
      name: 'Compra Dólar (MEP)',
      description: 'Compra de dólares',
      fixed_config: { toolKind: 'exchange', operationTypeId: w.types.exchange, localAccountId: w.caja.acc.ARS, quoteAccountId: w.caja.acc.USD },
      parameter_schema: { parameters: [{ key: 'quoteAmount', label: 'Dólares', type: 'amount', required: true }] },
    })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({
      company_id: w.c.id,
      name: 'Compra Dólar (MEP)',
      slug: 'compra-dolar-mep',
      description: 'Compra de dólares',
      enabled: true,
      company_operation_type_id: w.types.exchange,
      mode: 'standard',
      fixed_config: { toolKind: 'exchange', operationTypeId: w.types.exchange, localAccountId: w.caja.acc.ARS },
      parameter_schema: { parameters: [{ key: 'quoteAmount', label: 'Dólares', type: 'amount', required: true }] },
      created_by: null,
      deleted_at: null,
    })
    expect(created.body.created_at).toMatch(/Z$/)
    const id = created.body.id

    const off = await t.request('PATCH', `/api/messaging/tools/${id}`, { key: w.c.key, body: { enabled: false, name: 'Compra MEP' } })
    expect(off.status).toBe(200)
    expect(off.body).toMatchObject({ enabled: false, name: 'Compra MEP', slug: 'compra-dolar-mep' })
    const list = await t.request('GET', '/api/messaging/tools', { key: w.c.key })
    expect(list.status).toBe(200)
    expect(list.body.data.map((x: { id: number }) => x.id)).toEqual([id])
    expect((await t.request('GET', `/api/messaging/tools/${id}`, { key: w.c.key })).body.enabled).toBe(false)

    const del = await t.request('DELETE', `/api/messaging/tools/${id}`, { key: w.c.key })
    expect(del.status).toBe(200)
    expect(del.body).toEqual({ deleted: true })
    expect((await t.request('GET', `/api/messaging/tools/${id}`, { key: w.c.key })).status).toBe(404)
    expect((await t.request('PATCH', `/api/messaging/tools/${id}`, { key: w.c.key, body: { enabled: true } })).status).toBe(404)
    expect((await t.request('DELETE', `/api/messaging/tools/${id}`, { key: w.c.key })).status).toBe(404)
    expect((await t.request('GET', '/api/messaging/tools', { key: w.c.key })).body).toEqual({ data: [] })
    // The deleted tool's slug is free again.
    const again = await createTool(t, w.c.key, { name: 'Compra Dólar (MEP)', fixed_config: { toolKind: 'other', operationTypeId: w.types.other } })
    expect(again.status).toBe(201)
    expect(again.body.slug).toBe('compra-dolar-mep')
    expect((await t.request('GET', '/api/messaging/tools/abc', { key: w.c.key })).body.code).toBe('INVALID_ID')
  })

  test('slugs: normalized from the name or as given, unique among live tools of the company', async () => {
    const t = await testApp()
    const w = await world(t)
    const other = await world(t)
    const fixed = { toolKind: 'other', operationTypeId: w.types.other }
    const cases: [Record<string, string>, string][] = [
      [{ name: 'Compra Dólar (MEP)' }, 'compra-dolar-mep'],
      [{ name: '  ¡Venta   USD/ARS!  ' }, 'venta-usd-ars'],
      [{ name: 'Ñandú & Cía. 100%' }, 'nandu-cia-100'],
      [{ name: 'Pago_Proveedor--Ágil' }, 'pago-proveedor-agil'],
      [{ name: 'Cualquiera', slug: 'Mi Slug Propio' }, 'mi-slug-propio'],
      [{ name: 'Otra', slug: 'ya-normal-1' }, 'ya-normal-1'],
    ]
    for (const [body, slug] of cases) {
      const r = await createTool(t, w.c.key, { ...body, fixed_config: fixed })
      expect(r.status).toBe(201)
      expect(r.body.slug).toBe(slug)
    }
    const taken = await createTool(t, w.c.key, { name: 'COMPRA DOLAR MEP', fixed_config: fixed })
    expect(taken.status).toBe(409)
    expect(taken.body.code).toBe('SLUG_TAKEN')
    const takenExplicit = await createTool(t, w.c.key, { name: 'X', slug: 'venta-usd-ars', fixed_config: fixed })
    expect(takenExplicit.body.code).toBe('SLUG_TAKEN')
    const elsewhere = await createTool(t, other.c.key, { name: 'Compra Dólar (MEP)', fixed_config: { toolKind: 'other', operationTypeId: other.types.other } })
    expect(elsewhere.status).toBe(201)
    const list = (await t.request('GET', '/api/messaging/tools', { key: w.c.key })).body.data as { id: number; slug: string }[]
    const target = list.find((x) => x.slug === 'ya-normal-1')!
    const rename = await t.request('PATCH', `/api/messaging/tools/${target.id}`, { key: w.c.key, body: { slug: 'compra-dolar-mep' } })
    expect(rename.status).toBe(409)
    expect(rename.body.code).toBe('SLUG_TAKEN')
    const ok = await t.request('PATCH', `/api/messaging/tools/${target.id}`, { key: w.c.key, body: { slug: 'Nuevo Slug' } })
    expect(ok.body.slug).toBe('nuevo-slug')
    const empty = await createTool(t, w.c.key, { name: '¡¡¡ !!!', fixed_config: fixed })
    expect(empty.status).toBe(400)
    expect(empty.body.code).toBe('VALIDATION_ERROR')
  })

  test('name bound 100, body schema, fixed_config union and operation type checks', async () => {
    const t = await testApp()
    const w = await world(t)
    const other = await world(t)
    const fixed = { toolKind: 'other', operationTypeId: w.types.other }
    expect((await createTool(t, w.c.key, { name: 'n'.repeat(100), fixed_config: fixed })).status).toBe(201)
    const bad = async (body: Record<string, unknown>, status: number, code: string) => {
      const r = await createTool(t, w.c.key, body)
      expect([r.status, r.body.code]).toEqual([status, code])
      return r
    }
    await bad({ name: 'n'.repeat(101), fixed_config: fixed }, 400, 'VALIDATION_ERROR')
    await bad({ name: '', fixed_config: fixed }, 400, 'VALIDATION_ERROR')
    await bad({ fixed_config: fixed }, 400, 'VALIDATION_ERROR')
    await bad({ name: 'x' }, 400, 'VALIDATION_ERROR')
    await bad({ name: 'x', fixed_config: { operationTypeId: w.types.other } }, 400, 'VALIDATION_ERROR')
    await bad({ name: 'x', fixed_config: { toolKind: 'swap', operationTypeId: w.types.other } }, 400, 'VALIDATION_ERROR')
    await bad({ name: 'x', fixed_config: { toolKind: 'up_down', operationTypeId: w.types.up_down, mode: 'sideways' } }, 400, 'VALIDATION_ERROR')
    // Fields of another kind are not part of this kind's config: they are dropped, never stored.
    const foreignField = await createTool(t, w.c.key, { name: 'extra', fixed_config: { ...fixed, amount: 5 } })
    expect(foreignField.status).toBe(201)
    expect(foreignField.body.fixed_config).toEqual(fixed)
    const missing = await bad({ name: 'x', fixed_config: { toolKind: 'other' } }, 422, 'OPERATION_TYPE_NOT_FOUND')
    expect(missing.body.details[0].field).toBe('fixed_config.operationTypeId')
    await bad({ name: 'x', fixed_config: { toolKind: 'other', operationTypeId: other.types.other } }, 422, 'OPERATION_TYPE_NOT_FOUND')
    await bad({ name: 'x', fixed_config: { toolKind: 'other', operationTypeId: 2147483647 } }, 422, 'OPERATION_TYPE_NOT_FOUND')
    await bad({ name: 'x', fixed_config: { toolKind: 'budget', operationTypeId: w.types.up_down } }, 422, 'OPERATION_TYPE_KIND_MISMATCH')
    await bad({ name: 'x', fixed_config: { toolKind: 'exchange', operationTypeId: w.types.exchange, localAccountId: other.caja.acc.ARS } }, 422, 'UNKNOWN_ACCOUNT')
    await bad({ name: 'x', fixed_config: { toolKind: 'budget', operationTypeId: w.types.budget, costCenterId: other.cc.id } }, 422, 'UNKNOWN_COST_CENTER')
    await bad({ name: 'x', fixed_config: { toolKind: 'budget', operationTypeId: w.types.budget, payerClientId: other.payer.id } }, 422, 'UNKNOWN_CLIENT')
    // Parameter keys must be fields of the kind's fixed_config, each once, with a fitting type.
    const params = (parameters: unknown[]) => ({ name: 'x', fixed_config: { toolKind: 'exchange', operationTypeId: w.types.exchange }, parameter_schema: { parameters } })
    await bad(params([{ key: 'costCenterId', label: 'Centro', type: 'cost_center', required: true }]), 400, 'VALIDATION_ERROR')
    await bad(params([{ key: 'side', label: 'Lado', type: 'amount', required: true }]), 400, 'VALIDATION_ERROR')
    await bad(params([{ key: 'fx', label: 'TC', type: 'amount' }, { key: 'fx', label: 'TC', type: 'number' }]), 400, 'VALIDATION_ERROR')
    await bad(params([{ key: 'fx', label: 'TC', type: 'money' }]), 400, 'VALIDATION_ERROR')
    const patchKind = await t.request('PATCH', `/api/messaging/tools/${(await tool(t, w, params([{ key: 'fx', label: 'TC', type: 'amount' }]))).id}`, {
      key: w.c.key,
      body: { fixed_config: { toolKind: 'exchange', operationTypeId: w.types.budget } },
    })
    expect([patchKind.status, patchKind.body.code]).toEqual([422, 'OPERATION_TYPE_KIND_MISMATCH'])
  })

  test('legacy mode column follows the up_down mode; other kinds store standard', async () => {
    const t = await testApp()
    const w = await world(t)
    const ud = await tool(t, w, { name: 'Transferencia', fixed_config: { toolKind: 'up_down', operationTypeId: w.types.up_down, mode: 'internal_transfer' } })
    expect((ud as unknown as { mode: string }).mode).toBe('internal_transfer')
    const plain = await tool(t, w, { name: 'Subida', fixed_config: { toolKind: 'up_down', operationTypeId: w.types.up_down } })
    expect((plain as unknown as { mode: string }).mode).toBe('standard')
    const budget = await tool(t, w, { name: 'Gasto', fixed_config: { toolKind: 'budget', operationTypeId: w.types.budget, costCenterId: w.cc.id } })
    expect((budget as unknown as { mode: string }).mode).toBe('standard')
    const patched = await t.request('PATCH', `/api/messaging/tools/${plain.id}`, {
      key: w.c.key,
      body: { fixed_config: { toolKind: 'up_down', operationTypeId: w.types.up_down, mode: 'third_party' } },
    })
    expect(patched.status).toBe(200)
    expect(patched.body.mode).toBe('third_party')
  })

  test('money in fixed_config is answered as JSON numbers, however it was sent; runs use the exact value', async () => {
    const t = await testApp()
    const w = await world(t)
    const ex = await tool(t, w, {
      name: 'Dólar fijo',
      fixed_config: { toolKind: 'exchange', operationTypeId: w.types.exchange, localAccountId: w.caja.acc.ARS, quoteAccountId: w.caja.acc.USD, quoteAmount: '100.10', fx: '1234.5' },
    })
    const cfg = (ex as unknown as { fixed_config: Record<string, unknown> }).fixed_config
    expect([cfg.quoteAmount, cfg.fx]).toEqual([100.1, 1234.5])
    const other = await tool(t, w, {
      name: 'Fija',
      fixed_config: { toolKind: 'other', operationTypeId: w.types.other, transactions: [{ accountId: w.caja.acc.USD, amount: '-0.30' }] },
    })
    const got = await t.request('GET', `/api/messaging/tools/${other.id}`, { key: w.c.key })
    expect(got.body.fixed_config.transactions[0].amount).toBe(-0.3)
    const listed = (await t.request('GET', '/api/messaging/tools', { key: w.c.key })).body.data.find((x: { id: number }) => x.id === ex.id)
    expect(listed.fixed_config.fx).toBe(1234.5)
    const r = await run(t, w.c.key, ex.id, {})
    expect(legs(r.body.operation)).toEqual([
      [w.caja.acc.USD, 100.1, 'USD'],
      [w.caja.acc.ARS, -123573.45, 'ARS'],
    ])
  })

  test('permissions, created_by and tenancy', async () => {
    const t = await testApp()
    const w = await world(t)
    const other = await world(t)
    const manager = await w.c.employee(['messaging.manage'])
    const runner = await w.c.employee(['messaging.run'])
    const nobody = await w.c.employee(['clients.view'])
    const body = { name: 'Gasto', fixed_config: { toolKind: 'budget', operationTypeId: w.types.budget, costCenterId: w.cc.id, amount: 10 } }
    const mine = await createTool(t, manager.key, body)
    expect(mine.status).toBe(201)
    expect(mine.body.created_by).toBe(manager.id)
    for (const key of [runner.key, nobody.key]) {
      expect((await createTool(t, key, { ...body, name: 'Otro' })).status).toBe(403)
      expect((await t.request('GET', '/api/messaging/tools', { key })).status).toBe(403)
      expect((await t.request('GET', `/api/messaging/tools/${mine.body.id}`, { key })).status).toBe(403)
      expect((await t.request('PATCH', `/api/messaging/tools/${mine.body.id}`, { key, body: { enabled: false } })).status).toBe(403)
      expect((await t.request('DELETE', `/api/messaging/tools/${mine.body.id}`, { key })).status).toBe(403)
    }
    expect((await run(t, runner.key, mine.body.id, {})).status).toBe(201)
    expect((await run(t, manager.key, mine.body.id, {})).status).toBe(201)
    const denied = await run(t, nobody.key, mine.body.id, {})
    expect([denied.status, denied.body.code]).toEqual([403, 'FORBIDDEN'])
    expect((await t.request('GET', '/api/messaging/tools', {})).status).toBe(401)
    expect((await run(t, 'fos_nope', mine.body.id, {})).status).toBe(401)
    for (const [method, path] of [
      ['GET', `/api/messaging/tools/${mine.body.id}`],
      ['PATCH', `/api/messaging/tools/${mine.body.id}`],
      ['DELETE', `/api/messaging/tools/${mine.body.id}`],
      ['POST', `/api/messaging/tools/${mine.body.id}/run`],
    ]) {
      const r = await t.request(method, path, { key: other.c.key, body: method === 'PATCH' ? {} : method === 'POST' ? { requested_by: requestedBy } : undefined })
      expect([r.status, r.body.code]).toEqual([404, 'NOT_FOUND'])
    }
    expect((await t.request('GET', '/api/messaging/tools', { key: other.c.key })).body).toEqual({ data: [] })
  })

  postgresTest('two concurrent creates with one slug: one 201, one 409 SLUG_TAKEN', async () => {
    const t = await testApp()
    const w = await world(t)
    for (let round = 0; round < 5; round++) {
      const body = { name: `Carrera ${round}`, fixed_config: { toolKind: 'other', operationTypeId: w.types.other } }
      const results = await Promise.all([createTool(t, w.c.key, body), createTool(t, w.c.key, body)])
      expect(results.map((r) => r.status).sort()).toEqual([201, 409])
      expect(results.find((r) => r.status === 409)!.body.code).toBe('SLUG_TAKEN')
    }
    expect((await t.request('GET', '/api/messaging/tools', { key: w.c.key })).body.data).toHaveLength(5)
  })
})

describe('messaging tools: runs', () => {
  test('up_down standard: client account and caja go up; audit rows carry the channel and requested_by', async () => {
    const t = await testApp()
    const w = await world(t)
    const emp = await w.c.employee(['clients.view'])
    const tl = await tool(t, w, {
      name: 'Depósito de efectivo',
      fixed_config: { toolKind: 'up_down', operationTypeId: w.types.up_down, direction: 'up', clientId: w.juan.id, sourceAccountId: w.caja.acc.USD, currency: 'USD' },
      parameter_schema: { parameters: [{ key: 'amount', label: 'Monto', type: 'amount', required: true }] },
    })
    const res = await run(t, w.c.key, tl.id, {
      parameters: { amount: '1500.25' },
      requested_by: { ...requestedBy, employee_id: emp.id, client_id: w.juan.id },
    })
    expect(res.status).toBe(201)
    const { operation, draft } = res.body
    expect(operation).toMatchObject({ operation_type_id: w.types.up_down, client_id: w.juan.id, status: 'pending', description: 'Depósito de efectivo' })
    expect(legs(operation)).toEqual([
      [w.juan.acc.USD, 1500.25, 'USD'],
      [w.caja.acc.USD, 1500.25, 'USD'],
    ])
    const requester = { contact_id: 77, phone: '+5491155550000', employee: { id: emp.id, name: 'Empleado 1' }, client: { id: w.juan.id, name: 'Juan Pérez' } }
    expect(draft).toEqual({ id: expect.any(Number), tool_id: tl.id, channel: 'messaging', requested_by: requester })
    await approve(t, w.c, operation.id)
    expect((await balances(t, w.c, w.juan.id)).USD).toBe(1500.25)
    expect((await balances(t, w.c, w.caja.id)).USD).toBe(1500.25)

    const ops = await t.request('GET', `/api/audit-logs?table=operation&pageSize=100`, { key: w.c.key })
    const opRows = ops.body.data.filter((r: { entity_id: number }) => r.entity_id === operation.id)
    expect(opRows.map((r: { action: string }) => r.action).sort()).toEqual(['create', 'update'])
    for (const row of opRows) {
      expect(row.channel).toBe('messaging')
      expect(row.channel_detail).toEqual({ requested_by: requester })
    }
    const txRows = (await t.request('GET', `/api/audit-logs?table=transaction&pageSize=100`, { key: w.c.key })).body.data.filter(
      (r: { after: { operation_id: number } | null }) => r.after?.operation_id === operation.id,
    )
    expect(txRows).toHaveLength(4)
    for (const row of txRows) {
      expect(row.channel).toBe('messaging')
      expect(row.channel_detail.requested_by).toEqual(requester)
    }
    // A change not made by a tool carries no channel.
    const plainClient = (await t.request('GET', `/api/audit-logs?table=client&pageSize=100`, { key: w.c.key })).body.data[0]
    expect(plainClient.channel).toBeNull()
  })

  test('up_down down, internal_transfer and third_party; channel twin', async () => {
    const t = await testApp()
    const w = await world(t)
    const down = await tool(t, w, {
      name: 'Retiro',
      fixed_config: { toolKind: 'up_down', operationTypeId: w.types.up_down, direction: 'down', destinationAccountId: w.juan.acc.ARS, amount: '300' },
    })
    const r1 = await run(t, w.c.key, down.id, { channel: 'twin' })
    expect(r1.status).toBe(201)
    expect(r1.body.draft.channel).toBe('twin')
    expect(legs(r1.body.operation)).toEqual([[w.juan.acc.ARS, -300, 'ARS']])
    const logs = await t.request('GET', `/api/audit-logs?table=operations`, { key: w.c.key })
    expect(logs.body.data.find((r: { entity_id: number }) => r.entity_id === r1.body.operation.id).channel).toBe('twin')

    const transfer = await tool(t, w, {
      name: 'Entre cajas',
      fixed_config: { toolKind: 'up_down', operationTypeId: w.types.up_down, mode: 'internal_transfer', sourceAccountId: w.caja.acc.USD, destinationAccountId: w.caja2.acc.USD },
      parameter_schema: { parameters: [{ key: 'amount', label: 'Monto', type: 'amount', required: true }] },
    })
    const r2 = await run(t, w.c.key, transfer.id, { parameters: { amount: 40 } })
    expect(legs(r2.body.operation)).toEqual([
      [w.caja.acc.USD, -40, 'USD'],
      [w.caja2.acc.USD, 40, 'USD'],
    ])
    await approve(t, w.c, r2.body.operation.id)
    expect((await balances(t, w.c, w.caja.id)).USD).toBe(-40)
    expect((await balances(t, w.c, w.caja2.id)).USD).toBe(40)

    const notCaja = await tool(t, w, {
      name: 'Mal',
      fixed_config: { toolKind: 'up_down', operationTypeId: w.types.up_down, mode: 'internal_transfer', sourceAccountId: w.juan.acc.USD, destinationAccountId: w.caja2.acc.USD, amount: 1 },
    })
    expect((await run(t, w.c.key, notCaja.id, {})).body.code).toBe('ACCOUNT_NOT_INTERNAL')

    const third = await tool(t, w, {
      name: 'Pago a tercero',
      fixed_config: { toolKind: 'up_down', operationTypeId: w.types.up_down, mode: 'third_party', sourceAccountId: w.juan.acc.ARS },
      parameter_schema: {
        parameters: [
          { key: 'destinationAccountId', label: 'Cuenta destino', type: 'account', required: true },
          { key: 'amount', label: 'Monto', type: 'amount', required: true },
        ],
      },
    })
    const r3 = await run(t, w.c.key, third.id, { parameters: { destinationAccountId: w.payer.acc.ARS, amount: '12.5' } })
    expect(r3.status).toBe(201)
    expect(legs(r3.body.operation)).toEqual([
      [w.juan.acc.ARS, -12.5, 'ARS'],
      [w.payer.acc.ARS, 12.5, 'ARS'],
    ])
    const mismatch = await run(t, w.c.key, third.id, { parameters: { destinationAccountId: w.caja.acc.USD, amount: 1 } })
    expect([mismatch.status, mismatch.body.code]).toEqual([422, 'INVALID_PARAMETERS'])
    expect(mismatch.body.details[0].field).toBe('destinationAccountId')
  })

  test('exchange: buy brings the quote currency in, sell takes it out; local = quote × fx exactly', async () => {
    const t = await testApp()
    const w = await world(t)
    const ex = await tool(t, w, {
      name: 'Dólar billete',
      fixed_config: { toolKind: 'exchange', operationTypeId: w.types.exchange, localAccountId: w.caja.acc.ARS, quoteAccountId: w.caja.acc.USD, fx: '1250.5' },
      parameter_schema: {
        parameters: [
          { key: 'side', label: 'Compra o venta', type: 'side', required: false },
          { key: 'quoteAmount', label: 'Dólares', type: 'amount', required: true },
        ],
      },
    })
    const buy = await run(t, w.c.key, ex.id, { parameters: { quoteAmount: 100.1 } })
    expect(buy.status).toBe(201)
    expect(legs(buy.body.operation)).toEqual([
      [w.caja.acc.USD, 100.1, 'USD'],
      [w.caja.acc.ARS, -125175.05, 'ARS'],
    ])
    const sell = await run(t, w.c.key, ex.id, { parameters: { quoteAmount: '40', side: 'SELL' } })
    expect(legs(sell.body.operation)).toEqual([
      [w.caja.acc.USD, -40, 'USD'],
      [w.caja.acc.ARS, 50020, 'ARS'],
    ])
    await approve(t, w.c, buy.body.operation.id)
    await approve(t, w.c, sell.body.operation.id)
    expect(await balances(t, w.c, w.caja.id)).toEqual({ ARS: -75155.05, USD: 60.1 })
    const same = await tool(t, w, {
      name: 'Mal',
      fixed_config: { toolKind: 'exchange', operationTypeId: w.types.exchange, localAccountId: w.caja.acc.USD, quoteAccountId: w.caja2.acc.USD, fx: 1, quoteAmount: 1 },
    })
    expect((await run(t, w.c.key, same.id, {})).body.code).toBe('CURRENCIES_MUST_DIFFER')
  })

  test('repro: exchange legs come from the quote as stored, so they keep the stated rate; an amount that rounds to 0 is refused', async () => {
    const t = await testApp()
    const w = await world(t)
    const ex = await tool(t, w, {
      name: 'Cambio a cotización',
      fixed_config: { toolKind: 'exchange', operationTypeId: w.types.exchange, localAccountId: w.caja.acc.ARS, quoteAccountId: w.caja.acc.USD },
      parameter_schema: {
        parameters: [
          { key: 'quoteAmount', label: 'Dólares', type: 'amount', required: true },
          { key: 'fx', label: 'Cotización', type: 'number', required: true },
        ],
      },
    })
    const cases: [string | number, string | number, number, number][] = [
      // The probe's two: the quote is stored with six places, and the local leg follows it, not the unrounded quote.
      ['0.0000006', 1_000_000, 0.000001, -1],
      ['2.5000004', '1234.5', 2.5, -3086.25],
      [2.5000004, 1234.5, 2.5, -3086.25],
      ['0.0000015', '3', 0.000002, -0.000006],
    ]
    for (const [quoteAmount, fx, quote, local] of cases) {
      const r = await run(t, w.c.key, ex.id, { parameters: { quoteAmount, fx } })
      expect(r.status).toBe(201)
      expect(legs(r.body.operation)).toEqual([
        [w.caja.acc.USD, quote, 'USD'],
        [w.caja.acc.ARS, local, 'ARS'],
      ])
    }
    for (const [quoteAmount, fx] of [['0.0000004', 10], ['0.000001', '0.0000001']]) {
      const r = await run(t, w.c.key, ex.id, { parameters: { quoteAmount, fx } })
      expect([r.status, r.body.code]).toEqual([422, 'INVALID_PARAMETERS'])
      expect(r.body.details).toEqual([expect.objectContaining({ field: 'quoteAmount', reason: 'invalid', message: expect.stringContaining('0.000001') })])
    }
  })

  test('budget: expense from the default caja, an explicit caja, or an external payer; income mirrors', async () => {
    const t = await testApp()
    const w = await world(t)
    const budget = await tool(t, w, {
      name: 'Gasto sueldos',
      fixed_config: { toolKind: 'budget', operationTypeId: w.types.budget, costCenterId: w.cc.id, description: 'Sueldo' },
      parameter_schema: {
        parameters: [
          { key: 'amount', label: 'Monto', type: 'amount', required: true },
          { key: 'direction', label: 'Gasto o ingreso', type: 'string', required: false },
          { key: 'paymentSourceMode', label: 'Origen', type: 'string', required: false },
          { key: 'internalAccountId', label: 'Caja', type: 'account', required: false },
          { key: 'payerClientId', label: 'Pagador', type: 'client', required: false },
          { key: 'currency', label: 'Moneda', type: 'currency', required: false },
        ],
      },
    })
    expect(w.cc.default_internal_account_id).toBe(w.caja.acc.ARS)
    const cases: [Record<string, unknown>, [number, number, string][]][] = [
      [{ amount: 1000 }, [[w.caja.acc.ARS, -1000, 'ARS']]],
      [{ amount: 10, currency: 'USD' }, [[w.caja.acc.USD, -10, 'USD']]],
      [{ amount: 200, internalAccountId: w.caja2.acc.ARS }, [[w.caja2.acc.ARS, -200, 'ARS']]],
      [{ amount: 300, paymentSourceMode: 'external', payerClientId: w.payer.id }, [[w.payer.acc.ARS, 300, 'ARS']]],
      [{ amount: 50, direction: 'income' }, [[w.caja.acc.ARS, 50, 'ARS']]],
      [{ amount: 70, direction: 'income', paymentSourceMode: 'external', payerClientId: w.payer.id }, [[w.payer.acc.ARS, -70, 'ARS']]],
    ]
    for (const [parameters, expected] of cases) {
      const r = await run(t, w.c.key, budget.id, { parameters })
      expect(r.status).toBe(201)
      expect(r.body.operation).toMatchObject({ cost_center_id: w.cc.id, client_id: w.caja.id, description: 'Sueldo' })
      expect(legs(r.body.operation)).toEqual(expected)
      await approve(t, w.c, r.body.operation.id)
    }
    expect(await balances(t, w.c, w.caja.id)).toEqual({ ARS: -950, USD: -10 })
    expect((await balances(t, w.c, w.caja2.id)).ARS).toBe(-200)
    expect((await balances(t, w.c, w.payer.id)).ARS).toBe(230)

    const notExternal = await run(t, w.c.key, budget.id, { parameters: { amount: 1, paymentSourceMode: 'external', payerClientId: w.juan.id + 1000000 } })
    expect([notExternal.status, notExternal.body.code]).toEqual([422, 'INVALID_PARAMETERS'])
    const cajaAsPayer = await run(t, w.c.key, budget.id, { parameters: { amount: 1, paymentSourceMode: 'external', payerClientId: w.caja.id } })
    expect(cajaAsPayer.body.details[0].field).toBe('payerClientId')
    const noPayer = await run(t, w.c.key, budget.id, { parameters: { amount: 1, paymentSourceMode: 'external' } })
    expect(noPayer.body.details).toEqual([{ field: 'payerClientId', label: 'Pagador', reason: 'missing', message: 'required' }])
    const externalAsCaja = await run(t, w.c.key, budget.id, { parameters: { amount: 1, internalAccountId: w.juan.acc.ARS } })
    expect(externalAsCaja.body.code).toBe('INVALID_PARAMETERS')
    const badDirection = await run(t, w.c.key, budget.id, { parameters: { amount: 1, direction: 'sideways' } })
    expect(badDirection.body.details[0]).toMatchObject({ field: 'direction', label: 'Gasto o ingreso', reason: 'invalid' })

    const fixedCaja = await tool(t, w, {
      name: 'Gasto fijo',
      fixed_config: { toolKind: 'budget', operationTypeId: w.types.budget, costCenterId: w.cc.id, internalAccountId: w.juan.acc.ARS, amount: 5 },
    })
    const cfg = await run(t, w.c.key, fixedCaja.id, {})
    expect([cfg.status, cfg.body.code]).toEqual([422, 'ACCOUNT_NOT_INTERNAL'])
  })

  test('other: the explicit transactions of the fixed config', async () => {
    const t = await testApp()
    const w = await world(t)
    const tt = await t.request('POST', '/api/transaction-types', { key: w.c.key, body: { name: 'Comisión', is_commission: true } })
    const other = await tool(t, w, {
      name: 'Comisión fija',
      fixed_config: {
        toolKind: 'other',
        operationTypeId: w.types.other,
        transactions: [
          { accountId: w.juan.acc.USD, amount: -5, transactionTypeId: tt.body.id, description: 'comisión' },
          { accountId: w.caja.acc.USD, amount: '5' },
        ],
      },
      parameter_schema: { parameters: [{ key: 'description', label: 'Detalle', type: 'string', required: false }] },
    })
    const r = await run(t, w.c.key, other.id, { parameters: { description: 'Comisión de marzo' } })
    expect(r.status).toBe(201)
    expect(r.body.operation.description).toBe('Comisión de marzo')
    expect(r.body.operation.transactions.map((x: { amount: number; is_commission: boolean; description: string }) => [x.amount, x.is_commission, x.description])).toEqual([
      [-5, true, 'comisión'],
      [5, false, ''],
    ])
    await approve(t, w.c, r.body.operation.id)
    expect((await balances(t, w.c, w.juan.id)).USD).toBe(-5)
    const empty = await tool(t, w, { name: 'Vacía', fixed_config: { toolKind: 'other', operationTypeId: w.types.other } })
    const none = await run(t, w.c.key, empty.id, {})
    expect([none.status, none.body.code, none.body.details[0].field]).toEqual([422, 'INVALID_PARAMETERS', 'transactions'])
  })

  test('parameters: every missing or invalid one is named with its key and label', async () => {
    const t = await testApp()
    const w = await world(t)
    const tl = await tool(t, w, {
      name: 'Subida',
      fixed_config: { toolKind: 'up_down', operationTypeId: w.types.up_down },
      parameter_schema: {
        parameters: [
          { key: 'clientId', label: 'Cliente', type: 'client', required: true },
          { key: 'currency', label: 'Moneda', type: 'currency', required: true },
          { key: 'amount', label: 'Monto', type: 'amount', required: true },
        ],
      },
    })
    const missing = await run(t, w.c.key, tl.id, { parameters: {} })
    expect(missing.status).toBe(422)
    expect(missing.body.code).toBe('INVALID_PARAMETERS')
    expect(missing.body.error).toContain('amount (Monto)')
    expect(missing.body.details).toEqual([
      { field: 'clientId', label: 'Cliente', reason: 'missing', message: 'required' },
      { field: 'currency', label: 'Moneda', reason: 'missing', message: 'required' },
      { field: 'amount', label: 'Monto', reason: 'missing', message: 'required' },
    ])
    const invalid = await run(t, w.c.key, tl.id, { parameters: { clientId: 'juan', currency: 'BTC', amount: '-3' } })
    expect(invalid.body.details.map((d: { field: string; reason: string }) => [d.field, d.reason])).toEqual([
      ['clientId', 'invalid'],
      ['currency', 'invalid'],
      ['amount', 'invalid'],
    ])
    const foreignClient = await run(t, w.c.key, tl.id, { parameters: { clientId: 999999, currency: 'USD', amount: 1 } })
    expect([foreignClient.status, foreignClient.body.details[0].field]).toEqual([422, 'clientId'])
    const ok = await run(t, w.c.key, tl.id, { parameters: { clientId: String(w.juan.id), currency: 'usd', amount: 2 } })
    expect(ok.status).toBe(201)
    expect(legs(ok.body.operation)).toEqual([[w.juan.acc.USD, 2, 'USD']])
    expect(ok.body.operation.client_id).toBe(w.juan.id)
  })

  test('a date parameter sets the operation date on every kind; a bad or impossible date is named', async () => {
    const t = await testApp()
    const w = await world(t)
    const tl = await tool(t, w, {
      name: 'Gasto con fecha',
      fixed_config: { toolKind: 'budget', operationTypeId: w.types.budget, costCenterId: w.cc.id, amount: 10 },
      parameter_schema: { parameters: [{ key: 'date', label: 'Fecha', type: 'date', required: false }] },
    })
    const dated = await run(t, w.c.key, tl.id, { parameters: { date: '2025-03-10' } })
    expect(dated.status).toBe(201)
    expect(dated.body.operation.date).toBe('2025-03-10T03:00:00.000Z')
    const exact = await run(t, w.c.key, tl.id, { parameters: { date: '2025-03-10T15:30:00Z' } })
    expect(exact.body.operation.date).toBe('2025-03-10T15:30:00.000Z')
    const undated = await run(t, w.c.key, tl.id, {})
    expect(undated.status).toBe(201)
    for (const bad of ['2025-02-30', 'mañana', '2025-03-10T15:30']) {
      const r = await run(t, w.c.key, tl.id, { parameters: { date: bad } })
      expect([bad, r.status, r.body.code, r.body.details?.[0].field]).toEqual([bad, 422, 'INVALID_PARAMETERS', 'date'])
    }
    for (const kind of ['up_down', 'exchange', 'other'])
      expect(
        (await createTool(t, w.c.key, {
          name: `Con fecha ${kind}`,
          fixed_config: { toolKind: kind, operationTypeId: w.types[kind] },
          parameter_schema: { parameters: [{ key: 'date', label: 'Fecha', type: 'date' }] },
        })).status,
      ).toBe(201)
    const wrongType = await createTool(t, w.c.key, {
      name: 'Fecha como monto',
      fixed_config: { toolKind: 'other', operationTypeId: w.types.other },
      parameter_schema: { parameters: [{ key: 'date', label: 'Fecha', type: 'amount' }] },
    })
    expect(wrongType.status).toBe(400)
  })

  test('disabled tool 409, requested_by checks, Idempotency-Key replays the same operation', async () => {
    const t = await testApp()
    const w = await world(t)
    const other = await world(t)
    const tl = await tool(t, w, { name: 'Fija', fixed_config: { toolKind: 'up_down', operationTypeId: w.types.up_down, destinationAccountId: w.juan.acc.USD, amount: 1 } })
    const noRequester = await t.request('POST', `/api/messaging/tools/${tl.id}/run`, { key: w.c.key, body: { parameters: {} } })
    expect([noRequester.status, noRequester.body.code]).toEqual([400, 'VALIDATION_ERROR'])
    const badChannel = await run(t, w.c.key, tl.id, { channel: 'dashboard' })
    expect(badChannel.status).toBe(400)
    const ghost = await run(t, w.c.key, tl.id, { requested_by: { ...requestedBy, employee_id: 999999 } })
    expect([ghost.status, ghost.body.code]).toEqual([422, 'UNKNOWN_EMPLOYEE'])
    const foreignClient = await run(t, w.c.key, tl.id, { requested_by: { ...requestedBy, client_id: other.juan.id } })
    expect([foreignClient.status, foreignClient.body.code]).toEqual([422, 'UNKNOWN_CLIENT'])

    const headers = { 'idempotency-key': `run-${tl.id}` }
    const first = await run(t, w.c.key, tl.id, {}, headers)
    const replay = await run(t, w.c.key, tl.id, {}, headers)
    expect([first.status, replay.status]).toEqual([201, 201])
    expect(replay.body.operation.id).toBe(first.body.operation.id)
    expect(replay.body.draft.id).toBe(first.body.draft.id)

    await t.request('PATCH', `/api/messaging/tools/${tl.id}`, { key: w.c.key, body: { enabled: false } })
    const disabled = await run(t, w.c.key, tl.id, {})
    expect([disabled.status, disabled.body.code]).toEqual([409, 'TOOL_DISABLED'])
  })

  test('a client-scoped runner can only create operations inside their scope', async () => {
    const t = await testApp()
    const w = await world(t)
    const scoped = await w.c.employee(['messaging.run'], [w.payer.id])
    const tl = await tool(t, w, { name: 'Fija', fixed_config: { toolKind: 'up_down', operationTypeId: w.types.up_down, destinationAccountId: w.juan.acc.USD, amount: 1 } })
    expect((await run(t, scoped.key, tl.id, {})).status).toBe(403)
    const ok = await tool(t, w, { name: 'Propia', fixed_config: { toolKind: 'up_down', operationTypeId: w.types.up_down, destinationAccountId: w.payer.acc.ARS, amount: 1 } })
    const r = await run(t, scoped.key, ok.id, {})
    expect(r.status).toBe(201)
    expect(r.body.operation.created_by).toBe(scoped.id)
  })
})
