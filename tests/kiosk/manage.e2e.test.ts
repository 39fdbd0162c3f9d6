/**
 * End to end: a real server process, the built apps and Debian's chromium driven by playwright-core. An owner runs
 * the branch from /manage while the kiosk, the dispenser and the counter console react; a cashier finds no manager
 * section; axe-core finds no violation on any section.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Page } from 'playwright-core'
import type { RunningServer } from '../server'
import { ensureKioskBuilt, launchChromium, type Chromium } from './browser'
import { openSection } from './manage'
import { axeViolations, openScene, type Scene } from './scene'

const SLOW = 45_000
/** The contract's bound from a change to every screen that shows it. */
const LIVE = 2_000
const PASSWORD = 'gerencia segura 2026'
const CASHIER_PASSWORD = 'caja segura de 2026'

let scene: Scene
let server: RunningServer
let chromium: Chromium
let key: string
let companyId: number
let ownerEmail: string
let kioskUrl: string
let page: Page

const ok: Scene['ok'] = (...args) => scene.ok(...args)

const section = (path: string, testid: string) => openSection(page, path, testid, SLOW)

beforeAll(async () => {
  ensureKioskBuilt()
  scene = await openScene('Cambios Gerencia')
  ;({ server, key, companyId } = scene)
  ownerEmail = `duena.${process.pid}@manage-e2e.test`
  await ok('POST', '/api/employees', { email: ownerEmail, name: 'Sofía Martínez', permissions: (process.env.MANAGE_E2E_OWNER ?? 'company.admin').split(','), password: PASSWORD })
  kioskUrl = (await ok('POST', '/api/ventanilla/tokens', { name: 'TV sala' })).kiosk_url
  chromium = await launchChromium({ width: 1366, height: 768 })
}, 120_000)

afterAll(async () => {
  await chromium?.close()
  await scene?.stop()
})

describe('the manager app', () => {
  test('an owner signs in with the keyboard and lands on Cotizaciones, every section offered under its heading, the menu in view', async () => {
    page = await chromium.context.newPage()
    await page.goto(`${server.base}/manage?empresa=${companyId}`)
    await page.getByTestId('signin').waitFor({ timeout: SLOW })
    expect(await page.locator('input[name=company]').inputValue()).toBe(String(companyId))
    expect(await axeViolations(page)).toEqual([])
    await page.keyboard.type(ownerEmail)
    await page.keyboard.press('Tab')
    await page.keyboard.type(PASSWORD)
    await page.keyboard.press('Enter')
    await page.getByTestId('rates-section').waitFor({ timeout: SLOW })
    expect(new URL(page.url()).pathname).toBe('/manage/cotizaciones')
    const menu = page.getByTestId('nav')
    expect(await menu.locator('h2').allTextContents()).toEqual(['Ventanilla', 'Dinero', 'Control', 'Configuración'])
    expect(await menu.getByTestId('menu-group').evaluateAll((groups) => groups.map((g) => Array.from(g.querySelectorAll('a')).map((a) => a.textContent)))).toEqual([
      ['Cotizaciones', 'Pantalla', 'Servicios', 'Pantallas y dispensadores', 'Monitor', 'Estadísticas'],
      ['Nueva operación', 'Operaciones', 'Posición de caja', 'Cajas', 'Clientes y cajas', 'Mesas', 'Centros de costo'],
      ['Resultado', 'Auditoría'],
      ['Empresa', 'Personal', 'Tipos', 'Etiquetas', 'Herramientas del bot', 'Integraciones'],
    ])
    // Each group is named by its heading for a screen reader.
    expect(await menu.getByRole('group', { name: 'Dinero' }).locator('a').count()).toBe(7)
    // At 1366×768 the whole menu is in view beside the page: nothing of it below the fold, nothing to scroll.
    const fit = await menu.evaluate((nav) => ({
      bottom: Math.max(...Array.from(nav.querySelectorAll('a')).map((a) => a.getBoundingClientRect().bottom)),
      scrolls: nav.firstElementChild!.scrollHeight > nav.firstElementChild!.clientHeight,
      page: document.documentElement.scrollHeight > innerHeight,
    }))
    expect(fit.bottom).toBeLessThanOrEqual(768)
    expect(fit).toMatchObject({ scrolls: false, page: false })
    // The keyboard walks the menu in its order: after the last section of one heading comes the first of the next.
    await menu.locator('a', { hasText: 'Estadísticas' }).focus()
    await page.keyboard.press('Tab')
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Nueva operación')
    await page.keyboard.press('Enter')
    await page.getByTestId('new-operation-section').waitFor({ timeout: SLOW })
    expect(await axeViolations(page)).toEqual([])
    await section('clientes', 'clients-section')
    if (process.env.MANAGE_MENU_SCREENSHOT) {
      await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur())
      await page.screenshot({ path: process.env.MANAGE_MENU_SCREENSHOT })
    }
    await section('cotizaciones', 'rates-section')
  }, 60_000)

  test('a comma where the dot goes is refused in words; a USD rate saved with Ctrl+S reaches the open kiosk within 2 s', async () => {
    const kiosk = await chromium.context.newPage()
    await kiosk.setViewportSize({ width: 1280, height: 720 })
    await kiosk.goto(kioskUrl)
    await kiosk.getByTestId('current-call').waitFor({ timeout: SLOW })
    await page.bringToFront()

    await page.getByTestId('rates-add').click()
    // Keyboard through the cells: the new row's currency has the focus; Enter moves on like Tab.
    await page.keyboard.type('usd')
    await page.keyboard.press('Enter')
    await page.keyboard.type('1,165.50')
    await page.keyboard.press('Tab')
    await page.keyboard.type('1.205,50')
    await page.keyboard.press('Control+s')
    expect(await page.getByTestId('cell-error').textContent({ timeout: SLOW })).toContain('Separador equivocado')
    expect(await page.getByTestId('message').textContent()).toBe('Hay valores para corregir; no se publicó nada.')
    expect((await ok('GET', '/api/ventanilla/rates')).rates).toEqual([])

    // Sell below buy waits for a confirmation; nothing is published meanwhile.
    await page.getByTestId('rate-buy').fill('1.305,50')
    await page.keyboard.press('Control+s')
    expect(await page.getByTestId('rates-inverted').textContent({ timeout: SLOW })).toContain('USD')
    expect((await ok('GET', '/api/ventanilla/rates')).rates).toEqual([])
    await page.getByRole('button', { name: 'No, corregir' }).click()

    await page.getByTestId('rate-buy').fill('1.165,50')
    const saved = Date.now()
    await page.keyboard.press('Control+s')
    await kiosk.getByTestId('rates').getByText('1.165,50').waitFor({ timeout: LIVE })
    expect(Date.now() - saved).toBeLessThan(LIVE)
    expect(await kiosk.getByTestId('rates').textContent()).toContain('1.205,50')
    expect(await page.getByTestId('message').textContent({ timeout: SLOW })).toContain('Cotizaciones publicadas')
    const rates = await ok('GET', '/api/ventanilla/rates')
    expect(rates.rates).toEqual([{ currency: 'USD', buy: 1165.5, sell: 1205.5, mid: 1185.5 }])
    expect(rates.updated_by).toBe('Sofía Martínez')
    expect(await page.getByTestId('rates-updated').textContent()).toContain('por Sofía Martínez')
    await kiosk.close()
  }, 60_000)

  test('Pantalla: an empty ticker and an http logo are refused in words with nothing saved; a valid change is saved', async () => {
    await section('pantalla', 'display-section')
    await page.getByRole('button', { name: 'Guardar' }).waitFor()
    await page.waitForFunction(() => !(document.querySelector('[data-testid=display-save]') as HTMLButtonElement).disabled, undefined, { timeout: SLOW })
    const before = await ok('GET', '/api/ventanilla/settings')
    await page.locator('textarea[name=tickerText]').fill('   ')
    await page.locator('input[name=logoUrl]').fill('http://logos.example/casa.png')
    await page.getByTestId('display-save').click()
    expect(await page.getByTestId('tickerText-error').textContent()).toContain('marquesina')
    expect(await page.getByTestId('logoUrl-error').textContent()).toBe('El logo debe ser una dirección segura que empiece con https://')
    expect(await ok('GET', '/api/ventanilla/settings')).toEqual(before)

    await page.locator('input[name=logoUrl]').fill('')
    await page.locator('textarea[name=tickerText]').fill('Abierto de 10 a 18 h')
    await page.locator('input[name=displayName]').fill('Casa Central')
    expect(await page.getByTestId('preview-name').textContent()).toBe('Casa Central')
    expect(await page.getByTestId('preview-ticker').textContent()).toBe('Abierto de 10 a 18 h')
    await page.locator('select[name=privacyMode]').selectOption('ticket')
    await page.getByTestId('display-save').click()
    expect(await page.getByTestId('message').textContent({ timeout: SLOW })).toContain('Pantalla guardada')
    const after = await ok('GET', '/api/ventanilla/settings')
    expect(after).toMatchObject({ displayName: 'Casa Central', tickerText: 'Abierto de 10 a 18 h', privacyMode: 'ticket', logoUrl: '' })
    expect(await axeViolations(page)).toEqual([])
  }, 60_000)

  test('Servicios: created, renamed, prefix changed and deleted; a duplicate prefix is refused in words', async () => {
    await section('servicios', 'services-section')
    const form = page.getByTestId('service-create')
    await form.locator('input[name=name]').fill('Cambio de divisas')
    await form.locator('input[name=prefix]').fill('a')
    await form.getByRole('button', { name: 'Crear servicio' }).click()
    expect(await page.getByTestId('service-create-message').textContent({ timeout: SLOW })).toBe('Servicio «Cambio de divisas» creado con el prefijo A.')
    await form.locator('input[name=name]').fill('Otro servicio')
    await form.locator('input[name=prefix]').fill('A')
    await form.getByRole('button', { name: 'Crear servicio' }).click()
    expect(await page.getByTestId('service-create-message').textContent({ timeout: SLOW })).toBe('Ya hay otro servicio con el prefijo A. Elija otro.')
    expect((await ok('GET', '/api/ventanilla/services')).data.map((s: { prefix: string }) => s.prefix)).toEqual(['A'])
    expect(await page.getByTestId('service-row').count()).toBe(1)

    // A second one: its prefix changed to a taken one is refused; renamed with a free prefix it is saved; then deleted.
    await form.locator('input[name=name]').fill('Pagos')
    await form.locator('input[name=prefix]').fill('B')
    await form.getByRole('button', { name: 'Crear servicio' }).click()
    const second = page.getByTestId('service-row').nth(1)
    await second.waitFor({ timeout: SLOW })
    await second.getByTestId('service-prefix').fill('A')
    await second.getByRole('button', { name: 'Guardar' }).click()
    expect(await second.getByTestId('message').textContent({ timeout: SLOW })).toBe('Ya hay otro servicio con el prefijo A. Elija otro.')
    await second.getByTestId('service-name').fill('Pagos y cobranzas')
    await second.getByTestId('service-prefix').fill('P')
    await second.getByRole('button', { name: 'Guardar' }).click()
    expect(await second.getByTestId('message').textContent({ timeout: SLOW })).toBe('Guardado.')
    expect((await ok('GET', '/api/ventanilla/services')).data.map((s: { name: string; prefix: string }) => `${s.prefix} ${s.name}`)).toEqual([
      'A Cambio de divisas',
      'P Pagos y cobranzas',
    ])
    await second.getByRole('button', { name: 'Eliminar' }).click()
    await second.getByTestId('service-delete-confirm').click()
    await page.getByTestId('service-row').nth(1).waitFor({ state: 'detached', timeout: SLOW })
    expect((await ok('GET', '/api/ventanilla/services')).data.map((s: { prefix: string }) => s.prefix)).toEqual(['A'])
    expect(await axeViolations(page)).toEqual([])
  }, 60_000)

  test('a dispenser link made here, shown once with its QR code, issues a ticket that the Monitor shows within 2 s', async () => {
    await section('enlaces', 'links-section')
    const dispensers = page.getByTestId('tokens-dispenser')
    await dispensers.getByTestId('token-name').fill('Tablet entrada')
    await dispensers.getByTestId('token-create').click()
    const link = dispensers.getByTestId('new-link')
    await link.waitFor({ timeout: SLOW })
    expect(await link.locator('svg').count()).toBe(1)
    const dispenserUrl = (await link.getByTestId('new-link-url').textContent())!
    expect(dispenserUrl).toStartWith(`${server.base}/dispenser/`)
    expect(await axeViolations(page)).toEqual([])

    // A link revoked elsewhere meanwhile: the stale list's revoke says so in words.
    const kiosks = page.getByTestId('tokens-kiosk')
    await kiosks.getByTestId('token-row').first().waitFor()
    const [tv] = (await ok('GET', '/api/ventanilla/tokens')).data
    await ok('DELETE', `/api/ventanilla/tokens/${tv.id}`)
    await kiosks.getByTestId('token-revoke').first().click()
    expect(await kiosks.getByTestId('message').textContent({ timeout: SLOW })).toBe('Ese enlace ya estaba revocado: ya no abre ninguna pantalla.')
    await kiosks.getByTestId('token-row').first().waitFor({ state: 'detached', timeout: SLOW })

    await section('monitor', 'monitor-section')
    await page.getByTestId('monitor-queue-A').waitFor({ timeout: SLOW })
    expect(await page.getByTestId('monitor-queue-A').getByTestId('monitor-count').textContent()).toBe('0 en espera')
    const dispenser = await chromium.context.newPage()
    await dispenser.setViewportSize({ width: 1024, height: 768 })
    await dispenser.goto(dispenserUrl)
    await dispenser.getByTestId('service-button').first().click({ timeout: SLOW })
    const number = (await dispenser.getByTestId('issued-number').textContent({ timeout: SLOW }))!
    const issued = Date.now()
    await page.getByTestId('monitor-ticket').filter({ hasText: number }).waitFor({ timeout: LIVE })
    expect(Date.now() - issued).toBeLessThan(LIVE)
    expect(number).toBe('A-001')
    await dispenser.close()

    // A call at a desk shows as that desk's customer.
    const called = Date.now()
    await ok('POST', '/api/ventanilla/calls', { desk: 'Caja 4' })
    await page.getByTestId('serving-row').filter({ hasText: 'Caja 4' }).filter({ hasText: 'A-001' }).waitFor({ timeout: LIVE })
    expect(Date.now() - called).toBeLessThan(LIVE)
    expect(await axeViolations(page)).toEqual([])
  }, 60_000)

  test('Estadísticas: the chart draws the counts GET /api/ventanilla/stats answers, and the CSV downloads', async () => {
    await section('estadisticas', 'stats-section')
    await page.getByTestId('stats-row').first().waitFor({ timeout: SLOW })
    const from = await page.locator('input[name=from]').inputValue()
    const to = await page.locator('input[name=to]').inputValue()
    const api = (await ok('GET', `/api/ventanilla/stats?from=${from}&to=${to}`)).data as { date: string; issued: number; served: number; no_show: number }[]
    expect(api.reduce((a, r) => a + r.issued, 0)).toBe(1)
    const drawn = JSON.parse((await page.getByTestId('chart-counts').getAttribute('data-series'))!) as { series: { label: string; data: number[] }[] }
    const days = [...new Set(api.map((r) => r.date))].sort()
    const per = (k: 'issued' | 'served' | 'no_show') => days.map((d) => api.filter((r) => r.date === d).reduce((a, r) => a + r[k], 0))
    expect(drawn.series.map((s) => [s.label, s.data])).toEqual([
      ['Emitidos', per('issued')],
      ['Atendidos', per('served')],
      ['Ausentes', per('no_show')],
    ])
    expect(await page.getByTestId('stats-row').first().textContent()).toContain('Cambio de divisas')
    const csv = await page.evaluate(async (href) => {
      const res = await fetch(href!)
      return { type: res.headers.get('content-type'), text: await res.text() }
    }, await page.getByTestId('stats-csv').getAttribute('href'))
    expect(csv.type).toContain('text/csv')
    // For an es-AR spreadsheet: Spanish headings, `;` between them.
    expect(csv.text.split('\r\n')[0].replace(/^\ufeff/, '').split(';')).toContain('Emitidos')
    expect(await axeViolations(page)).toEqual([])
  }, 60_000)

  test('every section fits a tablet either way up and the 1366×768 counter PC without sideways scrolling', async () => {
    const sections: [string, string][] = [
      ['cotizaciones', 'rates-section'],
      ['pantalla', 'display-section'],
      ['servicios', 'services-section'],
      ['enlaces', 'links-section'],
      ['personal', 'staff-section'],
      ['monitor', 'monitor-section'],
      ['estadisticas', 'stats-section'],
    ]
    for (const size of [
      { width: 1024, height: 768 },
      { width: 768, height: 1024 },
      { width: 1366, height: 768 },
    ]) {
      await page.setViewportSize(size)
      for (const [path, testid] of sections) {
        await section(path, testid)
        const width = await page.evaluate(() => document.documentElement.scrollWidth)
        expect(`${path} at ${size.width}: ${width}`).toBe(`${path} at ${size.width}: ${size.width}`)
      }
    }
  }, 60_000)

  test('Personal: a cashier made here with a password signs in at /staff, sees no manager section and gets 403 from their routes', async () => {
    await section('personal', 'staff-section')
    expect(await page.getByTestId('console-link').textContent()).toBe(`${server.base}/staff?empresa=${companyId}`)
    expect(await page.getByTestId('manage-link').textContent()).toBe(`${server.base}/manage?empresa=${companyId}`)
    const form = page.getByTestId('employee-create')
    const cashier = `cajero.${process.pid}@manage-e2e.test`
    await form.locator('input[name=name]').fill('Pablo Gómez')
    await form.locator('input[name=email]').fill(cashier)
    await form.locator('input[name=password]').fill('corta')
    await form.locator('select[name=preset]').selectOption('Cajero')
    await page.getByTestId('employee-save').click()
    expect(await page.getByTestId('employee-message').textContent()).toContain('al menos 12 caracteres')
    await form.locator('input[name=password]').fill(CASHIER_PASSWORD)
    await page.getByTestId('employee-save').click()
    expect(await page.getByTestId('employee-message').textContent({ timeout: SLOW })).toBe('Pablo Gómez ya puede ingresar en la consola con su correo y contraseña.')
    const made = (await ok('GET', '/api/employees')).data.find((e: { email: string }) => e.email === cashier)
    expect(made.permissions).toEqual(['ventanilla.call'])
    expect(await axeViolations(page)).toEqual([])

    await page.getByTestId('sign-out').click()
    await page.getByTestId('signin').waitFor({ timeout: SLOW })
    await page.goto(`${server.base}/staff?empresa=${companyId}`)
    await page.locator('input[name=email]').fill(cashier)
    await page.locator('input[name=password]').fill(CASHIER_PASSWORD)
    await page.keyboard.press('Enter')
    await page.getByTestId('setup').waitFor({ timeout: SLOW })

    await page.goto(`${server.base}/manage/cotizaciones`)
    await page.getByTestId('no-access').waitFor({ timeout: SLOW })
    expect(await page.getByTestId('nav').locator('a').count()).toBe(0)
    expect(await axeViolations(page)).toEqual([])
    const statuses = await page.evaluate(async () => {
      const send = (method: string, path: string, body?: unknown) =>
        fetch(path, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) }).then((r) => r.status)
      return [
        await send('PUT', '/api/ventanilla/rates', { rates: [] }),
        await send('PATCH', '/api/ventanilla/settings', { tickerText: 'x' }),
        await send('GET', '/api/ventanilla/stats'),
        await send('POST', '/api/ventanilla/services', { name: 'X', prefix: 'X' }),
        await send('GET', '/api/employees'),
      ]
    })
    expect(statuses).toEqual([403, 403, 403, 403, 403])
  }, 60_000)
})
