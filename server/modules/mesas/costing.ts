/**
 * Position and realized P&L of a blotter, as a pure function of its lines: no database, no HTTP.
 *
 * Quantities are in the quote currency, money in the local currency. A `buy` here always means quote acquired
 * (local paid); callers translate the mesa's words with `engineSide`. Positions can be long or short: a sell
 * beyond the long position opens a short, a buy covers shorts before it opens a long.
 *
 * Exactness: inputs are decimals; when a lot or a line is split, the part taken is rounded to money scale and
 * the part left is the exact remainder, so nothing is created or lost by rounding — for every method,
 * realized + open cost basis equals the sum of the lines' local flows, to the last decimal.
 */
import { D, MONEY_SCALE, type Dec } from '../../lib/money'

export type CostingMethod = 'fifo' | 'wac'
export type EngineSide = 'buy' | 'sell'

export interface Trade {
  id?: number
  side: EngineSide
  /** positive quote quantity */
  quoteAmount: Dec | string | number
  /** positive local amount paid (buy) or received (sell) */
  localAmount: Dec | string | number
}

export interface Lot {
  /** the line that opened it; null for the single merged lot of `wac` */
  lineId: number | null
  /** positive for long, negative for short */
  quantity: Dec
  /** local cost basis: paid for a long lot, received for a short one (always positive) */
  cost: Dec
  /** cost / |quantity| */
  price: Dec
}

export interface Position {
  /** signed: negative while short */
  quotePosition: Dec
  /** cost per quote unit of the open position; null when flat */
  averageCost: Dec | null
  realizedPnl: Dec
  lots: Lot[]
  /** realized P&L of each input line, same order as the input */
  realizedByLine: Dec[]
}

interface OpenLot {
  lineId: number | null
  qty: Dec
  cost: Dec
}

const ZERO = new D(0)

/** Part of `total` that corresponds to `part` of `whole`, at money scale. */
const share = (total: Dec, part: Dec, whole: Dec) =>
  part.eq(whole) ? total : total.times(part).dividedBy(whole).toDecimalPlaces(MONEY_SCALE)

/** The mesa's words → the engine's: with `quote_direction = local` a "buy" is local coming in, i.e. quote going out. */
export function engineSide(quoteDirection: 'quote' | 'local', side: 'buy' | 'sell'): EngineSide {
  if (quoteDirection === 'quote') return side
  return side === 'buy' ? 'sell' : 'buy'
}

/**
 * Replays the lines in order. One pass with a queue of open lots (a head index instead of shifting the array),
 * so the cost is linear in the number of lines plus the lots they open.
 */
export function computePosition(method: CostingMethod, trades: readonly Trade[]): Position {
  const queue: OpenLot[] = []
  let head = 0
  /** +1 while the open lots are long, -1 while short; meaningless while flat */
  let direction = 0
  let realized = ZERO
  const realizedByLine: Dec[] = new Array(trades.length)

  for (let i = 0; i < trades.length; i++) {
    const trade = trades[i]
    const sign = trade.side === 'buy' ? 1 : -1
    let qty = new D(trade.quoteAmount)
    let local = new D(trade.localAmount)
    let lineRealized = ZERO

    // Close open lots of the other direction, oldest first (for wac there is only one).
    while (qty.gt(0) && head < queue.length && direction === -sign) {
      const lot = queue[head]
      const take = D.min(qty, lot.qty)
      const basis = share(lot.cost, take, lot.qty)
      const flow = share(local, take, qty)
      // Closing a long by selling: received `flow` for what cost `basis`. Covering a short: paid `flow` for what brought `basis`.
      lineRealized = lineRealized.plus(sign === -1 ? flow.minus(basis) : basis.minus(flow))
      lot.qty = lot.qty.minus(take)
      lot.cost = lot.cost.minus(basis)
      qty = qty.minus(take)
      local = local.minus(flow)
      if (lot.qty.isZero()) head++
    }
    if (head === queue.length) {
      queue.length = 0
      head = 0
    }

    if (qty.gt(0)) {
      direction = sign
      if (method === 'wac' && head < queue.length) {
        const lot = queue[head]
        lot.qty = lot.qty.plus(qty)
        lot.cost = lot.cost.plus(local)
      } else {
        queue.push({ lineId: method === 'wac' ? null : (trade.id ?? null), qty, cost: local })
      }
    }
    // Compact now and then so a long-lived blotter does not keep every consumed lot alive.
    if (head > 1024 && head * 2 > queue.length) {
      queue.splice(0, head)
      head = 0
    }

    realizedByLine[i] = lineRealized
    realized = realized.plus(lineRealized)
  }

  let quantity = ZERO
  let cost = ZERO
  const lots: Lot[] = []
  for (let i = head; i < queue.length; i++) {
    const lot = queue[i]
    quantity = quantity.plus(lot.qty)
    cost = cost.plus(lot.cost)
    lots.push({ lineId: lot.lineId, quantity: direction < 0 ? lot.qty.negated() : lot.qty, cost: lot.cost, price: lot.cost.dividedBy(lot.qty) })
  }
  return {
    quotePosition: direction < 0 ? quantity.negated() : quantity,
    averageCost: quantity.isZero() ? null : cost.dividedBy(quantity),
    realizedPnl: realized,
    lots,
    realizedByLine,
  }
}
