/**
 * docs/examples/retrying-client.ts, the client docs/integrators.md shows, type-checked strictly against a client
 * generated from the live document and run against the service in its own process over HTTP, under a rate limit
 * it is made to hit.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { copyFileSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { testApp } from '../helpers'
import { startServer, type RunningServer } from '../server'

const ROOT = join(import.meta.dir, '..', '..')
const EXAMPLE = join(ROOT, 'docs/examples/retrying-client.ts')

async function run(cmd: string[], cwd = ROOT) {
  const proc = Bun.spawn(cmd, { cwd, stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { out, err, code }
}

let server: RunningServer | undefined
afterAll(() => {
  server?.proc.kill()
})

interface Sent {
  method: string
  path: string
  status: number
  key: string | null
  ifNoneMatch: string | null
}

describe('the retrying client of docs/integrators.md', () => {
  test('type-checks against the generated client, strict and without casts', async () => {
    const t = await testApp()
    const doc = (await t.request('GET', '/openapi.json')).body
    const dir = mkdtempSync(join(tmpdir(), 'fos-retrying-'))
    writeFileSync(join(dir, 'openapi.json'), JSON.stringify(doc))
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
    const generated = await run(['node', join(import.meta.dir, 'openapi-typescript.mjs'), join(dir, 'openapi.json'), join(dir, 'api.d.ts')])
    expect(generated.code).toBe(0)
    expect(readFileSync(EXAMPLE, 'utf8')).not.toMatch(/\bas\s+(any|unknown|[A-Z])|<any>|@ts-/)
    copyFileSync(EXAMPLE, join(dir, 'retrying-client.ts'))
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'ESNext', moduleResolution: 'bundler', lib: ['ES2022', 'DOM', 'DOM.Iterable'], types: [], strict: true, noEmit: true, skipLibCheck: true },
        files: ['retrying-client.ts'],
      }),
    )
    const checked = await run([join(ROOT, 'node_modules/.bin/tsc'), '-p', dir])
    if (checked.code !== 0) console.log(checked.out)
    expect(checked.code).toBe(0)
  }, 120_000)

  test('against the real server: waits out 429 and resends the same Idempotency-Key, serves 304s from its copy, walks every list', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'fos-retrying-server-'))
    // Refilled one request every 2 s: the write right after the drain finds the budget empty even on a busy machine.
    server = await startServer({ dataDir, databaseUrl: process.env.TEST_DATABASE_URL, env: { RATE_LIMIT_PER_MINUTE: '30' } })
    const base = server.base
    const token = await (await testApp()).superToken()
    const admin = (path: string, body: unknown) =>
      fetch(`${base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
    const company = await (await admin('/api/superadmin/companies', { name: `Cambio retry ${process.pid}` })).json()
    const { key } = await (await admin(`/api/superadmin/companies/${company.id}/api-keys`, { name: 'bot' })).json()

    const sent: Sent[] = []
    const recorded = async (request: Request) => {
      const response = await fetch(request)
      sent.push({
        method: request.method,
        path: new URL(request.url).pathname,
        status: response.status,
        key: request.headers.get('idempotency-key'),
        ifNoneMatch: request.headers.get('if-none-match'),
      })
      return response
    }
    const waits: number[] = []
    const { fosClient, allOperations, allClients, eventsSince } = await import(EXAMPLE)
    const api = fosClient(base, key, recorded, { sleep: (ms: number) => (waits.push(ms), Bun.sleep(ms)) })

    const type = await api.POST('/api/operation-types', { body: { name: 'Compra', kind: 'exchange' } })
    expect(type.response.status).toBe(201)
    const accounts: number[] = []
    for (const name of ['Ana', 'Beto', 'Caro']) {
      const made = await api.POST('/api/clients', { body: { name, type: 1, accounts: [{ currency_name: 'ARS' }] } })
      expect(made.response.status).toBe(201)
      accounts.push(made.data.accounts[0].id)
    }
    const operation = (i: number) =>
      api.POST('/api/operations', { body: { operation_type_id: type.data.id, transactions: [{ account_id: accounts[i % 3], amount: `${i + 1}.5` }] } })
    for (let i = 0; i < 4; i++) expect((await operation(i)).response.status).toBe(201)

    // Spend the credential's budget from outside the client, then write through it: refused, waited out, resent.
    for (let i = 0; i < 400; i++) {
      const res = await fetch(`${base}/api/employees`, { headers: { 'x-api-key': key } })
      await res.body?.cancel()
      if (res.status === 429) break
    }
    const before = sent.length
    const late = await operation(4)
    expect(late.response.status).toBe(201)
    const tries = sent.slice(before).filter((s) => s.method === 'POST' && s.path === '/api/operations')
    expect(tries[0].status).toBe(429)
    expect(tries.at(-1)!.status).toBe(201)
    expect(new Set(tries.map((s) => s.key)).size).toBe(1)
    expect(tries[0].key).toMatch(/^[0-9a-f-]{36}$/)
    expect(waits.length).toBeGreaterThanOrEqual(tries.length - 1)
    expect(waits.every((ms) => ms >= 1000)).toBe(true)

    // Nothing written twice: five operations, every one seen once across pages.
    const operations = []
    for await (const op of allOperations(api)) operations.push(op)
    expect(operations.map((o: { id: number }) => o.id).sort()).toEqual([...new Set(operations.map((o: { id: number }) => o.id))].sort())
    expect(operations).toHaveLength(5)
    expect(operations.map((o: { transactions: { amount: number }[] }) => o.transactions[0].amount).sort()).toEqual([1.5, 2.5, 3.5, 4.5, 5.5])

    const clients = []
    for await (const c of allClients(api, 2)) clients.push(c.name)
    expect(clients.sort()).toEqual(['Ana', 'Beto', 'Caro'])

    const events = []
    const feed = eventsSince(api)
    for (;;) {
      const next = await feed.next()
      if (next.done) {
        expect(next.value).toMatch(/^cur_/)
        break
      }
      events.push(next.value)
    }
    expect(events.filter((e: { type: string }) => e.type === 'operation.created')).toHaveLength(5)
    expect(new Set(events.map((e: { id: string }) => e.id)).size).toBe(events.length)

    // A second read of an unchanged answer: asked with its tag, answered 304, served from the copy.
    const first = await api.GET('/api/balances')
    const again = await api.GET('/api/balances')
    expect(again.response.status).toBe(200)
    expect(again.data).toEqual(first.data)
    const reads = sent.filter((s) => s.path === '/api/balances' && s.status !== 429)
    expect(reads.at(-1)).toMatchObject({ status: 304, ifNoneMatch: expect.stringMatching(/^"/) })
  }, 180_000)
})
