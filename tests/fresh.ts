/**
 * An empty database of its own, for tests of what happens before any company exists (first run, operator CLI):
 * the run's shared database has companies from every other test. Dropped at the end of the run.
 */
import { afterAll } from 'bun:test'
import postgres from 'postgres'

const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const made: string[] = []
let seq = 0

afterAll(async () => {
  if (!made.length) return
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  for (const name of made) await admin.unsafe(`drop database if exists ${name} with (force)`)
  await admin.end({ timeout: 1 })
})

/** The URL of a new, empty Postgres database (migrations run when an app or the CLI first opens it). */
export async function freshDatabase(): Promise<string> {
  const name = `fos_fresh_${process.pid}_${Date.now()}_${++seq}`
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database ${name}`)
  await admin.end({ timeout: 1 })
  made.push(name)
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.toString()
}
