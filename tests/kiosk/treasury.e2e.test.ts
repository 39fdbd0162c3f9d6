/**
 * End to end for the money sections of /manage that an owner sets up once: Mesas, Centros de costo, Herramientas
 * del bot and Integraciones. One real server (webhooks may go to 127.0.0.1 over http here), one real database,
 * Debian's chromium at 1366×768, and a real HTTP receiver for the webhooks. Each section is driven as a person
 * would: created, edited, refused in words, deleted; and read back through the API to check what was sent.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import type { Locator, Page } from 'playwright-core'
import { EVENT_TYPES as SERVER_EVENT_TYPES } from '../../server/modules/webhooks/outbox'
import { EVENT_TYPES } from '../../kiosk/src/manage/eventTypes'
import { startReceiver, verify, type Receiver } from '../receiver'
import type { RunningServer } from '../server'
import { ensureKioskBuilt, launchChromium, ROOT, type Chromium } from './browser'
import { expectFitsSideways, openSection, signInToManage } from './manage'
import { axeViolations, openScene, type Scene } from './scene'

const SLOW = 20_000
const PASSWORD = 'tesoreria segura 2026'
const SHOTS = process.env.TREASURY_SCREENSHOTS === '1'
const MONEY = { accept: 'application/json; money=string' }

let scene: Scene
let server: RunningServer
let chromium: Chromium
let receiver: Receiver
let page: Page
let companyId: number
const caja = { id: 0, usd: 0, ars: 0, eur: 0 }
const caja2 = { id: 0, usd: 0, ars: 0 }
const perez = { id: 0, usd: 0 }
const types = { exchange: 0, upDown: 0, budget: 0 }

const ok = (method: string, path: string, body?: unknown, auth?: Record<string, string>) => scene.ok(method, path, body, { ...(auth ?? { 'x-api-key': scene.key }), ...MONEY })
const owner = () => `duena.${process.pid}@tesoreria-e2e.test`
const accountOf = (client: { accounts: { id: number; currency_name: string }[] }, currency: string) => client.accounts.find((a) => a.currency_name === currency)!.id

const signIn = (email: string) => signInToManage(page, { base: server.base, companyId }, email, PASSWORD, SLOW)

const open = (path: string, testid: string) => openSection(page, path, testid, SLOW)

const fits = () => expectFitsSideways(page)

const noViolations = async () => expect(await axeViolations(page)).toEqual([])

/** With TREASURY_SCREENSHOTS=1: the screen as it is, `at` scrolled to the top, into docs/manage-<name>.png (see docs/manage.md). */
async function shot(name: string, at?: Locator) {
  if (!SHOTS) return
  await at?.evaluate((el) => el.scrollIntoView({ block: 'start' }))
  await page.screenshot({ path: join(ROOT, `docs/manage-${name}.png`) })
}

beforeAll(async () => {
  ensureKioskBuilt()
  receiver = startReceiver()
  scene = await openScene('Cambios Tesorería', { ventanilla: false, env: { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCHEDULE: '60,60' } })
  ;({ server, companyId } = scene)
  types.exchange = (await ok('POST', '/api/operation-types', { name: 'Compra de divisas', kind: 'exchange' })).id
  types.upDown = (await ok('POST', '/api/operation-types', { name: 'Ingreso', kind: 'up_down' })).id
  types.budget = (await ok('POST', '/api/operation-types', { name: 'Gasto', kind: 'budget' })).id
  const c = await ok('POST', '/api/clients', { name: 'Caja principal', type: 0, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }, { currency_name: 'EUR' }] })
  Object.assign(caja, { id: c.id, ars: accountOf(c, 'ARS'), usd: accountOf(c, 'USD'), eur: accountOf(c, 'EUR') })
  const c2 = await ok('POST', '/api/clients', { name: 'Caja tesoro', type: 0, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] })
  Object.assign(caja2, { id: c2.id, ars: accountOf(c2, 'ARS'), usd: accountOf(c2, 'USD') })
  const p = await ok('POST', '/api/clients', { name: 'Pérez Importaciones', description: 'Importador de repuestos', type: 1, accounts: [{ currency_name: 'USD' }] })
  Object.assign(perez, { id: p.id, usd: p.accounts[0].id })
  await ok('POST', '/api/employees', { email: owner(), name: 'Marta Dueña', permissions: ['company.admin'], password: PASSWORD })
  // A client-scoped employee may not see webhooks (contract §11): no Integraciones for them.
  await ok('POST', '/api/employees', { email: `acotado.${process.pid}@tesoreria-e2e.test`, name: 'Pablo Acotado', permissions: ['webhooks.manage', 'mesas.view', 'clients.view'], client_ids: [perez.id], password: PASSWORD })
  chromium = await launchChromium({ width: 1366, height: 768 })
  page = await chromium.context.newPage()
  await signIn(owner())
}, 120_000)

afterAll(async () => {
  await chromium?.close()
  await scene?.stop()
  receiver?.stop()
})

describe('Mesas', () => {
  test('off in words; equal currencies and a taken account refused in words; created, edited, blotter, infer, position, deleted', async () => {
    await open('mesas', 'mesas-section')
    await page.getByTestId('mesas-disabled').getByText('Las mesas no están habilitadas para esta empresa').waitFor({ timeout: SLOW })
    await noViolations()

    await ok('PATCH', `/api/superadmin/companies/${companyId}`, { modules: { mesas: true } }, scene.operator)
    await page.reload()
    await page.getByTestId('mesa-new').click({ timeout: SLOW })
    const form = page.getByTestId('mesa-form')
    await form.locator('input[name=name]').fill('Mesa Dólar')
    await form.locator('select[name=local]').selectOption('ARS')
    await form.locator('select[name=quote]').selectOption('ARS')
    await form.getByTestId('mesa-save').click()
    expect(await form.getByTestId('error-quote').textContent()).toBe('La moneda cotizada tiene que ser distinta de la moneda local.')
    expect(await form.getByTestId('error-accounts').textContent()).toContain('al menos una cuenta')
    await noViolations()
    expect((await ok('GET', '/api/mesas')).data).toEqual([])

    await form.locator('select[name=quote]').selectOption('USD')
    // Only the accounts in the two currencies are offered: the EUR one is not.
    expect(await form.locator(`input[name=account][value="${caja.eur}"]`).count()).toBe(0)
    await form.locator(`input[name=account][value="${caja.usd}"]`).check()
    await form.locator(`input[name=account][value="${caja.ars}"]`).check()
    await form.getByTestId('mesa-save').click()
    const desk = page.getByTestId('mesa-desk')
    await desk.waitFor({ timeout: SLOW })
    const [mesa] = (await ok('GET', '/api/mesas')).data
    expect(mesa).toMatchObject({ name: 'Mesa Dólar', local_currency: 'ARS', quote_currency: 'USD', costing_method: 'fifo', account_ids: [caja.usd, caja.ars].sort((a, b) => a - b), quote_direction: 'quote', blotter_feed_mode: 'manual', include_pending_legs: false })

    // A second mesa: the first one's accounts are offered but taken; one of caja 2's is taken by someone else meanwhile.
    await page.getByTestId('mesa-new').click()
    await form.locator('input[name=name]').fill('Mesa Tesoro')
    await form.locator('select[name=quote]').selectOption('USD')
    expect(await form.locator(`input[name=account][value="${caja.usd}"]`).isDisabled()).toBe(true)
    expect(await form.getByText('(en la mesa «Mesa Dólar»)').count()).toBe(2)
    await form.locator(`input[name=account][value="${caja2.usd}"]`).check()
    const other = await ok('POST', '/api/mesas', { name: 'Mesa de otro', local_currency: 'ARS', quote_currency: 'USD', costing_method: 'wac', account_ids: [caja2.usd] })
    await form.getByTestId('mesa-save').click()
    expect(await form.getByTestId('error-accounts').textContent({ timeout: SLOW })).toContain('Una de las cuentas ya está en otra mesa')
    await form.getByRole('button', { name: 'Cancelar' }).click()
    await ok('DELETE', `/api/mesas/${other.id}`)

    // A completed purchase on the mesa's accounts is suggested; «Confirmar» puts it in the blotter.
    const buy = (usd: string, ars: string) =>
      ok('POST', '/api/operations', { operation_type_id: types.exchange, status: 'completed', transactions: [{ account_id: caja.usd, amount: usd }, { account_id: caja.ars, amount: `-${ars}` }] })
    const first = await buy('100', '100000')
    await page.reload()
    await desk.waitFor({ timeout: SLOW })
    const suggestion = desk.locator(`[data-testid=suggestion-row][data-operation="${first.id}"]`)
    expect(await suggestion.textContent({ timeout: SLOW })).toContain('Compra100,00100.000,001.000,00Exacta')
    await suggestion.getByTestId('suggestion-confirm').click()
    await desk.getByTestId('desk-message').getByText(`Operación ${first.id} confirmada`).waitFor({ timeout: SLOW })
    expect(await desk.getByTestId('suggestion-row').count()).toBe(0)

    // Infer: an unknown operation and one with no legs here are said in words; a real one goes in.
    const infer = desk.getByTestId('infer-form')
    await infer.locator('input[name=operation]').fill('999999')
    await infer.getByTestId('infer-submit').click()
    expect(await infer.getByTestId('infer-error').textContent({ timeout: SLOW })).toBe('No hay una operación 999999 a su alcance.')
    const elsewhere = await ok('POST', '/api/operations', { operation_type_id: types.upDown, status: 'completed', transactions: [{ account_id: perez.usd, amount: '5' }] })
    await infer.locator('input[name=operation]').fill(String(elsewhere.id))
    await infer.getByTestId('infer-submit').click()
    expect(await infer.getByTestId('infer-error').textContent({ timeout: SLOW })).toContain('no tiene movimientos que cuenten en las dos monedas')
    const second = await buy('100', '110000')
    await infer.locator('input[name=operation]').fill(String(second.id))
    await infer.getByTestId('infer-submit').click()
    expect(await infer.getByTestId('inference').textContent({ timeout: SLOW })).toContain('Compra de USD 100,00 por ARS 110.000,00, cotización 1.100,00.')
    await infer.getByTestId('infer-add').click()
    await infer.getByTestId('infer-message').getByText(`Operación ${second.id} agregada al blotter.`).waitFor({ timeout: SLOW })

    // A sale typed by hand: a dot where the comma goes is refused, then 150 at 1.200 goes in.
    const hand = desk.getByTestId('fabricated-form')
    await hand.locator('select[name=side]').selectOption('sell')
    await hand.locator('input[name=quote]').fill('150')
    await hand.locator('input[name=local]').fill('180000.00')
    await hand.getByTestId('fabricated-submit').click()
    expect(await hand.getByTestId('error-local-amount').textContent()).toContain('Separador equivocado')
    await hand.locator('input[name=local]').fill('180.000')
    expect(await hand.getByTestId('fabricated-fx').textContent()).toBe('Cotización: ARS 1.200,00 por USD.')
    await hand.getByTestId('fabricated-submit').click()
    await hand.getByTestId('fabricated-message').getByText('Línea cargada en el blotter.').waitFor({ timeout: SLOW })
    // Contract §6's example: fifo realizes 100×200 + 50×100 and leaves 50 at 1.100.
    await desk.getByTestId('position-pnl').getByText('ARS 25.000,00').waitFor({ timeout: SLOW })
    expect(await desk.getByTestId('position-quote').textContent()).toBe('USD 50,00')
    expect(await desk.getByTestId('position-cost').textContent()).toBe('ARS 1.100,00')
    expect(await desk.getByTestId('line-row').count()).toBe(3)
    await noViolations()
    await shot('mesas', desk)

    // Edit: weighted average instead of fifo — same trades, 22.500 realized and 50 at 1.050.
    await desk.getByTestId('mesa-edit').click()
    const edit = desk.getByTestId('mesa-form')
    await edit.locator('input[name=method][value=wac]').check()
    await edit.locator('select[name=feed]').selectOption('auto')
    await edit.getByTestId('mesa-save').click()
    await desk.getByTestId('position-pnl').getByText('ARS 22.500,00').waitFor({ timeout: SLOW })
    expect(await desk.getByTestId('position-cost').textContent()).toBe('ARS 1.050,00')
    expect((await ok('GET', `/api/mesas/${mesa.id}`))).toMatchObject({ costing_method: 'wac', blotter_feed_mode: 'auto' })

    // Delete the hand-made line: no operation or balance moves.
    const balances = (await ok('GET', `/api/clients/${caja.id}`)).accounts
    const fabricated = (await ok('GET', `/api/mesas/${mesa.id}/lines`)).data.find((l: { source: string }) => l.source === 'fabricated')
    const row = desk.locator(`[data-testid=line-row][data-id="${fabricated.id}"]`)
    await row.getByTestId('line-delete').click()
    await page.keyboard.press('Enter')
    await row.waitFor({ state: 'detached', timeout: SLOW })
    expect((await ok('GET', `/api/mesas/${mesa.id}/lines`)).data.map((l: { operation_id: number }) => l.operation_id)).toEqual([first.id, second.id])
    expect((await ok('GET', `/api/clients/${caja.id}`)).accounts).toEqual(balances)

    // A long blotter is read a page at a time.
    for (let i = 0; i < 25; i++) await ok('POST', `/api/mesas/${mesa.id}/lines`, { side: i % 2 ? 'sell' : 'buy', local_amount: String(1000 + i), quote_amount: '1' })
    await page.reload()
    await desk.getByTestId('lines-page').waitFor({ timeout: SLOW })
    expect(await desk.getByTestId('lines-page').textContent()).toBe('Página 1 de 2')
    expect(await desk.getByTestId('line-row').count()).toBe(20)
    await desk.getByTestId('lines-next').click()
    expect(await desk.getByTestId('line-row').count()).toBe(7)
    await fits()

    await desk.getByTestId('mesa-delete').click()
    await page.keyboard.press('Enter')
    await page.getByText('Mesa «Mesa Dólar» borrada: sus cuentas quedan libres para otra mesa.').waitFor({ timeout: SLOW })
    expect((await ok('GET', '/api/mesas')).data).toEqual([])
  }, 90_000)
})

describe('Centros de costo', () => {
  test('created with a client found by search; budgets created and updated; spent against budget this month', async () => {
    await open('centros-de-costo', 'cost-centers-section')
    await page.getByTestId('cost-center-new').click({ timeout: SLOW })
    const form = page.getByTestId('cost-center-form')
    await form.getByTestId('cost-center-save').click()
    expect(await form.getByTestId('error-name').textContent()).toContain('Escriba un nombre')
    expect(await form.getByText('Elija el cliente al que se cargan los gastos del centro.').count()).toBe(1)
    await noViolations()
    await form.locator('input[name=name]').fill('Alquiler del local')
    await form.locator('input[name=client-search]').fill('repuestos')
    await form.getByText('Uno coincide.').waitFor({ timeout: SLOW })
    await form.locator('select[name=client]').selectOption(String(perez.id))
    await form.locator('select[name=account]').selectOption(String(caja.ars))
    await form.getByTestId('cost-center-save').click()
    const item = page.getByTestId('cost-center').filter({ hasText: 'Alquiler del local' })
    await item.waitFor({ timeout: SLOW })
    const [center] = (await ok('GET', '/api/cost-centers')).data
    expect(center).toMatchObject({ name: 'Alquiler del local', client_id: perez.id, default_currency: 'ARS', default_internal_account_id: caja.ars })
    expect(await item.textContent()).toContain('Pérez Importaciones')

    const [year, month] = (await ok('GET', '/api/metrics/home')).date.split('-').map(Number)
    const budget = item.getByTestId('budget-form')
    await budget.locator('input[name=amount]').fill('100.000')
    await budget.getByTestId('budget-save').click()
    await budget.getByTestId('budget-message').getByText('creado: 100.000,00').waitFor({ timeout: SLOW })
    await budget.locator('input[name=amount]').fill('150.000,5')
    expect(await budget.getByTestId('budget-save').textContent()).toBe('Actualizar presupuesto')
    await budget.getByTestId('budget-save').click()
    await budget.getByTestId('budget-message').getByText('actualizado: 150.000,50 (antes 100.000,00)').waitFor({ timeout: SLOW })
    await budget.locator('select[name=kind]').selectOption('income')
    await budget.locator('input[name=amount]').fill('20.000')
    await budget.getByTestId('budget-save').click()
    await budget.getByTestId('budget-message').getByText('creado: 20.000,00').waitFor({ timeout: SLOW })
    const budgets = (await ok('GET', '/api/cost-centers')).data[0].budgets.map((b: { kind: string; amount: string; year: number; period: number }) => [b.kind, b.amount, b.year, b.period])
    expect(budgets.sort()).toEqual([
      ['expense', '150000.5', year, month],
      ['income', '20000', year, month],
    ])
    expect(await item.locator(`[data-testid=budget-row][data-slot="ARS-${year}-${month}-expense"] [data-testid=budget-amount]`).textContent()).toBe('ARS 150.000,50')

    // This month's expense charged to the cost center, against its budget.
    await ok('POST', '/api/operations', { operation_type_id: types.budget, cost_center_id: center.id, status: 'completed', transactions: [{ account_id: caja.ars, amount: '-40000.25' }] })
    await page.reload()
    await item.getByTestId('spent-text').waitFor({ timeout: SLOW })
    expect(await item.getByTestId('spent-text').textContent()).toBe('Gastado ARS 40.000,25 de 150.000,50 (27 %) · quedan 110.000,25')
    await noViolations()
    await fits()
    await shot('cost-centers')
  }, 60_000)
})

describe('Herramientas del bot', () => {
  test('created by kind with fixed values and questions; a taken slug in words; edited, disabled, tried, deleted', async () => {
    await open('herramientas', 'tools-section')
    await page.getByTestId('tool-new').click({ timeout: SLOW })
    const form = page.getByTestId('tool-form')
    await form.locator('input[name=name]').fill('Compra Dólar (MEP)')
    expect(await form.getByText('Vacío: «compra-dolar-mep», del nombre.').count()).toBe(1)
    await form.locator('select[name=kind]').selectOption('up_down')
    await form.locator('select[name=fixed-destinationAccountId]').selectOption(String(caja.usd))
    await form.locator('input[name=fixed-description]').fill('Pedido por WhatsApp')
    await form.locator('input[name=fixed-amount]').fill('10.5')
    await form.locator('input[name=ask-amount]').check()
    await form.locator('input[name=label-amount]').fill('¿Cuántos dólares?')
    await form.getByTestId('tool-save').click()
    expect(await form.getByTestId('error-amount').textContent()).toContain('Separador equivocado')
    await form.locator('input[name=fixed-amount]').fill('')
    await shot('tools', form)
    await form.getByTestId('tool-save').click()
    const row = page.locator('[data-testid=tool-row][data-slug=compra-dolar-mep]')
    await row.waitFor({ timeout: SLOW })
    const [tool] = (await ok('GET', '/api/messaging/tools')).data
    expect(tool).toMatchObject({
      name: 'Compra Dólar (MEP)',
      slug: 'compra-dolar-mep',
      enabled: true,
      company_operation_type_id: types.upDown,
      fixed_config: { toolKind: 'up_down', operationTypeId: types.upDown, destinationAccountId: caja.usd, description: 'Pedido por WhatsApp' },
      parameter_schema: { parameters: [{ key: 'amount', label: '¿Cuántos dólares?', type: 'amount', required: true }] },
    })
    expect(await row.textContent()).toContain('el bot pregunta: ¿Cuántos dólares?')

    // The same name again makes the same slug: refused in words next to the identifier.
    await page.getByTestId('tool-new').click()
    await form.locator('input[name=name]').fill('Compra dólar MEP')
    await form.getByTestId('tool-save').click()
    expect(await form.getByTestId('error-slug').textContent({ timeout: SLOW })).toBe('Ya hay otra herramienta con el identificador «compra-dolar-mep». Escriba otro.')
    await noViolations()
    await form.getByRole('button', { name: 'Cancelar' }).click()

    // Edit: the question's words and a fixed mode; the slug stays.
    await row.getByTestId('tool-edit').click()
    await form.locator('input[name=label-amount]').fill('¿Cuántos USD?')
    await form.locator('select[name=fixed-mode]').selectOption('standard')
    await form.getByTestId('tool-save').click()
    await page.getByTestId('tools-message').getByText('Herramienta «Compra Dólar (MEP)» guardada (identificador compra-dolar-mep).').waitFor({ timeout: SLOW })
    const edited = await ok('GET', `/api/messaging/tools/${tool.id}`)
    expect(edited.parameter_schema.parameters[0].label).toBe('¿Cuántos USD?')
    expect(edited.fixed_config.mode).toBe('standard')

    // Disabled: the bot no longer offers it, and it cannot be tried.
    await row.getByTestId('tool-toggle').click()
    await row.getByTestId('tool-state').getByText('Desactivada').waitFor({ timeout: SLOW })
    expect((await ok('GET', `/api/messaging/tools/${tool.id}`)).enabled).toBe(false)
    await row.getByTestId('tool-try').click()
    expect(await row.getByTestId('try-submit').isDisabled()).toBe(true)
    await row.getByTestId('tool-toggle').click()
    await row.getByTestId('tool-state').getByText('Activa').waitFor({ timeout: SLOW })

    // Try: says it makes a real pending operation; a missing answer is refused here; then it runs once.
    const tryForm = row.getByTestId('tool-try-form')
    expect(await tryForm.getByTestId('try-warning').textContent()).toContain('Probar crea una operación real')
    await tryForm.getByTestId('try-submit').click()
    expect(await tryForm.getByTestId('try-error-amount').textContent()).toBe('Falta este dato.')
    await tryForm.locator('input[name=param-amount]').fill('250,50')
    await tryForm.getByTestId('try-submit').dblclick()
    const result = tryForm.getByTestId('try-result')
    await result.waitFor({ timeout: SLOW })
    await shot('tools-try', row)
    const opId = Number(await result.getAttribute('data-operation'))
    expect(await result.getByTestId('try-status').textContent()).toBe('Pendiente')
    expect(await result.textContent()).toContain('USD 250,50')
    const op = await ok('GET', `/api/operations/${opId}`)
    expect(op.status).toBe('pending')
    expect(op.transactions.map((t: { account_id: number; amount: string }) => [t.account_id, t.amount])).toEqual([[caja.usd, '250.5']])
    const made = (await ok('GET', '/api/operations?pageSize=200')).data.filter((o: { description: string }) => o.description === 'Pedido por WhatsApp')
    expect(made.length).toBe(1)
    await noViolations()
    await result.getByTestId('try-cancel').click()
    await result.getByTestId('try-status').getByText('Cancelada').waitFor({ timeout: SLOW })
    expect((await ok('GET', `/api/operations/${opId}`)).status).toBe('cancelled')
    await fits()

    await row.getByTestId('tool-delete').click()
    await page.keyboard.press('Enter')
    await page.getByText('Herramienta «Compra Dólar (MEP)» borrada: el bot ya no la ofrece.').waitFor({ timeout: SLOW })
    await expect(ok('GET', `/api/messaging/tools/${tool.id}`)).rejects.toThrow('404')
  }, 60_000)
})

describe('Integraciones', () => {
  test('the screens name every event type the server records', () => {
    expect([...EVENT_TYPES].sort()).toEqual([...SERVER_EVENT_TYPES].sort())
  })

  test('an API key shown once, working, then revoked', async () => {
    await open('integraciones', 'integrations-section')
    const keys = page.getByTestId('api-keys')
    await keys.getByTestId('key-create').click({ timeout: SLOW })
    expect(await keys.getByTestId('error-key-name').textContent()).toContain('Escriba un nombre')
    await keys.locator('input[name=key-name]').fill('Sistema contable')
    await keys.getByTestId('key-create').click()
    const shown = keys.getByTestId('new-key')
    await shown.waitFor({ timeout: SLOW })
    expect(await shown.textContent()).toContain('no se volverá a mostrar')
    const key = (await shown.getByTestId('secret-value').textContent())!.trim()
    expect((await scene.ok('GET', '/api/clients?pageSize=1', undefined, { 'x-api-key': key })).count).toBeGreaterThan(0)
    await noViolations()
    await shown.getByTestId('secret-close').click()
    expect(await page.getByText(key).count()).toBe(0)
    const listed = (await ok('GET', '/api/api-keys')).data.find((k: { name: string }) => k.name === 'Sistema contable')
    const row = keys.locator(`[data-testid=key-row][data-id="${listed.id}"]`)
    expect(await row.textContent()).toContain(`${listed.prefix}…`)
    await row.getByTestId('key-revoke').click()
    await page.keyboard.press('Enter')
    await keys.getByTestId('keys-message').getByText('Clave «Sistema contable» revocada').waitFor({ timeout: SLOW })
    await expect(scene.ok('GET', '/api/clients?pageSize=1', undefined, { 'x-api-key': key })).rejects.toThrow('401')
  }, 30_000)

  test('a webhook: URL refused in words, secret shown once, test delivered and signed, resent, rotated, disabled, deleted; the event feed', async () => {
    const hooks = page.getByTestId('webhooks')
    await hooks.getByTestId('hook-new').click({ timeout: SLOW })
    const form = hooks.getByTestId('hook-form')
    await form.locator('input[name=url]').fill('https://usuario:clave@example.com/avisos')
    await form.getByTestId('hook-save').click()
    expect(await form.getByTestId('error-url').textContent({ timeout: SLOW })).toBe('Esa dirección no puede recibir avisos: no se aceptan usuario ni contraseña dentro de la dirección.')
    await noViolations()
    await form.locator('input[name=url]').fill(receiver.url)
    await form.locator('input[name=all-events]').uncheck()
    await form.locator('input[name=family-operation]').check()
    await form.locator('input[name=event-type][value="webhook.test"]').check()
    await form.getByTestId('hook-save').click()
    const shown = hooks.getByTestId('new-secret')
    await shown.waitFor({ timeout: SLOW })
    expect(await shown.textContent()).toContain('no se volverá a mostrar')
    const secret = (await shown.getByTestId('secret-value').textContent())!.trim()
    expect(secret).toStartWith('whsec_')
    const [endpoint] = (await ok('GET', '/api/webhook-endpoints')).data
    expect(endpoint).toMatchObject({ url: receiver.url, event_types: ['operation.*', 'webhook.test'], enabled: true })
    await shown.getByTestId('secret-close').click()

    // «Probar»: a webhook.test reaches the receiver, signed with the secret shown; the log says delivered, 200.
    const row = hooks.locator(`[data-testid=hook-row][data-id="${endpoint.id}"]`)
    await row.getByTestId('hook-test').click()
    const [ping] = await receiver.until((all) => all.some((r) => r.event.type === 'webhook.test'))
    expect(() => verify(secret, ping)).not.toThrow()
    const delivered = row.locator(`[data-testid=attempt-row][data-event="${ping.id}"]`)
    await delivered.locator('[data-testid=attempt-status]').getByText('Entregado').waitFor({ timeout: SLOW })
    expect(await delivered.getByTestId('attempt-response').textContent()).toBe('200')
    await noViolations()
    await shot('integrations', hooks)

    // «Reenviar» while the receiver fails: the new attempt says so in words.
    // Its retry waits (the schedule's first step is a minute here); «Reenviar» once the receiver is back sends it now.
    receiver.respond = () => new Response('no', { status: 500 })
    await delivered.getByTestId('attempt-resend').click()
    const failed = row.locator('[data-testid=attempt-row][data-status=failed]').first()
    await failed.getByText('El receptor respondió 500').waitFor({ timeout: SLOW })
    expect(await failed.textContent()).toContain(ping.id)
    receiver.respond = () => new Response('ok')
    await failed.getByTestId('attempt-resend').click()
    await receiver.until((all) => all.filter((r) => r.id === ping.id).length === 3)
    await page.waitForFunction((id) => document.querySelectorAll(`[data-testid=attempt-row][data-event="${id}"][data-status=succeeded]`).length === 2, ping.id, { timeout: SLOW })

    // Rotate: the new secret is shown once, and the next test is signed with it.
    await row.getByTestId('hook-rotate').click()
    await page.keyboard.press('Enter')
    const rotated = row.getByTestId('rotated-secret')
    await rotated.waitFor({ timeout: SLOW })
    const fresh = (await rotated.getByTestId('secret-value').textContent())!.trim()
    expect(fresh).not.toBe(secret)
    await rotated.getByTestId('secret-close').click()
    const before = receiver.received.length
    await row.getByTestId('hook-test').click()
    const after = await receiver.until((all) => all.length > before && all[all.length - 1].event.type === 'webhook.test')
    expect(() => verify(fresh, after[after.length - 1])).not.toThrow()

    // Disabled: nothing is sent; enabled again.
    await row.getByTestId('hook-toggle').click()
    await row.getByTestId('hook-state').getByText('Desactivado').waitFor({ timeout: SLOW })
    expect((await ok('GET', `/api/webhook-endpoints/${endpoint.id}`)).enabled).toBe(false)
    await row.getByTestId('hook-test').click()
    await row.getByTestId('hook-message').getByText('El destino está desactivado: no se envió la prueba.').waitFor({ timeout: SLOW })
    await row.getByTestId('hook-toggle').click()
    await row.getByTestId('hook-state').getByText('Activo').waitFor({ timeout: SLOW })
    await row.getByTestId('hook-edit').click()
    await row.locator('input[name=description]').fill('Sistema contable')
    await row.locator('input[name=all-events]').check()
    await row.getByTestId('hook-save').click()
    await row.getByTestId('hook-message').getByText('Cambios guardados.').waitFor({ timeout: SLOW })
    expect(await ok('GET', `/api/webhook-endpoints/${endpoint.id}`)).toMatchObject({ description: 'Sistema contable', event_types: ['*'] })
    expect(await row.textContent()).toContain('Sistema contable · Todos los eventos')
    await fits()

    // The event feed, filtered to the test pings, and one resent from there.
    const events = page.getByTestId('events')
    await events.locator('select[name=event-filter]').selectOption('webhook.test')
    await events.getByTestId('events-search').click()
    await events.locator('[data-testid=event-row][data-type="webhook.test"]').first().waitFor({ timeout: SLOW })
    const shownTypes = await events.getByTestId('event-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-type')))
    expect(shownTypes.length).toBeGreaterThanOrEqual(2)
    expect(new Set(shownTypes)).toEqual(new Set(['webhook.test']))
    const first = events.getByTestId('event-row').first()
    await first.getByTestId('event-data').click()
    expect(await events.getByTestId('event-json').textContent()).toContain(`"id": "${await first.getAttribute('data-id')}"`)
    await noViolations()
    await fits()
    await shot('events', events)
    const count = receiver.received.length
    await events.getByTestId('event-resend').first().click()
    await events.getByTestId('events-message').getByText(/reenviado a un destino/).waitFor({ timeout: SLOW })
    await receiver.until((all) => all.length > count)
    await events.getByTestId('events-next').click()
    await events.getByTestId('events-message').getByText('No hay eventos más nuevos por ahora.').waitFor({ timeout: SLOW })
    await events.getByTestId('events-previous').click()
    await events.getByTestId('event-row').first().waitFor({ timeout: SLOW })
    await noViolations()

    await row.getByTestId('hook-delete').click()
    await page.keyboard.press('Enter')
    await hooks.getByTestId('hooks-message').getByText(`Destino ${receiver.url} borrado`).waitFor({ timeout: SLOW })
    expect((await ok('GET', '/api/webhook-endpoints')).data).toEqual([])
  }, 90_000)

  test('a client-scoped employee sees Mesas but no Integraciones', async () => {
    await signIn(`acotado.${process.pid}@tesoreria-e2e.test`)
    const nav = await page.getByTestId('nav').locator('a').allTextContents()
    expect(nav).toContain('Mesas')
    expect(nav).not.toContain('Integraciones')
    await page.goto(`${server.base}/manage/integraciones`)
    await page.getByTestId('no-access').waitFor({ timeout: SLOW })
  }, 30_000)
})
