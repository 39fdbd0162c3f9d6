/**
 * Preloaded by bun test: picks the database for the whole run.
 * Real Postgres when one answers (a fresh database per run, dropped at the end), else embedded PGlite;
 * tests that need real concurrency ask `requiresPostgres()` and are reported as skipped on PGlite.
 */
import { afterAll } from 'bun:test'
import postgres from 'postgres'

const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

async function postgresReachable(): Promise<boolean> {
  if (process.env.TEST_DATABASE === 'pglite') return false
  const probe = postgres(adminUrl, { max: 1, connect_timeout: 3, onnotice: () => {} })
  try {
    await probe`select 1`
    return true
  } catch {
    return false
  } finally {
    await probe.end({ timeout: 1 })
  }
}

if (await postgresReachable()) {
  const name = `fos_test_${process.pid}_${Date.now()}`
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database ${name}`)
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  process.env.TEST_DATABASE_URL = url.toString()
  console.log(`[tests] database: Postgres (${name})`)
  afterAll(async () => {
    await globalThis.__fosTestTeardown?.()
    await admin.unsafe(`drop database if exists ${name} with (force)`)
    await admin.end({ timeout: 1 })
  })
} else {
  delete process.env.TEST_DATABASE_URL
  console.log('[tests] database: embedded PGlite (no Postgres reachable); concurrency tests are skipped')
  afterAll(async () => {
    await globalThis.__fosTestTeardown?.()
  })
}

declare global {
  var __fosTestTeardown: (() => Promise<void>) | undefined
}
