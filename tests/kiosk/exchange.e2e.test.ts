/**
 * End to end, buying and selling at the counter (contract §19): one real server, the built apps and Debian's
 * chromium. A ticket taken at the dispenser is called in the console, 100 USD are bought at the board's rate, the
 * receipt is shown and printed, the ticket finished; then the operation, the ticket link and the receipt are read back
 * over the API to the digit. A sale to a new customer found by document, the refusals in words, the receipt page at
 * 80 mm and A4, the manager's «Cambios», and the sign-in the receipt page asks for.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { getDocumentProxy, extractText } from 'unpdf'
import type { RunningServer } from '../server'
import { ensureKioskBuilt, launchChromium, type Chromium } from './browser'
import { settled } from './layout'
import { axeViolations, openScene, type Scene } from './scene'
import { startAtCounter } from './staff'

const SLOW = 45_000
const PASSWORD = 'mostrador seguro 2026'
const STRINGS = { accept: 'application/json; money=string' }
const MM = 72 / 25.4

let scene: Scene
let server: RunningServer
let chromium: Chromium
let companyId: number
let email: string
let dispenserUrl: string
let cajaId: number
let registered: { id: number; name: string }

const ok: Scene['ok'] = (...args) => scene.ok(...args)
/** The same call with money as decimal strings, so amounts are compared digit for digit. */
const exact = (path: string) => ok('GET', path, undefined, { 'x-api-key': scene.key, ...STRINGS })

beforeAll(async () => {
  ensureKioskBuilt()
  scene = await openScene('Cambios Boleto')
  ;({ server, companyId } = scene)
  await ok('PATCH', '/api/company', { legal_name: 'Cambios Ñandú S.A.', tax_id: '30-71234567-9', address: 'Av. Güemes 1234, Córdoba', license: 'Agencia de cambio BCRA N.º 77' })
  const caja = await ok('POST', '/api/clients', { name: 'Caja principal', type: 0, accounts: ['ARS', 'USD', 'EUR'].map((currency_name) => ({ currency_name })) })
  cajaId = caja.id
  for (const [name, kind] of [
    ['Compra de divisas', 'exchange'],
    ['Venta de divisas', 'exchange'],
    ['Ingreso', 'up_down'],
  ])
    await ok('POST', '/api/operation-types', { name, kind })
  await ok('POST', '/api/transaction-types', { name: 'Comisión', is_commission: true })
  const ingreso = (await ok('GET', '/api/operation-types')).data.find((t: { name: string }) => t.name === 'Ingreso').id
  const account = (cur: string) => caja.accounts.find((a: { currency_name: string }) => a.currency_name === cur).id
  // Little USD in the drawer: the sale below leaves it short, which is a warning, not a refusal.
  await ok('POST', '/api/operations', {
    operation_type_id: ingreso,
    status: 'completed',
    transactions: [
      { account_id: account('ARS'), amount: '5000000' },
      { account_id: account('USD'), amount: '50' },
    ],
  })
  await ok('PUT', '/api/ventanilla/rates', {
    rates: [
      { currency: 'USD', buy: '1165.5', sell: '1185.5' },
      { currency: 'EUR', buy: '1250.25', sell: '1290.75' },
    ],
  })
  await ok('POST', '/api/ventanilla/services', { name: 'Cambio de divisas', prefix: 'A' })
  registered = await ok('POST', '/api/clients', { name: 'Jorge Luis Ñúñez', type: 1, document: { type: 'DNI', number: '20.111.222' } })
  email = `cajero.${process.pid}@exchange-e2e.test`
  await ok('POST', '/api/employees', {
    email,
    name: 'Martín Cajero',
    permissions: ['ventanilla.call', 'operations.create', 'operations.approve', 'operations.view', 'clients.view'],
    password: PASSWORD,
  })
  dispenserUrl = (await ok('POST', '/api/ventanilla/dispenser-tokens', { name: 'Tablet entrada' })).dispenser_url
  chromium = await launchChromium({ width: 1366, height: 768 })
}, 120_000)

afterAll(async () => {
  await chromium?.close()
  await scene?.stop()
})

let desk: Page
const panel = () => desk.getByTestId('exchange')
const exchanges = async () => (await exact('/api/exchanges')).data as { operation_id: number; ticket_id: number; receipt_number: string }[]

/** The console, signed in at «Caja 1» serving every service. */
async function openConsole() {
  desk = await chromium.context.newPage()
  await startAtCounter(desk, { base: server.base, companyId }, email, PASSWORD, 'Caja 1', SLOW)
}

/** Space calls the next ticket; answers it as the console shows it and as the queue lists it being served. */
async function callNext(number: string) {
  await desk.bringToFront()
  await desk.getByTestId('queue-A').getByTestId('queue-ticket').filter({ hasText: number }).waitFor({ timeout: SLOW })
  await desk.keyboard.press('Space')
  await desk.getByTestId('current-ticket').filter({ hasText: number }).waitFor({ timeout: SLOW })
  const serving = (await ok('GET', '/api/ventanilla/queue')).serving as { desk: string; ticket: { id: number; number: string } }[]
  return serving.find((s) => s.ticket.number === number)!.ticket
}

/** Whether the console shows all of itself and of the panel in the window, with no scrolling anywhere. */
const fits = () =>
  desk.evaluate(() => {
    const page = document.documentElement
    const panel = document.querySelector('[data-testid=exchange]') as HTMLElement
    return page.scrollHeight <= innerHeight && page.scrollWidth <= innerWidth && panel.scrollHeight <= panel.clientHeight
  })

/** Waits until the field with this id has the keyboard's focus. */
const focusOn = (id: string) => desk.waitForFunction((want) => document.activeElement?.id === want, id, { timeout: SLOW })

let bought: { operationId: number; ticketId: number }

describe('buying and selling at the counter', () => {
  test('a ticket from the dispenser is called, 100 USD bought at the board rate with Enter (a second one adds nothing), the receipt shown and printed, the ticket finished', async () => {
    const dispenser = await chromium.context.newPage()
    await dispenser.goto(dispenserUrl)
    await dispenser.getByTestId('service-button').filter({ hasText: 'Cambio de divisas' }).click({ timeout: SLOW })
    expect(await dispenser.getByTestId('issued-number').textContent({ timeout: SLOW })).toBe('A-001')
    await dispenser.close()

    await openConsole()
    const ticket = await callNext('A-001')
    await desk.keyboard.press('c')
    await panel().waitFor()
    // The caja is asked once for this desk, then remembered; the cursor waits on it once the panel has its data.
    await focusOn('x-caja')
    expect(await fits()).toBe(true)
    await desk.locator('#x-caja').selectOption({ label: 'Caja principal' })
    expect(await desk.evaluate(() => document.activeElement?.id)).toBe('x-amount')
    expect(await desk.locator('#x-rate').inputValue()).toBe('1.165,50')
    expect(await desk.getByTestId('x-rate-source').textContent()).toBe('Del cartel.')
    // Without exchanges.rate the board's rate cannot be typed over.
    expect(await desk.locator('#x-rate').getAttribute('readonly')).not.toBeNull()
    await desk.keyboard.type('100')
    expect(await desk.getByTestId('x-total-value').textContent()).toBe('ARS 116.550,00')
    // A registered customer is found by document as it is typed, dots and all.
    await desk.locator('#x-document').fill('20.111.222')
    expect(await desk.getByTestId('x-found').textContent({ timeout: SLOW })).toBe('Jorge Luis Ñúñez')

    // Two Enters in a row make one exchange: the second finds the first under way (and would carry the same key).
    await desk.locator('#x-amount').focus()
    await desk.keyboard.press('Enter')
    await desk.keyboard.press('Enter')
    expect(await desk.getByTestId('x-receipt-number').textContent({ timeout: SLOW })).toBe('00001-00000001')
    expect(await desk.getByTestId('x-done-total').textContent()).toBe('ARS 116.550,00')
    await desk.keyboard.press('Enter')
    expect(await exchanges()).toHaveLength(1)
    const [made] = await exchanges()
    bought = { operationId: made.operation_id, ticketId: ticket.id }

    // P opens the receipt page, which prints itself.
    const [printed] = await Promise.all([desk.context().waitForEvent('page'), desk.keyboard.press('p')])
    expect(printed.url()).toBe(`${server.base}/receipts/${made.operation_id}?imprimir=1`)
    expect(await printed.getByTestId('receipt-number').textContent({ timeout: SLOW })).toBe('N.º 00001-00000001')
    await printed.close()

    await desk.bringToFront()
    await desk.keyboard.press('f')
    expect(await desk.getByTestId('message').textContent({ timeout: SLOW })).toBe('A-001 finalizado.')
    await desk.getByTestId('queues').waitFor()
  }, 90_000)

  test('over the API: the operation to the digit, the ticket link and the receipt', async () => {
    const op = await exact(`/api/operations/${bought.operationId}`)
    expect(op.status).toBe('completed')
    expect(op.client_id).toBe(registered.id)
    expect(op.transactions.map((t: { currency: string; amount: string; status: string }) => [t.currency, t.amount, t.status])).toEqual([
      ['USD', '100', 'completed'],
      ['ARS', '-116550', 'completed'],
    ])
    expect(op.exchange).toEqual({ side: 'buy', currency: 'USD', amount: '100', rate: '1165.5', rate_source: 'board', local_amount: '116550', commission: '0', ticket_id: bought.ticketId })
    expect(op.receipt_number).toBe('00001-00000001')
    expect((await exact(`/api/exchanges?ticket_id=${bought.ticketId}`)).data.map((x: { operation_id: number }) => x.operation_id)).toEqual([bought.operationId])
    // The ticket is finished: no desk serves it any more.
    expect((await ok('GET', '/api/ventanilla/queue')).serving).toEqual([])
    const receipt = await exact(`/api/operations/${bought.operationId}/receipt`)
    expect(receipt).toMatchObject({
      number: '00001-00000001',
      point: 1,
      status: 'issued',
      company: { legal_name: 'Cambios Ñandú S.A.', tax_id: '30-71234567-9' },
      customer: { name: 'Jorge Luis Ñúñez', document: { type: 'DNI', number: '20111222', country: 'AR' } },
      side: 'buy',
      currency: 'USD',
      amount: '100',
      rate: '1165.5',
      local_amount: '116550',
      commission: '0',
      total: '116550',
    })
  })

  test('a sale to a new customer by document: errors in words next to their fields, the short caja a warning', async () => {
    await ok('POST', '/api/ventanilla/tickets', { service_id: (await ok('GET', '/api/ventanilla/queue')).data[0].service_id, customer_name: 'Ana Gómez' })
    const ticket = await callNext('A-002')
    await desk.keyboard.press('v')
    await panel().waitFor()
    // The desk's caja is remembered: straight to the amount.
    expect(await desk.getByTestId('x-caja').textContent()).toContain('Caja principal')
    await focusOn('x-amount')
    expect(await desk.locator('#x-rate').inputValue()).toBe('1.185,50')

    // Zero is refused on the screen, next to the amount, and nothing is sent.
    await desk.keyboard.type('0')
    await desk.keyboard.press('Enter')
    expect(await desk.getByTestId('x-amount-error').textContent()).toBe('El importe debe ser mayor que cero.')
    expect(await desk.locator('#x-amount').getAttribute('aria-invalid')).toBe('true')
    expect(await exchanges()).toHaveLength(1)
    await desk.locator('#x-amount').fill('200')
    await desk.getByTestId('x-amount-error').waitFor({ state: 'detached' })

    // A new customer: not found by document, so the name is typed (the ticket's name is offered).
    await desk.locator('#x-document').fill('40.123.456')
    await desk.getByTestId('x-lookup').filter({ hasText: 'Cliente nuevo' }).waitFor({ timeout: SLOW })
    expect(await desk.locator('#x-name').inputValue()).toBe('Ana Gómez')
    expect(await desk.getByTestId('x-total-value').textContent()).toBe('ARS 237.100,00')
    // 50 + 100 USD in the drawer, 200 to hand over: said before confirming, as a warning.
    expect(await desk.getByTestId('x-shortfall').textContent()).toContain('quedaría en -50,00')

    // The board changes while the customer decides: the screen says so next to the rate instead of storing another total.
    await ok('PUT', '/api/ventanilla/rates', {
      rates: [
        { currency: 'USD', buy: '1170', sell: '1190.25' },
        { currency: 'EUR', buy: '1250.25', sell: '1290.75' },
      ],
    })
    await desk.locator('#x-amount').focus()
    await desk.keyboard.press('Enter')
    expect(await desk.getByTestId('x-rate-error').textContent({ timeout: SLOW })).toBe('La cotización del cartel cambió a 1.190,25: revise el total y confirme de nuevo.')
    expect(await desk.getByTestId('x-total-value').textContent()).toBe('ARS 238.050,00')
    expect(await exchanges()).toHaveLength(1)

    // axe-core on the panel with a field's error showing: no violation of any impact; nothing hidden at 1366×768.
    expect(await axeViolations(desk)).toEqual([])
    expect(await fits()).toBe(true)

    await desk.locator('#x-amount').focus()
    await desk.keyboard.press('Enter')
    expect(await desk.getByTestId('x-receipt-number').textContent({ timeout: SLOW })).toBe('00001-00000002')
    expect(await axeViolations(desk)).toEqual([])
    const warning = desk.getByTestId('x-warning')
    expect(await warning.getAttribute('role')).toBe('status')
    expect(await warning.textContent()).toContain('saldo negativo en USD')

    const [sale] = await exchanges()
    const op = await exact(`/api/operations/${sale.operation_id}`)
    expect(op.transactions.map((t: { currency: string; amount: string }) => [t.currency, t.amount])).toEqual([
      ['USD', '-200'],
      ['ARS', '238050'],
    ])
    expect(op.exchange).toMatchObject({ side: 'sell', rate: '1190.25', rate_source: 'board', ticket_id: ticket.id })
    const customer = await exact(`/api/clients/${op.client_id}`)
    expect(customer).toMatchObject({ name: 'Ana Gómez', type: 1, document: { type: 'DNI', number: '40123456', country: 'AR' }, accounts: [] })
    await desk.keyboard.press('f')
    expect(await desk.getByTestId('message').textContent({ timeout: SLOW })).toBe('A-002 finalizado.')
  }, 90_000)

  test('refusals in words: a currency taken off the board, the ticket closed at another desk meanwhile', async () => {
    const taken = await ok('POST', '/api/ventanilla/tickets', { service_id: (await ok('GET', '/api/ventanilla/queue')).data[0].service_id })
    await callNext(taken.number)
    await desk.keyboard.press('c')
    await focusOn('x-amount')
    await desk.locator('#x-currency').selectOption('EUR')
    await desk.locator('#x-amount').fill('10')
    await desk.locator('#x-name').fill('Cliente de paso')
    await ok('PUT', '/api/ventanilla/rates', { rates: [{ currency: 'USD', buy: '1170', sell: '1190.25' }] })
    await desk.locator('#x-amount').focus()
    await desk.keyboard.press('Enter')
    expect(await desk.getByTestId('x-currency-error').textContent({ timeout: SLOW })).toBe('EUR ya no está en el cartel de cotizaciones: elija otra moneda.')
    expect(await desk.locator('#x-currency').inputValue()).toBe('USD')
    await ok('POST', `/api/ventanilla/tickets/${taken.id}/no-show`)
    await desk.locator('#x-amount').focus()
    await desk.keyboard.press('Enter')
    expect(await desk.getByTestId('x-form-error').textContent({ timeout: SLOW })).toBe(`El turno ${taken.number} ya no está en atención: la operación no se registró.`)
    expect(await exchanges()).toHaveLength(2)
    await desk.keyboard.press('Escape')
    await desk.getByTestId('queues').waitFor()
  }, 60_000)

  test('the receipt page: on screen, on an 80 mm roll and on A4, its PDF, no accessibility violation', async () => {
    const page = await chromium.context.newPage()
    await page.goto(`${server.base}/receipts/${bought.operationId}`)
    const receipt = page.getByTestId('receipt')
    await receipt.waitFor({ timeout: SLOW })
    expect(await page.getByTestId('receipt-number').textContent()).toBe('N.º 00001-00000001')
    expect(await page.getByTestId('receipt-customer').textContent()).toBe('Jorge Luis Ñúñez')
    expect(await page.getByTestId('receipt-document').textContent()).toBe('20111222 (AR)')
    expect(await page.getByTestId('receipt-amount').textContent()).toBe('100,00 USD')
    expect(await page.getByTestId('receipt-rate').textContent()).toBe('1.165,50 ARS')
    expect(await page.getByTestId('receipt-total').textContent()).toBe('116.550,00 ARS')
    expect(await receipt.textContent()).toContain('Cambios Ñandú S.A.')
    expect(await receipt.textContent()).toContain('CUIT 30-71234567-9')
    expect(await axeViolations(page)).toEqual([])

    // A window as narrow as the roll: the receipt is the page, nothing sideways.
    await page.setViewportSize({ width: 302, height: 900 })
    await settled(page)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(302)

    /** Printed as Chromium prints it, at the page's own CSS size: [width, height] in points, its pages and its text. */
    const print = async () => {
      await page.emulateMedia({ media: 'print' })
      await settled(page)
      const doc = await getDocumentProxy(new Uint8Array(await page.pdf({ preferCSSPageSize: true, printBackground: true })))
      const view = (await doc.getPage(1)).view
      const { text } = await extractText(doc, { mergePages: true })
      await page.emulateMedia({ media: 'screen' })
      return { size: [view[2] - view[0], view[3] - view[1]], pages: doc.numPages, text }
    }
    const roll = await print()
    expect(roll.pages).toBe(1)
    expect(roll.size[0]).toBeCloseTo(80 * MM, 0)
    // As long as the receipt, not a sheet's length.
    expect(roll.size[1]).toBeGreaterThan(80 * MM)
    expect(roll.size[1]).toBeLessThan(200 * MM)
    expect(roll.text).toContain('00001-00000001')
    expect(roll.text).toContain('116.550,00 ARS')

    await page.setViewportSize({ width: 1366, height: 768 })
    await page.getByTestId('paper-a4').click()
    const a4 = await print()
    expect(a4.pages).toBe(1)
    expect(a4.size[0]).toBeCloseTo(210 * MM, 0)
    expect(a4.size[1]).toBeCloseTo(297 * MM, 0)
    expect(a4.text).toContain('Jorge Luis Ñúñez')
    expect(a4.text).toContain('Firma del cliente')
    expect(await axeViolations(page)).toEqual([])

    const pdf = await page.evaluate(async (href) => {
      const res = await fetch(href)
      return { status: res.status, type: res.headers.get('content-type') }
    }, (await page.getByTestId('receipt-pdf').getAttribute('href'))!)
    expect(pdf).toEqual({ status: 200, type: 'application/pdf' })

    // Cancelled, the receipt says ANULADO; its number stays.
    await ok('POST', `/api/operations/${bought.operationId}/cancel`)
    await page.reload()
    expect(await page.getByTestId('receipt-void').textContent({ timeout: SLOW })).toBe('ANULADO')
    expect(await page.getByTestId('receipt-number').textContent()).toBe('N.º 00001-00000001')
    await page.close()
  }, 90_000)

  test('Operaciones in /manage: the day’s exchanges with their receipt numbers, each a link to its receipt', async () => {
    const page = await chromium.context.newPage()
    await page.goto(`${server.base}/manage/operaciones`)
    await page.getByTestId('operations-table').waitFor({ timeout: SLOW })
    expect(await page.getByTestId('operation-receipt').allTextContents()).toEqual(['00001-00000002', '00001-00000001'])
    await page.locator('select[name=type]').selectOption('cambios')
    await page.getByRole('button', { name: 'Buscar' }).click()
    await page.getByTestId('exchanges-table').waitFor({ timeout: SLOW })
    const links = page.getByTestId('exchange-receipt')
    expect(await links.allTextContents()).toEqual(['00001-00000002', '00001-00000001'])
    expect(await links.last().getAttribute('href')).toBe(`/receipts/${bought.operationId}`)
    expect(await page.getByTestId('exchange-total').allTextContents()).toEqual(['238.050,00', '116.550,00'])
    expect(await page.getByTestId('exchanges-summary').textContent()).toBe('2 operaciones de cambio · USD: compras 0,00, ventas 200,00')
    await page.close()
  }, 60_000)

  test('the receipt page without a session asks for one, then shows the receipt it was opened for', async () => {
    await chromium.context.clearCookies()
    const page = await chromium.context.newPage()
    await page.goto(`${server.base}/receipts/${bought.operationId}?empresa=${companyId}`)
    await page.getByTestId('signin').waitFor({ timeout: SLOW })
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Boleto')
    await page.fill('input[name=email]', email)
    await page.fill('input[name=password]', PASSWORD)
    await page.keyboard.press('Enter')
    expect(await page.getByTestId('receipt-number').textContent({ timeout: SLOW })).toBe('N.º 00001-00000001')
    expect(page.url()).toBe(`${server.base}/receipts/${bought.operationId}?empresa=${companyId}`)
    // Another company's operation, or one that is not an exchange, is the same «no receipt» in words.
    await page.goto(`${server.base}/receipts/999999`)
    expect(await page.getByTestId('receipt-error').textContent({ timeout: SLOW })).toContain('No hay boleto para la operación 999999')
    await page.close()
  }, 60_000)
})
