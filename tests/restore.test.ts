/**
 * The restore drill (docs/operations.md): from the pg_auto_failover layout of scripts/cluster-ha.sh, whose WAL
 * pgBackRest archives continuously, a full backup, then a write A, a moment T, a write B; the backup plus the archive
 * restored up to T into a fresh instance holds A and not B, and the service started on it verifies the audit chain.
 */
import { describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { SignJWT } from 'jose'
import { SUPERADMIN_EMAIL, SUPERADMIN_SECRET } from './helpers'
import { freePort, serverEnv } from './server'
import { distinctPorts, startHaCluster } from '../scripts/cluster-ha'

const NEEDED = ['/usr/bin/pg_autoctl', '/usr/bin/pgbackrest', '/usr/lib/postgresql/15/bin/postgres', '/usr/sbin/haproxy']
const missing = NEEDED.filter((f) => !existsSync(f))

type Json = Record<string, any>
const ROOT = join(import.meta.dir, '..')

/** `bun server/main.ts` on `databaseUrl`, not waited for: the tests here start it before its database answers. */
function spawnServer(dataDir: string, port: number, databaseUrl: string) {
  return Bun.spawn([process.execPath, 'server/main.ts'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe', env: serverEnv(port, { dataDir, databaseUrl }) })
}

/** Polls /health until `want`; resolves to the last answer (status, code, Retry-After). */
async function health(base: string, want: number, ms: number) {
  const deadline = Date.now() + ms
  let last = { status: 0, code: '', retryAfter: null as string | null }
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${base}/health`)
      const body = (await res.json().catch(() => ({}))) as Json
      last = { status: res.status, code: body.code ?? body.status, retryAfter: res.headers.get('retry-after') }
      if (res.status === want) return last
    } catch {
      // Not listening yet.
    }
    await Bun.sleep(200)
  }
  return last
}

async function call(base: string, method: string, path: string, opts: { key?: string; bearer?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = {}
  if (opts.key) headers['x-api-key'] = opts.key
  if (opts.bearer) headers.authorization = `Bearer ${opts.bearer}`
  if (opts.body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(`${base}${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) })
  return { status: res.status, body: (await res.json().catch(() => ({}))) as Json }
}

describe('restore drill', () => {
  const name = 'pgBackRest: a point-in-time restore between two writes has the earlier, not the later, and a verified audit chain; a service on no primary waits with 503'
  if (missing.length) test.skip(`${name} [needs ${missing.join(', ')}: not installed (Debian: apt-get install postgresql-15-auto-failover pgbackrest haproxy)]`, () => {})
  else
    test(
      name,
      async () => {
        const cluster = await startHaCluster(
          { DB_POOL_MAX: '4', SUPERADMIN_JWT_SECRET: SUPERADMIN_SECRET, SUPERADMIN_EMAILS: SUPERADMIN_EMAIL, RATE_LIMIT_PER_MINUTE: '0', RATE_LIMIT_IP_PER_MINUTE: '0', S3_BUCKET: '' },
          1,
        )
        const dataDir = mkdtempSync(join(tmpdir(), 'fos-restore-'))
        const servers: ReturnType<typeof spawnServer>[] = []
        try {
          const base = cluster.base
          const jwt = await new SignJWT({ email: SUPERADMIN_EMAIL }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('10m').sign(new TextEncoder().encode(SUPERADMIN_SECRET))
          const company = await call(base, 'POST', '/api/superadmin/companies', { bearer: jwt, body: { name: 'Restore drill' } })
          expect(company.status).toBe(201)
          const key = (await call(base, 'POST', `/api/superadmin/companies/${company.body.id}/api-keys`, { bearer: jwt, body: { name: 'k' } })).body.key as string
          const type = await call(base, 'POST', '/api/operation-types', { key, body: { name: 'Cambio', kind: 'exchange' } })
          const caja = await call(base, 'POST', '/api/clients', { key, body: { name: 'Caja', type: 0, accounts: [{ currency_name: 'ARS' }] } })
          const cuenta = await call(base, 'POST', '/api/clients', { key, body: { name: 'Mayorista', type: 1, accounts: [{ currency_name: 'ARS' }] } })
          const accounts = [caja.body.accounts[0].id, cuenta.body.accounts[0].id]
          const operation = (amount: string) =>
            call(base, 'POST', '/api/operations', { key, body: { operation_type_id: type.body.id, transactions: [{ account_id: accounts[0], amount }, { account_id: accounts[1], amount: `-${amount}` }] } })

          // Audit verification reads from the standby (DATABASE_READ_URL) and says as of when.
          const before = Date.now()
          let standbyVerify: Json = {}
          for (let i = 0; i < 100 && standbyVerify.verified !== true; i++) {
            standbyVerify = (await call(base, 'GET', '/api/audit-logs/verify', { key })).body
            if (standbyVerify.verified !== true) await Bun.sleep(200)
          }
          expect(standbyVerify.verified).toBe(true)
          expect(Date.parse(standbyVerify.as_of)).toBeGreaterThan(before - 60_000)

          await cluster.control('backup')
          const a = await operation('111.11')
          expect(a.status).toBe(201)
          const live = postgres(cluster.databaseUrl.replace('read-write', 'primary'), { max: 1, onnotice: () => {} })
          let target: string
          try {
            // A commit of A is before T and B's after it, each by a clear margin.
            await Bun.sleep(1000)
            target = (await live<{ t: string }[]>`select now()::text as t`)[0].t
            await Bun.sleep(1000)
          } finally {
            await live.end({ timeout: 1 })
          }
          const b = await operation('222.22')
          expect(b.status).toBe(201)
          await cluster.control('archived')

          // A standby as the only host: the process stays up, refuses with 503 and says why in its log.
          const primary = await cluster.control('primary')
          const standbyPort = readFileSync(join(cluster.dir, `node-${3 - Number(primary)}.port`), 'utf8').trim()
          const [port, deadPort, serverPort, standbyServerPort] = distinctPorts(4)
          const onStandby = spawnServer(join(dataDir, 'standby'), standbyServerPort, `postgres://postgres@127.0.0.1:${standbyPort}/fos`)
          servers.push(onStandby)
          const refused = await health(`http://127.0.0.1:${standbyServerPort}`, 503, 60_000)
          expect(refused).toEqual({ status: 503, code: 'SERVICE_UNAVAILABLE', retryAfter: '1' })
          expect(onStandby.exitCode).toBeNull()

          // Every host down at the start: the same, until one answers (the restored instance, below).
          const server = spawnServer(join(dataDir, 'restored'), serverPort, `postgres://postgres@127.0.0.1:${deadPort},127.0.0.1:${port}/fos?target_session_attrs=read-write`)
          servers.push(server)
          const restoredBase = `http://127.0.0.1:${serverPort}`
          expect(await health(restoredBase, 503, 60_000)).toEqual({ status: 503, code: 'SERVICE_UNAVAILABLE', retryAfter: '1' })

          await cluster.control('restore', target, String(port))
          const restored = postgres(`postgres://postgres@127.0.0.1:${port}/fos`, { max: 1, onnotice: () => {} })
          try {
            const ids = (await restored<{ id: number }[]>`select id from operations where company_id = ${company.body.id}`).map((r) => Number(r.id))
            expect(ids).toContain(a.body.id)
            expect(ids).not.toContain(b.body.id)
          } finally {
            await restored.end({ timeout: 1 })
          }

          // The service that waited finds the restored instance by itself; the chain as it stood at T verifies there.
          expect((await health(restoredBase, 200, 60_000)).status).toBe(200)
          const verify = await call(restoredBase, 'GET', '/api/audit-logs/verify', { key })
          expect(verify.status).toBe(200)
          expect(verify.body.verified).toBe(true)
          expect(verify.body.rows).toBeGreaterThan(0)
        } finally {
          for (const p of servers) p.kill('SIGKILL')
          const logs = await Promise.all(servers.map(async (p) => (await new Response(p.stdout).text()) + (await new Response(p.stderr).text())))
          if (servers[0]) expect(logs[0]).toContain('only standbys answer')
          rmSync(dataDir, { recursive: true, force: true })
          await cluster.stop()
        }
      },
      240_000,
    )
})
