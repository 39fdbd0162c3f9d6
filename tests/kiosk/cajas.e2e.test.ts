/**
 * End to end for Cajas in /manage (contract §20): a cashier opens the caja with a count (by bills and coins for one
 * currency), an exchange happens, a close over the tolerance is explained and refused on screen to the cashier, a
 * supervisor closes it with the difference shown before confirming, and the day's report is read on screen and
 * downloaded. One real server and database, Debian's chromium at 1366×768 and 1920×1080, axe at every step.
 * CAJAS_SCREENSHOTS=1 writes the screens into docs/manage-cajas*.png (docs/manage.md).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import type { Locator, Page } from 'playwright-core'
import type { RunningServer } from '../server'
import { ensureKioskBuilt, launchChromium, ROOT, type Chromium } from './browser'
import { expectFitsSideways, signInToManage } from './manage'
import { axeViolations, openScene, type Scene } from './scene'
import { startAtCounter } from './staff'

const SLOW = 20_000
const PASSWORD = 'caja fuerte segura 2026'
const SHOTS = process.env.CAJAS_SCREENSHOTS === '1'
const MONEY = { accept: 'application/json; money=string' }

let scene: Scene
let server: RunningServer
let chromium: Chromium
let page: Page
let companyId: number
const caja = { id: 0 }
const email = (who: string) => `${who}.${process.pid}@cajas-e2e.test`

const ok = (method: string, path: string, body?: unknown) => scene.ok(method, path, body, { 'x-api-key': scene.key, ...MONEY })
const noViolations = async () => expect(await axeViolations(page)).toEqual([])

async function signIn(who: string) {
  await signInToManage(page, { base: server.base, companyId }, email(who), PASSWORD, SLOW)
  await page.locator('nav a[href="/manage/cajas"]').click()
  await page.getByTestId('caja').first().waitFor({ timeout: SLOW })
}

const fits = () => expectFitsSideways(page)

/** The evening count of the close test: 500 pesos short, the rest as the balances say. */
async function closingCount(form: Locator) {
  await line('ARS').getByTestId('count-amount').fill('2.267.800')
  await line('USD').getByTestId('count-amount').fill('10.200')
  await line('EUR').getByTestId('count-amount').fill('1.500,50')
  await line('BRL').getByTestId('count-amount').fill('0')
  await form.getByTestId('count-note').fill('Faltan 500 pesos: vuelto mal dado a las 11')
  await form.getByTestId('count-review').click()
}

async function shot(name: string, at?: Locator) {
  if (!SHOTS) return
  await at?.evaluate((el) => el.scrollIntoView({ block: 'start' }))
  await page.screenshot({ path: join(ROOT, `docs/manage-cajas${name}.png`), fullPage: true })
}

const line = (currency: string) => page.locator(`[data-testid=count-line][data-currency=${currency}]`)
const balances = async () =>
  Object.fromEntries(((await ok('GET', `/api/clients/${caja.id}`)).accounts as { currency_name: string; balance: string }[]).map((a) => [a.currency_name, a.balance]))

beforeAll(async () => {
  ensureKioskBuilt()
  scene = await openScene('Cambios Cajas', { ventanilla: true })
  ;({ server, companyId } = scene)
  const c = await ok('POST', '/api/clients', { name: 'Caja principal', type: 0, accounts: ['ARS', 'USD', 'EUR', 'BRL'].map((currency_name) => ({ currency_name })) })
  caja.id = c.id
  for (const [name, kind] of [['Compra de divisas', 'exchange'], ['Venta de divisas', 'exchange'], ['Ingreso', 'up_down'], ['Ajuste de caja', 'other']]) await ok('POST', '/api/operation-types', { name, kind })
  await ok('POST', '/api/transaction-types', { name: 'Comisión', is_commission: true })
  await ok('PUT', '/api/ventanilla/rates', { rates: [{ currency: 'USD', buy: '1165.5', sell: '1185.5' }] })
  const ingreso = (await ok('GET', '/api/operation-types')).data.find((t: { name: string }) => t.name === 'Ingreso').id
  const acc = (cur: string) => c.accounts.find((a: { currency_name: string }) => a.currency_name === cur).id
  await ok('POST', '/api/operations', {
    operation_type_id: ingreso,
    status: 'completed',
    transactions: [{ account_id: acc('ARS'), amount: '2500000' }, { account_id: acc('USD'), amount: '10000' }, { account_id: acc('EUR'), amount: '1500' }],
  })
  await ok('POST', '/api/employees', { email: email('cajera'), name: 'Lucía Cajera', permissions: ['tills.operate', 'operations.view', 'operations.create'], password: PASSWORD })
  await ok('POST', '/api/employees', { email: email('supervisor'), name: 'Jorge Supervisor', permissions: ['tills.operate', 'tills.supervise', 'operations.view'], password: PASSWORD })
  await ok('POST', '/api/employees', { email: email('mostrador'), name: 'Ana Mostrador', permissions: ['ventanilla.call', 'operations.create', 'clients.view'], password: PASSWORD })
  await ok('POST', '/api/ventanilla/services', { name: 'Cambio de divisas', prefix: 'A' })
  chromium = await launchChromium({ width: 1366, height: 768 })
  page = await chromium.context.newPage()
}, 120_000)

afterAll(async () => {
  await chromium?.close()
  await scene?.stop()
})

describe('Cajas', () => {
  test('a cashier opens with a count (USD by bills), the difference shown before confirming and booked', async () => {
    await signIn('cajera')
    const item = page.locator(`[data-testid=caja][data-caja="${caja.id}"]`)
    expect(await item.getByTestId('caja-state').textContent()).toBe('Sin abrir nunca')
    expect(await page.getByTestId('tolerance').textContent()).toContain('Tolerancia de la empresa: 0,00 por moneda.')
    await noViolations()
    await fits()
    await shot('', page.getByTestId('cajas-section'))

    await item.getByTestId('caja-open').click()
    const form = item.getByTestId('count-form')
    await form.waitFor({ timeout: SLOW })
    // The first field has the focus: the count is typed straight away.
    expect(await page.evaluate(() => (document.activeElement as HTMLInputElement | null)?.name)).toBe('counted-ARS')
    await line('ARS').getByTestId('count-amount').fill('2.499.900')
    await line('USD').getByTestId('count-by-notes').check()
    await line('USD').getByTestId('note-b100').fill('99')
    await line('USD').getByTestId('note-b50').fill('2')
    expect(await line('USD').getByTestId('count-amount').inputValue()).toBe('10.000,00')
    await line('EUR').getByTestId('count-amount').fill('1500,5')
    // BRL left empty: refused in words next to it, nothing sent.
    await form.getByTestId('count-review').click()
    expect(await line('BRL').getByTestId('count-error').textContent()).toBe('Escriba cuánto contó en BRL (0 si no hay).')
    expect(await form.getByTestId('count-message').textContent()).toBe('Hay conteos para corregir; no se envió nada.')
    await noViolations()
    await line('BRL').getByTestId('count-amount').fill('0')
    await form.getByTestId('count-review').click()
    const review = form.getByTestId('count-review-panel')
    await review.waitFor({ timeout: SLOW })
    expect(await review.locator('[data-testid=review-row][data-currency=ARS] [data-testid=review-difference]').textContent()).toBe('-100,00')
    expect(await review.locator('[data-testid=review-row][data-currency=EUR] [data-testid=review-difference]').textContent()).toBe('+0,50')
    expect(await review.getByTestId('review-words').textContent()).toBe(
      'Se registrará una operación «Ajuste de caja» para que el saldo quede igual a lo contado: faltan 100,00 ARS, sobran 0,50 EUR.',
    )
    // An opening needs no supervisor whatever the difference.
    expect(await review.getByTestId('review-supervisor').count()).toBe(0)
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('count-confirm')
    await noViolations()
    await fits()
    await shot('-open-review', form)

    await page.keyboard.press('Enter')
    const outcome = item.getByTestId('caja-outcome')
    await outcome.waitFor({ timeout: SLOW })
    expect(await item.getByTestId('caja-state').textContent()).toBe('Abierta')
    expect(await item.getByTestId('caja-since').textContent()).toContain('por Lucía Cajera')
    const [session] = (await ok('GET', `/api/cajas/${caja.id}/sessions`)).data
    expect(session.opening.find((r: { currency: string }) => r.currency === 'USD')).toEqual({
      currency: 'USD',
      expected: '10000',
      counted: '10000',
      difference: '0',
      denominations: [{ value: '100', count: 99 }, { value: '50', count: 2 }],
    })
    expect(await outcome.textContent()).toContain(`operación de ajuste N.º ${session.opening_adjustment_operation_id}: ARS -100,00, EUR +0,50`)
    expect(await balances()).toMatchObject({ ARS: '2499900', EUR: '1500.5', USD: '10000', BRL: '0' })
    await noViolations()
  })

  test('a close over the tolerance is explained and refused to the cashier; a supervisor closes it after seeing the difference', async () => {
    // The day's business: a purchase at the counter.
    const bought = await ok('POST', '/api/exchanges', { side: 'buy', currency: 'USD', amount: '200', caja_id: caja.id, commission: { amount: '1500' } })
    await page.reload()
    const item = page.locator(`[data-testid=caja][data-caja="${caja.id}"]`)
    await item.getByTestId('caja-close').click()
    const form = item.getByTestId('count-form')
    const now = await balances()
    expect(now.USD).toBe('10200')
    await closingCount(form)
    const review = form.getByTestId('count-review-panel')
    await review.waitFor({ timeout: SLOW })
    expect(await review.locator('[data-testid=review-row][data-currency=ARS] [data-testid=review-difference]').textContent()).toBe('-500,00')
    expect(await review.getByTestId('review-supervisor').textContent()).toBe(
      'La diferencia en ARS supera la tolerancia de la empresa (0,00). Cerrar así necesita un supervisor (permiso «Supervisar cajas»), y su usuario no lo tiene: cuente de nuevo, o pida a un supervisor que cierre la caja.',
    )
    expect(await review.getByTestId('count-confirm').isDisabled()).toBe(true)
    await noViolations()
    await fits()
    await shot('-close-refused', form)
    expect(await item.getByTestId('caja-state').textContent()).toBe('Abierta')

    await signIn('supervisor')
    await item.getByTestId('caja-close').click()
    await closingCount(form)
    await review.waitFor({ timeout: SLOW })
    expect(await review.getByTestId('review-supervisor').textContent()).toContain('Usted es supervisor')
    await noViolations()
    await shot('-close-review', form)
    await review.getByTestId('count-confirm').click()
    await item.getByTestId('caja-outcome').waitFor({ timeout: SLOW })
    expect(await item.getByTestId('caja-state').textContent()).toBe('Cerrada')
    expect(await item.getByTestId('caja-since').textContent()).toContain('por Jorge Supervisor')
    expect((await balances()).ARS).toBe('2267800')

    // The report, on screen and as files.
    await item.getByTestId('caja-history').click()
    await item.getByTestId('session-row').first().waitFor({ timeout: SLOW })
    await item.getByTestId('session-show').first().click()
    const report = item.getByTestId('report')
    await report.getByTestId('report-operation').first().waitFor({ timeout: SLOW })
    expect(await report.getByTestId('report-operation').count()).toBe(1)
    expect(await report.getByTestId('report-operation').textContent()).toContain(bought.receipt.number)
    expect(await report.getByTestId('report-differences').textContent()).toContain('cierre ARS -500,00')
    expect(await report.locator('[data-testid=report-summary-row][data-currency=USD] td').allTextContents()).toEqual(['200,00', '0,00', '1', '0,00', '+200,00', '10.000,00', '10.200,00'])
    expect(await report.getByTestId('report-json').textContent()).toContain(`"receipt_number": "${bought.receipt.number}"`)
    const csv = await page.evaluate(async (href) => {
      const bytes = new Uint8Array(await (await fetch(href)).arrayBuffer())
      return { bom: [...bytes.slice(0, 3)], text: new TextDecoder().decode(bytes.slice(3)) }
    }, (await item.getByTestId('session-csv').first().getAttribute('href'))!)
    expect(csv.bom).toEqual([0xef, 0xbb, 0xbf])
    expect(csv.text).toContain('Nota;Faltan 500 pesos: vuelto mal dado a las 11')
    const pdf = await page.evaluate(async (href) => {
      const res = await fetch(href)
      return { type: res.headers.get('content-type'), head: new TextDecoder().decode((await res.arrayBuffer()).slice(0, 5)) }
    }, (await item.getByTestId('session-pdf').first().getAttribute('href'))!)
    expect(pdf).toEqual({ type: 'application/pdf', head: '%PDF-' })
    // Reading and refreshing say nothing; only what was done is said, once, under the caja.
    expect(await page.locator('[data-testid=cajas-section] > [data-testid=message]').count()).toBe(0)
    expect(await item.getByTestId('sessions').getByTestId('message').count()).toBe(0)
    await noViolations()
    await fits()
    await shot('-report', item.getByTestId('sessions'))

    // Closed: the counter's exchange is refused.
    const refused = await fetch(`${server.base}/api/exchanges`, {
      method: 'POST',
      headers: { 'x-api-key': scene.key, 'content-type': 'application/json' },
      body: JSON.stringify({ side: 'sell', currency: 'USD', amount: '1', caja_id: caja.id }),
    })
    expect([refused.status, (await refused.json()).code]).toEqual([409, 'TILL_CLOSED'])
  })

  test('the counter shows whether its caja is open and refuses a purchase on a closed one in words', async () => {
    const desk = await chromium.context.newPage()
    await startAtCounter(desk, { base: server.base, companyId }, email('mostrador'), PASSWORD, 'Caja 1', SLOW)
    await ok('POST', '/api/ventanilla/tickets', { service_id: (await ok('GET', '/api/ventanilla/services')).data[0].id })
    await desk.getByTestId('queue-A').getByTestId('queue-ticket').first().waitFor({ timeout: SLOW })
    await desk.keyboard.press('Space')
    await desk.getByTestId('current-ticket').waitFor({ timeout: SLOW })
    await desk.keyboard.press('c')
    await desk.getByTestId('exchange').waitFor({ timeout: SLOW })
    await desk.waitForFunction(() => document.activeElement?.id === 'x-caja', undefined, { timeout: SLOW })
    await desk.locator('#x-caja').selectOption({ label: 'Caja principal (cerrada)' })
    const till = desk.getByTestId('x-till')
    expect(await till.textContent()).toMatch(/^Cerrada el \d{2}\/\d{2} \d{2}:\d{2}: no se puede operar$/)
    await desk.fill('#x-amount', '100')
    await desk.fill('#x-name', 'Carla Cliente')
    await desk.keyboard.press('Enter')
    expect(await desk.getByTestId('x-caja-error').textContent({ timeout: SLOW })).toBe(
      'La caja «Caja principal» está cerrada: no se puede comprar ni vender en ella hasta que un encargado la abra (Administración → Cajas).',
    )
    expect(await axeViolations(desk)).toEqual([])
    if (SHOTS) await desk.screenshot({ path: join(ROOT, 'docs/manage-cajas-counter-closed.png') })
    expect((await ok('GET', `/api/exchanges?caja_id=${caja.id}`)).pagination.total).toBe(1)

    // Opened meanwhile (by the supervisor, over the API): the same Enter now goes through, and the panel says so.
    await ok('POST', `/api/cajas/${caja.id}/open`, { counted: Object.entries(await balances()).map(([currency, amount]) => ({ currency, amount })) })
    await desk.keyboard.press('Escape')
    await desk.locator('#x-amount').press('Enter')
    await desk.getByTestId('x-done').waitFor({ timeout: SLOW })
    expect(await desk.getByTestId('x-till').textContent()).toMatch(/^Abierta desde \d{2}\/\d{2} \d{2}:\d{2}$/)
    expect((await ok('GET', `/api/exchanges?caja_id=${caja.id}`)).pagination.total).toBe(2)
    await desk.close()
  })
})
