import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SignJWT } from 'jose'
import type { Subprocess } from 'bun'
import { startServer } from './server'

/**
 * The embedded default as a user meets it: `bun server/main.ts` with no DATABASE_URL and no S3, data under
 * DATA_DIR. Start, write, stop with SIGTERM, start again on the same directory, read the data back.
 */
const SECRET = 'embedded-test-superadmin-secret-0123'
const EMAIL = 'ops@fos.test'
const dataDir = mkdtempSync(join(tmpdir(), 'fos-embedded-'))
const running: Subprocess[] = []

afterAll(() => {
  for (const p of running) if (p.exitCode === null) p.kill('SIGKILL')
  rmSync(dataDir, { recursive: true, force: true })
})

/** No DATABASE_URL, no S3: the embedded default, on this test's own data directory. */
async function start(extra: Record<string, string> = {}) {
  const server = await startServer({
    dataDir,
    // The embedded default makes and keeps its own signing secret under DATA_DIR.
    env: { SUPERADMIN_JWT_SECRET: SECRET, SUPERADMIN_EMAILS: EMAIL, SIGNING_SECRET: '', ...extra },
  })
  running.push(server.proc)
  return { ...server, health: await (await fetch(`${server.base}/health`)).json() }
}

async function stop(proc: Subprocess) {
  proc.kill('SIGTERM')
  return proc.exited
}

const token = () =>
  new SignJWT({ email: EMAIL }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('5m').sign(new TextEncoder().encode(SECRET))

async function call(base: string, method: string, path: string, init: { key?: string; bearer?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = {}
  if (init.key) headers['x-api-key'] = init.key
  if (init.bearer) headers.authorization = `Bearer ${init.bearer}`
  if (init.body !== undefined) headers['content-type'] = 'application/json'
  const r = await fetch(`${base}${path}`, { method, headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) })
  return { status: r.status, body: (await r.json()) as any }
}

describe('embedded default', () => {
  test('starts without Postgres, keeps its data across a SIGTERM restart', async () => {
    const first = await start()
    expect(first.health).toEqual({ status: 'ok' })
    const bearer = await token()
    const company = await call(first.base, 'POST', '/api/superadmin/companies', { bearer, body: { name: 'Casa embebida' } })
    expect(company.status).toBe(201)
    const key = await call(first.base, 'POST', `/api/superadmin/companies/${company.body.id}/api-keys`, { bearer, body: { name: 'main' } })
    expect(key.status).toBe(201)
    const client = await call(first.base, 'POST', '/api/clients', {
      key: key.body.key,
      body: { name: 'Persistente', type: 0, accounts: [{ currency_name: 'USD' }] },
    })
    expect(client.status).toBe(201)
    expect(await stop(first.proc)).toBe(0)

    const second = await start()
    const list = await call(second.base, 'GET', '/api/clients', { key: key.body.key })
    expect(list.status).toBe(200)
    expect(list.body.count).toBe(1)
    expect(list.body.data[0]).toEqual(client.body)
    const trail = await call(second.base, 'GET', '/api/audit-logs?table=client', { key: key.body.key })
    expect(trail.body.data.map((e: any) => e.entity_id)).toEqual([client.body.id])
    expect(await stop(second.proc)).toBe(0)
  }, 180_000)

  test('an upload well over MAX_UPLOAD_BYTES is refused by the route with its 413 body, not by the bare listener limit', async () => {
    const server = await start({ MAX_UPLOAD_BYTES: String(1024 * 1024) })
    const bearer = await token()
    const company = await call(server.base, 'POST', '/api/superadmin/companies', { bearer, body: { name: 'Subidas' } })
    const key = (await call(server.base, 'POST', `/api/superadmin/companies/${company.body.id}/api-keys`, { bearer, body: { name: 'main' } })).body.key
    const type = await call(server.base, 'POST', '/api/operation-types', { key, body: { name: 'Gastos', kind: 'other' } })
    const caja = await call(server.base, 'POST', '/api/clients', { key, body: { name: 'Caja', type: 0, accounts: [{ currency_name: 'ARS' }] } })
    const op = await call(server.base, 'POST', '/api/operations', {
      key,
      body: { operation_type_id: type.body.id, transactions: [{ account_id: caja.body.accounts[0].id, amount: 1 }] },
    })
    const form = new FormData()
    form.append('file', new File([new Uint8Array(2.5 * 1024 * 1024)], 'grande.pdf', { type: 'application/pdf' }))
    const r = await fetch(`${server.base}/api/operations/${op.body.id}/attachments`, { method: 'POST', headers: { 'x-api-key': key }, body: form })
    expect(r.status).toBe(413)
    expect(await r.json()).toEqual({ error: expect.any(String), code: 'FILE_TOO_LARGE' })
    expect(await stop(server.proc)).toBe(0)
  }, 180_000)
})
