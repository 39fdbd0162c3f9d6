/**
 * End to end: a real server process (`bun server/main.ts` on its own port, the run's Postgres database or a
 * temporary PGlite directory), the built kiosk, and Debian's chromium driven by playwright-core.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SignJWT } from 'jose'
import type { Page } from 'playwright-core'
import { freePort, startServer as launchServer } from '../server'
import { ensureKioskBuilt, launchChromium, type Chromium } from './browser'

const SECRET = 'kiosk-e2e-superadmin-secret-0123456789'
const OPERATOR = 'root@kiosk-e2e.test'
/** Generous bounds for things the contract gives no deadline for (start-up, reconnect backoff). */
const SLOW = 45_000
/** The contract's bound from a call's HTTP answer to the screen. */
const LIVE = 2_000

let port: number
let base: string
let dataDir: string
let server: ReturnType<typeof Bun.spawn> | undefined
let starts = 0
let chromium: Chromium
let key: string
let serviceId: number
let token: string
let tokenId: number

/** On the same port and data every time, so a restart is the same server coming back. */
async function startServer() {
  const started = await launchServer({
    dataDir,
    port,
    databaseUrl: process.env.TEST_DATABASE_URL,
    stdout: Bun.file(join(dataDir, `server-${++starts}.log`)),
    env: { SUPERADMIN_JWT_SECRET: SECRET, SUPERADMIN_EMAILS: OPERATOR },
    timeoutMs: SLOW,
  })
  server = started.proc
}

async function stopServer() {
  if (!server) return
  server.kill('SIGTERM')
  await server.exited
  server = undefined
}

async function api(method: string, path: string, body?: unknown, auth: Record<string, string> = { 'x-api-key': key }) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...auth, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null }
}

async function ok(method: string, path: string, body?: unknown, auth?: Record<string, string>) {
  const res = await api(method, path, body, auth)
  if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

const settings = (privacyMode: string, extra: Record<string, unknown> = {}) => ({
  displayName: 'Cambios E2E',
  logoUrl: '',
  showLogo: false,
  timezone: 'Asia/Tokyo',
  tickerText: 'Bienvenidos · Horario de 9 a 17 h',
  announceSound: true,
  announceTts: true,
  privacyMode,
  ...extra,
})

/** Ticket taken and called at once; answers the called ticket. */
async function call(customerName: string, desk: string) {
  await ok('POST', '/api/ventanilla/tickets', { service_id: serviceId, customer_name: customerName })
  return ok('POST', '/api/ventanilla/calls', { desk, service_id: serviceId })
}

/** Records what the page would say and play, so announcements are observable without speakers. */
const recordAnnouncements = () => {
  const w = window as unknown as { __spoken: { text: string; lang: string }[]; __oscillators: number; __csp: string[] }
  w.__spoken = []
  w.__oscillators = 0
  w.__csp = []
  document.addEventListener('securitypolicyviolation', (e) => w.__csp.push(`${e.violatedDirective} ${e.blockedURI}`))
  if ('speechSynthesis' in window) {
    window.speechSynthesis.speak = (u: SpeechSynthesisUtterance) => {
      w.__spoken.push({ text: u.text, lang: u.lang })
    }
  }
  const create = AudioContext.prototype.createOscillator
  AudioContext.prototype.createOscillator = function (this: AudioContext) {
    w.__oscillators++
    return create.call(this)
  }
}

const spoken = (page: Page) => page.evaluate(() => (window as unknown as { __spoken: { text: string; lang: string }[] }).__spoken)
const pageText = (page: Page) => page.evaluate(() => document.body.innerText)
const kioskUrl = () => `${base}/kiosk/${token}`

async function openKiosk(): Promise<Page> {
  const page = await chromium.context.newPage()
  await page.addInitScript(recordAnnouncements)
  await page.goto(kioskUrl())
  await page.getByTestId('current-call').waitFor({ timeout: SLOW })
  return page
}

beforeAll(async () => {
  ensureKioskBuilt()
  port = freePort()
  base = `http://127.0.0.1:${port}`
  dataDir = mkdtempSync(join(tmpdir(), 'kiosk-e2e-'))
  await startServer()

  const bearer = {
    authorization: `Bearer ${await new SignJWT({ email: OPERATOR })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuedAt()
      .setExpirationTime('30m')
      .sign(new TextEncoder().encode(SECRET))}`,
  }
  const company = await ok('POST', '/api/superadmin/companies', { name: `Kiosk E2E ${process.pid}` }, bearer)
  await ok('PATCH', `/api/superadmin/companies/${company.id}`, { modules: { ventanilla: true } }, bearer)
  key = (await ok('POST', `/api/superadmin/companies/${company.id}/api-keys`, { name: 'e2e' }, bearer)).key

  await ok('PUT', '/api/ventanilla/settings', settings('first_last_initial'))
  await ok('PUT', '/api/ventanilla/rates', {
    rates: [
      { currency: 'USD', buy: 1185, sell: '1205.50' },
      { currency: 'EUR', buy: 1290.5, sell: 1335 },
      { currency: 'BRL', buy: '205.40', sell: 219.8 },
    ],
  })
  serviceId = (await ok('POST', '/api/ventanilla/services', { name: 'Cambio de divisas', prefix: 'A' })).id
  const issued = await ok('POST', '/api/ventanilla/tokens', { name: 'TV sala' })
  token = issued.token
  tokenId = issued.id
  expect(issued.kiosk_url).toBe(kioskUrl())
  await call('Juan Pérez', 'Caja 2')

  chromium = await launchChromium()
}, 120_000)

afterAll(async () => {
  await chromium?.close()
  await stopServer()
  rmSync(dataDir, { recursive: true, force: true })
})

describe('kiosk in a browser against a real server', () => {
  // A failure in the middle of the restart test must not leave the following tests without a server.
  beforeEach(async () => {
    if (!server) await startServer()
  })

  test('renders the snapshot: company, clock in the screen time zone, current call, rates, queue, ticker', async () => {
    const page = await openKiosk()
    await expect(page.getByTestId('current-ticket').textContent()).resolves.toBe('A-001')
    expect(await page.getByTestId('current-name').textContent()).toBe('Juan P.')
    expect(await page.getByTestId('current-desk').textContent()).toContain('Caja 2')
    const text = await pageText(page)
    expect(text).toContain('Cambios E2E')
    expect(text).toContain('COTIZACIONES')
    expect(text).toContain('Bienvenidos · Horario de 9 a 17 h')
    const rates = await page.getByTestId('rates').innerText()
    expect(rates).toMatch(/USD[\s\S]*1\.185,00[\s\S]*1\.205,50/)
    expect(rates).toMatch(/BRL[\s\S]*205,40[\s\S]*219,80/)
    // The clock follows the screen's zone (Tokyo), not the browser's; either side of a minute change is fine.
    const tokyo = (at: number) =>
      new Intl.DateTimeFormat('es-AR', { timeZone: 'Asia/Tokyo', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(at)
    const before = Date.now()
    const clock = await page.getByTestId('clock').textContent()
    expect([tokyo(before), tokyo(before + 60_000), tokyo(before - 60_000)]).toContain(clock!)
    expect(await page.getByTestId('offline').count()).toBe(0)
    // Everything the app does is allowed by the page's Content-Security-Policy.
    expect(await page.evaluate(() => (window as unknown as { __csp: string[] }).__csp)).toEqual([])
    // Nothing is announced for what was already on screen when the page loaded.
    await page.waitForTimeout(1500)
    expect(await spoken(page)).toEqual([])
    await page.close()
  })

  test('fits a 1280×720 screen: call, desk and rates visible without scrolling', async () => {
    const page = await chromium.context.newPage()
    await page.setViewportSize({ width: 1280, height: 720 })
    await page.goto(kioskUrl())
    await page.getByTestId('current-ticket').waitFor({ timeout: SLOW })
    // Only one call so far: no earlier calls to list, so no empty «Llamados anteriores» either (layout.e2e covers more).
    expect(await page.getByText('Llamados anteriores').count()).toBe(0)
    for (const id of ['current-ticket', 'current-desk', 'rates', 'queues']) {
      const box = (await page.getByTestId(id).boundingBox())!
      expect(box.x).toBeGreaterThanOrEqual(0)
      expect(box.y).toBeGreaterThanOrEqual(0)
      expect(box.x + box.width).toBeLessThanOrEqual(1280)
      expect(box.y + box.height).toBeLessThanOrEqual(720)
    }
    const overflow = await page.evaluate(() => ({ w: document.documentElement.scrollWidth, h: document.documentElement.scrollHeight }))
    expect(overflow).toEqual({ w: 1280, h: 720 })
    await page.close()
  })

  test('a call made through the API shows up within 2 s without reload, with chime and Spanish speech', async () => {
    const page = await openKiosk()
    await page.evaluate(() => ((window as unknown as { __loadMarker: number }).__loadMarker = 1))
    const called = await call('María González', 'Caja 3')
    expect(called.number).toBe('A-002')
    await page.getByTestId('current-ticket').filter({ hasText: 'A-002' }).waitFor({ timeout: LIVE })
    expect(await page.getByTestId('current-desk').textContent()).toContain('Caja 3')
    expect(await page.evaluate(() => (window as unknown as { __loadMarker?: number }).__loadMarker)).toBe(1)
    expect(await page.getByTestId('recent-calls').innerText()).toContain('A-001')
    await page.waitForFunction(() => (window as unknown as { __spoken: unknown[] }).__spoken.length > 0, undefined, { timeout: SLOW })
    expect(await spoken(page)).toEqual([{ text: 'Turno A cero cero dos, caja tres', lang: 'es-AR' }])
    expect(await page.evaluate(() => (window as unknown as { __oscillators: number }).__oscillators)).toBeGreaterThan(0)

    // Calling the same ticket again is announced again, with its new desk.
    await ok('POST', `/api/ventanilla/tickets/${called.id}/call`, { desk: 'Caja 4' })
    await page.getByTestId('current-desk').filter({ hasText: 'Caja 4' }).waitFor({ timeout: LIVE })
    await page.waitForFunction(() => (window as unknown as { __spoken: unknown[] }).__spoken.length > 1, undefined, { timeout: SLOW })
    expect((await spoken(page))[1]).toEqual({ text: 'Turno A cero cero dos, caja cuatro', lang: 'es-AR' })
    await page.close()
  })

  test('full customer names never reach the page in first_last_initial and ticket modes', async () => {
    const page = await openKiosk()
    const fullNames = ['Juan Pérez', 'María González', 'Pérez', 'González']
    const seen = async () => [await pageText(page), await page.content(), await page.evaluate(() => JSON.stringify({ ...localStorage }))].join('\n')

    let everything = await seen()
    expect(everything).toContain('María G.')
    for (const name of fullNames) expect(everything).not.toContain(name)

    await ok('PUT', '/api/ventanilla/settings', settings('ticket'))
    await page.waitForFunction(() => !document.querySelector('[data-testid=current-name]'), undefined, { timeout: SLOW })
    everything = await seen()
    for (const name of [...fullNames, 'María G.', 'Juan P.']) expect(everything).not.toContain(name)
    expect(await page.getByTestId('current-ticket').textContent()).toBe('A-002')

    // The control: in full_name mode the same page does show it, so the checks above can fail.
    await ok('PUT', '/api/ventanilla/settings', settings('full_name'))
    await page.getByTestId('current-name').filter({ hasText: 'María González' }).waitFor({ timeout: SLOW })
    await ok('PUT', '/api/ventanilla/settings', settings('first_last_initial'))
    await page.getByTestId('current-name').filter({ hasText: 'María G.' }).waitFor({ timeout: SLOW })
    await page.close()
  })

  test('keeps the last snapshot through a server restart, then shows new calls again', async () => {
    const page = await openKiosk()
    expect(await page.getByTestId('current-ticket').textContent()).toBe('A-002')
    await stopServer()
    await page.getByTestId('offline').waitFor({ timeout: SLOW })
    expect(await page.getByTestId('current-ticket').textContent()).toBe('A-002')
    expect(await page.getByTestId('rates').innerText()).toContain('1.185,00')

    await startServer()
    await page.getByTestId('offline').waitFor({ state: 'detached', timeout: SLOW })
    await call('Pedro Ramírez', 'Caja 1')
    await page.getByTestId('current-ticket').filter({ hasText: 'A-003' }).waitFor({ timeout: SLOW })
    expect(await page.getByTestId('current-name').textContent()).toBe('Pedro R.')
    await page.close()
  }, 180_000)

  test('a reload while the API is unreachable shows the last snapshot kept in the browser', async () => {
    const page = await openKiosk()
    await page.getByTestId('current-ticket').filter({ hasText: 'A-003' }).waitFor({ timeout: SLOW })
    await page.route('**/api/public/**', (route) => route.abort('connectionrefused'))
    await page.reload()
    await page.getByTestId('offline').waitFor({ timeout: SLOW })
    expect(await page.getByTestId('current-ticket').textContent()).toBe('A-003')
    expect(await page.getByTestId('rates').innerText()).toContain('USD')
    await page.close()
  })

  test('an unknown token shows the disabled page', async () => {
    const page = await chromium.context.newPage()
    await page.goto(`${base}/kiosk/not-a-real-token`)
    await page.getByRole('heading', { name: 'Pantalla deshabilitada' }).waitFor({ timeout: SLOW })
    await page.close()
  })

  test('revoking the token turns an open screen into the disabled page and forgets the snapshot', async () => {
    const page = await openKiosk()
    await ok('DELETE', `/api/ventanilla/tokens/${tokenId}`)
    await page.getByRole('heading', { name: 'Pantalla deshabilitada' }).waitFor({ timeout: SLOW })
    expect(await page.getByTestId('current-ticket').count()).toBe(0)
    expect(await page.evaluate(() => Object.keys(localStorage).length)).toBe(0)
    await page.reload()
    await page.getByRole('heading', { name: 'Pantalla deshabilitada' }).waitFor({ timeout: SLOW })
    await page.close()
  })
})
