import { test } from 'bun:test'
import { appendFileSync } from 'node:fs'
import { SignJWT } from 'jose'
import { createApp } from '../server/app'
import { loadConfig, type Config } from '../server/config'
import type { AppContext } from '../server/context'
import { openDatabase } from '../db/client'
import { testStore } from './store'
import { DomainEvents } from '../server/lib/events'

export const SUPERADMIN_SECRET = 'test-superadmin-secret-0123456789'
export const SUPERADMIN_EMAIL = 'root@fos.test'

export const onPostgres = () => Boolean(process.env.TEST_DATABASE_URL)

/** A test that needs real concurrency: on PGlite it is reported as skipped, by name. */
export const postgresTest = (name: string, fn: () => Promise<void>, timeout?: number) =>
  onPostgres() ? test(name, fn, timeout) : test.skip(`${name} [needs Postgres]`, fn)

export interface Reply<T = any> {
  status: number
  body: T
  headers: Headers
}

export interface RequestOptions {
  key?: string
  bearer?: string
  body?: unknown
  headers?: Record<string, string>
  /** Sent as-is (for multipart or malformed bodies). */
  raw?: BodyInit
}

export interface TestApp {
  ctx: AppContext
  app: ReturnType<typeof createApp>
  /** Moves the app clock (not the database's) by `ms` from real time; `travel(0)` puts it back. */
  travel(ms: number): void
  request<T = any>(method: string, path: string, opts?: RequestOptions): Promise<Reply<T>>
  superToken(email?: string, expiresIn?: string): Promise<string>
  newCompany(opts?: { name?: string; timezone?: string; mesas?: boolean; ventanilla?: boolean }): Promise<Company>
}

export interface Company {
  id: number
  name: string
  key: string
  employee(permissions: string[], clientIds?: number[]): Promise<{ id: number; key: string; email: string }>
}

export function testConfig(overrides: Partial<Config> = {}): Config {
  const base = loadConfig({
    DATA_DIR: `/tmp/fos-test-${process.pid}`,
    PUBLIC_BASE_URL: 'http://fos.test',
    SIGNING_SECRET: 'test-signing-secret-0123456789',
    SUPERADMIN_JWT_SECRET: SUPERADMIN_SECRET,
    SUPERADMIN_EMAILS: SUPERADMIN_EMAIL,
    RATE_LIMIT_PER_MINUTE: '0',
    RATE_LIMIT_IP_PER_MINUTE: '0',
    // Suites fire bursts at one company on a shared machine: overload refusals have their own test.
    DB_QUEUE_TIMEOUT_MS: '120000',
  })
  return { ...base, databaseUrl: process.env.TEST_DATABASE_URL, ...overrides }
}

/**
 * With `CONTRACT_PAIRS` set, every request a test sends and the answer it gets are appended to that file, one JSON
 * line each, for the test that checks them against the OpenAPI document.
 */
const PAIRS_FILE = process.env.CONTRACT_PAIRS

export interface RecordedPair {
  method: string
  path: string
  requestType: string | null
  requestBody: string | null
  status: number
  responseType: string | null
  responseBody: string
}

function recordPair(file: string, method: string, path: string, headers: Headers, body: BodyInit | undefined, res: Response, text: string) {
  const pair: RecordedPair = {
    method,
    path,
    requestType: headers.get('content-type'),
    requestBody: typeof body === 'string' ? body : null,
    status: res.status,
    responseType: res.headers.get('content-type'),
    responseBody: text.length > 1_000_000 ? '' : text,
  }
  appendFileSync(file, `${JSON.stringify(pair)}\n`)
}

let shared: Promise<TestApp> | undefined

/** One app per test run, on the run's database; tests isolate themselves by making their own companies. */
export function testApp(): Promise<TestApp> {
  shared ??= buildTestApp()
  return shared
}

export async function buildTestApp(overrides: Partial<Config> = {}): Promise<TestApp> {
  const config = testConfig(overrides)
  // Apps of earlier tests stay open to the end of the run; their idle connections go, so the run fits a stock
  // max_connections of 100.
  const database = await openDatabase({ url: config.databaseUrl, poolMax: 20, idleTimeoutS: 3 })
  let offset = 0
  const clock = () => new Date(Date.now() + offset)
  const store = await testStore(config, clock)
  const ctx: AppContext = {
    config,
    database,
    db: database.db,
    store,
    clock,
    log: () => {},
    events: new DomainEvents(),
  }
  const app = createApp(ctx)
  const previous = globalThis.__fosTestTeardown
  globalThis.__fosTestTeardown = async () => {
    await previous?.()
    await database.close()
  }
  let companySeq = 0
  const t: TestApp = {
    ctx,
    app,
    travel(ms) {
      offset = ms
    },
    async request(method, path, opts = {}) {
      const headers = new Headers(opts.headers)
      if (opts.key) headers.set('x-api-key', opts.key)
      if (opts.bearer) headers.set('authorization', `Bearer ${opts.bearer}`)
      let body: BodyInit | undefined = opts.raw
      if (opts.body !== undefined) {
        body = JSON.stringify(opts.body)
        headers.set('content-type', 'application/json')
      }
      const res = await app.handle(new Request(`http://fos.test${path}`, { method, headers, body }))
      const text = await res.text()
      let parsed: unknown = text
      if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text)
      if (PAIRS_FILE) recordPair(PAIRS_FILE, method, path, headers, body, res, text)
      return { status: res.status, body: parsed as any, headers: res.headers }
    },
    superToken(email = SUPERADMIN_EMAIL, expiresIn = '5m') {
      return new SignJWT({ email })
        .setProtectedHeader({ alg: 'HS256' })
        .setIssuedAt()
        .setExpirationTime(expiresIn)
        .sign(new TextEncoder().encode(SUPERADMIN_SECRET))
    },
    async newCompany(opts = {}) {
      const token = await t.superToken()
      const name = opts.name ?? `Cambio ${process.pid}-${++companySeq}`
      const created = await t.request('POST', '/api/superadmin/companies', {
        bearer: token,
        body: { name, ...(opts.timezone && { timezone: opts.timezone }) },
      })
      if (created.status !== 201) throw new Error(`company create: ${created.status} ${JSON.stringify(created.body)}`)
      const id = created.body.id as number
      if (opts.mesas || opts.ventanilla) {
        await t.request('PATCH', `/api/superadmin/companies/${id}`, {
          bearer: token,
          body: { modules: { mesas: Boolean(opts.mesas), ventanilla: Boolean(opts.ventanilla) } },
        })
      }
      const issued = await t.request('POST', `/api/superadmin/companies/${id}/api-keys`, { bearer: token, body: { name: 'main' } })
      const key = issued.body.key as string
      let employeeSeq = 0
      return {
        id,
        name,
        key,
        async employee(permissions, clientIds) {
          const email = `e${++employeeSeq}.${id}@fos.test`
          const emp = await t.request('POST', '/api/employees', {
            key,
            body: { email, name: `Empleado ${employeeSeq}`, permissions, ...(clientIds && { client_ids: clientIds }) },
          })
          if (emp.status !== 201) throw new Error(`employee create: ${emp.status} ${JSON.stringify(emp.body)}`)
          const k = await t.request('POST', `/api/employees/${emp.body.id}/api-keys`, { key, body: { name: 'emp' } })
          return { id: emp.body.id, key: k.body.key, email }
        },
      }
    },
  }
  return t
}
