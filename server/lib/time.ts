import { sql, type SQL } from 'drizzle-orm'

/** The calendar date of `at` on the wall clocks of `timezone`, as YYYY-MM-DD. */
export function localDate(at: Date, timezone: string): string {
  const parts = new Intl.DateTimeFormat('en-CA', { timeZone: timezone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(at)
  const part = (type: string) => parts.find((p) => p.type === type)!.value
  return `${part('year')}-${part('month')}-${part('day')}`
}

/** A timestamp as the API writes it, computed in SQL: ISO 8601 UTC with milliseconds and `Z`, like `Date#toISOString`. */
export const isoSql = (expr: SQL) => sql`to_char((${expr}) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

/** Whether `tz` is an IANA time zone this runtime knows. */
export function validTimezone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz })
    return true
  } catch {
    return false
  }
}
