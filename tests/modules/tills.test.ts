import { beforeAll, describe, expect, test } from 'bun:test'
import { extractText, getDocumentProxy } from 'unpdf'
import { testApp, type TestApp } from '../helpers'
import { balances, countOf, moneyStrings, tillBranch } from './tills.fixtures'

let t: TestApp
beforeAll(async () => {
  t = await testApp()
}, 120_000)

const post = (key: string, path: string, body?: unknown) => t.request('POST', path, { key, body, headers: moneyStrings })
const get = (key: string, path: string) => t.request('GET', path, { key, headers: moneyStrings })

describe('till sessions: open, count, close', () => {
  test('a day: open with a difference booked, exchanges, close with a difference booked; balances equal the counts; summary', async () => {
    const b = await tillBranch(t)
    const start = await balances(t, b)
    expect(start).toEqual({ ARS: '10000000', USD: '10000', EUR: '10000', BRL: '0' })
    const cashier = await b.c.employee(['tills.operate', 'operations.create', 'operations.approve'])

    // Never opened: listed as such, and not restricted.
    const listed = await get(cashier.key, '/api/cajas')
    expect(listed.status).toBe(200)
    expect(listed.body.data).toEqual([
      { id: b.caja.id, name: 'Caja principal', accounts: expect.any(Array), till: 'never_opened', session: null },
    ])

    // Opening: 5 USD missing.
    const opened = await post(cashier.key, `/api/cajas/${b.caja.id}/open`, { counted: countOf(start, { USD: '-5' }) })
    expect(opened.status).toBe(201)
    expect(opened.body).toMatchObject({
      caja_id: b.caja.id,
      status: 'open',
      opened_by: cashier.id,
      opened_by_name: 'Empleado 1',
      closed_at: null,
      closing: null,
      opening: [
        { currency: 'ARS', expected: '10000000', counted: '10000000', difference: '0' },
        { currency: 'USD', expected: '10000', counted: '9995', difference: '-5' },
        { currency: 'EUR', expected: '10000', counted: '10000', difference: '0' },
        { currency: 'BRL', expected: '0', counted: '0', difference: '0' },
      ],
    })
    expect(opened.body.adjustment_operation_id).toBeInteger()
    expect(opened.body.opening_adjustment_operation_id).toBe(opened.body.adjustment_operation_id)
    expect(typeof opened.body.opened_at).toBe('string')
    const adjustment = await get(b.c.key, `/api/operations/${opened.body.adjustment_operation_id}`)
    expect(adjustment.body).toMatchObject({ operation_type_id: b.adjustmentTypeId, client_id: null, status: 'completed', created_by: cashier.id })
    expect(adjustment.body.transactions.map((x: { account_id: number; amount: string }) => [x.account_id, x.amount])).toEqual([[b.account('USD'), '-5']])
    expect((await balances(t, b)).USD).toBe('9995')

    // The day: a purchase with commission, a sale, an ordinary operation, and a pending purchase approved later.
    const buy = await post(cashier.key, '/api/exchanges', { side: 'buy', currency: 'USD', amount: '100', caja_id: b.caja.id, commission: { amount: '500' } })
    expect(buy.status).toBe(201)
    const sell = await post(cashier.key, '/api/exchanges', { side: 'sell', currency: 'EUR', amount: '50', caja_id: b.caja.id })
    expect(sell.status).toBe(201)
    const income = await post(cashier.key, '/api/operations', {
      operation_type_id: b.ingresoTypeId,
      status: 'completed',
      transactions: [{ account_id: b.account('BRL'), amount: '250' }],
    })
    expect(income.status).toBe(201)
    const junior = await b.c.employee(['operations.create'])
    const pendingBuy = await post(junior.key, '/api/exchanges', { side: 'buy', currency: 'USD', amount: '10', caja_id: b.caja.id })
    expect(pendingBuy.body.operation.status).toBe('pending')
    expect((await post(cashier.key, `/api/operations/${pendingBuy.body.operation.id}/approve`)).status).toBe(200)
    // Made and undone within the day: in the report, not in the summary.
    const undone = await post(cashier.key, '/api/exchanges', { side: 'sell', currency: 'USD', amount: '1', caja_id: b.caja.id })
    expect((await post(cashier.key, `/api/operations/${undone.body.operation.id}/cancel`)).status).toBe(200)

    const state = await get(cashier.key, '/api/cajas')
    expect(state.body.data[0]).toMatchObject({ till: 'open', session: { id: opened.body.id, status: 'open' } })
    // An open session's summary is as of now.
    expect(state.body.data[0].session.summary.find((r: { currency: string }) => r.currency === 'USD')).toEqual({ currency: 'USD', bought: '110', sold: '0', operations: 2, commissions: '0' })

    // Closing: 1,000 ARS over, within no tolerance: the cashier needs tills.supervise.
    const before = await balances(t, b)
    const counted = countOf(before, { ARS: '1000' })
    const refused = await post(cashier.key, `/api/cajas/${b.caja.id}/close`, { counted, note: 'Sobrante' })
    expect(refused.status).toBe(403)
    expect(refused.body.code).toBe('FORBIDDEN')
    expect(refused.body.details).toEqual([
      { currency: 'ARS', expected: before.ARS, counted: counted[0].amount, difference: '1000', tolerance: '0', over_tolerance: true },
    ])
    expect(await balances(t, b)).toEqual(before)

    const supervisor = await b.c.employee(['tills.operate', 'tills.supervise'])
    const closed = await post(supervisor.key, `/api/cajas/${b.caja.id}/close`, { counted, note: 'Sobrante' })
    expect(closed.status).toBe(200)
    expect(closed.body).toMatchObject({ id: opened.body.id, status: 'closed', closed_by: supervisor.id, closed_by_name: 'Empleado 3', note: 'Sobrante' })
    expect(closed.body.closing).toEqual([
      { currency: 'ARS', expected: before.ARS, counted: counted[0].amount, difference: '1000' },
      { currency: 'USD', expected: before.USD, counted: before.USD, difference: '0' },
      { currency: 'EUR', expected: before.EUR, counted: before.EUR, difference: '0' },
      { currency: 'BRL', expected: before.BRL, counted: before.BRL, difference: '0' },
    ])
    expect(closed.body.closing_adjustment_operation_id).toBe(closed.body.adjustment_operation_id)
    expect(closed.body.summary).toEqual([
      { currency: 'ARS', bought: '0', sold: '0', operations: 3, commissions: '500' },
      { currency: 'USD', bought: '110', sold: '0', operations: 2, commissions: '0' },
      { currency: 'EUR', bought: '0', sold: '50', operations: 1, commissions: '0' },
      { currency: 'BRL', bought: '0', sold: '0', operations: 1, commissions: '0' },
    ])
    const after = await balances(t, b)
    expect(after).toEqual(Object.fromEntries(counted.map((c) => [c.currency, c.amount])))
    expect(closed.body.opened_at < closed.body.closed_at).toBe(true)

    // The session as its GET and the caja's list answer it.
    const got = await get(cashier.key, `/api/till-sessions/${opened.body.id}`)
    const { adjustment_operation_id: _, ...session } = closed.body
    expect(got.body).toEqual(session)
    const page = await get(cashier.key, `/api/cajas/${b.caja.id}/sessions`)
    expect(page.body).toEqual({ data: [session], pagination: { page: 1, pageSize: 50, total: 1, totalPages: 1 } })

    // The report: every operation with its receipt number, adjustments apart.
    const report = await get(cashier.key, `/api/till-sessions/${opened.body.id}/report`)
    expect(report.status).toBe(200)
    expect(report.body.operations.map((o: { operation_id: number }) => o.operation_id)).toEqual([
      buy.body.operation.id,
      sell.body.operation.id,
      income.body.id,
      pendingBuy.body.operation.id,
      undone.body.operation.id,
    ])
    expect(report.body.operations[0]).toMatchObject({
      receipt_number: buy.body.receipt.number,
      type: 'Compra de divisas',
      status: 'completed',
      events: [{ event: 'created' }],
      exchange: { side: 'buy', currency: 'USD', amount: '100', rate: '1165.5', rate_source: 'board', local_amount: '116550', commission: '500', ticket_id: null },
      movements: [
        { currency: 'USD', amount: '100' },
        { currency: 'ARS', amount: '-116050' },
      ],
    })
    expect(report.body.operations[2].receipt_number).toBeNull()
    expect(report.body.operations[3]).toMatchObject({ status: 'completed', events: [{ event: 'created' }, { event: 'approved' }] })
    expect(report.body.operations[4]).toMatchObject({ status: 'cancelled', events: [{ event: 'created' }, { event: 'cancelled' }], movements: [] })
    expect(report.body.differences).toEqual([
      { moment: 'opening', currency: 'USD', expected: '10000', counted: '9995', difference: '-5', adjustment_operation_id: opened.body.adjustment_operation_id },
      { moment: 'closing', currency: 'ARS', expected: before.ARS, counted: counted[0].amount, difference: '1000', adjustment_operation_id: closed.body.adjustment_operation_id },
    ])
    // The opening count and the net movement of the listed operations make what the close expected.
    for (const row of closed.body.closing) {
      const opening = opened.body.opening.find((o: { currency: string }) => o.currency === row.currency).counted
      const net = report.body.movements.find((m: { currency: string }) => m.currency === row.currency).amount
      expect(Number(opening) + Number(net)).toBe(Number(row.expected))
    }
  })

  test('a closed caja stays closed: exchanges, creates, batches, approve, revert and cancel answer 409 TILL_CLOSED until it opens again', async () => {
    const b = await tillBranch(t)
    const other = await t.request('POST', '/api/clients', { key: b.c.key, body: { name: 'Caja 2', type: 0, accounts: [{ currency_name: 'ARS' }] } })
    const leg = (amount: string) => ({ account_id: b.account('ARS'), amount })
    const make = (status: 'pending' | 'completed') => post(b.c.key, '/api/operations', { operation_type_id: b.ingresoTypeId, status, transactions: [leg('10')] })
    const pending = (await make('pending')).body.id
    const completed = (await make('completed')).body.id
    const toCancel = (await make('completed')).body.id

    const start = await balances(t, b)
    expect((await post(b.c.key, `/api/cajas/${b.caja.id}/open`, { counted: countOf(start) })).status).toBe(201)
    expect((await post(b.c.key, `/api/cajas/${b.caja.id}/close`, { counted: countOf(start) })).status).toBe(200)

    const refusals = [
      await post(b.c.key, '/api/exchanges', { side: 'buy', currency: 'USD', amount: '1', caja_id: b.caja.id }),
      await post((await b.c.employee(['operations.create'])).key, '/api/exchanges', { side: 'sell', currency: 'USD', amount: '1', caja_id: b.caja.id }),
      await make('pending'),
      await make('completed'),
      await post(b.c.key, `/api/operations/${pending}/approve`),
      await post(b.c.key, `/api/operations/${completed}/revert`),
      await post(b.c.key, `/api/operations/${toCancel}/cancel`),
      await post(b.c.key, `/api/operations/${pending}/cancel`),
    ]
    for (const r of refusals) {
      expect([r.status, r.body.code]).toEqual([409, 'TILL_CLOSED'])
      expect(r.body.error).toContain(`Caja ${b.caja.id} is closed`)
    }
    const batch = await post(b.c.key, '/api/operations/batch', {
      operations: [
        { operation_type_id: b.ingresoTypeId, transactions: [{ account_id: other.body.accounts[0].id, amount: '1' }] },
        { operation_type_id: b.ingresoTypeId, transactions: [leg('1')] },
      ],
    })
    expect(batch.status).toBe(422)
    expect(batch.body.details).toEqual([{ index: 1, code: 'TILL_CLOSED', error: expect.any(String), details: [{ field: 'transactions.0.account_id', message: `caja ${b.caja.id} is closed` }] }])
    expect(await balances(t, b)).toEqual(start)
    // Another caja, never opened, is not restricted.
    expect((await post(b.c.key, '/api/operations', { operation_type_id: b.ingresoTypeId, status: 'completed', transactions: [{ account_id: other.body.accounts[0].id, amount: '1' }] })).status).toBe(201)
    // Closing again: not open.
    const again = await post(b.c.key, `/api/cajas/${b.caja.id}/close`, { counted: countOf(start) })
    expect([again.status, again.body.code]).toEqual([409, 'TILL_NOT_OPEN'])

    // Opened again, all of it goes through.
    expect((await post(b.c.key, `/api/cajas/${b.caja.id}/open`, { counted: countOf(start) })).status).toBe(201)
    expect((await post(b.c.key, `/api/operations/${pending}/approve`)).status).toBe(200)
    expect((await post(b.c.key, `/api/operations/${completed}/revert`)).status).toBe(200)
    expect((await post(b.c.key, `/api/operations/${toCancel}/cancel`)).status).toBe(200)
    expect((await post(b.c.key, '/api/exchanges', { side: 'buy', currency: 'USD', amount: '1', caja_id: b.caja.id })).status).toBe(201)
    const reopened = await post(b.c.key, `/api/cajas/${b.caja.id}/open`, { counted: countOf(start) })
    expect([reopened.status, reopened.body.code]).toEqual([409, 'TILL_OPEN'])
  })

  test('counts: every currency once, none the caja lacks, denominations adding up; 404 for what is not a caja of the caller', async () => {
    const b = await tillBranch(t)
    const start = await balances(t, b)
    const open = (body: unknown, key = b.c.key, id = b.caja.id) => post(key, `/api/cajas/${id}/open`, body)
    const bad = [
      [{ counted: countOf(start).filter((c) => c.currency !== 'EUR') }, [{ field: 'counted', message: 'EUR is not counted' }]],
      [{ counted: [...countOf(start), { currency: 'JPY', amount: '1' }] }, [{ field: 'counted.4.currency', message: 'the caja has no account in JPY' }]],
      [{ counted: [...countOf(start), { currency: 'usd', amount: '1' }] }, [{ field: 'counted.4.currency', message: 'USD is counted twice' }]],
      [
        { counted: countOf(start).map((c) => (c.currency === 'USD' ? { ...c, denominations: [{ value: '100', count: 99 }, { value: '50', count: 1 }] } : c)) },
        [{ field: 'counted.1.denominations', message: 'bills and coins add up to 9950, not to the amount 10000' }],
      ],
    ] as const
    for (const [body, details] of bad) {
      const r = await open(body)
      expect([r.status, r.body.code, r.body.details]).toEqual([400, 'VALIDATION_ERROR', details])
    }
    for (const body of [{ counted: [{ currency: 'ARS', amount: '-1' }] }, { counted: [{ currency: 'ARS' }] }, {}]) expect((await open(body)).status).toBe(400)

    const outsider = (await t.newCompany()).key
    expect((await open({ counted: countOf(start) }, outsider)).status).toBe(404)
    const customer = await t.request('POST', '/api/clients', { key: b.c.key, body: { name: 'Cliente', type: 1, accounts: [{ currency_name: 'ARS' }] } })
    expect((await open({ counted: [{ currency: 'ARS', amount: '0' }] }, b.c.key, customer.body.id)).status).toBe(404)
    const scoped = await b.c.employee(['tills.operate'], [customer.body.id])
    expect((await open({ counted: countOf(start) }, scoped.key)).status).toBe(404)
    expect((await get(scoped.key, '/api/cajas')).body.data).toEqual([])
    const viewer = await b.c.employee(['clients.view'])
    expect((await open({ counted: countOf(start) }, viewer.key)).status).toBe(403)
    expect((await get(viewer.key, `/api/cajas/${b.caja.id}/sessions`)).status).toBe(403)
    const never = await post(b.c.key, `/api/cajas/${b.caja.id}/close`, { counted: countOf(start) })
    expect([never.status, never.body.code]).toEqual([409, 'TILL_NOT_OPEN'])

    // With the count by denomination, which the session keeps.
    const usd = countOf(start).map((c) => (c.currency === 'USD' ? { ...c, denominations: [{ value: '100', count: 99 }, { value: '50', count: 2 }] } : c))
    const opened = await open({ counted: usd })
    expect(opened.status).toBe(201)
    expect(opened.body.adjustment_operation_id).toBeNull()
    expect(opened.body.opening[1]).toEqual({ currency: 'USD', expected: '10000', counted: '10000', difference: '0', denominations: [{ value: '100', count: 99 }, { value: '50', count: 2 }] })
  })

  test('within the tolerance a close needs no supervisor; without "Ajuste de caja" a difference is 422 and a match is fine', async () => {
    const b = await tillBranch(t)
    expect((await t.request('PATCH', '/api/company', { key: b.c.key, body: { till_tolerance: '10' } })).status).toBe(200)
    const cashier = await b.c.employee(['tills.operate'])
    const start = await balances(t, b)
    expect((await post(cashier.key, `/api/cajas/${b.caja.id}/open`, { counted: countOf(start, { EUR: '25' }) })).status).toBe(201)
    const within = await post(cashier.key, `/api/cajas/${b.caja.id}/close`, { counted: countOf(await balances(t, b), { ARS: '-10', USD: '9.5' }) })
    expect(within.status).toBe(200)
    expect(within.body.closing.map((c: { difference: string }) => c.difference)).toEqual(['-10', '9.5', '0', '0'])

    const bare = await tillBranch(t, { adjustmentType: false })
    const bareStart = await balances(t, bare)
    const missing = await post(bare.c.key, `/api/cajas/${bare.caja.id}/open`, { counted: countOf(bareStart, { ARS: '1' }) })
    expect([missing.status, missing.body.code]).toEqual([422, 'OPERATION_TYPE_NOT_FOUND'])
    expect((await get(bare.c.key, '/api/cajas')).body.data[0].till).toBe('never_opened')
    expect((await post(bare.c.key, `/api/cajas/${bare.caja.id}/open`, { counted: countOf(bareStart) })).status).toBe(201)
  })

  test('opens, closes and adjustments are audited with the employee; events for integrators', async () => {
    const b = await tillBranch(t)
    const cashier = await b.c.employee(['tills.operate', 'tills.supervise'])
    const start = await balances(t, b)
    const opened = await post(cashier.key, `/api/cajas/${b.caja.id}/open`, { counted: countOf(start, { BRL: '3' }) })
    const closed = await post(cashier.key, `/api/cajas/${b.caja.id}/close`, { counted: countOf(await balances(t, b), { BRL: '-1' }) })
    expect(closed.status).toBe(200)
    const audit = await get(b.c.key, '/api/audit-logs?table=till_session&pageSize=100')
    expect(audit.status).toBe(200)
    const rows = audit.body.data.filter((r: { entity_id: number }) => r.entity_id === opened.body.id).reverse()
    expect(rows.map((r: { action: string }) => r.action)).toEqual(['create', 'update', 'update'])
    for (const r of rows) expect(r.actor).toMatchObject({ id: cashier.id, email: cashier.email })
    expect(rows.at(-1).after).toMatchObject({ status: 'closed', closed_by: cashier.id })
    const adjustments = await get(b.c.key, '/api/audit-logs?table=operation&pageSize=100')
    const adjusted = adjustments.body.data.filter((r: { entity_id: number }) => [opened.body.adjustment_operation_id, closed.body.adjustment_operation_id].includes(r.entity_id))
    expect(adjusted.length).toBeGreaterThanOrEqual(2)
    for (const r of adjusted) expect(r.actor).toMatchObject({ id: cashier.id })

    const events = await get(b.c.key, '/api/events?type=till_session.opened,till_session.closed')
    expect(events.body.data.map((e: { type: string; data: { object: { id: number; status: string } } }) => [e.type, e.data.object.id, e.data.object.status])).toEqual([
      ['till_session.opened', opened.body.id, 'open'],
      ['till_session.closed', opened.body.id, 'closed'],
    ])
  })

  test('the report as CSV for a spreadsheet in Spanish and as a PDF', async () => {
    const b = await tillBranch(t)
    const start = await balances(t, b)
    const opened = await post(b.c.key, `/api/cajas/${b.caja.id}/open`, { counted: countOf(start) })
    const buy = await post(b.c.key, '/api/exchanges', { side: 'buy', currency: 'USD', amount: '100.5', caja_id: b.caja.id, commission: { amount: '12.5' } })
    const counted = countOf(await balances(t, b), { ARS: '-0.5' })
    expect((await post(b.c.key, `/api/cajas/${b.caja.id}/close`, { counted, note: 'Faltan 50 centavos' })).status).toBe(200)

    const csv = await t.app.handle(new Request(`http://fos.test/api/till-sessions/${opened.body.id}/report?format=csv`, { headers: { 'x-api-key': b.c.key } }))
    expect(csv.status).toBe(200)
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(csv.headers.get('content-disposition')).toBe(`attachment; filename="caja-${b.caja.id}-sesion-${opened.body.id}.csv"`)
    const bytes = new Uint8Array(await csv.arrayBuffer())
    expect([...bytes.slice(0, 3)]).toEqual([0xef, 0xbb, 0xbf])
    const text = new TextDecoder().decode(bytes.slice(3))
    const lines = text.split('\r\n')
    expect(lines[0]).toBe('Reporte de caja;')
    expect(lines).toContain('Caja;Caja principal')
    expect(lines).toContain(`Sesión;${opened.body.id}`)
    expect(lines).toContain('Moneda;Esperado;Contado;Diferencia;Detalle por billetes y monedas')
    expect(lines).toContain('USD;10000,00;10000,00;0,00;')
    const op = lines.find((l) => l.includes(buy.body.receipt.number))!
    expect(op.split(';').slice(1, 3)).toEqual([String(buy.body.operation.id), buy.body.receipt.number])
    expect(op.split(';').slice(7, 19)).toEqual(['Completada', 'creada', 'Compra', 'USD', '100,50', '1165,50', '117132,75', '12,50', '-117120,25', '100,50', '', ''])
    expect(lines).toContain('Moneda;Compras;Ventas;Operaciones;Comisiones')
    expect(lines).toContain('USD;100,50;0,00;1;0,00')
    expect(lines).toContain('ARS;0,00;0,00;1;12,50')
    expect(lines).toContain('Conteo de cierre')
    expect(lines.find((l) => l.startsWith('Cierre;'))).toMatch(/^Cierre;\d{2}\/\d{2}\/\d{4} \d{2}:\d{2}, Clave de la empresa$/)
    expect(lines.find((l) => l.startsWith('Nota;'))).toBe('Nota;Faltan 50 centavos')
    expect(lines.find((l) => l.startsWith('Cierre;') && l.split(';').length === 6)).toMatch(/^Cierre;ARS;[0-9]+,[0-9]{2};[0-9]+,[0-9]{2};-0,50;\d+$/)

    const pdf = await t.app.handle(new Request(`http://fos.test/api/till-sessions/${opened.body.id}/report?format=pdf`, { headers: { 'x-api-key': b.c.key } }))
    expect(pdf.status).toBe(200)
    expect(pdf.headers.get('content-type')).toBe('application/pdf')
    const parsed = await extractText(await getDocumentProxy(new Uint8Array(await pdf.arrayBuffer())), { mergePages: true })
    for (const words of ['Reporte de caja: Caja principal', 'Conteo de apertura', 'Operaciones de la sesión', buy.body.receipt.number, 'Compra de 100,50 USD a', 'Resumen', 'Conteo de cierre', 'Diferencias', '-0,50', 'Firma del supervisor', 'Sesión'])
      expect(parsed.text).toContain(words)
    const bad = await get(b.c.key, `/api/till-sessions/${opened.body.id}/report?format=xls`)
    expect(bad.status).toBe(400)
    expect((await get((await t.newCompany()).key, `/api/till-sessions/${opened.body.id}/report`)).status).toBe(404)
  })
})
