import { sql, type Placeholder, type Query, type SQL } from 'drizzle-orm'
import { PgDialect } from 'drizzle-orm/pg-core'
import type { Executor } from './client'
import { runCompiled } from './driver'

const dialect = new PgDialect()

/** One placeholder per value of a fixed statement, named after it. */
export type Placeholders<V> = { readonly [K in keyof V]: Placeholder<K & string> }

/**
 * A statement whose text is the same on every call, only its values change: written once with a placeholder per
 * value, turned into text on its first run, and prepared by the connection (db/driver.ts). Drizzle otherwise
 * rebuilds a statement's text from its fragments on every call, walking every nested fragment; for the large
 * statements of the write path that walk was more of the server's CPU than anything else it does for them. A lazy
 * query, sent when first awaited, so statements started together still go out in the order they were started.
 */
export function fixedStatement<V extends Record<string, unknown>>(build: (p: Placeholders<V>) => SQL) {
  let compiled: Query | undefined
  const compile = () => dialect.sqlToQuery(build(new Proxy({}, { get: (_, name) => sql.placeholder(String(name)) }) as Placeholders<V>))
  // Where no connection can prepare it (the embedded database), the statement is built again with its values.
  const withValues = (values: V) => () => build(values as unknown as Placeholders<V>)
  return (on: Executor, values: V) => {
    compiled ??= compile()
    return runCompiled(on, compiled, withValues(values), values)
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
