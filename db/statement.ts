import { sql, type Placeholder, type Query, type SQL } from 'drizzle-orm'
import { PgDialect } from 'drizzle-orm/pg-core'
import { PgRaw } from 'drizzle-orm/pg-core/query-builders/raw'
import type { Executor } from './client'

const dialect = new PgDialect()

/** One placeholder per value of a fixed statement, named after it. */
export type Placeholders<V> = { readonly [K in keyof V]: Placeholder<K & string> }

/**
 * A statement whose text is the same on every call, only its values change: written once with a placeholder per
 * value, turned into text on its first run. Drizzle otherwise rebuilds a statement's text from its fragments on
 * every call, walking every nested fragment; for the large statements of the write path that walk was more of the
 * server's CPU than anything else it does for them. It runs exactly as `on.execute(statement)` would: the same lazy
 * query, sent when first awaited, so statements started together still go out in the order they were started.
 */
export function fixedStatement<V extends Record<string, unknown>>(build: (p: Placeholders<V>) => SQL) {
  let compiled: { text: SQL; query: Query } | undefined
  const compile = () => {
    const p = new Proxy({}, { get: (_, name) => sql.placeholder(String(name)) }) as Placeholders<V>
    const text = build(p)
    return { text, query: dialect.sqlToQuery(text) }
  }
  return (on: Executor, values: V) => {
    compiled ??= compile()
    const prepared = on._.session.prepareQuery(compiled.query, undefined, undefined, false)
    return new PgRaw<unknown>(() => prepared.execute(values), compiled.text, compiled.query, (result) => prepared.mapResult(result, true))
  }
}

const shapeIds = new WeakMap<object, number>()
let shapes = 0

/**
 * Fixed statements whose text has variants, each made on first use: `parts` names what a variant's text depends on
 * (strings and flags, and the functions that write fragments of it, told apart by identity). At most `max` are kept,
 * should a caller ever pass functions made per call; past that a statement is made for its call alone.
 */
export function statementsByShape<S>(max = 256) {
  const made = new Map<string, S>()
  return (parts: readonly (string | boolean | object | undefined)[], make: () => S): S => {
    const shape = parts
      .map((part) => {
        if (typeof part !== 'object' && typeof part !== 'function') return JSON.stringify(part ?? null)
        let id = shapeIds.get(part)
        if (id === undefined) shapeIds.set(part, (id = ++shapes))
        return `#${id}`
      })
      .join(' ')
    let statement = made.get(shape)
    if (!statement) {
      statement = make()
      if (made.size < max) made.set(shape, statement)
    }
    return statement
  }
}
