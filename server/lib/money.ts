import Decimal from 'decimal.js'

/** Amounts keep six decimal places; extra places round half away from zero, as Postgres numeric does. */
export const MONEY_SCALE = 6

export const D = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_HALF_UP })
export type Dec = InstanceType<typeof D>

/** Amounts and balances are numeric(28,6): at most 22 digits before the point, so every value is below 10^22. */
export const MONEY_INTEGER_DIGITS = 22
export const MONEY_LIMIT = 1e22

export const MONEY_PATTERN = `^-?(0|[1-9][0-9]{0,${MONEY_INTEGER_DIGITS - 1}})(\\.[0-9]+)?$`

export function dec(value: string | number | Dec): Dec {
  return new D(typeof value === 'number' ? String(value) : value)
}

/** Input (JSON number or decimal string) → the exact string stored in a numeric column. */
export function toMoney(value: string | number | Dec): string {
  return dec(value).toDecimalPlaces(MONEY_SCALE).toFixed(MONEY_SCALE)
}

/** A numeric column value (string) → the JSON number the contract promises in responses. */
export function toJson(value: string | null | undefined): number {
  return value == null ? 0 : Number(value)
}

/**
 * A JSON number or decimal string that fits a numeric(28,6) column once rounded to 6 places: the same bound
 * whichever form it came in (`5e21` and `"5000000000000000000000"` alike, `1e22` and its 23 digits alike refused).
 */
export const isFiniteDecimal = (value: unknown): value is string | number => storedAmount(value) !== null

const MONEY_RE = new RegExp(MONEY_PATTERN)

/** `isFiniteDecimal` and `toMoney` in one parse: the value as stored, or null when it is not such an amount. */
export function storedAmount(value: unknown): string | null {
  if (!((typeof value === 'number' && Number.isFinite(value)) || (typeof value === 'string' && MONEY_RE.test(value)))) return null
  const rounded = dec(value).toDecimalPlaces(MONEY_SCALE)
  return rounded.abs().lt(MONEY_LIMIT) ? rounded.toFixed(MONEY_SCALE) : null
}
