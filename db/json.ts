/**
 * JSON read from json/jsonb columns (event payloads, audit snapshots, stored idempotent answers, tool configs) without
 * a binary float on the way: `JSON.parse` would turn `1234567890123.123457` into 1234567890123.1235. Money keeps its
 * exact digits as a raw JSON value (`JSON.rawJSON`, which `JSON.stringify` writes verbatim), the same marker the
 * service gives money it writes itself (server/lib/money.ts), so an answer that passes through the database leaves
 * digit for digit as it went in, and `Accept: application/json; money=string` can tell money from ids and counts.
 */

/**
 * The keys that hold money in anything the service stores as JSON: resources as their GET writes them (snake_case),
 * table rows as the audit trigger snapshots them (column names), and messaging tools' `fixed_config` (camelCase).
 */
export const MONEY_KEYS: ReadonlySet<string> = new Set([
  'amount',
  'balance',
  'opening_balance',
  'closing_balance',
  'running_balance',
  'cajas',
  'accounts',
  'buy',
  'sell',
  'mid',
  'fx',
  'local_amount',
  'quote_amount',
  'localAmount',
  'quoteAmount',
  'quote_position',
  'average_cost',
  'realized_pnl',
  'realized',
  'quantity',
  'price',
  'cost',
  'budget',
  'spent',
  'rate',
  'commission',
  'total',
  'till_tolerance',
  'expected',
  'counted',
  'difference',
  'bought',
  'sold',
  'commissions',
  'tolerance',
])

export interface RawJson {
  readonly rawJSON: string
}

const rawJSON = (JSON as unknown as { rawJSON(text: string): RawJson }).rawJSON

/** Decimal text without a trailing fractional zero or point (`100.500000` → `100.5`, `-0.000000` → `0`). */
export function trimDecimal(text: string): string {
  let out = text
  if (out.includes('.') && !/[eE]/.test(out)) out = out.replace(/0+$/, '').replace(/\.$/, '')
  return out === '-0' ? '0' : out
}

/** JSON.parse's third reviver argument (source text access, ES2025): the text a primitive was read from. */
type Context = { source?: string }

function reviver(this: unknown, key: string, value: unknown, context?: Context): unknown {
  if (typeof value === 'number') {
    const source = context?.source
    if (source === undefined) return value
    const text = trimDecimal(source)
    // Money always leaves marked; any other number only when a double cannot hold what was written.
    return MONEY_KEYS.has(key) || String(value) !== text ? rawJSON(text) : value
  }
  // An audit row's `changes` name the column beside its values: `{ field: 'amount', before: 1, after: 2 }`.
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const change = value as { field?: unknown; before?: unknown; after?: unknown }
    if (typeof change.field === 'string' && MONEY_KEYS.has(change.field)) {
      if (typeof change.before === 'number') change.before = rawJSON(String(change.before))
      if (typeof change.after === 'number') change.after = rawJSON(String(change.after))
    }
  }
  return value
}

/** `JSON.parse` that keeps every digit of every number (see above). */
export const parseExactJson = (text: string): unknown => JSON.parse(text, reviver as (key: string, value: unknown) => unknown)
