/**
 * End to end for the back office in /manage: a real server process, a real database and Debian's chromium. A
 * supervisor approves a pending operation and the cash position shows the new balance; a move someone else made
 * first is said in words; an operation's page shows its legs, files and history; a client-scoped employee sees only
 * its client; axe-core finds no violation on any of these screens.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import type { RunningServer } from '../server'
import { ensureKioskBuilt, launchChromium, ROOT, type Chromium } from './browser'
import { openSection, signInToManage } from './manage'
import { axeViolations, openScene, type Scene } from './scene'

const SLOW = 20_000
const PASSWORD = 'supervision segura 2026'
const SHOTS = process.env.BACKOFFICE_SCREENSHOTS === '1'

let scene: Scene
let server: RunningServer
let chromium: Chromium
let key: string
let companyId: number
let page: Page
let typeId: number
const box = { id: 0, usd: 0, ars: 0 }
const perez = { id: 0, usd: 0 }
const gomez = { id: 0, usd: 0 }
const MONEY = { accept: 'application/json; money=string' }

/** Every call reads money as decimal strings, as the app does. */
const ok = (method: string, path: string, body?: unknown, auth: Record<string, string> = { 'x-api-key': key }) => scene.ok(method, path, body, { ...auth, ...MONEY })

const signIn = (email: string) => signInToManage(page, { base: server.base, companyId }, email, PASSWORD, SLOW)

const section = (path: string, testid: string) => openSection(page, path, testid, SLOW)

/** A pending buy of `usd` dollars at `rate` pesos: the box takes the dollars in and pays the pesos out. */
const buy = (usd: string, ars: string, clientId: number | null = null) =>
  ok('POST', '/api/operations', {
    operation_type_id: typeId,
    client_id: clientId,
    transactions: [
      { account_id: box.usd, amount: usd },
      { account_id: box.ars, amount: `-${ars}` },
    ],
  })

beforeAll(async () => {
  ensureKioskBuilt()
  scene = await openScene('Cambios Back Office', { ventanilla: false })
  ;({ server, key, companyId } = scene)
  typeId = (await ok('POST', '/api/operation-types', { name: 'Compra de divisas', kind: 'exchange' })).id
  const caja = await ok('POST', '/api/clients', { name: 'Caja Central', type: 0, accounts: [{ name: 'Dólares', currency_name: 'USD' }, { name: 'Pesos', currency_name: 'ARS' }] })
  Object.assign(box, { id: caja.id, usd: caja.accounts.find((a: { currency_name: string }) => a.currency_name === 'USD').id, ars: caja.accounts.find((a: { currency_name: string }) => a.currency_name === 'ARS').id })
  const p = await ok('POST', '/api/clients', { name: 'Pérez Importaciones', type: 1, accounts: [{ currency_name: 'USD' }] })
  Object.assign(perez, { id: p.id, usd: p.accounts[0].id })
  const g = await ok('POST', '/api/clients', { name: 'Gómez Turismo', type: 1, accounts: [{ currency_name: 'USD' }] })
  Object.assign(gomez, { id: g.id, usd: g.accounts[0].id })
  const staff = [
    ['supervisora', ['operations.view', 'operations.approve', 'clients.view', 'audit.view', 'attachments.edit', 'metrics.view', 'mesas.view'], []],
    ['acotada', ['operations.view', 'clients.view'], [perez.id]],
    // The cajas and their accounts are read with GET /api/clients, which needs clients.view.
    ['cajera', ['operations.create', 'clients.view'], []],
  ] as const
  for (const [who, permissions, client_ids] of staff)
    await ok('POST', '/api/employees', { email: `${who}.${process.pid}@backoffice-e2e.test`, name: { supervisora: 'Laura Ríos', acotada: 'Pablo Acotado', cajera: 'Ana Caja' }[who], permissions, client_ids, password: PASSWORD })
  chromium = await launchChromium({ width: 1366, height: 768 })
  page = await chromium.context.newPage()
}, 120_000)

afterAll(async () => {
  await chromium?.close()
  await scene?.stop()
})

const supervisor = () => `supervisora.${process.pid}@backoffice-e2e.test`

describe('the back office', () => {
  test('a supervisor approves a pending buy after seeing the resulting balances; the cash position shows them, and live', async () => {
    const op = await buy('1000', '1165500.5')
    await signIn(supervisor())
    // Without the waiting room the supervisor opens on Operaciones, the first section it may see.
    await page.getByTestId('operations-section').waitFor({ timeout: SLOW })
    // Without the waiting room's permissions its heading is not there at all.
    expect(await page.getByTestId('nav').locator('h2').allTextContents()).toEqual(['Dinero', 'Control', 'Configuración'])
    expect(await page.getByTestId('nav').locator('a').allTextContents()).toEqual(['Operaciones', 'Posición de caja', 'Cajas', 'Clientes y cajas', 'Mesas', 'Resultado', 'Auditoría', 'Empresa', 'Tipos', 'Etiquetas'])
    const item = page.locator(`[data-testid=pending-op][data-id="${op.id}"]`)
    await item.waitFor({ timeout: SLOW })
    expect(await item.textContent()).toContain('USD 1.000,00')
    expect(await item.textContent()).toContain('ARS -1.165.500,50')
    expect(await axeViolations(page)).toEqual([])

    await item.getByTestId('op-approve').click()
    await item.getByTestId('balance-after').nth(1).waitFor({ timeout: SLOW })
    expect(await item.getByTestId('balance-after').allTextContents()).toEqual(['USD 1.000,00', 'ARS -1.165.500,50'])
    expect(await axeViolations(page)).toEqual([])
    if (SHOTS) await page.screenshot({ path: join(ROOT, 'docs/manage-operations.png') })
    // Keyboard: the confirmation has the focus on «Sí, aprobar».
    await page.keyboard.press('Enter')
    await page.getByTestId('op-message').getByText(`Operación ${op.id} aprobada.`).waitFor({ timeout: SLOW })
    expect(await page.getByTestId('op-message').textContent()).toContain('Caja Central · Dólares: USD 1.000,00; Caja Central · Pesos: ARS -1.165.500,50')
    expect(await page.locator('[data-testid=pending-op]').count()).toBe(0)
    expect((await ok('GET', `/api/operations/${op.id}`)).status).toBe('completed')

    await section('posicion', 'position-section')
    const usdTotal = page.locator('[data-testid=total-row][data-currency=USD] [data-testid=total-amount]')
    await page.waitForFunction(() => document.querySelector('[data-testid=total-row][data-currency=ARS]')?.textContent?.includes('-1.165.500,50'), null, { timeout: SLOW })
    expect(await usdTotal.textContent()).toBe('1.000,00')
    expect(await page.locator(`[data-testid=box-row][data-account="${box.usd}"] [data-testid=box-balance]`).textContent()).toBe('USD 1.000,00')
    expect(await axeViolations(page)).toEqual([])

    // Approved elsewhere while the screen is open: the next poll brings it; unchanged polls are 304s.
    let notModified = 0
    page.on('response', (r) => void (r.url().includes('/api/clients?') && r.status() === 304 && notModified++))
    await page.waitForTimeout(2_500)
    const later = await buy('0.000001', '123456789012.123457')
    await ok('POST', `/api/operations/${later.id}/approve`)
    await page.waitForFunction(() => document.querySelector('[data-testid=total-row][data-currency=USD]')?.textContent?.includes('1.000,000001'), null, { timeout: 6_000 })
    expect(await page.locator('[data-testid=total-row][data-currency=ARS] [data-testid=total-amount]').textContent()).toBe('-123.457.954.512,623457')
    expect(notModified).toBeGreaterThan(0)
    // An external account with a balance says who owes whom.
    await ok('POST', '/api/operations', { operation_type_id: typeId, client_id: perez.id, status: 'completed', transactions: [{ account_id: perez.usd, amount: '-250' }, { account_id: box.usd, amount: '250' }] })
    await page.locator(`[data-testid=external-row][data-account="${perez.usd}"]`).getByText('Pérez Importaciones le debe a la casa').waitFor({ timeout: 6_000 })
    if (SHOTS) await page.screenshot({ path: join(ROOT, 'docs/manage-position.png') })
  }, 60_000)

  test('approving what someone else just cancelled is said in words and the queue refreshes', async () => {
    const op = await buy('10', '11655')
    await section('operaciones', 'operations-section')
    const item = page.locator(`[data-testid=pending-op][data-id="${op.id}"]`)
    await item.waitFor({ timeout: SLOW })
    await item.getByTestId('op-approve').click()
    await ok('POST', `/api/operations/${op.id}/cancel`)
    await item.getByTestId('op-confirm-yes').click()
    await page.getByText('La operación ya no está pendiente: otra persona la aprobó o la canceló hace un momento.').waitFor({ timeout: SLOW })
    await item.waitFor({ state: 'detached', timeout: SLOW })
    expect((await ok('GET', `/api/operations/${op.id}`)).status).toBe('cancelled')
    const row = page.locator(`[data-testid=operation-row][data-id="${op.id}"] [data-testid=operation-status]`)
    expect(await row.textContent()).toBe('Cancelada')
  }, 30_000)

  test('Resultado draws the numbers GET /api/metrics/home answers, and the mesas positions', async () => {
    await ok('PATCH', `/api/superadmin/companies/${companyId}`, { modules: { mesas: true } }, scene.operator)
    const fee = await ok('POST', '/api/transaction-types', { name: 'Comisión', is_commission: true })
    await ok('POST', '/api/operations', {
      operation_type_id: typeId,
      status: 'completed',
      transactions: [{ account_id: box.ars, amount: '1234.567891', transaction_type_id: fee.id }],
    })
    const mesa = await ok('POST', '/api/mesas', { name: 'Mesa Dólar', local_currency: 'ARS', quote_currency: 'USD', costing_method: 'fifo', account_ids: [box.usd, box.ars] })
    await ok('POST', `/api/mesas/${mesa.id}/lines`, { side: 'buy', local_amount: '100000', quote_amount: '100' })
    await ok('POST', `/api/mesas/${mesa.id}/lines`, { side: 'sell', local_amount: '60000', quote_amount: '50' })
    const home = await ok('GET', '/api/metrics/home')
    expect(home.commissions).toContainEqual({ currency: 'ARS', amount: '1234.567891' })

    await section('resultado', 'results-section')
    const series = async (testid: string) => JSON.parse((await page.getByTestId(testid).getAttribute('data-series', { timeout: SLOW }))!)
    expect((await series('chart-commissions')).series[0].data).toEqual(home.commissions.map((c: { amount: string }) => c.amount))
    expect((await series('chart-commissions')).labels).toEqual(home.commissions.map((c: { currency: string }) => c.currency))
    expect((await series('chart-pnl')).series[0].data).toEqual(home.dayPnl.map((p: { realized: string }) => p.realized))
    expect(home.dayPnl).toEqual([{ mesa_id: mesa.id, currency: 'ARS', realized: '10000' }])
    expect(await page.getByTestId('table-commissions').textContent()).toContain('1.234,567891')
    const row = page.locator(`[data-testid=mesa-row][data-id="${mesa.id}"]`)
    expect(await row.textContent({ timeout: SLOW })).toBe('Mesa DólarUSD 50,00ARS 1.000,00ARS 10.000,00PEPS (FIFO)')
    expect(await axeViolations(page)).toEqual([])
    if (SHOTS) await page.screenshot({ path: join(ROOT, 'docs/manage-results.png') })
  }, 30_000)

  test('Auditoría: the log with filters, the chain verified in plain words, the signed digests downloaded', async () => {
    await section('auditoria', 'audit-section')
    const total = async (query: string) => (await ok('GET', `/api/audit-logs?pageSize=1${query}`)).pagination.total as number
    await page.getByTestId('audit-table').waitFor({ timeout: SLOW })
    expect(await page.getByTestId('audit-total').textContent()).toStartWith(`${await total('')} registros`)
    // Cancelling an operation cancels its transactions: one cancel row per leg.
    const op = await buy('3', '3496.5')
    await ok('POST', `/api/operations/${op.id}/cancel`)
    await page.locator('select[name=table]').selectOption('transactions')
    await page.locator('select[name=action]').selectOption('cancel')
    await page.getByRole('button', { name: 'Buscar' }).click()
    const cancels = await total('&table=transactions&action=cancel')
    expect(cancels).toBeGreaterThanOrEqual(2)
    await page.getByTestId('audit-total').getByText(`${cancels} registros`).waitFor({ timeout: SLOW })
    expect(await page.getByTestId('audit-entry').count()).toBe(cancels)
    expect(await page.getByTestId('audit-entry').first().textContent({ timeout: SLOW })).toContain('Cancelación · Movimiento')

    // Rows are sealed within 5 s of their commit; the verdict names how many were checked.
    await page.getByTestId('audit-verify').click()
    const verdict = await page.getByTestId('audit-verdict').textContent({ timeout: SLOW })
    expect(verdict).toMatch(/^La cadena está íntegra: \d+ registros verificados \(del 1 al \d+\)/)
    expect((await ok('GET', '/api/audit-logs/verify')).verified).toBe(true)

    const download = page.waitForEvent('download', { timeout: SLOW })
    await page.getByTestId('audit-digests').click()
    const file = await download
    const saved = JSON.parse(readFileSync((await file.path())!, 'utf8'))
    expect(saved.public_key).toBe((await ok('GET', '/api/audit-logs/digest-key')).public_key)
    expect(saved.digests).toEqual((await ok('GET', '/api/audit-logs/digests?pageSize=100')).data)
    await page.getByTestId('digests-message').waitFor({ timeout: SLOW })
    expect(await axeViolations(page)).toEqual([])
    if (SHOTS) await page.screenshot({ path: join(ROOT, 'docs/manage-audit.png') })
  }, 30_000)

  test("an operation's page shows its legs, takes and removes a file, and shows its history", async () => {
    const op = await buy('5', '5827.5', perez.id)
    await ok('POST', `/api/operations/${op.id}/approve`)
    await page.goto(`${server.base}/manage/operaciones/${op.id}`)
    await page.getByTestId('operation-page').waitFor({ timeout: SLOW })
    await page.getByTestId('transactions').getByText('ARS -5.827,50').waitFor({ timeout: SLOW })
    expect(await page.getByTestId('operation-status').textContent()).toBe('Aprobada')
    await page.getByTestId('attachment-file').setInputFiles({ name: 'recibo.pdf', mimeType: 'application/pdf', buffer: Buffer.from('%PDF-1.4\n%%EOF\n') })
    await page.getByRole('button', { name: 'Adjuntar' }).click()
    await page.getByTestId('attachment').getByText('recibo.pdf').waitFor({ timeout: SLOW })
    expect((await ok('GET', `/api/operations/${op.id}/attachments`)).attachments.map((a: { file_name: string }) => a.file_name)).toEqual(['recibo.pdf'])
    const history = page.getByTestId('audit-row')
    await history.first().waitFor({ timeout: SLOW })
    const rows = await history.allTextContents()
    expect(rows.some((r) => r.includes('Alta de la operación'))).toBe(true)
    expect(rows.some((r) => r.includes('status: pending → completed'))).toBe(true)
    expect(await axeViolations(page)).toEqual([])

    // Revert from the page, with the balances it leaves shown first.
    await page.getByTestId('op-revert').click()
    await page.getByTestId('op-confirm').waitFor({ timeout: SLOW })
    await page.getByTestId('op-confirm-yes').click()
    await page.getByText(`Operación ${op.id} revertida`).waitFor({ timeout: SLOW })
    expect(await page.getByTestId('operation-status').textContent()).toBe('Pendiente')

    await page.getByRole('button', { name: 'Quitar' }).click()
    await page.getByTestId('attachment-remove-confirm').click()
    await page.getByText('Sin adjuntos.').waitFor({ timeout: SLOW })
    expect((await ok('GET', `/api/operations/${op.id}/attachments`)).attachments).toEqual([])
  }, 30_000)

  test('the back-office sections fit a tablet either way up without sideways scrolling', async () => {
    for (const size of [
      { width: 1024, height: 768 },
      { width: 768, height: 1024 },
    ]) {
      await page.setViewportSize(size)
      for (const [path, testid] of [
        ['operaciones', 'operations-section'],
        ['posicion', 'position-section'],
        ['resultado', 'results-section'],
        ['auditoria', 'audit-section'],
      ]) {
        await section(path, testid)
        const width = await page.evaluate(() => document.documentElement.scrollWidth)
        expect(`${path} at ${size.width}: ${width}`).toBe(`${path} at ${size.width}: ${size.width}`)
      }
    }
    await page.setViewportSize({ width: 1366, height: 768 })
  }, 30_000)

  test('a cashier buys USD 1.000 at 1.165,50: wrong separator and oversize refused in words, legs exact, one operation per fill', async () => {
    const count = async () => (await ok('GET', '/api/operations?pageSize=1')).pagination.total as number
    await signIn(`cajera.${process.pid}@backoffice-e2e.test`)
    // A cashier who records operations opens where she works, under «Dinero»; of «Configuración» only what she may read.
    await page.getByTestId('new-operation-section').waitFor({ timeout: SLOW })
    expect(await page.getByTestId('nav').locator('h2').allTextContents()).toEqual(['Dinero', 'Configuración'])
    expect(await page.getByTestId('nav').locator('a').allTextContents()).toEqual(['Nueva operación', 'Posición de caja', 'Clientes y cajas', 'Empresa', 'Tipos', 'Etiquetas'])
    const form = page.getByTestId('fx-form')
    await form.locator('select[name=box] option').first().waitFor({ state: 'attached', timeout: SLOW })
    expect(await axeViolations(page)).toEqual([])
    const before = await count()

    await form.locator('input[name=amount]').fill('12.345.678.901.234.567.890.123')
    await form.locator('input[name=rate]').fill('1165.50')
    await form.getByTestId('fx-submit').click()
    expect(await form.getByTestId('error-amount').textContent()).toContain('supera el máximo')
    expect(await form.getByTestId('error-rate').textContent()).toContain('Separador equivocado')
    expect(await count()).toBe(before)

    await form.locator('input[name=amount]').fill('1.000')
    await form.locator('input[name=rate]').fill('1.165,50')
    expect(await form.getByTestId('fx-legs').textContent()).toContain('recibe USD 1.000,00 y paga ARS 1.165.500,00')
    if (SHOTS) await page.screenshot({ path: join(ROOT, 'docs/manage-new-operation.png') })
    // The first answer is lost on the way back (the server did create it); the retry carries the same key.
    let dropped = false
    await page.route('**/api/operations', async (route) => {
      if (dropped) return route.continue()
      dropped = true
      await route.fetch()
      await route.abort('failed')
    })
    await form.getByTestId('fx-submit').dblclick()
    await form.getByTestId('fx-message').getByText('Sin conexión').waitFor({ timeout: SLOW })
    expect(await count()).toBe(before + 1)
    await form.getByTestId('fx-submit').dblclick()
    const made = await form.getByTestId('fx-message').getByText(/Operación \d+ registrada/).textContent({ timeout: SLOW })
    await page.unroute('**/api/operations')
    expect(await count()).toBe(before + 1)
    const op = await ok('GET', `/api/operations/${made!.match(/Operación (\d+)/)![1]}`)
    expect(op.status).toBe('pending')
    expect(op.transactions.map((t: { account_id: number; amount: string }) => [t.account_id, t.amount])).toEqual([
      [box.usd, '1000'],
      [box.ars, '-1165500'],
    ])

    // The session ends mid-form: the data stays, the password is asked, and the same fill is sent once.
    await form.locator('input[name=amount]').fill('2')
    await chromium.context.clearCookies()
    await form.getByTestId('fx-submit').click()
    await page.getByTestId('signin-again').waitFor({ timeout: SLOW })
    expect(await form.locator('input[name=rate]').inputValue()).toBe('1.165,50')
    await page.keyboard.type(PASSWORD)
    await page.keyboard.press('Enter')
    const again = await form.getByTestId('fx-message').getByText(/Operación \d+ registrada/).textContent({ timeout: SLOW })
    expect(await count()).toBe(before + 2)
    const second = await ok('GET', `/api/operations/${again!.match(/Operación (\d+)/)![1]}`)
    expect(second.transactions.map((t: { amount: string }) => t.amount)).toEqual(['2', '-2331'])
    expect(await axeViolations(page)).toEqual([])

    // The generic form: any legs, a minus debits; a dot where the comma goes is refused there too. The client is
    // found by name, and its accounts join the cajas' in the legs' choices.
    const generic = page.getByTestId('generic-form')
    const legs = generic.getByTestId('leg-row')
    expect(await legs.nth(0).locator(`select option[value="${perez.usd}"]`).count()).toBe(0)
    await generic.locator('input[name=generic-client-search]').fill('pérez')
    await generic.locator(`select[name=generic-client] option[value="${perez.id}"]`).waitFor({ state: 'attached', timeout: SLOW })
    await generic.locator('select[name=generic-client]').selectOption(String(perez.id))
    await legs.nth(0).locator('select').selectOption(String(perez.usd))
    await legs.nth(0).locator('input').fill('-0,000001')
    await legs.nth(1).locator('select').selectOption(String(box.usd))
    await legs.nth(1).locator('input').fill('0.000001')
    await generic.getByTestId('generic-submit').click()
    expect(await generic.getByTestId('leg-error').textContent()).toContain('Separador equivocado')
    expect(await count()).toBe(before + 2)
    await legs.nth(1).locator('input').fill('0,000001')
    await generic.getByTestId('generic-submit').click()
    const third = await generic.getByTestId('generic-message').getByText(/Operación \d+ registrada/).textContent({ timeout: SLOW })
    const made3 = await ok('GET', `/api/operations/${third!.match(/Operación (\d+)/)![1]}`)
    expect(made3.transactions.map((t: { account_id: number; amount: string }) => [t.account_id, t.amount])).toEqual([
      [perez.usd, '-0.000001'],
      [box.usd, '0.000001'],
    ])
    expect(made3.client_id).toBe(perez.id)
    for (const size of [
      { width: 1024, height: 768 },
      { width: 768, height: 1024 },
    ]) {
      await page.setViewportSize(size)
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBe(size.width)
    }
    await page.setViewportSize({ width: 1366, height: 768 })
  }, 40_000)

  test('a client-scoped employee sees only its client: its operations and its balances', async () => {
    const theirs = await ok('POST', '/api/operations', { operation_type_id: typeId, client_id: gomez.id, status: 'completed', transactions: [{ account_id: gomez.usd, amount: '777' }] })
    await signIn(`acotada.${process.pid}@backoffice-e2e.test`)
    await page.getByTestId('operations-section').waitFor({ timeout: SLOW })
    await page.getByTestId('operations-table').waitFor({ timeout: SLOW })
    const ids = (await page.locator('[data-testid=operation-row]').evaluateAll((rows) => rows.map((r) => Number(r.getAttribute('data-id')))))
    const visible = (await ok('GET', `/api/operations?client_id=${perez.id}&pageSize=200`)).data.map((o: { id: number }) => o.id)
    expect(ids.length).toBeGreaterThan(0)
    expect(ids.every((id) => visible.includes(id))).toBe(true)
    expect(ids).not.toContain(theirs.id)
    expect(await page.getByTestId('pending-queue').count()).toBe(0)
    expect(await axeViolations(page)).toEqual([])

    await section('posicion', 'position-section')
    await page.locator(`[data-testid=external-row][data-account="${perez.usd}"]`).waitFor({ timeout: SLOW })
    expect(await page.getByText('Gómez Turismo').count()).toBe(0)
    expect(await page.locator('[data-testid=box-row]').count()).toBe(0)
    expect(await axeViolations(page)).toEqual([])
  }, 30_000)
})
