/**
 * The per-address limits behind the balancer, as scripts/cluster.sh deploys it (HAProxy with `option forwardfor` and
 * health checks of /health every 300 ms, TRUST_PROXY=true, PgBouncer, one server process), with clients on loopback
 * addresses of their own (127.0.0.x):
 *
 * - 260 sign-in bodies trickled from one address take at most their share of that address's requests in progress;
 *   the balancer's checks and another company's requests from elsewhere are never refused, so HAProxy never takes
 *   the process out of rotation;
 * - one company's 60 event streams (3 kiosk tokens) take at most their share of their own address's streams; another
 *   company's kiosk and console streams, from another address or from the very same one, open.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { request as httpRequest, type ClientRequest } from 'node:http'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SignJWT } from 'jose'
import { onPostgres, SUPERADMIN_EMAIL, SUPERADMIN_SECRET } from './helpers'
import { startCluster, type RunningCluster } from '../scripts/cluster'
import { distinctPorts } from '../scripts/cluster-ha'
import { jsonClient } from './json-client'
import { slowSignIn } from '../bench/lib/slow'

const binary = (name: string) => ['/usr/sbin', '/usr/bin', '/usr/local/sbin', '/usr/local/bin'].some((d) => existsSync(join(d, name)))
const missing = ['haproxy', 'pgbouncer'].filter((b) => !binary(b))

/** MAX_REQUESTS_PER_ADDRESS and SSE_MAX_STREAMS_PER_ADDRESS as deployed (their defaults). */
const PER_ADDRESS = 256
const STREAMS_PER_ADDRESS = 50

const status = (text: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0)

interface Stream {
  status: Promise<number>
  stop(): void
}

/** An event stream from `localAddress`: its status once the head arrives; kept open until stopped. */
function stream(base: string, path: string, localAddress: string, headers: Record<string, string> = {}): Stream {
  const url = new URL(path, base)
  let req: ClientRequest
  const status = new Promise<number>((done) => {
    req = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, localAddress, agent: false, headers: { accept: 'text/event-stream', ...headers } }, (res) => {
      res.on('data', () => {})
      res.on('error', () => {})
      done(res.statusCode ?? 0)
    })
    req.on('error', () => done(0))
    req.end()
  })
  return { status, stop: () => req.destroy() }
}

/** `GET path` with a key, from `localAddress`. */
function get(base: string, path: string, key: string, localAddress: string): Promise<number> {
  const url = new URL(path, base)
  return new Promise((done) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, localAddress, agent: false, headers: { 'x-api-key': key } }, (res) => {
      res.resume()
      res.on('end', () => done(res.statusCode ?? 0))
    })
    req.on('error', () => done(0))
    req.end()
  })
}

async function companyWithScreens(cluster: RunningCluster, jwt: string, name: string, screens: number) {
  const api = jsonClient(cluster.base)
  const company = await api('POST', '/api/superadmin/companies', { bearer: jwt, body: { name } })
  expect(company.status).toBe(201)
  expect((await api('PATCH', `/api/superadmin/companies/${company.body.id}`, { bearer: jwt, body: { modules: { ventanilla: true } } })).status).toBe(200)
  const key = (await api('POST', `/api/superadmin/companies/${company.body.id}/api-keys`, { bearer: jwt, body: { name: 'k' } })).body.key as string
  const tokens: string[] = []
  for (let i = 0; i < screens; i++) {
    const made = await api('POST', '/api/ventanilla/tokens', { key, body: { name: `TV ${i}` } })
    expect(made.status).toBe(201)
    tokens.push(made.body.token)
  }
  return { id: company.body.id as number, key, tokens }
}

let cluster: RunningCluster
let dir: string
let a: Awaited<ReturnType<typeof companyWithScreens>>
let b: Awaited<ReturnType<typeof companyWithScreens>>
/** What HAProxy said since the set-up (it starts before the process answers, and says so). */
let seen = 0
const log = () => readFileSync(join(dir, 'haproxy.log'), 'utf8').slice(seen)

async function setUp() {
  dir = mkdtempSync(join(tmpdir(), 'fos-balancer-test-'))
  cluster = await startCluster({
    databaseUrl: process.env.TEST_DATABASE_URL!,
    dir,
    ports: distinctPorts(3),
    env: {
      CLUSTER_POOL_SIZE: '6',
      DB_POOL_MAX: '4',
      SUPERADMIN_JWT_SECRET: SUPERADMIN_SECRET,
      SUPERADMIN_EMAILS: SUPERADMIN_EMAIL,
      RATE_LIMIT_PER_MINUTE: '6000',
      RATE_LIMIT_IP_PER_MINUTE: '600',
      MAX_REQUESTS_PER_ADDRESS: String(PER_ADDRESS),
      SSE_MAX_STREAMS_PER_ADDRESS: String(STREAMS_PER_ADDRESS),
      S3_BUCKET: '',
    },
  })
  const jwt = await new SignJWT({ email: SUPERADMIN_EMAIL })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(new TextEncoder().encode(SUPERADMIN_SECRET))
  a = await companyWithScreens(cluster, jwt, `Balanced A ${process.pid}`, 3)
  b = await companyWithScreens(cluster, jwt, `Balanced B ${process.pid}`, 1)
  seen = readFileSync(join(dir, 'haproxy.log'), 'utf8').length
}

const counted = (statuses: number[]) => JSON.stringify(statuses.reduce<Record<number, number>>((m, s) => ((m[s] = (m[s] ?? 0) + 1), m), {}))

async function slowSignIns() {
  const port = Number(new URL(cluster.base).port)
  // 260 slow anonymous sign-ins from one address, while another company works from another.
  const slow = Array.from({ length: 260 }, () => slowSignIn(port, '127.0.0.2'))
  const tags: number[] = []
  const started = Date.now()
  try {
    while (Date.now() - started < 4_000) {
      tags.push(await get(cluster.base, '/api/tags', b.key, '127.0.0.3'))
      await Bun.sleep(150)
    }
  } finally {
    slow.forEach((s) => s.stop())
  }
  const answered = slow.map((s) => status(s.text()))
  console.log(`[balancer] slow sign-ins: ${counted(answered)} (0: still arriving); the other company's tags ${counted(tags)}`)
  expect(tags.length).toBeGreaterThan(10)
  expect(tags.every((s) => s === 200)).toBe(true)
  expect(log()).not.toContain('is DOWN')
  // Unrecognised callers hold at most half of their address's slots; the rest of them were refused at once.
  expect(answered.filter((s) => s === 0).length).toBe(PER_ADDRESS / 2)
  expect(answered.filter((s) => s === 429).length).toBe(260 - PER_ADDRESS / 2)
}

async function manyStreams() {
  // Whatever the previous test left in flight has been cut off by the body deadline once the process answers again.
  for (const deadline = Date.now() + 45_000; Date.now() < deadline && (await get(cluster.base, '/api/tags', b.key, '127.0.0.3')) !== 200; ) await Bun.sleep(500)
  seen = readFileSync(join(dir, 'haproxy.log'), 'utf8').length
  // One company's 60 screens from one address; another company's kiosk and console streams from elsewhere, and
  // from that very address.
  const many = a.tokens.flatMap((token) => Array.from({ length: 20 }, () => stream(cluster.base, `/api/public/ventanilla/${token}/events`, '127.0.0.4')))
  const others: Stream[] = []
  try {
    const manyStatuses = await Promise.all(many.map((s) => s.status))
    others.push(
      stream(cluster.base, `/api/public/ventanilla/${b.tokens[0]}/events`, '127.0.0.5'),
      stream(cluster.base, '/api/ventanilla/events', '127.0.0.5', { 'x-api-key': b.key }),
      stream(cluster.base, `/api/public/ventanilla/${b.tokens[0]}/events`, '127.0.0.4'),
      stream(cluster.base, '/api/ventanilla/events', '127.0.0.4', { 'x-api-key': b.key }),
    )
    const otherStatuses = await Promise.all(others.map((s) => s.status))
    console.log(`[balancer] 60 screens of one company: ${counted(manyStatuses)}; the other company's streams ${otherStatuses.join(' ')}`)
    expect(otherStatuses).toEqual([200, 200, 200, 200])
    expect(manyStatuses.filter((s) => s === 200).length).toBe(STREAMS_PER_ADDRESS / 2)
    expect(manyStatuses.filter((s) => s === 429).length).toBe(60 - STREAMS_PER_ADDRESS / 2)
    expect(log()).not.toContain('is DOWN')
  } finally {
    ;[...many, ...others].forEach((s) => s.stop())
  }
}

const names = [
  'repro: 260 slow anonymous sign-ins never fail the balancer\'s check nor another company\'s GET /api/tags',
  'repro: one company\'s 60 streams never refuse another company\'s kiosk or console stream',
]
const unready = !onPostgres() ? 'needs Postgres' : missing.length ? `needs ${missing.join(' and ')}: not installed (Debian: apt-get install ${missing.join(' ')})` : null

describe('behind the balancer', () => {
  if (unready) {
    for (const name of names) test.skip(`${name} [${unready}]`, () => {})
    return
  }
  beforeAll(setUp, 180_000)
  afterAll(async () => {
    await cluster?.stop()
    rmSync(dir, { recursive: true, force: true })
  })
  test(names[0], slowSignIns, 60_000)
  test(names[1], manyStreams, 90_000)
})
