/**
 * Accessibility of every screen app, checked by axe-core (every rule it runs by default, WCAG A/AA and best
 * practices, page-has-heading-one among them) on a real server with real data: no violation of any impact.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import type { RunningServer } from '../server'
import { ensureKioskBuilt, launchChromium, ROOT, type Chromium } from './browser'
import { openScene, type Scene } from './scene'
import { settled } from './layout'

const SLOW = 45_000
const PASSWORD = 'mostrador seguro 2026'
const AXE_SOURCE = readFileSync(join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8')

let scene: Scene
let server: RunningServer
let chromium: Chromium
let key: string
let companyId: number
let email: string
let kioskUrl: string
let dispenserUrl: string

const ok: Scene['ok'] = (...args) => scene.ok(...args)

interface Violation {
  id: string
  impact: string
  help: string
  nodes: { target: string[]; failureSummary: string }[]
}

/**
 * axe-core's own script, evaluated in the page by the driver: the pages' CSP (script-src 'self') rightly refuses a
 * script tag that is not theirs, and evaluation through the DevTools protocol is not subject to it.
 */
async function violations(page: Page): Promise<{ id: string; impact: string; help: string; targets: string[] }[]> {
  await settled(page)
  await page.evaluate(AXE_SOURCE)
  const found = (await page.evaluate(async () => (await (window as unknown as { axe: { run(): Promise<{ violations: unknown[] }> } }).axe.run()).violations)) as Violation[]
  return found.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => `${n.target.join(' ')}: ${n.failureSummary}`) }))
}

beforeAll(async () => {
  ensureKioskBuilt()
  scene = await openScene('Cambios Accesibles')
  ;({ server, key, companyId } = scene)
  await ok('PUT', '/api/ventanilla/settings', {
    logoUrl: '',
    showLogo: false,
    timezone: 'America/Argentina/Buenos_Aires',
    tickerText: 'Bienvenidos · Horario de 9 a 17 h',
    announceSound: false,
    announceTts: false,
    privacyMode: 'first_last_initial',
  })
  await ok('PUT', '/api/ventanilla/rates', { rates: [{ currency: 'USD', buy: 1185, sell: 1205.5 }, { currency: 'EUR', buy: 1290.5, sell: 1335 }] })
  const a = (await ok('POST', '/api/ventanilla/services', { name: 'Compra/Venta de divisas', prefix: 'A' })).id
  await ok('POST', '/api/ventanilla/services', { name: 'Transferencias', prefix: 'B' })
  for (const name of ['Juan Pérez', 'María González', 'Ana Ruiz']) {
    await ok('POST', '/api/ventanilla/tickets', { service_id: a, customer_name: name })
    await ok('POST', '/api/ventanilla/calls', { desk: 'Caja 2', service_id: a })
  }
  await ok('POST', '/api/ventanilla/tickets', { service_id: a })
  email = `cajera.${process.pid}@axe-e2e.test`
  await ok('POST', '/api/employees', { email, name: 'Lucía Fernández', permissions: ['ventanilla.call'], password: PASSWORD })
  kioskUrl = (await ok('POST', '/api/ventanilla/tokens', { name: 'TV' })).kiosk_url
  dispenserUrl = (await ok('POST', '/api/ventanilla/dispenser-tokens', { name: 'Tablet' })).dispenser_url
  chromium = await launchChromium({ width: 1366, height: 768 })
}, 120_000)

afterAll(async () => {
  await chromium?.close()
  await scene?.stop()
})

describe('axe-core finds nothing', () => {
  test('kiosk board, and its disabled page', async () => {
    const page = await chromium.context.newPage()
    await page.setViewportSize({ width: 1920, height: 1080 })
    await page.goto(kioskUrl)
    await page.getByTestId('recent-calls').waitFor({ timeout: SLOW })
    expect(await violations(page)).toEqual([])
    await page.goto(`${server.base}/kiosk/not-a-token`)
    await page.getByRole('heading', { name: 'Pantalla deshabilitada' }).waitFor({ timeout: SLOW })
    expect(await violations(page)).toEqual([])
    await page.close()
  }, 60_000)

  test('dispenser menu and issued number', async () => {
    const page = await chromium.context.newPage()
    await page.setViewportSize({ width: 1280, height: 800 })
    await page.goto(dispenserUrl)
    await page.getByTestId('service-button').first().waitFor({ timeout: SLOW })
    expect(await violations(page)).toEqual([])
    await page.getByTestId('service-button').first().click()
    await page.getByTestId('issued-number').waitFor({ timeout: SLOW })
    expect(await violations(page)).toEqual([])
    await page.close()
  }, 60_000)

  test('dispenser name step, empty and with its message, at both tablet sizes', async () => {
    await ok('PATCH', '/api/ventanilla/settings', { dispenserAsksName: 'optional' })
    const page = await chromium.context.newPage()
    try {
      for (const [width, height] of [
        [1280, 800],
        [800, 1280],
      ]) {
        await page.setViewportSize({ width, height })
        await page.goto(dispenserUrl)
        await page.getByTestId('service-button').first().click({ timeout: SLOW })
        await page.getByTestId('name-step').waitFor()
        expect(await violations(page)).toEqual([])
        await page.getByTestId('name-continue').click()
        await page.getByTestId('name-error').waitFor()
        expect(await violations(page)).toEqual([])
      }
    } finally {
      await page.close()
      await ok('PATCH', '/api/ventanilla/settings', { dispenserAsksName: 'off' })
    }
  }, 60_000)

  test('counter console: sign-in (with its messages), setup and desk', async () => {
    const page = await chromium.context.newPage()
    await page.goto(`${server.base}/staff`)
    await page.getByTestId('signin').waitFor({ timeout: SLOW })
    expect(await violations(page)).toEqual([])
    await page.keyboard.press('Enter')
    await page.getByTestId('signin-company-error').waitFor()
    expect(await violations(page)).toEqual([])
    await page.locator('input[name=company]').fill(String(companyId))
    await page.locator('input[name=email]').fill(email)
    await page.locator('input[name=password]').fill(PASSWORD)
    await page.keyboard.press('Enter')
    await page.getByTestId('setup').waitFor({ timeout: SLOW })
    expect(await violations(page)).toEqual([])
    await page.locator('input[name=desk]').fill('Caja 3')
    await page.getByRole('checkbox').first().check()
    await page.getByRole('button', { name: 'Comenzar' }).click()
    await page.getByTestId('queue-A').waitFor({ timeout: SLOW })
    await page.keyboard.press('Space')
    await page.getByTestId('current-ticket').waitFor({ timeout: SLOW })
    expect(await violations(page)).toEqual([])
    await page.keyboard.press('e')
    await page.getByTestId('name-edit').waitFor()
    expect(await violations(page)).toEqual([])
    await page.close()
  }, 60_000)
})
