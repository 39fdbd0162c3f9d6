/**
 * A real Prometheus (Debian's /usr/bin/prometheus, started here on a free port with a temporary configuration and
 * storage, never as a system service) scrapes a real server of two processes (`PROCESSES=2`), each on its own
 * loopback METRICS_PORT; after a known workload through the shared main port, PromQL over Prometheus's HTTP API
 * gives the exact counts summed over both processes. The alert rules pass `promtool check rules` and evaluate, and
 * every query of the Grafana dashboard runs and names only series the service exports.
 *
 * Where prometheus is not installed these tests say so in their names; under CI (.ci/run installs it) they fail.
 */
import { describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { SignJWT } from 'jose'
import { onPostgres, SUPERADMIN_EMAIL, SUPERADMIN_SECRET } from '../helpers'
import { freePort, startServer } from '../server'
import { jsonClient } from '../json-client'

const ROOT = join(import.meta.dir, '..', '..')
const PROMETHEUS = '/usr/bin/prometheus'
const PROMTOOL = '/usr/bin/promtool'
const RULES = join(ROOT, 'docs', 'prometheus-alerts.yml')
const DASHBOARD = join(ROOT, 'docs', 'grafana-dashboard.json')
const missing = [PROMETHEUS, PROMTOOL].filter((f) => !existsSync(f))
const inCi = process.env.CI === 'true'

/** Two adjacent free ports, for METRICS_PORT and METRICS_PORT + 1. */
function adjacentFreePorts(): number {
  for (;;) {
    const port = freePort()
    if (port >= 65535) continue
    try {
      Bun.listen({ hostname: '127.0.0.1', port: port + 1, socket: { data() {} } }).stop(true)
      return port
    } catch {
      // Taken: pick another pair.
    }
  }
}

/** Every series name a PromQL expression names (functions and keywords are not among the service's prefixes). */
const seriesNames = (expr: string) => [...new Set(expr.match(/\b(fos|process|nodejs)_[a-z_0-9]+/g) ?? [])]

/** The dashboard's queries as Prometheus would get them from Grafana: its variables given values. */
function dashboardQueries(): string[] {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: { targets?: { expr: string }[] }[] }
  return dashboard.panels.flatMap((p) => p.targets ?? []).map((t) => t.expr.replaceAll('$__rate_interval', '1m').replaceAll('$instance', '.*'))
}

function ruleExpressions(): string[] {
  return [...readFileSync(RULES, 'utf8').matchAll(/expr: (?:>-\n((?: {10}.*\n)+)|(.*)\n)/g)].map((m) => (m[1] ?? m[2]).replace(/\s+/g, ' ').trim())
}

const named = (name: string) =>
  missing.length === 0 ? name : `${name} [needs ${missing.join(' and ')}: not installed (Debian: apt-get install prometheus)]`

/** Missing tools: a named skip on a workstation, a failure under CI, never a silent pass. */
function withPrometheus(name: string, fn: () => Promise<void>, timeout: number, needsPostgres = false) {
  if (missing.length && inCi) return test(named(name), () => void expect(missing).toEqual([]))
  if (missing.length) return test.skip(named(name), fn)
  if (needsPostgres && !onPostgres()) return test.skip(`${name} [needs Postgres]`, fn)
  return test(name, fn, timeout)
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const got = await probe().catch(() => undefined)
    if (got !== undefined) return got
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`)
    await Bun.sleep(200)
  }
}

describe('Prometheus', () => {
  withPrometheus(
    'promtool check rules passes on docs/prometheus-alerts.yml',
    async () => {
      const proc = Bun.spawn([PROMTOOL, 'check', 'rules', RULES], { stdout: 'pipe', stderr: 'pipe' })
      const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
      if (code !== 0) console.log(out, err)
      expect(code).toBe(0)
      expect(out).toContain(`SUCCESS: ${ruleExpressions().length} rules found`)
    },
    30_000,
  )

  withPrometheus(
    'scrapes both processes of PROCESSES=2; PromQL gives the known workload exactly; the rules and the dashboard run',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'fos-prometheus-'))
      const metricsPort = adjacentFreePorts()
      const promPort = freePort()
      let prometheus: Subprocess | undefined
      const server = await startServer({
        dataDir: join(dir, 'server'),
        databaseUrl: process.env.TEST_DATABASE_URL,
        env: { PROCESSES: '2', METRICS_PORT: String(metricsPort), DB_POOL_MAX: '4' },
      })
      try {
        // The copy listens a moment after the first process answers.
        for (const port of [metricsPort, metricsPort + 1])
          await until(`metrics on ${port}`, async () => ((await fetch(`http://127.0.0.1:${port}/metrics`)).status === 200 ? true : undefined))
        // Loopback only, and not on the shared main port.
        expect((await fetch(`${server.base}/metrics`)).status).toBe(404)

        writeFileSync(
          join(dir, 'prometheus.yml'),
          [
            'global:',
            '  scrape_interval: 1s',
            '  evaluation_interval: 1s',
            'rule_files:',
            `  - ${RULES}`,
            'scrape_configs:',
            '  - job_name: fos',
            '    static_configs:',
            `      - targets: ['127.0.0.1:${metricsPort}', '127.0.0.1:${metricsPort + 1}']`,
            '',
          ].join('\n'),
        )
        prometheus = Bun.spawn(
          [PROMETHEUS, `--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${promPort}`, '--log.level=warn'],
          { stdout: 'ignore', stderr: Bun.file(join(dir, 'prometheus.log')) },
        )
        const api = `http://127.0.0.1:${promPort}/api/v1`
        const query = async (expr: string) => {
          const res = (await (await fetch(`${api}/query?query=${encodeURIComponent(expr)}`)).json()) as { status: string; error?: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } }
          if (res.status !== 'success') throw new Error(`${expr}: ${res.error}`)
          return res.data.result
        }
        const scalar = async (expr: string) => {
          const [first] = await query(expr)
          return first ? Number(first.value[1]) : undefined
        }
        await until('both targets up', async () => ((await scalar('count(up{job="fos"} == 1)')) === 2 ? true : undefined))

        // The known workload, through the main port the two processes share.
        const call = jsonClient(server.base)
        const jwt = await new SignJWT({ email: SUPERADMIN_EMAIL })
          .setProtectedHeader({ alg: 'HS256' })
          .setIssuedAt()
          .setExpirationTime('5m')
          .sign(new TextEncoder().encode(SUPERADMIN_SECRET))
        const company = await call('POST', '/api/superadmin/companies', { bearer: jwt, body: { name: `Prometheus ${process.pid}` } })
        expect(company.status).toBe(201)
        const key = (await call('POST', `/api/superadmin/companies/${company.body.id}/api-keys`, { bearer: jwt, body: { name: 'k' } })).body.key as string
        for (let i = 0; i < 7; i++) expect((await call('POST', '/api/clients', { key, body: { name: `Cliente ${i}`, type: 1 } })).status).toBe(201)
        for (let i = 0; i < 5; i++) expect((await call('GET', '/api/clients/2147483647', { key })).status).toBe(404)
        for (let i = 0; i < 3; i++) expect((await call('GET', '/api/tags', { key: 'fos_000000000000_nope' })).status).toBe(401)

        const exact = async (expr: string, want: number) => {
          const got = await until(`${expr} = ${want}`, async () => ((await scalar(expr)) === want ? want : undefined), 20_000)
          expect(got).toBe(want)
        }
        const count = (labels: string) => `sum(fos_http_request_duration_seconds_count{job="fos",${labels}})`
        await exact(count('route="/api/clients",method="POST",status_class="2xx"'), 7)
        await exact(count('route="/api/clients/:id",method="GET",status_class="4xx"'), 5)
        await exact(count('route="/api/tags",method="GET",status_class="4xx"'), 3)
        await exact(count('route="/api/superadmin/companies",method="POST",status_class="2xx"'), 1)
        // Every process is its own target, named by its port.
        expect((await query('fos_runtime_info')).map((r) => r.metric.instance).sort()).toEqual([`127.0.0.1:${metricsPort}`, `127.0.0.1:${metricsPort + 1}`])
        expect(await scalar('count(fos_ready == 1)')).toBe(2)
        expect(await scalar('max(fos_database_figures_up)')).toBe(1)

        // The dashboard's and the rules' queries run, and every series they name is exported.
        const exported = new Set(((await (await fetch(`${api}/label/__name__/values`)).json()) as { data: string[] }).data)
        const expressions = [...dashboardQueries(), ...ruleExpressions()]
        expect(expressions.length).toBeGreaterThan(20)
        for (const expr of expressions) await query(expr)
        expect(expressions.flatMap(seriesNames).filter((n) => !exported.has(n))).toEqual([])
        // The rules are loaded and evaluate without error; none fires on a healthy service.
        const rules = await until('rules evaluated', async () => {
          const res = (await (await fetch(`${api}/rules`)).json()) as { data: { groups: { rules: { name: string; health: string; state: string; lastEvaluation: string }[] }[] } }
          const all = res.data.groups.flatMap((g) => g.rules)
          return all.length > 0 && all.every((r) => !r.lastEvaluation.startsWith('0001')) ? all : undefined
        })
        expect(rules.map((r) => [r.name, r.health])).toEqual(ruleExpressions().map((_, i) => [rules[i].name, 'ok']))
        expect(rules.filter((r) => r.state === 'firing').map((r) => r.name)).toEqual([])
      } finally {
        prometheus?.kill('SIGTERM')
        await prometheus?.exited
        server.proc.kill('SIGTERM')
        await server.proc.exited
        rmSync(dir, { recursive: true, force: true })
      }
    },
    120_000,
    true,
  )
})
