import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SignJWT } from 'jose'
import type { Page } from 'playwright-core'
import { startServer, type RunningServer } from '../server'
import { ROOT } from './browser'

/** What the screens' end-to-end tests start from: a real server process and a company on it, with its key. */
export interface Scene {
  server: RunningServer
  companyId: number
  key: string
  /** A JSON call to the server, with the company key unless other credentials are given; anything over 299 throws. */
  ok(method: string, path: string, body?: unknown, auth?: Record<string, string>): Promise<any>
  /** The platform operator's bearer header, for /api/superadmin. */
  operator: Record<string, string>
  stop(): Promise<void>
}

const SECRET = 'screens-e2e-superadmin-secret-0123456789'
const OPERATOR = 'root@screens-e2e.test'

/**
 * Starts a server on the suite's database (or the embedded one), with `env` added to its environment, and makes a
 * company named `name` and the process id (suites share the database), or `name` alone with `exactName` (a script
 * on its own throwaway database, whose pictures show the name), with the waiting room switched on unless
 * `ventanilla` is false.
 */
export async function openScene(
  name: string,
  opts: { ventanilla?: boolean; timeoutMs?: number; env?: Record<string, string>; exactName?: boolean } = {},
): Promise<Scene> {
  const dataDir = mkdtempSync(join(tmpdir(), 'screens-e2e-'))
  const server = await startServer({
    dataDir,
    databaseUrl: process.env.TEST_DATABASE_URL,
    env: { SUPERADMIN_JWT_SECRET: SECRET, SUPERADMIN_EMAILS: OPERATOR, ...opts.env },
    timeoutMs: opts.timeoutMs ?? 45_000,
  })
  let key = ''
  const ok = async (method: string, path: string, body?: unknown, auth: Record<string, string> = { 'x-api-key': key }) => {
    const res = await fetch(`${server.base}${path}`, {
      method,
      headers: { ...auth, ...(body !== undefined && { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status} ${text}`)
    return text ? JSON.parse(text) : null
  }
  const token = await new SignJWT({ email: OPERATOR })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuedAt()
    .setExpirationTime('30m')
    .sign(new TextEncoder().encode(SECRET))
  const operator = { authorization: `Bearer ${token}` }
  const companyId = (await ok('POST', '/api/superadmin/companies', { name: opts.exactName ? name : `${name} ${process.pid}` }, operator)).id as number
  if (opts.ventanilla !== false) await ok('PATCH', `/api/superadmin/companies/${companyId}`, { modules: { ventanilla: true } }, operator)
  key = (await ok('POST', `/api/superadmin/companies/${companyId}/api-keys`, { name: 'e2e' }, operator)).key
  return {
    server,
    companyId,
    key,
    ok,
    operator,
    async stop() {
      server.proc.kill('SIGTERM')
      await server.proc.exited
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

const AXE = readFileSync(join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8')

/** axe-core's violations on the page as it is now, one line each (rule: targets), for a readable failure. */
export async function axeViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol: the pages' CSP (script-src 'self') rightly refuses a script tag.
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE)
  return page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }).axe
    return (await axe.run()).violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)
  })
}
