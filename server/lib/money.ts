import Decimal from 'decimal.js'
import { trimDecimal, type RawJson } from '../../db/json'

/** Amounts keep six decimal places; extra places round half away from zero, as Postgres numeric does. */
export const MONEY_SCALE = 6

export const D = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_HALF_UP })
export type Dec = InstanceType<typeof D>

/** Amounts and balances are numeric(28,6): at most 22 digits before the point, so every value is below 10^22. */
export const MONEY_INTEGER_DIGITS = 22
export const MONEY_LIMIT = 1e22

export const MONEY_PATTERN = `^-?(0|[1-9][0-9]{0,${MONEY_INTEGER_DIGITS - 1}})(\\.[0-9]+)?$`

export function dec(value: string | number | Dec | ExactMoney): Dec {
  return new D(typeof value === 'number' ? String(value) : isExactMoney(value) ? value.rawJSON : value)
}

/** Input (JSON number or decimal string) → the exact string stored in a numeric column. */
export function toMoney(value: string | number | Dec | ExactMoney): string {
  return dec(value).toDecimalPlaces(MONEY_SCALE).toFixed(MONEY_SCALE)
}

/**
 * Money on its way out: a raw JSON number made of the exact decimal text, which `JSON.stringify` writes verbatim
 * (trailing zeros trimmed), so no binary float ever holds it. Opaque on purpose: arithmetic on it does not compile.
 * Values read back from json/jsonb carry the same marker (db/json.ts).
 */
export type ExactMoney = RawJson & { readonly __money: unique symbol }

const rawJSON = (JSON as unknown as { rawJSON(text: string): ExactMoney }).rawJSON
export const isExactMoney = (value: unknown): value is ExactMoney => (JSON as unknown as { isRawJSON(v: unknown): boolean }).isRawJSON(value)

/** A numeric column value (string) or an exact result → the JSON number the contract promises in responses. */
export function toJson(value: string | Dec | null | undefined): ExactMoney {
  if (value == null) return rawJSON('0')
  return rawJSON(trimDecimal(typeof value === 'string' ? value : value.toFixed()))
}

/**
 * Whether the request asked for money as decimal strings: `Accept: application/json; money=string` (the parameter on
 * a JSON media range, or on a wildcard one), for clients whose JSON parser would round a long number.
 */
export function wantsMoneyStrings(accept: string | null): boolean {
  if (!accept || !accept.includes('money')) return false
  return accept.split(',').some((range) => {
    const [type, ...params] = range.split(';').map((p) => p.trim().toLowerCase())
    if (!/^(application\/(json|\*)|\*\/\*)$/.test(type)) return false
    return params.some((p) => /^money\s*=\s*"?string"?$/.test(p))
  })
}

/** JSON text of an answer: money as JSON numbers with every digit, or as decimal strings when asked. */
export function jsonText(value: unknown, moneyStrings: boolean): string {
  return moneyStrings ? JSON.stringify(value, (_key, v) => (isExactMoney(v) ? v.rawJSON : v)) : JSON.stringify(value)
}

/**
 * A JSON number or decimal string that fits a numeric(28,6) column once rounded to 6 places: the same bound
 * whichever form it came in (`5e21` and `"5000000000000000000000"` alike, `1e22` and its 23 digits alike refused).
 */
export const isFiniteDecimal = (value: unknown): value is string | number | ExactMoney => storedAmount(value) !== null

const MONEY_RE = new RegExp(MONEY_PATTERN)

/** `isFiniteDecimal` and `toMoney` in one parse: the value as stored, or null when it is not such an amount. */
export function storedAmount(value: unknown): string | null {
  // Money read back from jsonb (a tool's fixed_config) is a raw JSON number: its text is the value.
  if (isExactMoney(value)) value = value.rawJSON
  if (!((typeof value === 'number' && Number.isFinite(value)) || (typeof value === 'string' && MONEY_RE.test(value)))) return null
  const rounded = dec(value).toDecimalPlaces(MONEY_SCALE)
  return rounded.abs().lt(MONEY_LIMIT) ? rounded.toFixed(MONEY_SCALE) : null
}

/**
 * A request body's JSON, with every number whose text a binary float cannot hold exactly kept as that text: money
 * sent as a JSON number (`1234567890123.123457`) then keeps every digit, and the schemas read it as they read a
 * decimal string. Numbers a float holds exactly (ids, counts, `1.5`, `1e3`) stay numbers. Uses JSON.parse's source
 * text access (its reviver's third argument).
 */
export function parseExactNumbers(text: string): unknown {
  return JSON.parse(text, (_key: string, value: unknown, context?: { source?: string }) => {
    if (typeof value !== 'number' || context?.source === undefined) return value
    const source = context.source
    if (String(value) === source || !Number.isFinite(value)) return value
    return new D(source).equals(new D(String(value))) ? value : source
  })
}

/**
 * A decimal as written in Argentina, every digit kept and at least two decimals (`1165.5` → `1.165,50`), for what the
 * server prints (receipts). The runtime's Intl formats the decimal string itself, never a float; `always` groups
 * four-digit amounts too, as the screens do (`kiosk/src/manage/decimal.ts`).
 */
const ES_AR = new Intl.NumberFormat('es-AR', { minimumFractionDigits: 2, maximumFractionDigits: 20, useGrouping: 'always' })
export const formatEsAr = (value: string) => ES_AR.format(value as `${number}`)
