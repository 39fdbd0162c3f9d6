import { sql, type SQL } from 'drizzle-orm'

/**
 * A list bound as ONE parameter in Postgres array syntax, cast to `type`. Drizzle spreads a JS array into one
 * parameter per element, which gives every list length its own statement text (and prepared statement) and caps a
 * list at 65,535 values; one array parameter keeps the text fixed whatever the length, for `= any(…)` and `unnest(…)`.
 */
export function pgArray(values: readonly (string | number | boolean | null)[], type: 'int' | 'text' | 'numeric' | 'bool' | 'smallint'): SQL {
  return sql`${arrayLiteral(values)}::${sql.raw(type)}[]`
}

/** The Postgres array syntax of `values`, for a parameter the statement casts itself (`$1::int[]`). */
export function arrayLiteral(values: readonly (string | number | boolean | null)[]): string {
  const items = values.map((v) => {
    if (v === null) return 'NULL'
    if (typeof v === 'number' || typeof v === 'boolean') return String(v)
    return `"${v.includes('"') || v.includes('\\') ? v.replace(/[\\"]/g, (c) => `\\${c}`) : v}"`
  })
  return `{${items.join(',')}}`
}

/** `items` in lists by `key`, each list in the order given. */
export function groupBy<T>(items: Iterable<T>, key: (item: T) => number): Map<number, T[]> {
  const out = new Map<number, T[]>()
  for (const item of items) {
    const k = key(item)
    const list = out.get(k)
    if (list) list.push(item)
    else out.set(k, [item])
  }
  return out
}
