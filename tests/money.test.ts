/**
 * Money leaves the service with every digit (contract §1 "Money"): random numeric(28,6) values go in as decimal
 * strings and come back byte for byte as JSON number literals (trailing zeros trimmed) through the create answer,
 * the GET, the event feed, the webhook body, the audit entry, the balances and the JSON statement; and as decimal
 * strings under `Accept: application/json; money=string`. Answers are read with lossless-json, which keeps a number's
 * text, so nothing in the test itself goes through a float.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { isLosslessNumber, parse } from 'lossless-json'
import { buildTestApp, testApp, type Company, type TestApp } from './helpers'
import { startReceiver, type Receiver } from './receiver'
import { seedClient } from './modules/operations.fixtures'
import { deliveryWorker } from '../server/modules/webhooks'
import { trimDecimal } from '../db/json'
import { wantsMoneyStrings } from '../server/lib/money'

let t: TestApp
let c: Company
let typeId: number
let receiver: Receiver

beforeAll(async () => {
  const base = (await testApp()).ctx.config
  t = await buildTestApp({ webhooks: { ...base.webhooks, allowHttp: true, allowPrivate: true, retrySchedule: [1, 1, 1], timeoutMs: 2000 } })
  deliveryWorker(t.ctx).start()
  receiver = startReceiver()
  c = await t.newCompany()
  const type = await t.request('POST', '/api/operation-types', { key: c.key, body: { name: 'Cambio', kind: 'exchange' } })
  typeId = type.body.id
  const ep = await t.request('POST', '/api/webhook-endpoints', { key: c.key, body: { url: receiver.url, event_types: ['operation.created'] } })
  expect(ep.status).toBe(201)
})

afterAll(async () => {
  await deliveryWorker(t.ctx).stop()
  receiver.stop()
})

/** The raw answer: status, text and the text read with numbers kept as their digits. */
async function raw(method: string, path: string, opts: { key?: string; bearer?: string; body?: unknown; accept?: string } = {}) {
  const headers = new Headers()
  if (opts.key) headers.set('x-api-key', opts.key)
  if (opts.bearer) headers.set('authorization', `Bearer ${opts.bearer}`)
  if (opts.accept) headers.set('accept', opts.accept)
  if (opts.body !== undefined) headers.set('content-type', 'application/json')
  const res = await t.app.handle(
    new Request(`http://fos.test${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) }),
  )
  const text = await res.text()
  return { status: res.status, headers: res.headers, text, json: parse(text) as any }
}

/** A number's text as the answer wrote it; fails on anything that is not a JSON number. */
function numberText(value: unknown): string {
  if (!isLosslessNumber(value)) throw new Error(`not a JSON number: ${JSON.stringify(value)}`)
  return value.value
}

/** Any value of numeric(28,6), as a decimal string with its six places (trailing zeros included, as a client may send). */
const amount = fc
  .bigInt({ min: -(10n ** 28n) + 1n, max: 10n ** 28n - 1n })
  .filter((n) => n !== 0n)
  .map((n) => {
    const digits = (n < 0n ? -n : n).toString().padStart(7, '0')
    return `${n < 0n ? '-' : ''}${digits.slice(0, -6)}.${digits.slice(-6)}`
  })

const negate = (s: string) => (s.startsWith('-') ? s.slice(1) : `-${s}`)

describe('exact money out', () => {
  test('Accept: money=string is read from the JSON media range only', () => {
    expect(wantsMoneyStrings('application/json; money=string')).toBe(true)
    expect(wantsMoneyStrings('application/json;money="string"')).toBe(true)
    expect(wantsMoneyStrings('text/html, */*; money=string')).toBe(true)
    expect(wantsMoneyStrings('application/json')).toBe(false)
    expect(wantsMoneyStrings('text/plain; money=string')).toBe(false)
    expect(wantsMoneyStrings(null)).toBe(false)
  })

  test('the issue’s value: every digit in the operation, its audit entry and the balances', async () => {
    const cli = await seedClient(t, c, { type: 1, currencies: ['ARS', 'USD'] })
    const created = await raw('POST', '/api/operations', {
      key: c.key,
      body: { operation_type_id: typeId, status: 'completed', transactions: [{ account_id: cli.accounts[0], amount: '1234567890123.123457' }] },
    })
    expect(created.status).toBe(201)
    expect(created.text).toContain('"amount":1234567890123.123457')
    const id = created.json.id.value
    expect((await raw('GET', `/api/operations/${id}`, { key: c.key })).text).toContain('"amount":1234567890123.123457')
    const client = await raw('GET', `/api/clients/${cli.id}`, { key: c.key })
    expect(client.text).toContain('"balance":1234567890123.123457')
    const list = await raw('GET', '/api/clients?pageSize=200', { key: c.key })
    // Written by Postgres (json's own spacing): read, not matched.
    expect(numberText(list.json.data.find((x: any) => x.id.value === String(cli.id)).accounts[0].balance)).toBe('1234567890123.123457')
    const audit = await raw('GET', `/api/audit-logs?table=transactions&pageSize=100`, { key: c.key })
    expect(audit.status).toBe(200)
    expect(audit.text).toContain('"amount":1234567890123.123457')
    const balances = await raw('GET', '/api/balances', { key: c.key, accept: 'application/json; money=string' })
    expect(balances.status).toBe(200)
    expect(balances.json.data.every((r: any) => typeof r.cajas === 'string' && typeof r.accounts === 'string')).toBe(true)
    const strings = await raw('GET', '/api/clients?pageSize=200', { key: c.key, accept: 'application/json; money=string' })
    expect(strings.json.data.find((x: any) => x.id.value === String(cli.id)).accounts[0].balance).toBe('1234567890123.123457')
    expect(strings.headers.get('etag')).not.toBe(list.headers.get('etag'))
  })

  test(
    'random numeric(28,6) values round-trip byte for byte: create → GET → event → webhook body → statement',
    async () => {
      await fc.assert(
        fc.asyncProperty(amount, async (sent) => {
          const want = trimDecimal(sent)
          const cli = await seedClient(t, c, { type: 1, currencies: ['ARS', 'USD'] })
          const [a, b] = cli.accounts
          const legs = [
            { account_id: a, amount: sent },
            { account_id: b, amount: negate(sent) },
          ]
          const created = await raw('POST', '/api/operations', { key: c.key, body: { operation_type_id: typeId, status: 'completed', transactions: legs } })
          expect(created.status).toBe(201)
          const id = created.json.id.value as string
          const amounts = (body: any) => body.transactions.map((x: any) => numberText(x.amount))
          expect(amounts(created.json)).toEqual([want, trimDecimal(negate(sent))])

          const got = await raw('GET', `/api/operations/${id}`, { key: c.key })
          expect(amounts(got.json)).toEqual(amounts(created.json))
          const asStrings = await raw('GET', `/api/operations/${id}`, { key: c.key, accept: 'application/json; money=string' })
          expect(asStrings.json.transactions.map((x: any) => x.amount)).toEqual(amounts(created.json))

          const events = await raw('GET', '/api/events?type=operation.created&limit=500', { key: c.key })
          const event = events.json.data.find((e: any) => String(e.data.object.id.value) === id)
          expect(amounts(event.data.object)).toEqual(amounts(created.json))

          await receiver.until((all) => all.some((r) => r.id === event.id))
          const delivered = receiver.received.find((r) => r.id === event.id)!
          expect(amounts((parse(delivered.body) as any).data.object)).toEqual(amounts(created.json))

          const g = await raw('POST', `/api/clients/${cli.id}/external-grants`, { key: c.key, body: {} })
          const statement = await raw('GET', `/api/external/clients/${cli.id}/statement`, { bearer: g.json.token })
          expect(statement.status).toBe(200)
          const [first, second] = statement.json.accounts
          expect([numberText(first.balance), numberText(first.closing_balance), numberText(first.transactions[0].amount), numberText(first.transactions[0].running_balance)]).toEqual([want, want, want, want])
          expect(numberText(second.balance)).toBe(trimDecimal(negate(sent)))
          const statementStrings = await raw('GET', `/api/external/clients/${cli.id}/statement`, { bearer: g.json.token, accept: 'application/json; money=string' })
          expect(statementStrings.json.accounts[0].transactions[0].amount).toBe(want)
          expect(statementStrings.json.accounts[0].balance).toBe(want)
        }),
        { numRuns: 25 },
      )
    },
    120_000,
  )

  test('money sent as a JSON number keeps every digit on the way in too', async () => {
    const cli = await seedClient(t, c, { type: 1, currencies: ['ARS'] })
    // Sent as the text a client writes; JSON.stringify would already round it here.
    const res = await t.app.handle(
      new Request('http://fos.test/api/operations', {
        method: 'POST',
        headers: { 'x-api-key': c.key, 'content-type': 'application/json' },
        body: `{"operation_type_id":${typeId},"transactions":[{"account_id":${cli.accounts[0]},"amount":1234567890123.123457},{"account_id":${cli.accounts[0]},"amount":0.1}]}`,
      }),
    )
    const text = await res.text()
    expect(res.status).toBe(201)
    expect(text).toContain('"amount":1234567890123.123457')
    expect(text).toContain('"amount":0.1')
    // A number a float holds exactly is still read as a number: an id sent as 1.0 is the id 1.
    const page = await t.app.handle(
      new Request('http://fos.test/api/operations/batch', {
        method: 'POST',
        headers: { 'x-api-key': c.key, 'content-type': 'application/json' },
        body: `{"operations":[{"operation_type_id":${typeId}.0,"transactions":[{"account_id":${cli.accounts[0]},"amount":"5"}]}]}`,
      }),
    )
    expect(page.status).toBe(201)
  })

  test('an idempotent replay answers the same digits', async () => {
    const cli = await seedClient(t, c, { type: 1, currencies: ['ARS'] })
    const body = { operation_type_id: typeId, transactions: [{ account_id: cli.accounts[0], amount: '9999999999999999999999.999999' }] }
    const first = await t.app.handle(
      new Request('http://fos.test/api/operations', { method: 'POST', headers: { 'x-api-key': c.key, 'content-type': 'application/json', 'idempotency-key': `m-${cli.id}` }, body: JSON.stringify(body) }),
    )
    const again = await t.app.handle(
      new Request('http://fos.test/api/operations', {
        method: 'POST',
        headers: { 'x-api-key': c.key, 'content-type': 'application/json', 'idempotency-key': `m-${cli.id}`, accept: 'application/json; money=string' },
        body: JSON.stringify(body),
      }),
    )
    expect(first.status).toBe(201)
    expect(again.status).toBe(201)
    expect(await first.text()).toContain('"amount":9999999999999999999999.999999')
    expect(await again.text()).toContain('"amount":"9999999999999999999999.999999"')
  })
})
