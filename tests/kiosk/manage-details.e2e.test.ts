/**
 * The manager app's sections as a newcomer reads them: the audit log in words and in the company's time, a dispenser
 * named as itself, Enter past the last rate, long service names, the Pantalla preview with every currency and the
 * company's name, an empty queue in the Monitor. A real server and the built apps in Chromium at 1366×768.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { ensureKioskBuilt, launchChromium, ROOT, type Chromium } from './browser'
import { findLayoutProblems, settled } from './layout'
import { openScene, type Scene } from './scene'

const SLOW = 45_000
const PASSWORD = 'gerencia segura 2026'
const ZONE = 'America/Argentina/Buenos_Aires'
/** With SCREENSHOTS=1 each section is written to docs/polish/ (SCREENSHOT_STAGE=before on the old code). */
const PICTURES = process.env.SCREENSHOTS === '1' ? join(ROOT, 'docs/polish') : null
const STAGE = process.env.SCREENSHOT_STAGE ?? 'after'
const CURRENCIES = ['USD', 'EUR', 'BRL', 'UYU', 'CLP', 'PYG', 'GBP', 'CHF', 'JPY', 'CNY', 'MXN', 'USDT']
const LONG_SERVICE = 'Compra y venta de divisas, cheques de viajero y transferencias al exterior'

let scene: Scene
let chromium: Chromium
let page: Page
let companyName: string

const picture = async (name: string) => {
  if (PICTURES) await page.screenshot({ path: join(PICTURES, `manage-${name}-1366x768-${STAGE}.png`), fullPage: true })
}
const section = async (path: string, testid: string) => {
  await page.locator(`nav a[href="/manage/${path}"]`).click()
  await page.getByTestId(testid).waitFor({ timeout: SLOW })
}

beforeAll(async () => {
  ensureKioskBuilt()
  scene = await openScene('Cambios Detalle')
  // As openScene names it.
  companyName = `Cambios Detalle ${process.pid}`
  const email = `duena.${process.pid}@details-e2e.test`
  await scene.ok('POST', '/api/employees', { email, name: 'Sofía Martínez', permissions: ['company.admin'], password: PASSWORD })
  await scene.ok('PUT', '/api/ventanilla/rates', { rates: CURRENCIES.map((currency, i) => ({ currency, buy: 100 + i, sell: 110 + i })) })
  const long = (await scene.ok('POST', '/api/ventanilla/services', { name: LONG_SERVICE, prefix: 'A' })).id
  await scene.ok('POST', '/api/ventanilla/services', { name: 'Pagos', prefix: 'B' })
  const dispenser = await scene.ok('POST', '/api/ventanilla/dispenser-tokens', { name: 'Tablet entrada' })
  await scene.ok('POST', `/api/public/ventanilla/${dispenser.token}/tickets`, { service_id: long }, {})

  chromium = await launchChromium({ width: 1366, height: 768 })
  page = await chromium.context.newPage()
  await page.goto(`${scene.server.base}/manage?empresa=${scene.companyId}`)
  await page.getByTestId('signin').waitFor({ timeout: SLOW })
  await page.locator('input[name=email]').fill(email)
  await page.locator('input[name=password]').fill(PASSWORD)
  await page.keyboard.press('Enter')
  await page.getByTestId('rates-section').waitFor({ timeout: SLOW })
}, 120_000)

afterAll(async () => {
  await chromium?.close()
  await scene?.stop()
})

describe('the manager app, read by a newcomer', () => {
  test('Auditoría: records in words, times in the company\'s zone (es-AR), a dispenser\'s ticket named by its dispenser', async () => {
    await section('auditoria', 'audit-section')
    await page.getByTestId('audit-entry').first().waitFor({ timeout: SLOW })
    await settled(page)
    await picture('audit')
    const entries = await page.getByTestId('audit-entry').evaluateAll((rows) => rows.map((r) => Array.from(r.querySelectorAll('td'), (td) => td.textContent ?? '')))
    // Not one table name: every record is named in words.
    expect(entries.filter(([, , , what]) => /[a-z]+_[a-z]+/.test(what)).map(([, , , what]) => what)).toEqual([])
    const api = (await scene.ok('GET', '/api/audit-logs?table=ventanilla_tickets')).data as { timestamp: string }[]
    const ticket = entries.find(([, , , what]) => what.includes('Turno'))
    expect(ticket).toBeDefined()
    const [, at, who, what] = ticket!
    expect(what).toStartWith('Alta · Turno')
    expect(who).toBe('Dispensador «Tablet entrada»')
    const local = new Intl.DateTimeFormat('es-AR', { day: '2-digit', month: '2-digit', year: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23', timeZone: ZONE }).format(new Date(api[0].timestamp))
    expect(at).toBe(local)
    // The filter offers the records in words, and each one answers.
    const options = await page.locator('select[name=table] option').allTextContents()
    expect(options).toContain('Turnos')
    for (const value of await page.locator('select[name=table] option').evaluateAll((o) => o.map((x) => (x as HTMLOptionElement).value)))
      if (value) expect([value, (await fetch(`${scene.server.base}/api/audit-logs?table=${value}`, { headers: { 'x-api-key': scene.key } })).status]).toEqual([value, 200])
  })

  test('Cotizaciones: Enter on the last cell adds a row and lands in its currency', async () => {
    await section('cotizaciones', 'rates-section')
    await page.getByTestId('rate-row').nth(CURRENCIES.length - 1).waitFor({ timeout: SLOW })
    await page.getByTestId('rate-sell').last().focus()
    await page.keyboard.press('Enter')
    await page.getByTestId('rate-row').nth(CURRENCIES.length).waitFor({ timeout: SLOW })
    expect(await page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.testid)).toBe('rate-currency')
    expect(await page.getByTestId('rate-currency').last().evaluate((el) => el === document.activeElement)).toBe(true)
    await page.keyboard.type('ARS')
  })

  test('Servicios: a long name reads whole, nothing cut or scrolled', async () => {
    await section('servicios', 'services-section')
    await page.getByTestId('service-row').first().waitFor({ timeout: SLOW })
    await settled(page)
    await picture('services')
    const name = page.getByTestId('service-name').first()
    expect(await name.inputValue()).toBe(LONG_SERVICE)
    expect(await name.evaluate((el) => el.scrollWidth <= el.clientWidth + 1)).toBe(true)
    // The «Saltar al contenido» link waits off screen until the keyboard reaches it.
    expect((await findLayoutProblems(page)).filter((p) => !p.what.startsWith('a.skip'))).toEqual([])
  })

  test('Pantalla: the preview shows all twelve currencies and the company\'s own name', async () => {
    await section('pantalla', 'display-section')
    const preview = page.getByTestId('preview')
    await preview.getByText('USD', { exact: true }).waitFor({ timeout: SLOW })
    await settled(page)
    await picture('display')
    expect(await page.getByTestId('preview-name').textContent()).toBe(companyName)
    const shown = await preview.evaluate((figure) => {
      const tv = figure.querySelector('.tv')!.getBoundingClientRect()
      return Array.from(figure.querySelectorAll('.tv-rates tr'))
        .filter((row) => {
          const r = row.getBoundingClientRect()
          return r.height > 0 && r.top >= tv.top - 0.5 && r.bottom <= tv.bottom + 0.5
        })
        .map((row) => row.querySelector('td')?.textContent)
    })
    expect(shown).toEqual(CURRENCIES)
  })

  test('an old or used setup link opens a page in Spanish that leads to the manager app', async () => {
    const old = await chromium.context.newPage()
    try {
      const answer = await old.goto(`${scene.server.base}/setup#${'x'.repeat(43)}`)
      expect(answer?.status()).toBe(404)
      await old.getByRole('heading', { name: 'Este servicio ya está configurado' }).waitFor({ timeout: SLOW })
      if (PICTURES) await old.screenshot({ path: join(PICTURES, `setup-used-link-1366x768-${STAGE}.png`) })
      expect(await old.locator('body').innerText()).not.toContain('NOT_FOUND')
      await old.getByRole('link', { name: 'Ir al panel de gestión' }).click()
      // Signed in already in this browser: the link lands in the app itself.
      await old.getByTestId('rates-section').waitFor({ timeout: SLOW })
    } finally {
      await old.close()
    }
  })

  test('Monitor: a service with nobody waiting says so, without a number in front', async () => {
    await section('monitor', 'monitor-section')
    const empty = page.getByTestId('monitor-queue-B')
    await empty.waitFor({ timeout: SLOW })
    await settled(page)
    await picture('monitor')
    expect(await empty.innerText()).toContain('Nadie espera')
    expect(await empty.locator('li').count()).toBe(0)
  })
})
