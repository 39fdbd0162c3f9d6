/** Throwaway Postgres databases: one per bench run, named after the bench and the process, dropped at the end. */
import postgres from 'postgres'
import { ADMIN_URL } from './common'

export interface BenchDatabase {
  name: string
  url: string
  /** Drops the database, closing whatever still holds a session on it, and ends the admin connection. */
  drop(): Promise<void>
}

const urlOf = (name: string) => {
  const url = new URL(ADMIN_URL)
  url.pathname = `/${name}`
  return url.toString()
}

async function create(admin: postgres.Sql, prefix: string): Promise<BenchDatabase> {
  const name = `${prefix}_${process.pid}`
  await admin.unsafe(`create database ${name}`)
  return {
    name,
    url: urlOf(name),
    async drop() {
      await admin.unsafe(`drop database if exists ${name} with (force)`)
      await admin.end({ timeout: 5 })
    },
  }
}

/** Creates `<prefix>_<pid>` on BENCH_ADMIN_URL. */
export function createBenchDatabase(prefix: string): Promise<BenchDatabase> {
  return create(postgres(ADMIN_URL, { max: 1, onnotice: () => {} }), prefix)
}

/** The same, or null when no Postgres answers at BENCH_ADMIN_URL within a few seconds (for benches that can do without). */
export async function benchDatabaseIfAny(prefix: string): Promise<BenchDatabase | null> {
  const admin = postgres(ADMIN_URL, { max: 1, connect_timeout: 3, onnotice: () => {} })
  try {
    await admin`select 1`
  } catch {
    await admin.end({ timeout: 1 })
    return null
  }
  return create(admin, prefix)
}
