import { readdirSync, readFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core'
import type { ExtractTablesWithRelations } from 'drizzle-orm'
import * as schema from './schema'

export type Schema = typeof schema
export type Db = PgDatabase<PgQueryResultHKT, Schema>
export type Tx = PgTransaction<PgQueryResultHKT, Schema, ExtractTablesWithRelations<Schema>>
/** Anything a query can run on: the pool or an open transaction. */
export type Executor = Db | Tx

export interface Database {
  kind: 'postgres' | 'pglite'
  db: Db
  /** Subscribe to a NOTIFY channel; resolves to an unsubscribe function. */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>
  /** Raw rows of a SQL statement, the same shape on both drivers. */
  rows<T = Record<string, unknown>>(query: ReturnType<typeof sql>, on?: Executor): Promise<T[]>
  close(): Promise<void>
}

const ROOT = join(import.meta.dir, '..')
const MIGRATIONS = join(ROOT, 'db', 'migrations')
const ROUTINES = join(ROOT, 'db', 'sql')
/** Any constant works; it only has to be the same for every process of this service. */
const MIGRATION_LOCK = 727_401

function routines(): string[] {
  return readdirSync(ROUTINES)
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((f) => readFileSync(join(ROUTINES, f), 'utf8'))
}

export function rowsOf<T>(result: unknown): T[] {
  return (Array.isArray(result) ? result : (result as { rows: T[] }).rows) as T[]
}

/** Distinct statement texts one process prepares; past this, new texts run unprepared as before. */
const MAX_PREPARED = 1000

/**
 * Drizzle sends every statement through postgres.js `unsafe()`, which leaves it unprepared: a statement with bind
 * parameters then costs two round trips (describe to learn the parameter types, then execute) and a fresh parse
 * and plan on every call. Prepared, a repeated statement is one round trip and reuses its plan. Only statements
 * with parameters are prepared (one without has nothing to describe), and only the first MAX_PREPARED distinct
 * texts, so statements with inlined literals cannot grow every connection's prepared set without bound.
 * Transactions and savepoints hand out their own query functions, which get the same treatment.
 */
export function preparing<T extends object>(client: T, texts = new Set<string>()): T {
  // postgres.js query functions are callables with methods; these three are replaced in place.
  const sql = client as unknown as Record<string, (...args: unknown[]) => unknown>
  const unsafe = sql.unsafe.bind(client)
  sql.unsafe = (...args: unknown[]) => {
    const [text, params, options] = args as [string, unknown, Record<string, unknown> | undefined]
    if (!Array.isArray(params) || params.length === 0) return unsafe(...args)
    if (!texts.has(text)) {
      if (texts.size >= MAX_PREPARED) return unsafe(...args)
      texts.add(text)
    }
    return unsafe(text, params, { ...options, prepare: true })
  }
  for (const name of ['begin', 'savepoint']) {
    const original = sql[name]?.bind(client)
    if (!original) continue
    sql[name] = (...args: unknown[]) => {
      const fn = args.pop() as (inner: object) => unknown
      return original(...args, (inner: object) => fn(preparing(inner, texts)))
    }
  }
  return client
}

export async function openDatabase(opts: { url?: string; dataDir?: string; poolMax?: number }): Promise<Database> {
  return opts.url ? openPostgres(opts.url, opts.poolMax ?? 10) : openPglite(opts.dataDir)
}

async function openPostgres(url: string, poolMax: number): Promise<Database> {
  const { default: postgres } = await import('postgres')
  const { drizzle } = await import('drizzle-orm/postgres-js')
  const { migrate } = await import('drizzle-orm/postgres-js/migrator')

  // Migrations run on one dedicated session holding an advisory lock, so processes starting together take turns.
  const admin = postgres(url, { max: 1, onnotice: () => {} })
  try {
    await admin`select pg_advisory_lock(${MIGRATION_LOCK})`
    await migrate(drizzle(admin), { migrationsFolder: MIGRATIONS })
    for (const text of routines()) await admin.unsafe(text)
    await admin`select pg_advisory_unlock(${MIGRATION_LOCK})`
  } finally {
    await admin.end()
  }

  const client = preparing(postgres(url, { max: poolMax, onnotice: () => {} }))
  const db = drizzle(client, { schema }) as unknown as Db
  return {
    kind: 'postgres',
    db,
    async listen(channel, onPayload) {
      const sub = await client.listen(channel, onPayload)
      return () => sub.unlisten()
    },
    async rows(query, on = db) {
      return rowsOf(await on.execute(query))
    },
    close: () => client.end({ timeout: 5 }),
  }
}

async function openPglite(dataDir?: string): Promise<Database> {
  const { PGlite } = await import('@electric-sql/pglite')
  const { drizzle } = await import('drizzle-orm/pglite')
  const { migrate } = await import('drizzle-orm/pglite/migrator')

  if (dataDir) mkdirSync(dataDir, { recursive: true })
  const client = dataDir ? new PGlite(dataDir) : new PGlite()
  await client.waitReady
  const db = drizzle(client, { schema }) as unknown as Db
  await migrate(drizzle(client), { migrationsFolder: MIGRATIONS })
  for (const text of routines()) await client.exec(text)
  return {
    kind: 'pglite',
    db,
    async listen(channel, onPayload) {
      return client.listen(channel, onPayload)
    },
    async rows(query, on = db) {
      return rowsOf(await on.execute(query))
    },
    close: () => client.close(),
  }
}
