import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { computePosition, engineSide, type Trade } from '../../server/modules/mesas/costing'
import { D, type Dec } from '../../server/lib/money'

/** Fixed seed: a failure reproduces on every machine and every run. */
const RUNS = { seed: 20260601, numRuns: 300 }

/** Money-scale decimals as the database stores them: up to 6 places. */
const amount = (min: number, max: number) =>
  fc.integer({ min: min * 1_000_000, max: max * 1_000_000 }).map((micros) => new D(micros).dividedBy(1_000_000).toFixed(6))

const trade: fc.Arbitrary<Trade> = fc.record({
  side: fc.constantFrom<'buy' | 'sell'>('buy', 'sell'),
  quoteAmount: amount(0.000001, 5000),
  localAmount: amount(0.000001, 7_000_000),
})
const trades = fc.array(trade, { maxLength: 60 }).map((ts) => ts.map((t, i) => ({ ...t, id: i + 1 })))

const signedQuote = (ts: readonly Trade[]) =>
  ts.reduce((q, t) => (t.side === 'buy' ? q.plus(t.quoteAmount) : q.minus(t.quoteAmount)), new D(0))
/** Local cash in minus out over the whole blotter. */
const localFlow = (ts: readonly Trade[]) =>
  ts.reduce((s, t) => (t.side === 'sell' ? s.plus(t.localAmount) : s.minus(t.localAmount)), new D(0))

/** Realized plus the open position valued at `mark`: what the blotter is worth if closed there. */
function total(p: ReturnType<typeof computePosition>, mark: Dec) {
  const openCost = p.lots.reduce((s, l) => s.plus(l.quantity.isNeg() ? l.cost.negated() : l.cost), new D(0))
  return p.realizedPnl.plus(mark.times(p.quotePosition)).minus(openCost)
}

describe('costing engine: worked examples of the contract', () => {
  const example: Trade[] = [
    { id: 1, side: 'buy', quoteAmount: 100, localAmount: 100_000 },
    { id: 2, side: 'buy', quoteAmount: 100, localAmount: 110_000 },
    { id: 3, side: 'sell', quoteAmount: 150, localAmount: 180_000 },
  ]

  test('fifo: realized 100×200 + 50×100 = 25000, position 50 @ 1100', () => {
    const p = computePosition('fifo', example)
    expect(p.realizedPnl.toString()).toBe('25000')
    expect(p.quotePosition.toString()).toBe('50')
    expect(p.averageCost!.toString()).toBe('1100')
    expect(p.lots.map((l) => [l.lineId, l.quantity.toString(), l.price.toString()])).toEqual([[2, '50', '1100']])
    expect(p.realizedByLine.map(String)).toEqual(['0', '0', '25000'])
  })

  test('wac: average 1050, realized 150×150 = 22500, position 50 @ 1050', () => {
    const p = computePosition('wac', example)
    expect(p.realizedPnl.toString()).toBe('22500')
    expect(p.quotePosition.toString()).toBe('50')
    expect(p.averageCost!.toString()).toBe('1050')
    expect(p.realizedByLine.map(String)).toEqual(['0', '0', '22500'])
  })

  test('shorts: a sell past the long opens a short, a buy covers it first; money stays exact', () => {
    const ts: Trade[] = [
      { id: 1, side: 'buy', quoteAmount: '0.1', localAmount: '0.1' },
      { id: 2, side: 'sell', quoteAmount: '0.3', localAmount: '0.6' },
      { id: 3, side: 'buy', quoteAmount: '0.1', localAmount: '0.3' },
    ]
    for (const method of ['fifo', 'wac'] as const) {
      const p = computePosition(method, ts)
      // Sell 0.3 at 2: closes 0.1 bought at 1 (+0.1), shorts 0.2 at 2; buy 0.1 at 3 covers 0.1 of it (-0.1).
      expect(p.realizedByLine.map(String)).toEqual(['0', '0.1', '-0.1'])
      expect(p.quotePosition.toString()).toBe('-0.1')
      expect(p.averageCost!.toString()).toBe('2')
    }
  })

  test('an empty blotter is flat; quote_direction local flips the words, not the arithmetic', () => {
    const flat = computePosition('fifo', [])
    expect([flat.quotePosition.toString(), flat.averageCost, flat.realizedPnl.toString(), flat.lots]).toEqual(['0', null, '0', []])
    expect([engineSide('quote', 'buy'), engineSide('quote', 'sell'), engineSide('local', 'buy'), engineSide('local', 'sell')]).toEqual([
      'buy',
      'sell',
      'sell',
      'buy',
    ])
  })
})

describe('costing engine: properties', () => {
  test('fifo and wac agree on the final quantity, and it is the signed sum of the trades', () => {
    fc.assert(
      fc.property(trades, (ts) => {
        const fifo = computePosition('fifo', ts)
        const wac = computePosition('wac', ts)
        expect(fifo.quotePosition.toString()).toBe(wac.quotePosition.toString())
        expect(fifo.quotePosition.toString()).toBe(signedQuote(ts).toString())
      }),
      RUNS,
    )
  })

  test('realized + unrealized at any mark price is the same for both methods (and equals the cash flow plus the marked position)', () => {
    fc.assert(
      fc.property(trades, amount(0, 10_000), (ts, markStr) => {
        const mark = new D(markStr)
        const fifo = total(computePosition('fifo', ts), mark)
        const wac = total(computePosition('wac', ts), mark)
        expect(fifo.toString()).toBe(wac.toString())
        expect(fifo.toString()).toBe(localFlow(ts).plus(mark.times(signedQuote(ts))).toString())
      }),
      RUNS,
    )
  })

  test('realized per line sums to the realized total', () => {
    fc.assert(
      fc.property(trades, fc.constantFrom('fifo' as const, 'wac' as const), (ts, method) => {
        const p = computePosition(method, ts)
        expect(p.realizedByLine).toHaveLength(ts.length)
        expect(p.realizedByLine.reduce((s, r) => s.plus(r), new D(0)).toString()).toBe(p.realizedPnl.toString())
      }),
      RUNS,
    )
  })

  test('closing the whole position at the wac average realizes zero under wac', () => {
    fc.assert(
      fc.property(trades, (ts) => {
        const before = computePosition('wac', ts)
        fc.pre(!before.quotePosition.isZero())
        const qty = before.quotePosition.abs()
        const close: Trade = {
          id: ts.length + 1,
          side: before.quotePosition.isPos() ? 'sell' : 'buy',
          quoteAmount: qty,
          // The closing trade's local amount as the blotter would store it: the average times the quantity, at money scale.
          localAmount: before.averageCost!.times(qty).toDecimalPlaces(6),
        }
        const after = computePosition('wac', [...ts, close])
        expect(after.quotePosition.isZero()).toBe(true)
        expect(after.realizedByLine.at(-1)!.toString()).toBe('0')
        expect(after.realizedPnl.toString()).toBe(before.realizedPnl.toString())
        expect(after.lots).toEqual([])
      }),
      RUNS,
    )
  })

  test('fifo lots come out oldest first and never mix long with short', () => {
    fc.assert(
      fc.property(trades, (ts) => {
        const p = computePosition('fifo', ts)
        const ids = p.lots.map((l) => l.lineId!)
        expect(ids).toEqual([...ids].sort((a, b) => a - b))
        expect(new Set(p.lots.map((l) => l.quantity.isNeg())).size).toBeLessThanOrEqual(1)
        expect(p.lots.every((l) => !l.quantity.isZero())).toBe(true)
      }),
      RUNS,
    )
  })
})
