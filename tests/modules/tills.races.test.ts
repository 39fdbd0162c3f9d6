import { beforeAll, describe, expect } from 'bun:test'
import Decimal from 'decimal.js'
import { postgresTest, testApp, type Reply, type TestApp } from '../helpers'
import { balances, countOf, moneyStrings, tillBranch } from './tills.fixtures'

/*
 * Races against the till lock (contract §20), on real Postgres with concurrent requests: a write committing while the
 * caja closes lands in the closed session (its report and summary, and the close's `expected`) or is refused with
 * TILL_CLOSED, never in between; two closes or two opens at once: one succeeds, the other is refused.
 */

let t: TestApp
beforeAll(async () => {
  t = await testApp()
}, 120_000)

const ROUNDS = 12
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms))
const post = (key: string, path: string, body?: unknown) => t.request('POST', path, { key, body, headers: moneyStrings })
const get = (key: string, path: string) => t.request('GET', path, { key, headers: moneyStrings })
const sum = (values: string[]) => values.reduce((a, v) => a.plus(v), new Decimal(0))

type Leg = { account_id: number; amount: string }

/**
 * What a closed session must agree with: the writes that answered success, and no other, are its report's operations;
 * the close expected the opening count plus what they moved; its summary counts the completed ones; the balances now
 * equal what was counted.
 */
async function checkSession(
  key: string,
  session: { id: number; opening: { currency: string; counted: string }[]; closing: { currency: string; expected: string; counted: string }[] },
  landed: { id: number; moved: Leg[]; completed: boolean; exchange?: { side: string; currency: string; amount: string } }[],
  accountCurrency: (id: number) => string,
  now: Record<string, string>,
) {
  const report = await get(key, `/api/till-sessions/${session.id}/report`)
  expect(report.status).toBe(200)
  expect(new Set(report.body.operations.map((o: { operation_id: number }) => o.operation_id))).toEqual(new Set(landed.map((l) => l.id)))
  for (const row of session.closing) {
    const moved = sum(landed.flatMap((l) => l.moved.filter((m) => accountCurrency(m.account_id) === row.currency).map((m) => m.amount)))
    const opening = session.opening.find((o) => o.currency === row.currency)!.counted
    expect([row.currency, new Decimal(opening).plus(moved).toFixed()]).toEqual([row.currency, new Decimal(row.expected).toFixed()])
    expect([row.currency, report.body.movements.find((m: { currency: string }) => m.currency === row.currency).amount]).toEqual([row.currency, moved.toFixed()])
    expect([row.currency, now[row.currency]]).toEqual([row.currency, new Decimal(row.counted).toFixed()])
  }
  const summary = report.body.summary as { currency: string; bought: string; sold: string; operations: number }[]
  for (const s of summary) {
    const deals = landed.filter((l) => l.completed && l.exchange?.currency === s.currency)
    expect([s.currency, s.bought, s.sold]).toEqual([
      s.currency,
      sum(deals.filter((d) => d.exchange!.side === 'buy').map((d) => d.exchange!.amount)).toFixed(),
      sum(deals.filter((d) => d.exchange!.side === 'sell').map((d) => d.exchange!.amount)).toFixed(),
    ])
  }
  return report.body
}

describe('till sessions under concurrency', () => {
  postgresTest(
    `exchanges racing a close, ${ROUNDS} rounds: each lands in the closed session or is refused with TILL_CLOSED`,
    async () => {
      const b = await tillBranch(t)
      const cashier = await b.c.employee(['operations.create'])
      const currencyOf = new Map(b.caja.accounts.map((a) => [a.id, a.currency_name]))
      const tally = { landed: 0, pendingLanded: 0, refused: 0, between: 0 }
      for (let round = 0; round < ROUNDS; round++) {
        const start = await balances(t, b)
        const opened = await post(b.c.key, `/api/cajas/${b.caja.id}/open`, { counted: countOf(start) })
        expect(opened.status).toBe(201)
        const exchange = (i: number) => {
          const body = { side: i % 2 ? 'buy' : 'sell', currency: i % 3 ? 'USD' : 'EUR', amount: `${1 + i}.25`, caja_id: b.caja.id, commission: { amount: '10' } }
          return post(i % 4 === 3 ? cashier.key : b.c.key, '/api/exchanges', body).then((reply) => ({ body, reply }))
        }
        // The close goes out while the exchanges are in flight, at a point that moves from round to round.
        const closing = pause(2 * (round % 8)).then(() => post(b.c.key, `/api/cajas/${b.caja.id}/close`, { counted: countOf(start) }))
        const sent = await Promise.all(Array.from({ length: 10 }, (_, i) => pause(5 * i).then(() => exchange(i))))
        const closed = await closing
        expect(closed.status).toBe(200)
        const landed = sent.filter((s) => s.reply.status === 201)
        const refused = sent.filter((s) => s.reply.status === 409 && s.reply.body.code === 'TILL_CLOSED')
        tally.landed += landed.length
        tally.pendingLanded += landed.filter((s) => s.reply.body.operation.status === 'pending').length
        tally.refused += refused.length
        tally.between += sent.length - landed.length - refused.length
        expect(sent.filter((s) => s.reply.status !== 201 && s.reply.status !== 409).map((s) => [s.reply.status, s.reply.body])).toEqual([])
        const report = await checkSession(
          b.c.key,
          closed.body,
          landed.map((s) => {
            const op = (s.reply as Reply).body.operation
            const completed = op.status === 'completed'
            return {
              id: op.id,
              completed,
              moved: completed ? op.transactions.map((x: { account_id: number; amount: string }) => ({ account_id: x.account_id, amount: x.amount })) : [],
              exchange: s.body,
            }
          }),
          (id) => currencyOf.get(id)!,
          await balances(t, b),
        )
        // Receipts: every landed exchange's number is in the report; no refused one took a number.
        expect(report.operations.map((o: { receipt_number: string }) => o.receipt_number).sort()).toEqual(landed.map((s) => s.reply.body.receipt.number).sort())
      }
      const all = await get(b.c.key, `/api/exchanges?caja_id=${b.caja.id}&pageSize=200`)
      expect(all.body.pagination.total).toBe(tally.landed)
      console.log(`exchanges racing a close over ${ROUNDS} rounds: ${tally.landed} landed in the session (${tally.pendingLanded} of them pending), ${tally.refused} refused with TILL_CLOSED, ${tally.between} in between`)
      expect(tally.between).toBe(0)
      expect(tally.landed).toBeGreaterThan(0)
      expect(tally.refused).toBeGreaterThan(0)
    },
    300_000,
  )

  postgresTest(
    `creates, approvals, reverts and cancels racing a close, ${ROUNDS} rounds: in the session or TILL_CLOSED`,
    async () => {
      const b = await tillBranch(t)
      const currencyOf = new Map(b.caja.accounts.map((a) => [a.id, a.currency_name]))
      const legs: Leg[] = [
        { account_id: b.account('ARS'), amount: '-1000.5' },
        { account_id: b.account('USD'), amount: '1' },
      ]
      const make = async (status: 'pending' | 'completed') =>
        (await post(b.c.key, "/api/operations", { operation_type_id: b.ingresoTypeId, status, transactions: legs })).body.id as number
      const tally = { landed: 0, refused: 0, between: 0 }
      for (let round = 0; round < ROUNDS; round++) {
        const start = await balances(t, b)
        const opened = await post(b.c.key, `/api/cajas/${b.caja.id}/open`, { counted: countOf(start) })
        expect(opened.status).toBe(201)
        // Made in the session, before the race: what the racing approvals, reverts and cancels change.
        const toApprove = [await make('pending'), await make('pending')]
        const toRevert = [await make('completed'), await make('completed')]
        const toCancel = [await make('completed'), await make('pending')]
        const made = [
          ...[...toApprove, toCancel[1]].map((id) => ({ id, moved: [] as Leg[], completed: false })),
          ...[...toRevert, toCancel[0]].map((id) => ({ id, moved: legs, completed: false })),
        ]
        const negate = legs.map((l) => ({ ...l, amount: new Decimal(l.amount).neg().toFixed() }))
        const writes: (() => Promise<{ reply: Reply; id: number | null; moved: Leg[] }>)[] = [
          ...toApprove.map((id) => async () => ({ reply: await post(b.c.key, `/api/operations/${id}/approve`), id, moved: legs })),
          ...toRevert.map((id) => async () => ({ reply: await post(b.c.key, `/api/operations/${id}/revert`), id, moved: negate })),
          async () => ({ reply: await post(b.c.key, `/api/operations/${toCancel[0]}/cancel`), id: toCancel[0], moved: negate }),
          async () => ({ reply: await post(b.c.key, `/api/operations/${toCancel[1]}/cancel`), id: toCancel[1], moved: [] }),
          ...(['completed', 'pending', 'completed'] as const).map((status) => async () => {
            const reply = await post(b.c.key, '/api/operations', { operation_type_id: b.ingresoTypeId, status, transactions: legs })
            return { reply, id: reply.status === 201 ? (reply.body.id as number) : null, moved: status === 'completed' ? legs : [] }
          }),
        ]
        const closing = pause(2 * (round % 8)).then(() => post(b.c.key, `/api/cajas/${b.caja.id}/close`, { counted: countOf(start) }))
        const sent = await Promise.all(writes.map((w, i) => pause(5 * i).then(w)))
        const closed = await closing
        expect(closed.status).toBe(200)
        const landed = sent.filter((s) => s.reply.status === 200 || s.reply.status === 201)
        const refused = sent.filter((s) => s.reply.status === 409 && s.reply.body.code === 'TILL_CLOSED')
        tally.landed += landed.length
        tally.refused += refused.length
        tally.between += sent.length - landed.length - refused.length
        expect(sent.filter((s) => ![200, 201, 409].includes(s.reply.status)).map((s) => [s.reply.status, s.reply.body])).toEqual([])
        await checkSession(
          b.c.key,
          closed.body,
          [...made, ...landed.map((s) => ({ id: s.id!, moved: s.moved, completed: false }))],
          (id) => currencyOf.get(id)!,
          await balances(t, b),
        )
        // A refused change changed nothing: its operation is as it was.
        for (const s of refused) if (s.id !== null) expect((await get(b.c.key, `/api/operations/${s.id}`)).body.status).toBe(toApprove.includes(s.id) || s.id === toCancel[1] ? 'pending' : 'completed')
      }
      console.log(`operation writes racing a close over ${ROUNDS} rounds: ${tally.landed} landed in the session, ${tally.refused} refused with TILL_CLOSED, ${tally.between} in between`)
      expect(tally.between).toBe(0)
      expect(tally.landed).toBeGreaterThan(0)
      expect(tally.refused).toBeGreaterThan(0)
    },
    300_000,
  )

  postgresTest('two closes at once: one 200, one 409 TILL_NOT_OPEN; two opens at once: one 201, one 409 TILL_OPEN (the first open too)', async () => {
    const b = await tillBranch(t)
    const tally = { opens: [] as number[], closes: [] as number[] }
    for (let round = 0; round < ROUNDS; round++) {
      const start = await balances(t, b)
      const opens = await Promise.all([0, 1].map(() => post(b.c.key, `/api/cajas/${b.caja.id}/open`, { counted: countOf(start, { ARS: '1' }) })))
      expect(opens.map((r) => r.status).sort()).toEqual([201, 409])
      expect(opens.find((r) => r.status === 409)!.body.code).toBe('TILL_OPEN')
      tally.opens.push(...opens.map((r) => r.status))
      // The one open booked its difference once.
      expect((await balances(t, b)).ARS).toBe(new Decimal(start.ARS).plus(1).toFixed())
      const now = await balances(t, b)
      const closes = await Promise.all([0, 1].map(() => post(b.c.key, `/api/cajas/${b.caja.id}/close`, { counted: countOf(now, { USD: '-1' }) })))
      expect(closes.map((r) => r.status).sort()).toEqual([200, 409])
      expect(closes.find((r) => r.status === 409)!.body.code).toBe('TILL_NOT_OPEN')
      tally.closes.push(...closes.map((r) => r.status))
      expect((await balances(t, b)).USD).toBe(new Decimal(now.USD).minus(1).toFixed())
    }
    const sessions = await get(b.c.key, `/api/cajas/${b.caja.id}/sessions?pageSize=200`)
    expect(sessions.body.pagination.total).toBe(ROUNDS)
    expect(sessions.body.data.every((s: { status: string }) => s.status === 'closed')).toBe(true)
    console.log(`two at once over ${ROUNDS} rounds: opens ${tally.opens.filter((s) => s === 201).length}×201 ${tally.opens.filter((s) => s === 409).length}×409; closes ${tally.closes.filter((s) => s === 200).length}×200 ${tally.closes.filter((s) => s === 409).length}×409`)
  })

  postgresTest('an account added while the caja closes: counted by the close, or made after it; never a deadlock', async () => {
    const outcomes: string[] = []
    for (let round = 0; round < 6; round++) {
      const b = await tillBranch(t)
      const start = await balances(t, b)
      expect((await post(b.c.key, `/api/cajas/${b.caja.id}/open`, { counted: countOf(start) })).status).toBe(201)
      const currency = ['CLP', 'UYU', 'PYG'][round % 3]
      const [closed, added] = await Promise.all([
        pause(round % 3).then(() => post(b.c.key, `/api/cajas/${b.caja.id}/close`, { counted: countOf(start, { ARS: '1' }) })),
        pause(2 - (round % 3)).then(() => post(b.c.key, `/api/clients/${b.caja.id}/accounts`, { currency_name: currency })),
      ])
      expect(added.status).toBe(201)
      // Made first, the new currency is one of the caja's when the close counts: not counted, the close is refused.
      if (closed.status === 400) expect(closed.body.details).toEqual([{ field: 'counted', message: `${currency} is not counted` }])
      else expect([closed.status, closed.body.closing.map((c: { currency: string }) => c.currency)]).toEqual([200, ['ARS', 'USD', 'EUR', 'BRL']])
      outcomes.push(closed.status === 200 ? 'account after the close' : 'account before the close')
    }
    console.log(`an account racing a close over 6 rounds: ${outcomes.join(', ')}`)
  })

  postgresTest('writes racing the first open of a caja never opened: each is in the opening count or in the session, never lost between', async () => {
    for (let round = 0; round < 6; round++) {
      const b = await tillBranch(t)
      const currencyOf = new Map(b.caja.accounts.map((a) => [a.id, a.currency_name]))
      const start = await balances(t, b)
      const legs: Leg[] = [{ account_id: b.account('EUR'), amount: '7.5' }]
      const opening = pause(round % 3).then(() => post(b.c.key, `/api/cajas/${b.caja.id}/open`, { counted: countOf(start) }))
      const sent = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          pause(i % 3).then(() => post(b.c.key, '/api/operations', { operation_type_id: b.ingresoTypeId, status: 'completed', transactions: legs })),
        ),
      )
      const opened = await opening
      expect(opened.status).toBe(201)
      expect(sent.map((s) => s.status)).toEqual(sent.map(() => 201))
      const report = await get(b.c.key, `/api/till-sessions/${opened.body.id}/report`)
      const inSession = new Set(report.body.operations.map((o: { operation_id: number }) => o.operation_id))
      const before = sent.filter((s) => !inSession.has(s.body.id))
      // What the open expected is the start plus the writes that came before it; the rest are in its session.
      const eur = opened.body.opening.find((o: { currency: string }) => o.currency === 'EUR')
      expect(eur.expected).toBe(new Decimal(start.EUR).plus(new Decimal(7.5).times(before.length)).toFixed())
      expect(inSession.size + before.length).toBe(sent.length)
      const closed = await post(b.c.key, `/api/cajas/${b.caja.id}/close`, { counted: countOf(await balances(t, b)) })
      await checkSession(
        b.c.key,
        closed.body,
        sent.filter((s) => inSession.has(s.body.id)).map((s) => ({ id: s.body.id, moved: legs, completed: true })),
        (id) => currencyOf.get(id)!,
        await balances(t, b),
      )
    }
  })
})
