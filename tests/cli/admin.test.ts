import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { buildTestApp, onPostgres, type TestApp } from '../helpers'
import { freshDatabase } from '../fresh'
import { serverEnv, startServer } from '../server'

const ROOT = join(import.meta.dir, '..', '..')

/** `bun run admin …` as an operator types it, in its own process. */
async function admin(args: string[], env: Record<string, string>) {
  const base = serverEnv(0, { dataDir: env.DATA_DIR ?? join(tmpdir(), 'fos-cli-unused'), databaseUrl: env.DATABASE_URL })
  const proc = Bun.spawn([process.execPath, 'run', '--silent', 'admin', ...args], { cwd: ROOT, env: { ...base, ...env }, stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { out, err, code }
}

const pg = onPostgres() ? describe : describe.skip

pg('bun run admin on Postgres', () => {
  let url: string
  let sqlc: ReturnType<typeof postgres>
  let t: TestApp
  const env = () => ({ DATABASE_URL: url })
  afterAll(async () => {
    await sqlc?.end({ timeout: 1 })
  })

  test('bad arguments: usage, exit 2, and the database is not even opened', async () => {
    url = await freshDatabase()
    sqlc = postgres(url, { max: 1, onnotice: () => {} })
    for (const args of [
      [],
      ['company'],
      ['company', 'delete'],
      ['company', 'create'],
      ['company', 'create', '--name', '  '],
      ['company', 'create', '--name', 'X', '--modules', 'mesas,cafe'],
      ['company', 'create', '--name', 'X', '--timezone', 'Mars/Olympus'],
      ['company', 'create', '--name', 'X', '--colour', 'red'],
      ['company', 'create', '--name', 'X', 'extra'],
      ['company', 'create', '--name', 'X', '--starter=yes'],
      ['key', 'create', '1', '--name', 'k', '--starter'],
      ['company', 'modules', '1'],
      ['company', 'modules', 'abc', '--on', 'mesas'],
      ['company', 'modules', '1', '--on', 'mesas', '--off', 'mesas'],
      ['key', 'create', '0', '--name', 'k'],
      ['key', 'create', '1'],
      ['owner', 'create', '1', '--email', 'not-an-email', '--name', 'N'],
      ['owner', 'create', '1', '--name', 'N'],
      ['password', 'reset', '1', '--email', 'a@b.test', '--name', 'N'],
    ]) {
      const r = await admin(args, env())
      expect([args.join(' '), r.code]).toEqual([args.join(' '), 2])
      expect(r.err).toContain('Usage: npm run admin -- <command>')
      expect(r.err).toMatch(/^Error: \S/)
      expect(r.out).toBe('')
    }
    const [{ tables }] = await sqlc`select count(*)::int as tables from pg_tables where schemaname = 'public'`
    expect(tables).toBe(0)
  }, 120_000)

  test('company create prints the id and a working company key; the trail says cli', async () => {
    const r = await admin(['company', 'create', '--name', 'Cambios Norte', '--timezone', 'America/Montevideo', '--modules', 'ventanilla'], env())
    expect(r.code).toBe(0)
    const id = Number(/^company_id: (\d+)$/m.exec(r.out)![1])
    const key = /^Company key \(shown only now, keep it safe\): (fos_\S+)$/m.exec(r.out)![1]
    expect(r.out).toContain(`Company ${id} created: Cambios Norte (America/Montevideo; mesas off, ventanilla on)`)
    t = await buildTestApp({ databaseUrl: url })
    expect((await t.request('GET', '/api/ventanilla/services', { key })).status).toBe(200)
    expect((await t.request('GET', '/api/employees', { key })).status).toBe(200)
    const audit = await sqlc`select entity, channel, channel_detail from audit_logs where company_id = ${id} order by id`
    expect(audit.map((a) => [a.entity, a.channel, a.channel_detail.command])).toEqual([
      ['companies', 'cli', 'company create'],
      ['api_keys', 'cli', 'company create'],
    ])
    // A company exists: the first-run page is gone.
    expect((await t.request('POST', '/api/setup', { body: {} })).status).toBe(404)
  }, 120_000)

  test('company modules, key create, owner create, password reset', async () => {
    const [{ id }] = await sqlc`select id from companies order by id limit 1`
    const mods = await admin(['company', 'modules', String(id), '--on', 'mesas', '--off', 'ventanilla'], env())
    expect(mods.code).toBe(0)
    expect(mods.out.trim()).toBe(`Company ${id} modules: mesas on, ventanilla off`)
    const [flags] = await sqlc`select mesas_enabled, ventanilla_enabled from companies where id = ${id}`
    expect(flags).toEqual({ mesas_enabled: true, ventanilla_enabled: false })

    const k = await admin(['key', 'create', String(id), '--name', 'contabilidad'], env())
    expect(k.code).toBe(0)
    const key = /: (fos_\S+)$/m.exec(k.out)![1]
    expect((await t.request('GET', '/api/employees', { key })).status).toBe(200)

    const o = await admin(['owner', 'create', String(id), '--email', 'Jefa@Norte.test', '--name', 'Ana Jefa'], env())
    expect(o.code).toBe(0)
    const password = /^Password \(shown only now\): (\S+)$/m.exec(o.out)![1]
    expect(password.length).toBeGreaterThanOrEqual(20)
    const session = await t.request('POST', '/api/sessions', { body: { company_id: id, email: 'jefa@norte.test', password } })
    expect(session.status).toBe(201)
    expect(session.body.employee.permissions).toEqual(['company.admin'])
    const cookie = /fos_session=([^;]+)/.exec(session.headers.get('set-cookie')!)![1]
    const [hash] = await sqlc`select password_hash from employees where email = 'jefa@norte.test'`
    expect(hash.password_hash).not.toContain(password)

    const dup = await admin(['owner', 'create', String(id), '--email', 'jefa@norte.test', '--name', 'Otra'], env())
    expect(dup.code).toBe(1)
    expect(dup.err).toContain('nothing was changed')
    expect((await sqlc`select count(*)::int as n from employees where company_id = ${id}`)[0].n).toBe(1)

    const reset = await admin(['password', 'reset', String(id), '--email', 'JEFA@norte.test'], env())
    expect(reset.code).toBe(0)
    const fresh = /\(shown only now\): (\S+)$/m.exec(reset.out)![1]
    expect(fresh).not.toBe(password)
    expect((await t.request('GET', '/api/sessions/current', { headers: { cookie: `fos_session=${cookie}` } })).status).toBe(401)
    expect((await t.request('POST', '/api/sessions', { body: { company_id: id, email: 'jefa@norte.test', password } })).status).toBe(401)
    expect((await t.request('POST', '/api/sessions', { body: { company_id: id, email: 'jefa@norte.test', password: fresh } })).status).toBe(201)
    const trail = await sqlc`select entity, channel from audit_logs where company_id = ${id} and entity = 'employee_sessions' and action = 'update' and channel = 'cli'`
    expect(trail.length).toBeGreaterThan(0)
  }, 120_000)

  test('company create --starter: the ready start of §18, audited as cli and in the event feed', async () => {
    const r = await admin(['company', 'create', '--name', 'Cambios Listos', '--starter'], env())
    expect(r.err).toBe('')
    expect(r.code).toBe(0)
    const id = Number(/^company_id: (\d+)$/m.exec(r.out)![1])
    const key = /^Company key \(shown only now, keep it safe\): (fos_\S+)$/m.exec(r.out)![1]
    expect(r.out).toMatch(
      /^Starter set: caja "Caja principal" \(client \d+; ARS, USD, EUR, BRL\), operation types "Compra de divisas", "Venta de divisas", "Ingreso", "Egreso", "Ajuste de caja", transaction types "Capital", "Comisión"$/m,
    )
    const clients = (await t.request('GET', '/api/clients', { key })).body
    expect(clients.data.map((c: { name: string; type: number; accounts: { currency_name: string }[] }) => [c.name, c.type, c.accounts.map((a) => a.currency_name)])).toEqual([
      ['Caja principal', 0, ['ARS', 'USD', 'EUR', 'BRL']],
    ])
    expect((await t.request('GET', '/api/operation-types', { key })).body.data.map((o: { name: string }) => o.name)).toEqual([
      'Compra de divisas', 'Venta de divisas', 'Ingreso', 'Egreso', 'Ajuste de caja',
    ])
    expect((await t.request('GET', '/api/transaction-types', { key })).body.data.map((o: { name: string; is_commission: boolean }) => [o.name, o.is_commission])).toEqual([
      ['Capital', false],
      ['Comisión', true],
    ])
    const channels = await sqlc`select distinct channel from audit_logs where company_id = ${id}`
    expect(channels.map((c) => c.channel)).toEqual(['cli'])
    const feed = await t.request('GET', '/api/events', { key })
    expect(feed.body.data.map((e: { type: string }) => e.type)).toEqual(['client.created', 'account.created', 'account.created', 'account.created', 'account.created'])
    // Without the flag a company has no records (§1).
    const bare = await admin(['company', 'create', '--name', 'Cambios Vacíos'], env())
    const bareKey = /^Company key \(shown only now, keep it safe\): (fos_\S+)$/m.exec(bare.out)![1]
    expect(bare.out).not.toContain('Starter set')
    expect((await t.request('GET', '/api/clients', { key: bareKey })).body.count).toBe(0)
  }, 120_000)

  test('an unknown company or employee: exit 1, nothing written', async () => {
    const before = (await sqlc`select count(*)::int as n from audit_logs`)[0].n
    for (const args of [
      ['company', 'modules', '999999', '--on', 'mesas'],
      ['key', 'create', '999999', '--name', 'x'],
      ['owner', 'create', '999999', '--email', 'x@y.test', '--name', 'X'],
      ['password', 'reset', '1', '--email', 'nadie@norte.test'],
    ]) {
      const r = await admin(args, env())
      expect([args.join(' '), r.code]).toEqual([args.join(' '), 1])
      expect(r.err).toMatch(/not found; nothing was changed/)
    }
    expect((await sqlc`select count(*)::int as n from audit_logs`)[0].n).toBe(before)
  }, 120_000)
})

describe('bun run admin on the embedded database', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'fos-cli-pglite-'))
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

  test('while the server holds it: a clear refusal; once it stops: the command runs', async () => {
    const server = await startServer({ dataDir, stdout: 'ignore' })
    try {
      const busy = await admin(['company', 'create', '--name', 'Embebida'], { DATA_DIR: dataDir })
      expect(busy.code).toBe(1)
      expect(busy.err).toContain(`open in another process (pid ${server.proc.pid})`)
      expect(busy.err).toContain('Stop that process')
      expect(busy.out).toBe('')
    } finally {
      server.proc.kill('SIGTERM')
      await server.proc.exited
    }
    const made = await admin(['company', 'create', '--name', 'Embebida'], { DATA_DIR: dataDir })
    expect(made.err).toBe('')
    expect(made.code).toBe(0)
    const key = /: (fos_\S+)$/m.exec(made.out)![1]
    const again = await startServer({ dataDir, stdout: 'ignore' })
    try {
      expect((await fetch(`${again.base}/api/employees`, { headers: { 'x-api-key': key } })).status).toBe(200)
    } finally {
      again.proc.kill('SIGTERM')
      await again.proc.exited
    }
  }, 240_000)
})

/**
 * `npm run admin -- …` exactly as the README types it, with a PATH of node, npm and sh alone (a directory of links to
 * them): what a machine with a fresh clone has after `npm ci`, no runtime installed. npm puts node_modules/.bin (the
 * project's own bun) on the script's PATH.
 */
const FRESH_PATH = mkdtempSync(join(tmpdir(), 'fos-cli-path-'))
for (const tool of ['npm', 'node', 'sh']) symlinkSync(Bun.which(tool)!, join(FRESH_PATH, tool))
afterAll(() => rmSync(FRESH_PATH, { recursive: true, force: true }))

async function npmAdmin(args: string[], dataDir: string) {
  const base = serverEnv(0, { dataDir })
  const proc = Bun.spawn(['npm', 'run', 'admin', '--', ...args], { cwd: ROOT, env: { ...base, PATH: FRESH_PATH }, stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { out, err, code }
}

describe('npm run admin as the README types it', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'fos-cli-npm-'))
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

  test('--help prints the usage with exit 0; a wrong command is still exit 2', async () => {
    for (const flag of ['--help', '-h', 'help']) {
      const help = await npmAdmin([flag], dataDir)
      expect([flag, help.code]).toEqual([flag, 0])
      expect(help.out).toContain('Usage: npm run admin -- <command>')
      expect(help.out).toContain('owner create COMPANY_ID --email EMAIL --name NAME')
    }
    const wrong = await npmAdmin(['company'], dataDir)
    expect(wrong.code).toBe(2)
    expect(wrong.err).toContain('Error: unknown command "company"')
    expect(wrong.err).toContain('Usage: npm run admin -- <command>')
  }, 120_000)

  test("the README's example with the id the previous command printed: the owner lands in that company", async () => {
    // A company made earlier, so the new one is not number 1: the example must use the number printed, not 1.
    expect((await npmAdmin(['company', 'create', '--name', 'Otra casa'], dataDir)).code).toBe(0)
    const made = await npmAdmin(['company', 'create', '--name', 'Cambios del Sur', '--modules', 'ventanilla'], dataDir)
    expect(made.code).toBe(0)
    const id = /^company_id: (\d+)$/m.exec(made.out)![1]
    expect(id).toBe('2')
    const owner = await npmAdmin(['owner', 'create', id, '--email', 'marta@sur.example', '--name', 'Marta Gómez'], dataDir)
    expect(owner.code).toBe(0)
    expect(owner.out).toMatch(new RegExp(`^Owner \\d+ created: Marta Gómez <marta@sur.example> in company ${id}$`, 'm'))
    const reset = await npmAdmin(['password', 'reset', id, '--email', 'marta@sur.example'], dataDir)
    expect(reset.code).toBe(0)
    expect(reset.out).toContain(`New password for marta@sur.example in company ${id} (shown only now): `)
  }, 240_000)
})
