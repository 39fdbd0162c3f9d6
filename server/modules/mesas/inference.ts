/** Turning an operation's legs into a trade, and grading how well it matches: pure, shared by infer, suggestions and the feed. */
import { D, toJson, type Dec } from '../../lib/money'

export type QuoteDirection = 'quote' | 'local'
export type MatchKind = 'exact' | 'fx_close' | 'partial'

export interface Leg {
  id: number
  accountId: number
  currency: string
  amount: string
  status: string
}

export interface TradeSuggestion {
  side: 'buy' | 'sell'
  localAmount: Dec
  quoteAmount: Dec
  fx: Dec
  fallback: boolean
}

/** Currency codes are compared without regard to case: `usd` and `USD` are one currency. */
export const sameCurrency = (a: string, b: string) => a.trim().toUpperCase() === b.trim().toUpperCase()

/** fx within this fraction of the recent average counts as `fx_close`. */
export const FX_CLOSE_TOLERANCE = new D('0.02')

/**
 * The trade the legs describe, or null when one of the two currencies has no leg (or nets to zero).
 * One leg per currency is a clean pair; anything else is summed per currency and flagged `fallback`.
 */
export function suggestTrade(
  mesa: { localCurrency: string; quoteCurrency: string; quoteDirection: string },
  legs: readonly Leg[],
): TradeSuggestion | null {
  const local = legs.filter((l) => sameCurrency(l.currency, mesa.localCurrency))
  const quote = legs.filter((l) => sameCurrency(l.currency, mesa.quoteCurrency))
  if (local.length === 0 || quote.length === 0) return null
  const net = (ls: Leg[]) => ls.reduce((sum, l) => sum.plus(l.amount), new D(0))
  const localNet = net(local)
  const quoteNet = net(quote)
  if (localNet.isZero() || quoteNet.isZero()) return null
  const quoteIn = quoteNet.gt(0)
  const side = (mesa.quoteDirection === 'local' ? !quoteIn : quoteIn) ? 'buy' : 'sell'
  return {
    side,
    localAmount: localNet.abs(),
    quoteAmount: quoteNet.abs(),
    fx: localNet.abs().dividedBy(quoteNet.abs()),
    fallback: !(local.length === 1 && quote.length === 1),
  }
}

/** `exact` for a clean leg pair; `fx_close` when the rate sits within 2% of the recent lines' average; else `partial`. */
export function matchKind(s: TradeSuggestion, recentAverageFx: Dec | null): MatchKind {
  if (!s.fallback) return 'exact'
  if (recentAverageFx && recentAverageFx.gt(0) && s.fx.minus(recentAverageFx).abs().lte(recentAverageFx.times(FX_CLOSE_TOLERANCE)))
    return 'fx_close'
  return 'partial'
}

export const suggestionJson = (s: TradeSuggestion) => ({
  side: s.side,
  localAmount: toJson(s.localAmount),
  quoteAmount: toJson(s.quoteAmount),
  fx: toJson(s.fx),
  fallback: s.fallback,
})
