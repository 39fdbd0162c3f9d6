import { fillPlaceholders, type ExtractTablesWithRelations, type Query, type SQL } from 'drizzle-orm'
import { PgDialect, type PgDatabase, type PgQueryResultHKT, type PgTransaction } from 'drizzle-orm/pg-core'
import { PostgresJsSession, PostgresJsTransaction } from 'drizzle-orm/postgres-js'
import type { Sql, TransactionSql } from 'postgres'

/**
 * Without the relational query API (`db.query.…`), which nothing uses: given the schema, drizzle builds a query
 * builder per table for every transaction it opens, a few percent of a small request's CPU.
 */
export type Db = PgDatabase<PgQueryResultHKT>
export type Tx = PgTransaction<PgQueryResultHKT, Record<string, never>, ExtractTablesWithRelations<Record<string, never>>>
/** Anything a query can run on: the pool or an open transaction. */
export type Executor = Db | Tx

/*
 * The one adapter between Drizzle and postgres.js, for the gap their public APIs leave: Drizzle sends a statement
 * prepared only when a query builder's `.prepare(name)` asks, so a raw SQL statement (`db.execute`) always goes out
 * unnamed, and postgres.js then sends its Parse + Describe alone and waits for the parameter types before the Bind
 * and Execute: two round trips, and nothing else sent on the connection meanwhile. The hot path's statements are raw
 * (db/statement.ts), so they run on postgres.js itself, `unsafe(text, params, { prepare: true })`: one round trip
 * once the connection has prepared the text, and pipelined with the statements around them.
 *
 * Inside a transaction that needs postgres.js's own transaction handle, which Drizzle's `transaction()` keeps to
 * itself; so tenant transactions are opened here the way Drizzle opens its own (postgres.js `begin`, then Drizzle's
 * exported `PostgresJsSession` and `PostgresJsTransaction` over the handle), remembering the handle for the
 * transaction. Query builders inside work exactly as in Drizzle's own transactions. tests/db/driver.test.ts fails
 * if a Drizzle release starts preparing raw statements itself (this adapter can then go) or if the transaction it
 * builds stops behaving as Drizzle's own.
 */

const dialect = new PgDialect()

/** postgres.js handles of the pools and the transactions opened here; PGlite has none. */
const handles = new WeakMap<object, Sql | TransactionSql>()

/**
 * Pools behind a pooler in transaction pooling, and their transactions: nothing can be prepared there, and an unnamed
 * statement with parameters costs postgres.js two round trips (it waits for the parameter types) and holds back
 * every statement behind it. Their fixed statements go out with the values written in as literals by Drizzle's own
 * `inlineParams()`, as one text without parameters: one round trip, pipelined with the others. Drizzle writes a
 * string literal by doubling its quotes, which is exact only with `standard_conforming_strings` on: db/client.ts
 * refuses to start in transaction pooling otherwise. Values of other kinds keep their bind parameters.
 */
const inlined = new WeakSet<object>()

/**
 * Registers the postgres.js client a Drizzle database was made from, so its raw statements can be prepared (or,
 * with `inlineValues`, sent with their values as literals: transaction pooling).
 */
export function registerPool(db: Db, client: Sql, opts: { inlineValues?: boolean } = {}) {
  handles.set(db, client)
  if (opts.inlineValues) inlined.add(db)
}

/** Values Drizzle writes as literals exactly: anything else keeps its bind parameter. */
const literal = (v: unknown) => v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))

export interface TransactionConfig {
  isolationLevel?: 'read committed' | 'repeatable read' | 'serializable'
  accessMode?: 'read only' | 'read write'
}

/** A transaction on `db`: through postgres.js `begin` on Postgres, Drizzle's own on PGlite. */
export function transaction<T>(db: Db, fn: (tx: Tx) => Promise<T>, config: TransactionConfig = {}): Promise<T> {
  const client = handles.get(db) as Sql | undefined
  if (!client) return db.transaction(fn, config.isolationLevel || config.accessMode ? config : undefined)
  const mode = [config.isolationLevel && `isolation level ${config.isolationLevel}`, config.accessMode].filter(Boolean).join(' ')
  return client.begin(mode, (handle) => {
    // Drizzle's declarations type a session's client as a pool even for the transactions it makes itself.
    const session = new PostgresJsSession(handle as unknown as TransactionSql & Sql, dialect, undefined, {})
    const tx = new PostgresJsTransaction(dialect, session, undefined) as unknown as Tx
    handles.set(tx, handle)
    if (inlined.has(db)) inlined.add(tx)
    return fn(tx)
  }) as Promise<T>
}

/**
 * Runs a compiled statement on `on` with its placeholders' values: prepared on postgres.js where `on` has a handle
 * (the pool, a transaction opened by `transaction`), else as Drizzle runs it. Lazy like any query: sent when first
 * awaited, so statements started together go out in the order they were started.
 */
export function runCompiled(on: Executor, query: Query, text: () => SQL, values: Record<string, unknown>): PromiseLike<unknown> {
  const handle = handles.get(on)
  if (!handle) return on.execute(text())
  if (inlined.has(on) && Object.values(values).every(literal)) return handle.unsafe(dialect.sqlToQuery(text().inlineParams()).sql)
  return handle.unsafe(query.sql, fillPlaceholders(query.params, values) as never[], { prepare: true })
}
