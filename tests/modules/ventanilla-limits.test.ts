/**
 * Abuse limits of the public event stream: a cap on open streams per kiosk token (429 RATE_LIMITED with
 * Retry-After past it), and slow-client protection (a client that stops reading is dropped instead of
 * having events buffered for it without bound).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect, type Socket } from 'node:net'
import { buildTestApp, type TestApp } from '../helpers'
import { ventanillaHub } from '../../server/modules/ventanilla/hub'

const CAP = 3
const PENDING = 4
let t: TestApp
let server: ReturnType<typeof Bun.serve>

beforeAll(async () => {
  t = await buildTestApp({ sse: { maxStreamsPerToken: CAP, maxStreamsPerAddress: 50, maxPendingEvents: PENDING } })
  ventanillaHub(t.ctx).configure({ heartbeatMs: 60_000, pollMs: 60_000, gapMs: 0 })
  // A real socket, so a client that stops reading pushes back through TCP as it would in production.
  server = Bun.serve({ hostname: '127.0.0.1', port: 0, idleTimeout: 0, fetch: (req) => t.app.handle(req) })
})

afterAll(() => {
  server?.stop(true)
})

async function setup() {
  const c = await t.newCompany({ ventanilla: true })
  const tokens: string[] = []
  for (const name of ['TV', 'Hall']) {
    const tok = await t.request('POST', '/api/ventanilla/tokens', { key: c.key, body: { name } })
    expect(tok.status).toBe(201)
    tokens.push(tok.body.token)
  }
  return { c, tokens }
}

/** Opens a stream and waits for its first snapshot; `close` disconnects it. */
async function open(token: string) {
  const ctrl = new AbortController()
  const res = await t.app.handle(new Request(`http://fos.test/api/public/ventanilla/${token}/events`, { signal: ctrl.signal }))
  if (res.status !== 200) return { res, close: () => ctrl.abort() }
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  let text = ''
  while (!text.includes('event: snapshot')) {
    const { done, value } = await reader.read()
    if (done) throw new Error('stream ended before its first snapshot')
    text += decoder.decode(value, { stream: true })
  }
  return {
    res,
    close: () => {
      ctrl.abort()
      void reader.cancel().catch(() => {})
    },
  }
}

const settle = async (until: () => boolean, ms = 5000) => {
  const deadline = Date.now() + ms
  while (!until() && Date.now() < deadline) await Bun.sleep(10)
  return until()
}

describe('ventanilla stream limits', () => {
  test('settings: defaults and environment', async () => {
    const { loadConfig } = await import('../../server/config')
    expect(loadConfig({}).sse).toEqual({ maxStreamsPerToken: 20, maxStreamsPerAddress: 50, maxPendingEvents: 32 })
    expect(loadConfig({ SSE_MAX_STREAMS_PER_TOKEN: '5', SSE_MAX_PENDING_EVENTS: '8' }).sse).toEqual({ maxStreamsPerToken: 5, maxStreamsPerAddress: 50, maxPendingEvents: 8 })
    expect(() => loadConfig({ SSE_MAX_STREAMS_PER_TOKEN: '0' })).toThrow('SSE_MAX_STREAMS_PER_TOKEN')
  })

  test('one stream over the per-token cap is 429 RATE_LIMITED with Retry-After; other tokens and freed slots work', async () => {
    const hub = ventanillaHub(t.ctx)
    const { c, tokens } = await setup()
    const streams = []
    for (let i = 0; i < CAP; i++) {
      const s = await open(tokens[0])
      expect(s.res.status).toBe(200)
      streams.push(s)
    }
    expect(hub.subscribers(c.id)).toBe(CAP)

    const over = await t.request('GET', `/api/public/ventanilla/${tokens[0]}/events`)
    expect(over.status).toBe(429)
    expect(over.body).toEqual({ error: expect.any(String), code: 'RATE_LIMITED' })
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(hub.subscribers(c.id)).toBe(CAP)

    const other = await open(tokens[1])
    expect(other.res.status).toBe(200)
    // The plain snapshot is not a stream and is not capped.
    expect((await t.request('GET', `/api/public/ventanilla/${tokens[0]}`)).status).toBe(200)

    streams.shift()!.close()
    expect(await settle(() => hub.subscribers(c.id) === CAP)).toBe(true)
    const again = await open(tokens[0])
    expect(again.res.status).toBe(200)
    streams.push(again)

    for (const s of [...streams, other]) s.close()
    expect(await settle(() => hub.subscribers(c.id) === 0)).toBe(true)
    // Every slot came back: the cap is open again in full.
    const reopened = []
    for (let i = 0; i < CAP; i++) reopened.push(await open(tokens[0]))
    expect(reopened.map((s) => s.res.status)).toEqual(Array(CAP).fill(200))
    for (const s of reopened) s.close()
    expect(await settle(() => hub.subscribers(c.id) === 0)).toBe(true)
  })

  test('a client that stops reading is dropped; a reading client keeps its stream and the hub returns to normal', async () => {
    const hub = ventanillaHub(t.ctx)
    const { c, tokens } = await setup()
    // Big snapshots fill the socket buffers sooner.
    for (let i = 0; i < 30; i++) {
      const svc = await t.request('POST', '/api/ventanilla/services', { key: c.key, body: { name: `Servicio ${i} ${'n'.repeat(80)}`, prefix: `S${i}` } })
      expect(svc.status).toBe(201)
    }
    const base = `http://127.0.0.1:${server.port}`

    const readerAbort = new AbortController()
    const reader = await fetch(`${base}/api/public/ventanilla/${tokens[0]}/events`, { signal: readerAbort.signal })
    expect(reader.status).toBe(200)
    let readerTail = ''
    let readerBytes = 0
    const draining = (async () => {
      const r = reader.body!.getReader()
      const decoder = new TextDecoder()
      for (;;) {
        const { done, value } = await r.read()
        if (done) return
        readerBytes += value.byteLength
        readerTail = (readerTail + decoder.decode(value, { stream: true })).slice(-20_000)
      }
    })().catch(() => {})

    let slowBytes = 0
    let slowTail = ''
    const slow: Socket = connect(server.port!, '127.0.0.1')
    await new Promise<void>((resolve) => slow.once('connect', () => resolve()))
    slow.on('data', (chunk) => {
      slowBytes += chunk.length
      slowTail = (slowTail + chunk.toString('latin1')).slice(-64)
    })
    slow.on('error', () => {})
    slow.write(`GET /api/public/ventanilla/${tokens[1]}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n`)
    expect(await settle(() => hub.subscribers(c.id) === 2 && slowBytes > 0)).toBe(true)
    slow.pause()

    let pushes = 0
    for (; pushes < 2000 && hub.subscribers(c.id) === 2; pushes++) {
      const res = await t.request('PUT', '/api/ventanilla/settings', {
        key: c.key,
        body: { logoUrl: '', showLogo: false, timezone: 'UTC', tickerText: `${pushes} ${'t'.repeat(1900)}`, announceSound: false, announceTts: false, privacyMode: 'ticket' },
      })
      expect(res.status).toBe(200)
    }
    expect(hub.subscribers(c.id)).toBe(1)
    const last = pushes - 1
    // The reader is still served, up to the latest change.
    expect(await settle(() => readerTail.includes(`"tickerText":"${last} `))).toBe(true)
    expect(readerBytes).toBeGreaterThan(slowBytes)

    // The dropped stream was ended by the server: once the client reads again it gets the end of the chunked body.
    slow.resume()
    expect(await settle(() => slowTail.endsWith('\r\n0\r\n\r\n'), 10_000)).toBe(true)
    slow.destroy()

    readerAbort.abort()
    await draining
    expect(await settle(() => hub.subscribers(c.id) === 0)).toBe(true)
    console.log(`[ventanilla-limits] slow client dropped after ${pushes} changes; it had taken ${slowBytes} bytes, the reader ${readerBytes}`)
  }, 120_000)
})
