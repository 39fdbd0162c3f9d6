/**
 * Renders a purchase at the counter and its receipt with demo data, and writes to docs/:
 *   console-exchange.png        the console's Compra panel filled in, at 1366×768
 *   console-exchange-done.png   the same panel once confirmed, with the receipt's number
 *   receipt-screen.png          the receipt page on screen (1366×768), with its paper choice, print and PDF
 *   receipt-80mm.png            the receipt page printed on an 80 mm roll (Chromium's PDF, rendered by pdftoppm)
 *   receipt-a4.png              the same receipt printed on A4
 *   receipt-sample.pdf          the receipt as the API answers it (`GET /api/operations/{id}/receipt?format=pdf`)
 *   bun kiosk/screenshot-exchange.ts [outDir]
 * Runs the real server on a throwaway embedded database. Needs pdftoppm (Debian's poppler-utils).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { ensureKioskBuilt, launchChromium, ROOT } from '../tests/kiosk/browser'
import { openScene } from '../tests/kiosk/scene'
import { startAtCounter } from '../tests/kiosk/staff'

const out = process.argv[2] ?? join(ROOT, 'docs')
const PASSWORD = 'mostrador seguro 2026'

ensureKioskBuilt()
// A throwaway embedded database, given as long to start as startServer gives it by default.
const scene = await openScene('Cambios del Centro', { exactName: true, timeoutMs: 180_000 })
const { server, companyId } = scene
const call = scene.ok
const printouts = mkdtempSync(join(tmpdir(), 'exchange-shots-'))

/** A page printed by Chromium at its own CSS page size, turned into a PNG at 150 dpi. */
async function printed(page: Page, name: string) {
  const pdf = join(printouts, `${name}.pdf`)
  writeFileSync(pdf, await page.pdf({ preferCSSPageSize: true, printBackground: true }))
  const done = Bun.spawnSync(['pdftoppm', '-png', '-r', '150', '-singlefile', pdf, join(out, name)])
  if (done.exitCode !== 0) throw new Error(`pdftoppm: ${done.stderr.toString()}`)
}

const chromium = await launchChromium({ width: 1366, height: 768 })
try {
  await call('PATCH', '/api/company', {
    legal_name: 'Cambios Ñandú S.A.',
    tax_id: '30-71234567-9',
    address: 'Av. Güemes 1234, Córdoba',
    license: 'Casa de cambio autorizada BCRA N.º 77',
  })
  const caja = await call('POST', '/api/clients', { name: 'Caja principal', type: 0, accounts: ['ARS', 'USD', 'EUR', 'BRL'].map((currency_name) => ({ currency_name })) })
  for (const [name, kind] of [
    ['Compra de divisas', 'exchange'],
    ['Venta de divisas', 'exchange'],
    ['Ingreso', 'up_down'],
  ])
    await call('POST', '/api/operation-types', { name, kind })
  await call('POST', '/api/transaction-types', { name: 'Comisión', is_commission: true })
  const ingreso = (await call('GET', '/api/operation-types')).data.find((t: { name: string }) => t.name === 'Ingreso').id
  const account = (cur: string) => caja.accounts.find((a: { currency_name: string }) => a.currency_name === cur).id
  await call('POST', '/api/operations', {
    operation_type_id: ingreso,
    status: 'completed',
    transactions: [
      { account_id: account('ARS'), amount: '25000000' },
      { account_id: account('USD'), amount: '20000' },
      { account_id: account('EUR'), amount: '8000' },
    ],
  })
  await call('PUT', '/api/ventanilla/rates', {
    rates: [
      { currency: 'USD', buy: '1165.5', sell: '1185.5' },
      { currency: 'EUR', buy: '1250.25', sell: '1290.75' },
      { currency: 'BRL', buy: '205', sell: '221' },
    ],
  })
  const service = await call('POST', '/api/ventanilla/services', { name: 'Cambio de divisas', prefix: 'A' })
  await call('POST', '/api/employees', {
    email: 'lucia@cambios.example',
    name: 'Lucía Fernández',
    permissions: ['ventanilla.call', 'operations.create', 'operations.approve', 'operations.view', 'clients.view'],
    password: PASSWORD,
  })
  await call('POST', '/api/ventanilla/tickets', { service_id: service.id, customer_name: 'María Ñáñez Álvarez' })
  await call('POST', '/api/ventanilla/tickets', { service_id: service.id, customer_name: 'Diego Romero' })

  const staff = await chromium.context.newPage()
  await startAtCounter(staff, { base: server.base, companyId }, 'lucia@cambios.example', PASSWORD, 'Caja 2')
  await staff.keyboard.press('Space')
  await staff.getByTestId('current-ticket').waitFor()
  await staff.keyboard.press('c')
  await staff.getByTestId('exchange').waitFor()
  await staff.locator('#x-caja').selectOption({ label: 'Caja principal' })
  await staff.locator('#x-amount').fill('1.500')
  await staff.locator('#x-document').fill('27.555.444')
  await staff.getByTestId('x-lookup').filter({ hasText: 'Cliente nuevo' }).waitFor()
  await staff.locator('#x-commission').fill('2.500')
  await staff.locator('#x-amount').focus()
  await staff.screenshot({ path: join(out, 'console-exchange.png') })
  await staff.keyboard.press('Enter')
  await staff.getByTestId('x-done').waitFor()
  await staff.screenshot({ path: join(out, 'console-exchange-done.png') })
  const number = await staff.getByTestId('x-receipt-number').textContent()
  const operations = await call('GET', '/api/exchanges')
  const operationId = operations.data[0].operation_id

  const receipt = await chromium.context.newPage()
  await receipt.goto(`${server.base}/receipts/${operationId}?formato=80mm`)
  await receipt.getByTestId('receipt').waitFor()
  await receipt.evaluate(() => document.fonts.ready)
  await receipt.screenshot({ path: join(out, 'receipt-screen.png') })
  await receipt.emulateMedia({ media: 'print' })
  await printed(receipt, 'receipt-80mm')
  await receipt.emulateMedia({ media: 'screen' })
  await receipt.getByTestId('paper-a4').click()
  await receipt.emulateMedia({ media: 'print' })
  await printed(receipt, 'receipt-a4')
  const pdf = await fetch(`${server.base}/api/operations/${operationId}/receipt?format=pdf`, { headers: { 'x-api-key': scene.key } })
  writeFileSync(join(out, 'receipt-sample.pdf'), new Uint8Array(await pdf.arrayBuffer()))
  console.log(`receipt ${number}: wrote console-exchange.png, console-exchange-done.png, receipt-screen.png, receipt-80mm.png, receipt-a4.png, receipt-sample.pdf in ${out}`)
} finally {
  await chromium.close()
  await scene.stop()
  rmSync(printouts, { recursive: true, force: true })
}
