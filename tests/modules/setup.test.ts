import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { buildTestApp, onPostgres, type TestApp } from '../helpers'
import { freshDatabase } from '../fresh'
import { startServer } from '../server'
import { ensureKioskBuilt } from '../kiosk/browser'
import { newSetupLink } from '../../server/modules/setup/service'

const pg = onPostgres() ? describe : describe.skip

/** An app on a database with no company yet, and the setup token a start would have printed. */
async function firstRun(): Promise<{ t: TestApp; token: string; line: string }> {
  const t = await buildTestApp({ databaseUrl: await freshDatabase() })
  const line = (await newSetupLink(t.ctx.db, t.ctx.config.publicBaseUrl, t.ctx.clock()))!
  const token = /#(.+)$/.exec(line)![1]
  return { t, token, line }
}

const ORIGIN = { origin: 'http://fos.test' }
const SETUP = (token: string, name = 'Cambios del Sur') => ({
  token,
  company: { name, timezone: 'America/Argentina/Cordoba', modules: { ventanilla: true } },
  owner: { email: 'Duena@Sur.test', name: 'Marta Gómez', password: 'una clave muy segura' },
})
const count = async (t: TestApp, table: 'companies' | 'employees' | 'employee_sessions' | 'setup_tokens') =>
  Number((await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from ${sql.identifier(table)}`))[0].n)
const cookieOf = (headers: Headers) => /fos_session=([^;]+)/.exec(headers.get('set-cookie') ?? '')?.[1]

beforeAll(() => ensureKioskBuilt())

pg('first run: setup link, page and POST /api/setup', () => {
  test('the link names PUBLIC_BASE_URL/setup with a token kept only as its digest', async () => {
    const { t, token, line } = await firstRun()
    expect(line).toMatch(/^Set up this service: http:\/\/fos\.test\/setup#[A-Za-z0-9_-]{43}$/)
    const stored = await t.ctx.database.rows<{ token_hash: string }>(sql`select token_hash from setup_tokens`)
    expect(stored).toHaveLength(1)
    expect(stored[0].token_hash).not.toContain(token)
    const page = await t.app.handle(new Request('http://fos.test/setup'))
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('Configurar el servicio')
  })

  test('a wrong or expired token is 401 and nothing is written; the right one makes company, owner and session', async () => {
    const { t, token } = await firstRun()
    const wrong = await t.request('POST', '/api/setup', { body: SETUP('x'.repeat(43)), headers: ORIGIN })
    expect(wrong.status).toBe(401)
    expect(wrong.body.code).toBe('UNAUTHORIZED')
    t.travel(24 * 60 * 60 * 1000 + 1000)
    const expired = await t.request('POST', '/api/setup', { body: SETUP(token), headers: ORIGIN })
    t.travel(0)
    expect(expired.status).toBe(401)
    expect(expired.body.error).toContain('expired')
    const badZone = await t.request('POST', '/api/setup', { body: { ...SETUP(token), company: { name: 'X', timezone: 'Mars/Olympus' } }, headers: ORIGIN })
    expect(badZone.status).toBe(400)
    expect(badZone.body.details).toEqual([{ field: 'company.timezone', message: expect.stringContaining('IANA') }])
    const shortPassword = await t.request('POST', '/api/setup', { body: { ...SETUP(token), owner: { ...SETUP(token).owner, password: 'corta' } }, headers: ORIGIN })
    expect(shortPassword.status).toBe(400)
    expect(await count(t, 'companies')).toBe(0)
    expect(await count(t, 'employees')).toBe(0)

    const done = await t.request('POST', '/api/setup', { body: SETUP(token), headers: ORIGIN })
    expect(done.status).toBe(201)
    expect(done.body).toEqual({
      company: { id: expect.any(Number), name: 'Cambios del Sur', timezone: 'America/Argentina/Cordoba', modules: { mesas: false, ventanilla: true } },
      employee: { id: expect.any(Number), email: 'duena@sur.test', name: 'Marta Gómez', permissions: ['company.admin'], client_ids: [] },
    })
    const cookie = cookieOf(done.headers)!
    expect(done.headers.get('set-cookie')).toContain('HttpOnly')
    // The owner is signed in, and acts as the company key.
    const current = await t.request('GET', '/api/sessions/current', { headers: { cookie: `fos_session=${cookie}` } })
    expect(current.body.employee.email).toBe('duena@sur.test')
    const key = await t.request('POST', '/api/api-keys', { headers: { cookie: `fos_session=${cookie}`, ...ORIGIN }, body: { name: 'integración' } })
    expect(key.status).toBe(201)
    const signIn = await t.request('POST', '/api/sessions', { body: { company_id: done.body.company.id, email: 'duena@sur.test', password: 'una clave muy segura' } })
    expect(signIn.status).toBe(201)
    // The trail names the owner and the way in.
    const audit = await t.ctx.database.rows<{ entity: string; actor_email: string; channel: string }>(
      sql`select entity, actor_email, channel from audit_logs where entity in ('companies', 'employees') order by id`,
    )
    expect(audit).toEqual([
      { entity: 'companies', actor_email: 'duena@sur.test', channel: 'setup' },
      { entity: 'employees', actor_email: 'duena@sur.test', channel: 'setup' },
    ])
  })

  test('once a company exists: /setup and POST /api/setup are 404, a reused token too, and no link is made', async () => {
    const { t, token } = await firstRun()
    expect((await t.request('POST', '/api/setup', { body: SETUP(token), headers: ORIGIN })).status).toBe(201)
    expect(await count(t, 'setup_tokens')).toBe(0)
    const again = await t.request('POST', '/api/setup', { body: SETUP(token, 'Otra'), headers: ORIGIN })
    expect(again.status).toBe(404)
    expect(again.body.code).toBe('NOT_FOUND')
    // Whatever the body: the route is as absent as its page.
    expect((await t.request('POST', '/api/setup', { body: { nonsense: true }, headers: ORIGIN })).status).toBe(404)
    // An old or used link still opens a page, in Spanish, that says what to do instead.
    const used = await t.app.handle(new Request('http://fos.test/setup'))
    expect(used.status).toBe(404)
    expect(used.headers.get('content-type')).toBe('text/html; charset=utf-8')
    const page = await used.text()
    expect(page).toContain('<html lang="es-AR">')
    expect(page).toContain('Este servicio ya está configurado')
    expect(page).toContain('href="/manage"')
    expect(await newSetupLink(t.ctx.db, t.ctx.config.publicBaseUrl, t.ctx.clock())).toBeNull()
    expect(await count(t, 'setup_tokens')).toBe(0)
    expect(await count(t, 'companies')).toBe(1)
  })

  test('another origin may not plant an owner session', async () => {
    const { t, token } = await firstRun()
    const res = await t.request('POST', '/api/setup', { body: SETUP(token), headers: { origin: 'https://evil.test' } })
    expect(res.status).toBe(403)
    expect(await count(t, 'companies')).toBe(0)
  })

  test('starter: true makes exactly the ready start of §18, audited as the owner and announced; without it, no records', async () => {
    const { t, token } = await firstRun()
    const done = await t.request('POST', '/api/setup', { body: { ...SETUP(token), starter: true }, headers: ORIGIN })
    expect(done.status).toBe(201)
    expect(Object.keys(done.body).sort()).toEqual(['company', 'employee'])
    const session = { cookie: `fos_session=${cookieOf(done.headers)}` }
    const clients = await t.request('GET', '/api/clients', { headers: session })
    expect(clients.body.count).toBe(1)
    const [caja] = clients.body.data
    expect(caja).toMatchObject({ name: 'Caja principal', type: 0, description: '', client_tags: [] })
    expect(caja.accounts.map((a: { name: string; currency_name: string; balance: number }) => [a.name, a.currency_name, a.balance])).toEqual([
      ['ARS', 'ARS', 0],
      ['USD', 'USD', 0],
      ['EUR', 'EUR', 0],
      ['BRL', 'BRL', 0],
    ])
    const opTypes = await t.request('GET', '/api/operation-types', { headers: session })
    expect(opTypes.body.data.map((o: { name: string; kind: string }) => [o.name, o.kind])).toEqual([
      ['Compra de divisas', 'exchange'],
      ['Venta de divisas', 'exchange'],
      ['Ingreso', 'up_down'],
      ['Egreso', 'up_down'],
      ['Ajuste de caja', 'other'],
    ])
    const txTypes = await t.request('GET', '/api/transaction-types', { headers: session })
    expect(txTypes.body.data.map((o: { name: string; is_commission: boolean }) => [o.name, o.is_commission])).toEqual([
      ['Capital', false],
      ['Comisión', true],
    ])
    expect(await count(t, 'companies')).toBe(1)
    const audit = await t.ctx.database.rows<{ entity: string; n: number; actors: string[]; channels: string[] }>(
      sql`select entity, count(*)::int as n, array_agg(distinct actor_email) as actors, array_agg(distinct channel) as channels
          from audit_logs group by entity order by entity`,
    )
    expect(audit).toEqual([
      { entity: 'accounts', n: 4, actors: ['duena@sur.test'], channels: ['setup'] },
      { entity: 'clients', n: 1, actors: ['duena@sur.test'], channels: ['setup'] },
      { entity: 'companies', n: 1, actors: ['duena@sur.test'], channels: ['setup'] },
      { entity: 'employee_sessions', n: 1, actors: ['duena@sur.test'], channels: ['setup'] },
      { entity: 'employees', n: 1, actors: ['duena@sur.test'], channels: ['setup'] },
      { entity: 'operation_types', n: 5, actors: ['duena@sur.test'], channels: ['setup'] },
      { entity: 'transaction_types', n: 2, actors: ['duena@sur.test'], channels: ['setup'] },
    ])
    const events = await t.ctx.database.rows<{ type: string; object_id: number }>(sql`select type, object_id from events order by id`)
    expect(events).toEqual([
      { type: 'client.created', object_id: caja.id },
      ...caja.accounts.map((a: { id: number }) => ({ type: 'account.created', object_id: a.id })),
    ])

    const plain = await firstRun()
    const bare = await plain.t.request('POST', '/api/setup', { body: SETUP(plain.token), headers: ORIGIN })
    expect(bare.status).toBe(201)
    const bareSession = { cookie: `fos_session=${cookieOf(bare.headers)}` }
    expect((await plain.t.request('GET', '/api/clients', { headers: bareSession })).body).toEqual({ data: [], count: 0 })
    expect((await plain.t.request('GET', '/api/operation-types', { headers: bareSession })).body).toEqual({ data: [] })
    expect((await plain.t.request('GET', '/api/transaction-types', { headers: bareSession })).body).toEqual({ data: [] })
    const notBoolean = await firstRun()
    const wrong = await notBoolean.t.request('POST', '/api/setup', { body: { ...SETUP(notBoolean.token), starter: 'sí' }, headers: ORIGIN })
    expect(wrong.status).toBe(400)
    expect(await count(notBoolean.t, 'companies')).toBe(0)
  })

  test('two setups racing: exactly one wins, the others are 404, one company', async () => {
    const { t, token } = await firstRun()
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => t.request('POST', '/api/setup', { body: { ...SETUP(token, `Empresa ${i}`), owner: { ...SETUP(token).owner, email: `o${i}@sur.test` } }, headers: ORIGIN })),
    )
    const statuses = answers.map((a) => a.status).sort()
    expect(statuses).toEqual([201, 404, 404, 404, 404, 404])
    expect(await count(t, 'companies')).toBe(1)
    expect(await count(t, 'employees')).toBe(1)
    expect(await count(t, 'employee_sessions')).toBe(1)
  })
})

pg('first run: the start prints the link', () => {
  const dirs: string[] = []
  afterAll(async () => {
    const { rmSync } = await import('node:fs')
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  })

  async function start(databaseUrl: string) {
    const { mkdtempSync } = await import('node:fs')
    const { tmpdir } = await import('node:os')
    const { join } = await import('node:path')
    const dataDir = mkdtempSync(join(tmpdir(), 'fos-setup-'))
    dirs.push(dataDir)
    const server = await startServer({ dataDir, databaseUrl, stdout: 'pipe' })
    return server
  }

  /** Lines the server printed up to its "listening" line (the link comes before it), then stops it. */
  async function linesOf(server: Awaited<ReturnType<typeof start>>) {
    const reader = (server.proc.stdout as ReadableStream<Uint8Array>).getReader()
    const decoder = new TextDecoder()
    let text = ''
    const deadline = Date.now() + 30_000
    while (!text.split('\n').some((l) => l.includes('"msg":"listening"')) && Date.now() < deadline) {
      const { value, done } = await reader.read()
      if (done) break
      text += decoder.decode(value, { stream: true })
    }
    reader.releaseLock()
    server.proc.kill('SIGTERM')
    await server.proc.exited
    return text.split('\n')
  }

  test('every start without a company prints a fresh link; after setup, nothing', async () => {
    const url = await freshDatabase()
    const first = await start(url)
    const firstLines = await linesOf(first)
    const links = (lines: string[]) => lines.filter((l) => l.startsWith('Set up this service: '))
    expect(links(firstLines)).toEqual([expect.stringMatching(new RegExp(`^Set up this service: ${first.base.replace(/\./g, '\\.')}/setup#[A-Za-z0-9_-]{43}$`))])
    expect(firstLines.some((l) => l.startsWith('{') && JSON.parse(l).msg === links(firstLines)[0])).toBe(true)

    const second = await start(url)
    const token = links(await linesOf(second))[0]?.split('#')[1]
    expect(token).toBeDefined()
    expect(token).not.toBe(links(firstLines)[0].split('#')[1])

    const third = await start(url)
    const made = await fetch(`${third.base}/api/setup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: third.base },
      body: JSON.stringify(SETUP(token)),
    })
    expect(made.status).toBe(201)
    await linesOf(third)
    const fourth = await start(url)
    expect((await fetch(`${fourth.base}/setup`)).status).toBe(404)
    expect(links(await linesOf(fourth))).toEqual([])
  }, 240_000)
})
