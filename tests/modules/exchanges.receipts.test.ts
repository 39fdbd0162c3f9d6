import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import fc from 'fast-check'
import { extractText, getDocumentProxy } from 'unpdf'
import { postgresTest, testApp, type TestApp } from '../helpers'
import { branch } from './exchanges.fixtures'

let t: TestApp

beforeAll(async () => {
  t = await testApp()
}, 120_000)

const STRINGS = { accept: 'application/json; money=string' }

/** The receipt numbers of a company, in order, as (point, seq). */
const numbers = (companyId: number) =>
  t.ctx.database.rows<{ point: number; seq: number }>(sql`select point, seq from receipts where company_id = ${companyId} order by point, seq`)

describe('receipt numbers under concurrency (real Postgres)', () => {
  postgresTest('20 concurrent exchanges: 20 consecutive numbers from 1, no gap, no duplicate, each on its own operation', async () => {
    const b = await branch(t)
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        t.request('POST', '/api/exchanges', { key: b.c.key, body: { side: i % 2 ? 'sell' : 'buy', currency: i % 3 ? 'USD' : 'EUR', amount: i + 1, caja_id: b.caja.id } }),
      ),
    )
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(201))
    const answered = replies.map((r) => r.body.receipt.number).sort()
    expect(answered).toEqual(Array.from({ length: 20 }, (_, i) => `00001-${String(i + 1).padStart(8, '0')}`))
    expect(new Set(replies.map((r) => r.body.operation.id)).size).toBe(20)
    expect((await numbers(b.c.id)).map((n) => n.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
    console.log(`[receipts] 20 concurrent exchanges: numbers ${answered[0]} … ${answered[19]}, no gap, no duplicate`)
  }, 60_000)

  postgresTest('exchanges rolled back after taking a number leave no gap: the next ones take it', async () => {
    const b = await branch(t)
    const poison = `FALLA ${process.pid} ${b.c.id}`
    // A failure injected after the counter was bumped, inside the exchange's transaction (its receipt's insert).
    await t.ctx.db.execute(sql.raw(`create or replace function test_failing_receipt() returns trigger language plpgsql as $$
      begin if new.customer_name like 'FALLA %' then raise exception 'injected failure after numbering'; end if; return new; end $$`))
    await t.ctx.db.execute(sql.raw('create or replace trigger test_failing_receipt after insert on receipts for each row execute function test_failing_receipt()'))
    try {
      const bodies = Array.from({ length: 30 }, (_, i) => ({
        side: 'buy',
        currency: 'USD',
        amount: i + 1,
        caja_id: b.caja.id,
        customer: { name: i % 3 === 1 ? poison : `Cliente ${i}` },
      }))
      const replies = await Promise.all(bodies.map((body) => t.request('POST', '/api/exchanges', { key: b.c.key, body })))
      const failed = replies.filter((r) => r.status !== 201)
      expect(failed.length).toBe(10)
      for (const r of failed) expect([r.status, r.body.code]).toEqual([500, 'INTERNAL_ERROR'])
      const seqs = (await numbers(b.c.id)).map((n) => n.seq)
      expect(seqs).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
      const [counter] = await t.ctx.database.rows<{ last_seq: number }>(sql`select last_seq from receipt_counters where company_id = ${b.c.id}`)
      expect(counter.last_seq).toBe(20)
      // No trace of the failed ones: no operation, no client.
      const [left] = await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from clients where company_id = ${b.c.id} and name like 'FALLA %'`)
      expect(left.n).toBe(0)
      const [ops] = await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from exchanges where company_id = ${b.c.id}`)
      expect(ops.n).toBe(20)
    } finally {
      await t.ctx.db.execute(sql.raw('drop trigger if exists test_failing_receipt on receipts'))
      await t.ctx.db.execute(sql.raw('drop function if exists test_failing_receipt()'))
    }
    const next = await t.request('POST', '/api/exchanges', { key: b.c.key, body: { side: 'buy', currency: 'USD', amount: 1, caja_id: b.caja.id } })
    expect(next.body.receipt.number).toBe('00001-00000021')
  }, 60_000)

  postgresTest('concurrent exchanges for one new customer document share one client', async () => {
    const b = await branch(t)
    const replies = await Promise.all(
      Array.from({ length: 8 }, () =>
        t.request('POST', '/api/exchanges', {
          key: b.c.key,
          body: { side: 'buy', currency: 'USD', amount: 1, caja_id: b.caja.id, customer: { name: 'Nueva', document: { type: 'DNI', number: '39.000.111' } } },
        }),
      ),
    )
    expect(replies.map((r) => r.status)).toEqual(Array(8).fill(201))
    expect(new Set(replies.map((r) => r.body.operation.client_id)).size).toBe(1)
    expect((await t.request('GET', '/api/clients?document=39000111', { key: b.c.key })).body.count).toBe(1)
  }, 60_000)
})

/** amount × rate, both given in millionths, in cents rounded half away from zero: integer arithmetic only. */
function expectedCents(amountMicros: bigint, rateMicros: bigint): bigint {
  const product = amountMicros * rateMicros // 10^-12 units
  return (product + 5_000_000_000n) / 10_000_000_000n
}

/** Integer `units` of 10^-places as the API writes the decimal: every digit, no trailing zero, `-` only when not zero. */
function decimal(units: bigint, places: number): string {
  const digits = (units < 0n ? -units : units).toString().padStart(places + 1, '0')
  const text = `${digits.slice(0, -places)}.${digits.slice(-places)}`.replace(/0+$/, '').replace(/\.$/, '')
  return units < 0n && text !== '0' ? `-${text}` : text
}

describe('exchange arithmetic is exact (property)', () => {
  test('random amounts and rates of up to 6 decimals: local_amount, legs, total and balances equal an integer computation', async () => {
    const b = await branch(t, { funded: false })
    let usd = 0n // micros
    let ars = 0n // cents
    await fc.assert(
      fc.asyncProperty(
        fc.bigInt({ min: 1n, max: 10n ** 15n }),
        fc.bigInt({ min: 1n, max: 10n ** 13n }),
        fc.constantFrom('buy', 'sell'),
        fc.bigInt({ min: 0n, max: 10_000n }),
        async (amountMicros, rateMicros, side, commissionCents) => {
          const cents = expectedCents(amountMicros, rateMicros)
          const amount = decimal(amountMicros, 6)
          const rate = decimal(rateMicros, 6)
          const withCommission = commissionCents > 0n && (side === 'sell' || commissionCents < cents)
          const r = await t.request('POST', '/api/exchanges', {
            key: b.c.key,
            headers: STRINGS,
            body: { side, currency: 'USD', amount, rate, caja_id: b.caja.id, ...(withCommission && { commission: { amount: decimal(commissionCents, 2) } }) },
          })
          if (cents === 0n) {
            expect([r.status, r.body.details?.[0]?.field]).toEqual([400, 'amount'])
            return
          }
          expect(r.status).toBe(201)
          const local = decimal(cents, 2)
          const commission = withCommission ? commissionCents : 0n
          expect(r.body.exchange).toMatchObject({ amount, rate, rate_source: 'manual', local_amount: local, commission: decimal(commission, 2) })
          const total = side === 'buy' ? cents - commission : cents + commission
          expect(r.body.receipt.total).toBe(decimal(total, 2))
          const sign = side === 'buy' ? 1n : -1n
          const legs = r.body.operation.transactions.map((x: { currency: string; amount: string }) => [x.currency, x.amount])
          expect(legs).toEqual([
            ['USD', decimal(amountMicros * sign, 6)],
            ['ARS', decimal(-cents * sign, 2)],
            ...(withCommission ? [['ARS', decimal(commission, 2)]] : []),
          ])
          usd += amountMicros * sign
          ars += -cents * sign + commission
        },
      ),
      { numRuns: 60, seed: 4815162342 },
    )
    const caja = await t.request('GET', `/api/clients/${b.caja.id}`, { key: b.c.key, headers: STRINGS })
    const balance = (currency: string) => caja.body.accounts.find((a: { currency_name: string }) => a.currency_name === currency).balance
    expect(balance('USD')).toBe(decimal(usd, 6))
    expect(balance('ARS')).toBe(decimal(ars, 2))
  }, 120_000)
})

/** The PDF of an operation's receipt, as bytes, and its text. */
async function pdfOf(key: string, operationId: number) {
  const res = await t.app.handle(new Request(`http://fos.test/api/operations/${operationId}/receipt?format=pdf`, { headers: { 'x-api-key': key } }))
  const bytes = new Uint8Array(await res.arrayBuffer())
  const parsed = res.status === 200 ? await extractText(await getDocumentProxy(bytes.slice()), { mergePages: true }) : { text: '', totalPages: 0 }
  return { res, bytes, text: parsed.text, pages: parsed.totalPages }
}

describe('the receipt as a PDF', () => {
  afterAll(() => undefined)

  test('parsed back: the number, the company, the customer with "ñ" and "á", the side and the amounts in es-AR; ANULADO once cancelled', async () => {
    const b = await branch(t)
    await t.request('PATCH', '/api/company', {
      key: b.c.key,
      body: { legal_name: 'Cambios Ñandú S.A.', tax_id: '30-71234567-9', address: 'Av. Güemes 1234, Córdoba', license: 'Casa de cambio autorizada N.º 77' },
    })
    const made = await t.request('POST', '/api/exchanges', {
      key: b.c.key,
      body: {
        side: 'sell',
        currency: 'USD',
        amount: '1234.56',
        rate: '1185.5',
        caja_id: b.caja.id,
        commission: { amount: '250' },
        customer: { name: 'María Ñáñez Álvarez', document: { type: 'DNI', number: '27.555.444' } },
      },
    })
    expect(made.status).toBe(201)
    const { res, bytes, text, pages } = await pdfOf(b.c.key, made.body.operation.id)
    expect(res.status).toBe(200)
    // One strip of an 80 mm roll: 226.77 points wide, as long as the receipt.
    expect(pages).toBe(1)
    expect(res.headers.get('content-type')).toBe('application/pdf')
    expect(res.headers.get('content-disposition')).toBe('inline; filename="boleto-00001-00000001.pdf"')
    expect(new TextDecoder().decode(bytes.slice(0, 5))).toBe('%PDF-')
    // The font travels inside the file.
    expect(new TextDecoder('latin1').decode(bytes)).toContain('DejaVuSans')
    for (const expected of [
      '00001-00000001',
      'Cambios Ñandú S.A.',
      'CUIT 30-71234567-9',
      'Av. Güemes 1234, Córdoba',
      'Casa de cambio autorizada N.º 77',
      'María Ñáñez Álvarez',
      '27555444',
      'Venta',
      '1.234,56 USD',
      '1.185,50 ARS',
      // 1234.56 × 1185.5 = 1463570.88
      '1.463.570,88 ARS',
      '250,00 ARS',
      '1.463.820,88 ARS',
      'Total a cobrar al cliente',
    ])
      expect([expected, text.includes(expected), text]).toEqual([expected, true, text])
    expect(text).not.toContain('ANULADO')
    await t.request('POST', `/api/operations/${made.body.operation.id}/cancel`, { key: b.c.key })
    const voided = await pdfOf(b.c.key, made.body.operation.id)
    expect(voided.text).toContain('ANULADO')
    expect(voided.text).toContain('00001-00000001')
    expect(voided.pages).toBe(1)
  })

  test('every digit: a long amount is printed whole; an unknown format is 400', async () => {
    const b = await branch(t, { rates: [{ currency: 'USD', buy: '1.000001', sell: '2' }] })
    const made = await t.request('POST', '/api/exchanges', { key: b.c.key, body: { side: 'buy', currency: 'USD', amount: '1234567890.123457', caja_id: b.caja.id } })
    const { text } = await pdfOf(b.c.key, made.body.operation.id)
    expect(text).toContain('1.234.567.890,123457 USD')
    expect(text).toContain('1,000001 ARS')
    // 1234567890.123457 × 1.000001 = 1234569124.691347…
    expect(text).toContain('1.234.569.124,69 ARS')
    expect(text).toContain('Compra')
    expect(text).toContain('Sin identificar')
    const bad = await t.request('GET', `/api/operations/${made.body.operation.id}/receipt?format=docx`, { key: b.c.key })
    expect(bad.status).toBe(400)
  })
})
