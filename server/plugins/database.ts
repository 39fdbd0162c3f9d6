import { readdirSync, readFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core'
import type { ExtractTablesWithRelations } from 'drizzle-orm'
import * as schema from '../../db/schema'

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

const ROOT = join(import.meta.dir, '..', '..')
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

  const client = postgres(url, { max: poolMax, onnotice: () => {} })
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
