import postgres from 'postgres'
import { drizzle } from 'drizzle-orm/postgres-js'
import { sql } from 'drizzle-orm'
import * as schema from '../../../db/schema'
import { connectionOptions, rowsOf, type Db, type Tx } from '../../../db/client'
import { registerPool } from '../../../db/driver'
import { fixedStatement } from '../../../db/statement'
import type { Caller } from '../../access/caller'
import type { AppContext } from '../../context'
import { ApiError } from '../../lib/errors'
import { Slots } from '../../lib/slots'
import { tenantTx, type TxMode } from '../../lib/write'

/** Seconds a company at its export limit is told to wait. */
const EXPORT_RETRY_AFTER_S = 5

interface ExportRuntime {
  /**
   * The pool exports and audit verification read from: apart from the one ordinary requests use, so they never hold
   * one of theirs, and on DATABASE_READ_URL when it is set.
   */
  db: Db
  perCompany: Slots<number>
  close(): Promise<void>
}

const runtimes = new WeakMap<AppContext, ExportRuntime>()

function runtime(app: AppContext): ExportRuntime {
  let r = runtimes.get(app)
  if (r) return r
  const perCompany = new Slots<number>(() => app.config.exports.perCompany)
  if (app.database.kind === 'postgres' && app.config.databaseUrl) {
    // Idle connections go away on their own: exports are occasional, and nothing has to close this pool for a
    // process to end. No session state of its own: behind a pooler in transaction pooling (PgBouncer) a startup
    // parameter such as statement_timeout is refused, and a named prepared statement outlives its server session.
    // DATABASE_READ_URL when set (a standby, or a host list preferring one): long reads leave the primary alone.
    const own = connectionOptions(postgres, app.config.databaseReadUrl ?? app.config.databaseUrl)
    const client = postgres(own.url, {
      ...own.options,
      max: app.config.exports.poolMax,
      idle_timeout: 5,
      onnotice: () => {},
      ...(app.config.databasePoolMode === 'transaction' && { prepare: false }),
    })
    const db = drizzle(client, { schema }) as unknown as Db
    registerPool(db, client, { inlineValues: app.config.databasePoolMode === 'transaction' })
    r = { db, perCompany, close: () => client.end({ timeout: 5 }) }
  } else {
    // The embedded database has one connection for everything; there is no second pool to keep exports on.
    r = { db: app.db, perCompany, close: async () => {} }
  }
  runtimes.set(app, r)
  return r
}

/**
 * One of the company's `EXPORTS_PER_COMPANY` export slots, held until the export has been sent (a stream: until it
 * ends or its reader goes away); past them 429 RATE_LIMITED with Retry-After.
 */
export function claimExport(app: AppContext, companyId: number): () => void {
  const release = runtime(app).perCompany.take(companyId)
  if (!release)
    throw new ApiError(429, 'RATE_LIMITED', `At most ${app.config.exports.perCompany} exports at once per company; retry shortly`, undefined, {
      'retry-after': String(EXPORT_RETRY_AFTER_S),
    })
  return release
}

/**
 * A tenant transaction on the export pool, where each statement is bounded by `EXPORT_STATEMENT_TIMEOUT_MS`. The
 * bound is the transaction's own (`set_config(…, true)` is SET LOCAL), so it holds through a pooler in transaction
 * pooling and ends with the transaction. Sent without waiting for its answer, like the tenant settings before it:
 * the connection runs statements in the order they are sent, so the body's first statement is already bounded.
 */
/** A fixed statement, so it reaches the connection ahead of the body's first statement (db/driver.ts). */
const STATEMENT_TIMEOUT = fixedStatement<{ timeout: string }>((p) => sql`select set_config('statement_timeout', ${p.timeout}::text, true)`)

export function exportTx<T>(app: AppContext, caller: Caller, mode: TxMode, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const timeout = String(app.config.exports.statementTimeoutMs)
  return tenantTx(
    app,
    caller,
    mode,
    async (tx) => {
      const bounded = Promise.resolve(STATEMENT_TIMEOUT(tx, { timeout }))
      // Awaited once the body is done; until then a failure must not count as unhandled.
      bounded.catch(() => {})
      try {
        return await fn(tx)
      } finally {
        await bounded
      }
    },
    { on: runtime(app).db },
  )
}

/**
 * As of when a read on the export pool sees the data: on a standby the time of the last transaction it replayed
 * (it may lag the primary), on the primary the transaction's own start.
 */
export async function asOf(tx: Tx): Promise<string> {
  const [row] = rowsOf<{ at: Date | string }>(await tx.execute(sql`select coalesce(case when pg_is_in_recovery() then pg_last_xact_replay_timestamp() end, now()) as at`))
  return new Date(row.at).toISOString()
}

/** 400 when the export would hold more than `EXPORT_MAX_ROWS` rows: the caller narrows its range instead. */
export function checkRowBound(app: AppContext, rows: number, field = 'from') {
  const max = app.config.exports.maxRows
  if (rows > max)
    throw new ApiError(400, 'VALIDATION_ERROR', `The export would hold ${rows} rows, more than ${max}; narrow the range`, [
      { field, message: `more than ${max} rows in range` },
    ])
}

/** Closes the export pool of an app (at shutdown). */
export const closeExports = (app: AppContext) => runtimes.get(app)?.close() ?? Promise.resolve()
