/**
 * Slow and many connections against the real listener (`bun server/main.ts`), on raw sockets: a trickled body is cut
 * off at its deadline, a refused caller's connection is closed without draining its body, one address gets a
 * bounded number of requests in progress and of event streams (screens' and staff queue streams together), shared
 * out between the companies behind it, which outlive the listener's idle timeout.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect, type Socket } from 'node:net'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SignJWT } from 'jose'
import { onPostgres, SUPERADMIN_EMAIL, SUPERADMIN_SECRET } from './helpers'
import { startServer, type RunningServer } from './server'

const PER_ADDRESS = 12
const STREAMS_PER_ADDRESS = 4
let server: RunningServer | undefined
let dataDir: string
let key: string
let tokens: string[] = []
/** Another company's key and screen token, for the shares of an address. */
let otherKey: string
let otherToken: string

async function api(method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const res = await fetch(`${server!.base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json()) as any }
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'fos-abuse-'))
  server = await startServer({
    dataDir,
    databaseUrl: process.env.TEST_DATABASE_URL,
    env: {
      BODY_TIMEOUT_MS: '1500',
      IDLE_TIMEOUT_S: '2',
      MAX_REQUESTS_PER_ADDRESS: String(PER_ADDRESS),
      SSE_MAX_STREAMS_PER_ADDRESS: String(STREAMS_PER_ADDRESS),
    },
  })
  const jwt = await new SignJWT({ email: SUPERADMIN_EMAIL })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(new TextEncoder().encode(SUPERADMIN_SECRET))
  const bearer = { authorization: `Bearer ${jwt}` }
  const company = async (name: string) => {
    const made = await api('POST', '/api/superadmin/companies', bearer, { name })
    await api('PATCH', `/api/superadmin/companies/${made.body.id}`, bearer, { modules: { ventanilla: true } })
    return (await api('POST', `/api/superadmin/companies/${made.body.id}/api-keys`, bearer, { name: 'k' })).body.key as string
  }
  key = await company(`Sockets ${process.pid}`)
  for (let i = 0; i < STREAMS_PER_ADDRESS + 1; i++)
    tokens.push((await api('POST', '/api/ventanilla/tokens', { 'x-api-key': key }, { name: `TV ${i}` })).body.token)
  otherKey = await company(`Sockets other ${process.pid}`)
  otherToken = (await api('POST', '/api/ventanilla/tokens', { 'x-api-key': otherKey }, { name: 'TV' })).body.token
}, 200_000)

afterAll(() => {
  server?.proc.kill('SIGKILL')
  rmSync(dataDir, { recursive: true, force: true })
})

interface Conn {
  socket: Socket
  /** Everything received so far. */
  text(): string
  /** Resolves with the time it took once the server closes the connection. */
  closed: Promise<number>
  stop(): void
}

/** Sends `head`, then one byte of body every `everyMs` until the server closes the connection. */
function trickle(head: string, everyMs = 200): Conn {
  const socket = connect(server!.port, '127.0.0.1')
  let got = ''
  const opened = performance.now()
  socket.on('data', (d) => (got += d.toString()))
  socket.on('error', () => {})
  socket.write(head)
  const timer = everyMs > 0 ? setInterval(() => socket.writable && socket.write(' '), everyMs) : undefined
  const closed = new Promise<number>((done) => socket.on('close', () => done(performance.now() - opened)))
  void closed.then(() => clearInterval(timer))
  return { socket, text: () => got, closed, stop: () => socket.destroy() }
}

/** A sign-in (no credential) whose body of 3,000 bytes is still to come. */
const signInHead = `POST /api/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 3000\r\n\r\n{"company_id":`

const postHead = (apiKey?: string) =>
  `POST /api/operations HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n${apiKey ? `x-api-key: ${apiKey}\r\n` : ''}\r\n{"name":`

const status = (text: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0)

describe('slow bodies and many connections on the real listener', () => {
  test('an authenticated body trickled a byte at a time is cut off at BODY_TIMEOUT_MS: 408 and the connection closed', async () => {
    const c = trickle(postHead(key))
    const ms = await c.closed
    expect(status(c.text())).toBe(408)
    expect(c.text()).toContain('REQUEST_TIMEOUT')
    expect(ms).toBeGreaterThan(1000)
    expect(ms).toBeLessThan(8000)
  })

  test('a caller without a valid key is answered 401 at once and its connection closed, its body never waited for', async () => {
    for (const k of [undefined, 'fos_000000000000_nope']) {
      const c = trickle(postHead(k))
      const ms = await c.closed
      expect(status(c.text())).toBe(401)
      expect(ms).toBeLessThan(1000)
    }
  })

  test('one address gets MAX_REQUESTS_PER_ADDRESS requests in progress, half at most for callers the service does not know and half for one company; the next are 429 and closed; health checks never count; freed slots serve again', async () => {
    const anonymous = Array.from({ length: PER_ADDRESS / 2 }, () => trickle(signInHead, 100))
    await Bun.sleep(300)
    const extra = trickle(signInHead, 100)
    const ms = await extra.closed
    expect(status(extra.text())).toBe(429)
    expect(extra.text()).toContain('RATE_LIMITED')
    expect(ms).toBeLessThan(1000)
    // The company's own half is untouched by them; past it, its requests are refused too.
    const keyed = Array.from({ length: PER_ADDRESS / 2 }, () => trickle(postHead(key), 100))
    await Bun.sleep(300)
    for (const c of [...anonymous, ...keyed]) expect(status(c.text())).toBe(0)
    const over = trickle(postHead(key), 100)
    await over.closed
    expect(status(over.text())).toBe(429)
    // The balancer's check is never counted against the address.
    expect((await fetch(`${server!.base}/health`)).status).toBe(200)
    const held = [...anonymous, ...keyed]
    held.forEach((c) => c.stop())
    await Promise.all(held.map((c) => c.closed))
    await Bun.sleep(100)
    expect((await api('GET', '/api/tags', { 'x-api-key': key })).status).toBe(200)
    // Answers made before routing (an oversized body's 413) give their slot back too.
    for (let i = 0; i < PER_ADDRESS + 3; i++) {
      const res = await fetch(`${server!.base}/api/operations`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json', 'content-length': String(2 * 1024 * 1024) },
        body: 'x'.repeat(2 * 1024 * 1024),
      })
      expect(res.status).toBe(413)
    }
    expect((await api('GET', '/api/tags', { 'x-api-key': key })).status).toBe(200)
  })

  test('one address opens at most SSE_MAX_STREAMS_PER_ADDRESS event streams, one company at most half of them, whatever the tokens, staff queue streams included; streams outlive the idle timeout', async () => {
    const share = STREAMS_PER_ADDRESS / 2
    const kiosk = (token: string) => trickle(`GET /api/public/ventanilla/${token}/events HTTP/1.1\r\nHost: 127.0.0.1\r\naccept: text/event-stream\r\n\r\n`, 0)
    const staff = (k: string) => trickle(`GET /api/ventanilla/events HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: ${k}\r\naccept: text/event-stream\r\n\r\n`, 0)
    const streams = [...tokens.slice(0, share - 1).map(kiosk), staff(key)]
    await Bun.sleep(500)
    for (const s of streams) expect(status(s.text())).toBe(200)
    // The company's half is full: its next screen or console stream is refused, whatever the token.
    const over = await fetch(`${server!.base}/api/public/ventanilla/${tokens[share]}/events`)
    expect(over.status).toBe(429)
    expect(over.headers.get('retry-after')).toBeTruthy()
    const staffOver = await fetch(`${server!.base}/api/ventanilla/events`, { headers: { 'x-api-key': key } })
    expect(staffOver.status).toBe(429)
    // Another company behind the same address has its own half, and then the address is full for everyone.
    const theirs = [kiosk(otherToken), staff(otherKey)]
    await Bun.sleep(500)
    for (const s of theirs) expect(status(s.text())).toBe(200)
    expect((await fetch(`${server!.base}/api/public/ventanilla/${otherToken}/events`)).status).toBe(429)
    streams.push(...theirs)
    // Past the 2 s idle timeout the streams are still open: they lift it for themselves.
    const early = await Promise.race([Promise.race(streams.map((s) => s.closed)).then(() => 'closed'), Bun.sleep(3500).then(() => 'open')])
    expect(early).toBe('open')
    streams.forEach((s) => s.stop())
    await Promise.all(streams.map((s) => s.closed))
    await Bun.sleep(200)
    const again = await fetch(`${server!.base}/api/public/ventanilla/${tokens[STREAMS_PER_ADDRESS]}/events`)
    expect(again.status).toBe(200)
    await again.body?.cancel()
  })
})

if (!onPostgres()) console.log('[abuse-socket] on the embedded database the server runs PGlite under its own data dir')
