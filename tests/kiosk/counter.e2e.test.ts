/**
 * End to end: a real server process, the built apps, and Debian's chromium driven by playwright-core. A staff member
 * signs in at the counter console, a customer takes a number at the dispenser, the waiting-room kiosk shows the call.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Page } from 'playwright-core'
import type { RunningServer } from '../server'
import { ensureKioskBuilt, launchChromium, type Chromium } from './browser'
import { openScene, type Scene } from './scene'

const SLOW = 45_000
/** The contract's bound from a change to every screen that shows it. */
const LIVE = 2_000
const PASSWORD = 'mostrador seguro 2026'

let scene: Scene
let server: RunningServer
let chromium: Chromium
let key: string
let companyId: number
let email: string
let dispenserUrl: string
let kioskUrl: string

const ok: Scene['ok'] = (...args) => scene.ok(...args)

beforeAll(async () => {
  ensureKioskBuilt()
  scene = await openScene('Cambios Mostrador')
  ;({ server, key, companyId } = scene)
  await ok('POST', '/api/ventanilla/services', { name: 'Cambio de divisas', prefix: 'A' })
  await ok('POST', '/api/ventanilla/services', { name: 'Pagos y cobranzas', prefix: 'B' })
  email = `cajera.${process.pid}@counter-e2e.test`
  await ok('POST', '/api/employees', { email, name: 'Lucía Fernández', permissions: ['ventanilla.call'], password: PASSWORD })
  dispenserUrl = (await ok('POST', '/api/ventanilla/dispenser-tokens', { name: 'Tablet entrada' })).dispenser_url
  kioskUrl = (await ok('POST', '/api/ventanilla/tokens', { name: 'TV sala' })).kiosk_url
  chromium = await launchChromium({ width: 1366, height: 768 })
}, 120_000)

afterAll(async () => {
  await chromium?.close()
  await scene?.stop()
})

let consolePage: Page
let dispenser: Page
let kiosk: Page

/** Takes a number at the dispenser page by touch and answers what the page shows. */
async function takeNumber(service: string, priority = false) {
  if (priority) await dispenser.getByTestId('priority-button').click()
  await dispenser.getByTestId('service-button').filter({ hasText: service }).click()
  const number = (await dispenser.getByTestId('issued-number').textContent({ timeout: SLOW }))!
  const ahead = (await dispenser.getByTestId('issued-ahead').textContent())!
  // Back to the buttons for the next customer.
  await dispenser.getByTestId('issued').click()
  await dispenser.getByTestId('service-button').first().waitFor()
  return { number, ahead }
}

/** The console takes one action at a time; the next key waits until the last one is answered. */
const idle = () =>
  consolePage.waitForFunction(() => !(document.querySelector('[data-testid=call-next]') as HTMLButtonElement | null)?.disabled, undefined, { timeout: SLOW })
const queueOf = (prefix: string) => consolePage.getByTestId(`queue-${prefix}`)
const current = () => consolePage.getByTestId('current-ticket')

describe('counter console, dispenser and kiosk together', () => {
  test('a staff member signs in with the keyboard alone, picks a desk and services', async () => {
    consolePage = await chromium.context.newPage()
    await consolePage.goto(`${server.base}/staff`)
    await consolePage.getByTestId('signin').waitFor({ timeout: SLOW })
    // Keyboard only, from the first empty field, which has the focus: the company number on a new computer.
    const focused = () => consolePage.evaluate(() => document.activeElement?.getAttribute('name'))
    expect(await focused()).toBe('company')
    // Checked by the page, in Spanish, next to each field: the browser's own bubbles (in its language) are off.
    expect(await consolePage.getByTestId('signin').evaluate((form) => (form as HTMLFormElement).noValidate)).toBe(true)
    await consolePage.keyboard.press('Enter')
    expect(await consolePage.getByTestId('signin-company-error').textContent()).toBe('Ingrese el número de empresa que le dio el administrador.')
    expect(await consolePage.getByTestId('signin-email-error').textContent()).toBe('Ingrese su correo electrónico.')
    expect(await consolePage.getByTestId('signin-password-error').textContent()).toBe('Ingrese su contraseña.')
    expect(await focused()).toBe('company')
    // Each message leaves by itself once its field is right.
    await consolePage.keyboard.type('12a')
    expect(await consolePage.getByTestId('signin-company-error').textContent()).toBe('El número de empresa lleva solo dígitos, por ejemplo 12.')
    await consolePage.keyboard.press('Control+A')
    await consolePage.keyboard.type(String(companyId))
    await consolePage.getByTestId('signin-company-error').waitFor({ state: 'detached', timeout: 1000 })
    await consolePage.keyboard.press('Tab')
    await consolePage.keyboard.type(email.split('@')[0])
    expect(await consolePage.getByTestId('signin-email-error').textContent()).toBe('Revise el correo electrónico: debe tener la forma nombre@empresa.com.')
    await consolePage.keyboard.type(`@${email.split('@')[1]}`)
    await consolePage.getByTestId('signin-email-error').waitFor({ state: 'detached', timeout: 1000 })
    await consolePage.keyboard.press('Tab')
    await consolePage.keyboard.type('not the password')
    expect(await consolePage.getByTestId('signin-password-error').count()).toBe(0)
    await consolePage.keyboard.press('Enter')
    expect(await consolePage.getByTestId('signin-error').textContent({ timeout: SLOW })).toBe('Correo o contraseña incorrectos.')
    // The server's answer goes once the password is being typed again (the field is emptied and focused for it).
    expect(await focused()).toBe('password')
    await consolePage.keyboard.type('x')
    await consolePage.getByTestId('signin-error').waitFor({ state: 'detached', timeout: 1000 })
    await consolePage.keyboard.press('Backspace')
    await consolePage.locator('input[name=password]').focus()
    await consolePage.keyboard.type(PASSWORD)
    await consolePage.keyboard.press('Enter')
    await consolePage.getByTestId('setup').waitFor({ timeout: SLOW })
    expect(await focused()).toBe('desk')
    await consolePage.keyboard.press('Enter')
    expect(await consolePage.getByTestId('setup-error').textContent()).toBe('Escriba el nombre de su puesto, por ejemplo «Caja 2».')
    await consolePage.keyboard.type('Caja 3')
    expect(await consolePage.getByTestId('setup-error').textContent()).toBe('Elija al menos un servicio.')
    await consolePage.keyboard.press('Tab')
    await consolePage.keyboard.press('Space')
    await consolePage.getByTestId('setup-error').waitFor({ state: 'detached', timeout: 1000 })
    await consolePage.keyboard.press('Tab')
    await consolePage.keyboard.press('Space')
    // Past «Salir» to «Comenzar».
    await consolePage.keyboard.press('Tab')
    await consolePage.keyboard.press('Tab')
    await consolePage.keyboard.press('Enter')
    await queueOf('A').waitFor({ timeout: SLOW })
    await queueOf('B').waitFor()
    expect(await consolePage.evaluate(() => localStorage.getItem('fos.staff.desk'))).toBe('"Caja 3"')
    // Fits a 1366×768 counter PC.
    const size = await consolePage.evaluate(() => ({ w: document.documentElement.scrollWidth, h: document.documentElement.scrollHeight }))
    expect(size).toEqual({ w: 1366, h: 768 })
  }, 60_000)

  test('a number taken at the dispenser appears in the console within 2 s; Space calls it and the kiosk shows it within 2 s', async () => {
    dispenser = await chromium.context.newPage()
    await dispenser.setViewportSize({ width: 1024, height: 768 })
    await dispenser.goto(dispenserUrl)
    await dispenser.getByTestId('service-button').first().waitFor({ timeout: SLOW })
    kiosk = await chromium.context.newPage()
    await kiosk.setViewportSize({ width: 1280, height: 720 })
    await kiosk.goto(kioskUrl)
    await kiosk.getByTestId('current-call').waitFor({ timeout: SLOW })
    await consolePage.evaluate(() => ((window as unknown as { __marker: number }).__marker = 1))

    // Nobody waiting: said in words.
    await consolePage.bringToFront()
    await consolePage.keyboard.press('Space')
    expect(await consolePage.getByTestId('message').textContent({ timeout: SLOW })).toBe('No hay clientes esperando en sus servicios.')

    await dispenser.getByTestId('service-button').filter({ hasText: 'Cambio de divisas' }).click()
    await dispenser.getByTestId('issued-number').waitFor({ timeout: SLOW })
    const shownAt = Date.now()
    expect(await dispenser.getByTestId('issued-number').textContent()).toBe('A-001')
    expect(await dispenser.getByTestId('issued-ahead').textContent()).toBe('No hay personas antes que usted')
    await queueOf('A').getByTestId('queue-ticket').filter({ hasText: 'A-001' }).waitFor({ timeout: LIVE })
    expect(Date.now() - shownAt).toBeLessThan(LIVE)
    expect(await queueOf('A').getByTestId('queue-count').textContent()).toBe('1 en espera')
    // The dispenser goes back to its buttons by itself after a few seconds.
    await dispenser.getByTestId('service-button').first().waitFor({ timeout: 12_000 })

    await consolePage.keyboard.press('Space')
    await current().filter({ hasText: 'A-001' }).waitFor({ timeout: LIVE })
    await kiosk.getByTestId('current-ticket').filter({ hasText: 'A-001' }).waitFor({ timeout: LIVE })
    expect(await kiosk.getByTestId('current-desk').textContent()).toContain('Caja 3')
    // The dispenser asks no name, so most tickets have none: said quietly, not in the customer's large type.
    const anonymous = consolePage.getByTestId('current').locator('.customer')
    expect(await anonymous.textContent()).toBe('Sin nombre')
    const sizes = await consolePage.evaluate(() => ['.customer', '[data-testid=current-ticket]'].map((q) => parseFloat(getComputedStyle(document.querySelector(q)!).fontSize)))
    expect(sizes[0]).toBeLessThanOrEqual(16)
    expect(sizes[1]).toBeGreaterThan(sizes[0] * 3)
    // The clock runs while the customer is served.
    const before = await consolePage.getByTestId('timer').textContent()
    await consolePage.bringToFront()
    await consolePage.waitForFunction((b) => document.querySelector('[data-testid=timer]')?.textContent !== b, before, { timeout: 5000 })
    expect((await ok('GET', '/api/ventanilla/queue')).data[0].waiting).toEqual([])
    // R calls again (the kiosk announces it again); then F finishes.
    await consolePage.keyboard.press('r')
    await idle()
    await consolePage.keyboard.press('f')
    expect(await consolePage.getByTestId('message').textContent({ timeout: SLOW })).toBe('A-001 finalizado.')
    expect(await consolePage.evaluate(() => (window as unknown as { __marker?: number }).__marker)).toBe(1)
  }, 60_000)

  test('transfer (T) and no-show (N)', async () => {
    const taken = await takeNumber('Cambio de divisas')
    expect(taken).toEqual({ number: 'A-002', ahead: 'No hay personas antes que usted' })
    await queueOf('A').getByTestId('queue-ticket').filter({ hasText: 'A-002' }).waitFor({ timeout: LIVE })
    await consolePage.bringToFront()
    await consolePage.keyboard.press('Space')
    await current().filter({ hasText: 'A-002' }).waitFor({ timeout: LIVE })
    await consolePage.keyboard.press('t')
    await consolePage.getByTestId('transfer').waitFor()
    await consolePage.keyboard.press('1')
    expect(await consolePage.getByTestId('message').textContent({ timeout: SLOW })).toBe('A-002 derivado a Pagos y cobranzas.')
    await queueOf('B').getByTestId('queue-ticket').filter({ hasText: 'A-002' }).waitFor({ timeout: LIVE })
    expect(await queueOf('A').getByTestId('queue-count').textContent()).toBe('0 en espera')

    await consolePage.keyboard.press('Space')
    await current().filter({ hasText: 'A-002' }).waitFor({ timeout: LIVE })
    await consolePage.keyboard.press('n')
    expect(await consolePage.getByTestId('message').textContent({ timeout: SLOW })).toBe('A-002 marcado como ausente.')
    await consolePage.waitForFunction(() => !document.querySelector('[data-testid=current-ticket]'), undefined, { timeout: LIVE })
    await queueOf('B').getByTestId('queue-count').filter({ hasText: '0 en espera' }).waitFor({ timeout: LIVE })
  }, 60_000)

  test('a lost connection is said in words, and the words go once the server is back', async () => {
    await consolePage.bringToFront()
    // The console ignores a key while its last action is still being answered, or while a field has the focus (the
    // key is typed there): wait until it takes one again, with nothing focused.
    await idle()
    await consolePage.evaluate(() => (document.activeElement as HTMLElement | null)?.blur())
    const serviceB = (await ok('GET', '/api/ventanilla/queue')).data[1].service_id
    const waiting = queueOf('B').getByTestId('queue-count')
    const words = 'Sin conexión con el servidor. Revise la red e intente de nuevo.'
    const taken: number[] = []
    await chromium.context.setOffline(true)
    try {
      await consolePage.keyboard.press('Space')
      expect(await consolePage.getByTestId('message').textContent({ timeout: SLOW })).toBe(words)
      // The stream opened before going offline keeps delivering (as on a half-broken network): live data alone does
      // not prove the server can be reached, so the words stay while requests still fail.
      taken.push((await ok('POST', '/api/ventanilla/tickets', { service_id: serviceB })).id)
      await waiting.filter({ hasText: '1 en espera' }).waitFor({ timeout: LIVE })
      expect(await consolePage.getByTestId('message').textContent()).toBe(words)
    } finally {
      await chromium.context.setOffline(false)
    }
    // Nobody acts at the console: the next live update, once a request gets through, clears the message and any
    // offline badge.
    taken.push((await ok('POST', '/api/ventanilla/tickets', { service_id: serviceB })).id)
    await consolePage.getByTestId('message').waitFor({ state: 'detached', timeout: SLOW })
    await consolePage.getByTestId('offline').waitFor({ state: 'detached', timeout: SLOW })
    await waiting.filter({ hasText: '2 en espera' }).waitFor({ timeout: LIVE })
    // Out of the way of the next test's queue.
    for (const id of taken) await ok('POST', `/api/ventanilla/tickets/${id}/no-show`)
  }, 90_000)

  test('a priority ticket is called first', async () => {
    expect((await takeNumber('Cambio de divisas')).number).toBe('A-003')
    const priority = await takeNumber('Cambio de divisas', true)
    expect(priority).toEqual({ number: 'A-004', ahead: 'No hay personas antes que usted' })
    const first = queueOf('A').getByTestId('queue-ticket').first()
    await first.filter({ hasText: 'A-004' }).waitFor({ timeout: LIVE })
    expect(await first.textContent()).toContain('Prioridad')
    await consolePage.bringToFront()
    await consolePage.keyboard.press('Space')
    await current().filter({ hasText: 'A-004' }).waitFor({ timeout: LIVE })
    await kiosk.getByTestId('current-ticket').filter({ hasText: 'A-004' }).waitFor({ timeout: LIVE })
    await consolePage.keyboard.press('f')
    await idle()
    await consolePage.keyboard.press('Space')
    await current().filter({ hasText: 'A-003' }).waitFor({ timeout: LIVE })
  }, 60_000)

  test('the dispenser prints an 80 mm ticket', async () => {
    await dispenser.getByTestId('service-button').filter({ hasText: 'Pagos' }).click()
    await dispenser.getByTestId('issued-number').waitFor({ timeout: SLOW })
    await dispenser.emulateMedia({ media: 'print' })
    const ticket = await dispenser.getByTestId('issued').boundingBox()
    const mm = 96 / 25.4
    expect(ticket!.width).toBeLessThanOrEqual(80 * mm)
    expect(await dispenser.getByTestId('issued-number').isVisible()).toBe(true)
    const pdf = await dispenser.pdf({ width: '80mm', height: '120mm' })
    expect(pdf.byteLength).toBeGreaterThan(1000)
    await dispenser.emulateMedia({ media: 'screen' })
  }, 60_000)

  test('sign-out ends the session: the console’s next action shows the sign-in', async () => {
    // Signed out from another tab of the same browser.
    const other = await chromium.context.newPage()
    await other.goto(`${server.base}/staff`)
    await other.getByTestId('sign-out').click({ timeout: SLOW })
    await other.getByTestId('signin').waitFor({ timeout: SLOW })
    await consolePage.bringToFront()
    await consolePage.keyboard.press('f')
    await consolePage.getByTestId('signin').waitFor({ timeout: LIVE })
    expect(await consolePage.textContent('body')).toContain('La sesión terminó. Ingrese de nuevo.')
    // The session is dead for the server too.
    const res = await consolePage.evaluate(() => fetch('/api/sessions/current').then((r) => r.status))
    expect(res).toBe(401)
  }, 60_000)

  test('a revoked dispenser token: the page answers 404 and shows the disabled screen', async () => {
    const token = decodeURIComponent(new URL(dispenserUrl).pathname.split('/').pop()!)
    const listed = await ok('GET', '/api/ventanilla/dispenser-tokens')
    await ok('DELETE', `/api/ventanilla/dispenser-tokens/${listed.data[0].id}`)
    const page = await chromium.context.newPage()
    const res = await page.goto(`${server.base}/dispenser/${token}`)
    expect(res!.status()).toBe(404)
    await page.getByRole('heading', { name: 'Dispensador deshabilitado' }).waitFor({ timeout: SLOW })
    // The open dispenser finds out by itself at its next check of the server (every 15 s), before anyone touches it.
    await dispenser.getByRole('heading', { name: 'Dispensador deshabilitado' }).waitFor({ timeout: 20_000 })
  }, 60_000)
})
