/**
 * End to end for the company's own records in /manage: Clientes y cajas, Etiquetas, Tipos, Empresa. A real server process,
 * a real database and Debian's chromium; an owner signs in and does everything from the screens. What the API needs
 * beforehand that these sections do not make (an approved operation, 50,000 clients) is made with the company key.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import type { RunningServer } from '../server'
import { ensureKioskBuilt, launchChromium, ROOT, type Chromium } from './browser'
import { findLayoutProblems } from './layout'
import { openSection, signInToManage } from './manage'
import { axeViolations, openScene, type Scene } from './scene'

const SLOW = 20_000
const PASSWORD = 'registros seguros 2026'
const SHOTS = process.env.RECORDS_SCREENSHOTS === '1'
const MONEY = { accept: 'application/json; money=string' }

let scene: Scene
let server: RunningServer
let chromium: Chromium
let companyId: number
let page: Page

const ok = (method: string, path: string, body?: unknown, auth: Record<string, string> = { 'x-api-key': scene.key }) => scene.ok(method, path, body, { ...auth, ...MONEY })
const owner = () => `duena.${process.pid}@records-e2e.test`
const viewer = () => `consulta.${process.pid}@records-e2e.test`

const signIn = (email: string) => signInToManage(page, { base: server.base, companyId }, email, PASSWORD, SLOW)

const section = (path: string, testid: string) => openSection(page, path, testid, SLOW)

/**
 * The manager app at this size: no sideways scrolling, nothing cut at the right edge, no text over other text.
 * Long pages scroll down, as any page of records does, so only the horizontal side of "outside the viewport" counts.
 */
async function fitProblems(on = page): Promise<string[]> {
  const problems = await findLayoutProblems(on)
  const width = on.viewportSize()!.width
  return problems
    // The skip link waits off-screen until it has the focus; captions for screen readers are clipped on purpose.
    .filter((p) => !/\.(skip|visually-hidden)\b/.test(p.what))
    .filter((p) => {
      if (p.kind === 'overlap') return true
      if (p.kind === 'page-scrolls') return Number(/page (\d+)×/.exec(p.what)![1]) > width
      if (p.kind === 'scrolled') return p.what.includes('scrollWidth')
      const [, left, , right] = /at (-?\d+),(-?\d+)–(-?\d+),(-?\d+)/.exec(p.what)!.map(Number)
      return left < 0 || right > width
    })
    .map((p) => `${p.kind}: ${p.what}`)
}

async function checkSizes(label: string, on = page, sizes = [{ width: 1366, height: 768 }, { width: 1920, height: 1080 }]) {
  for (const size of sizes) {
    await on.setViewportSize(size)
    await on.waitForTimeout(100)
    expect({ label, size: size.width, problems: await fitProblems(on) }).toEqual({ label, size: size.width, problems: [] })
  }
  await on.setViewportSize({ width: 1366, height: 768 })
}

beforeAll(async () => {
  ensureKioskBuilt()
  scene = await openScene('Cambios Registros', { ventanilla: false })
  ;({ server, companyId } = scene)
  await ok('POST', '/api/employees', { email: owner(), name: 'Marta Dueña', permissions: ['company.admin'], password: PASSWORD })
  await ok('POST', '/api/employees', { email: viewer(), name: 'Carlos Consulta', permissions: ['clients.view', 'operations.view'], password: PASSWORD })
  chromium = await launchChromium({ width: 1366, height: 768 })
  page = await chromium.context.newPage()
  await signIn(owner())
}, 120_000)

afterAll(async () => {
  await chromium?.close()
  await scene?.stop()
})

describe('the records sections', () => {
  test('Etiquetas: mistakes in words next to their fields, then two tags made with their colors', async () => {
    await section('etiquetas', 'tags-section')
    await page.getByText('Todavía no hay etiquetas.').waitFor({ timeout: SLOW })
    const form = page.getByTestId('tag-create')
    await form.locator('input[name=color-code]').fill('azul')
    await form.getByTestId('tag-save').click()
    expect(await form.getByTestId('error-tag-name').textContent()).toBe('Escriba el nombre de la etiqueta.')
    expect(await form.getByTestId('error-tag-color').textContent()).toContain('#RRGGBB')
    expect(await form.locator('input[name=name]').getAttribute('aria-invalid')).toBe('true')
    expect(await axeViolations(page)).toEqual([])

    await form.locator('input[name=name]').fill('Mayorista')
    await form.getByRole('button', { name: 'Usar el color #1d6b31' }).click()
    expect(await form.locator('input[name=color-code]').inputValue()).toBe('#1d6b31')
    await form.locator('input[name=name]').press('Enter')
    await form.getByTestId('tag-message').getByText('Etiqueta «Mayorista» creada.').waitFor({ timeout: SLOW })
    await form.locator('input[name=name]').fill('Turismo')
    await form.locator('input[name=color-code]').fill('#FFD166')
    await form.getByTestId('tag-save').click()
    await form.getByTestId('tag-message').getByText('Etiqueta «Turismo» creada.').waitFor({ timeout: SLOW })
    // The same name again is refused before anything is sent.
    await form.locator('input[name=name]').fill('mayorista')
    await form.getByTestId('tag-save').click()
    expect(await form.getByTestId('error-tag-name').textContent()).toBe('Ya hay una etiqueta «mayorista». Elija otro nombre.')

    const tags = (await ok('GET', '/api/tags')).data.map((t: { name: string; color: string }) => [t.name, t.color])
    expect(tags).toEqual([
      ['Mayorista', '#1d6b31'],
      ['Turismo', '#ffd166'],
    ])
    expect(await page.getByTestId('tag-row').allTextContents()).toEqual(['Mayorista #1d6b31', 'Turismo #ffd166'])
    // White on the dark green, black on the yellow: both read.
    const inks = await page.getByTestId('tag-row').getByTestId('tag-chip').evaluateAll((chips) => chips.map((c) => getComputedStyle(c).color))
    expect(inks).toEqual(['rgb(255, 255, 255)', 'rgb(0, 0, 0)'])
    expect(await axeViolations(page)).toEqual([])
    if (SHOTS) await page.screenshot({ path: join(ROOT, 'docs/manage-tags.png') })
    await checkSizes('etiquetas')
  }, 60_000)

  test('Tipos: operation types by kind and transaction types with commission, a repeated name refused in words', async () => {
    await section('tipos', 'types-section')
    await page.getByText('Todavía no hay tipos de operación.').waitFor({ timeout: SLOW })
    const ops = page.getByTestId('operation-type-create')
    await ops.getByTestId('operation-type-save').click()
    expect(await ops.getByTestId('error-op-type-name').textContent()).toBe('Escriba el nombre.')
    await ops.locator('input[name=name]').fill('Compra de divisas')
    await ops.getByTestId('operation-type-save').click()
    await page.getByTestId('operation-type-message').getByText('Tipo de operación «Compra de divisas» creado.').waitFor({ timeout: SLOW })
    await ops.locator('input[name=name]').fill('Gastos de sucursal')
    await ops.locator('select[name=kind]').selectOption('up_down')
    await ops.locator('input[name=name]').press('Enter')
    await page.getByTestId('operation-type-message').getByText('Tipo de operación «Gastos de sucursal» creado.').waitFor({ timeout: SLOW })
    await ops.locator('input[name=name]').fill('compra de divisas')
    await ops.getByTestId('operation-type-save').click()
    expect(await ops.getByTestId('error-op-type-name').textContent()).toBe('Ya hay un tipo «compra de divisas». Elija otro nombre.')
    expect(await page.getByTestId('operation-type-row').allTextContents()).toEqual(['Compra de divisasCambio de divisas (compra o venta)', 'Gastos de sucursalIngreso o egreso de dinero'])

    const txs = page.getByTestId('transaction-type-create')
    await txs.locator('input[name=name]').fill('Comisión')
    await txs.locator('input[name=is_commission]').check()
    await txs.getByTestId('transaction-type-save').click()
    await page.getByTestId('transaction-type-message').getByText('Tipo de movimiento «Comisión» creado (comisión).').waitFor({ timeout: SLOW })
    await txs.locator('input[name=name]').fill('Capital')
    await txs.getByTestId('transaction-type-save').click()
    await page.getByTestId('transaction-type-message').getByText('Tipo de movimiento «Capital» creado.').waitFor({ timeout: SLOW })
    expect(await page.getByTestId('transaction-type-row').allTextContents()).toEqual(['ComisiónSí', 'CapitalNo'])

    expect((await ok('GET', '/api/operation-types')).data.map((t: { name: string; kind: string }) => [t.name, t.kind])).toEqual([
      ['Compra de divisas', 'exchange'],
      ['Gastos de sucursal', 'up_down'],
    ])
    expect((await ok('GET', '/api/transaction-types')).data.map((t: { name: string; is_commission: boolean }) => [t.name, t.is_commission])).toEqual([
      ['Comisión', true],
      ['Capital', false],
    ])
    expect(await axeViolations(page)).toEqual([])
    if (SHOTS) await page.screenshot({ path: join(ROOT, 'docs/manage-types.png') })
    await checkSizes('tipos')
  }, 60_000)

  test('Clientes y cajas: a caja and a client made with accounts and tags, edited, an account opened, a tag taken off', async () => {
    await section('clientes', 'clients-section')
    await page.getByText('Todavía no hay clientes ni cajas.').waitFor({ timeout: SLOW })
    expect(await axeViolations(page)).toEqual([])

    await page.getByTestId('new-caja').click()
    const form = page.getByTestId('client-form')
    await form.waitFor({ timeout: SLOW })
    expect(await page.locator('h1').textContent()).toBe('Nueva caja')
    // The name has the focus; the caja comes with ARS and USD rows.
    expect(await page.evaluate(() => (document.activeElement as HTMLInputElement).name)).toBe('name')
    expect(await form.getByTestId('account-row').locator('input.code').evaluateAll((els) => els.map((e) => (e as HTMLInputElement).value))).toEqual(['ARS', 'USD'])
    // Mistakes: no name, a currency that is not a code, the same account twice.
    await form.getByTestId('add-account-row').click()
    await form.getByLabel('Moneda de la cuenta 3').fill('dólares')
    await form.getByTestId('add-account-row').click()
    await form.getByLabel('Moneda de la cuenta 4').fill('usd')
    await form.getByTestId('client-save').click()
    expect(await form.getByTestId('error-client-name').textContent()).toBe('Escriba el nombre de la caja, por ejemplo «Caja 2».')
    expect(await form.locator('.field-error').allTextContents()).toEqual([
      'Escriba el nombre de la caja, por ejemplo «Caja 2».',
      'La moneda es un código de 2 a 10 letras o números, por ejemplo USD.',
      'Ya hay otra cuenta en USD con ese nombre: póngale un nombre distinto o quítela.',
    ])
    expect(await form.getByTestId('client-message').textContent()).toBe('Hay datos para corregir; no se envió nada.')
    expect(await axeViolations(page)).toEqual([])
    await form.getByLabel('Moneda de la cuenta 3').fill('EUR')
    await form.getByLabel('Quitar la cuenta 4').click()
    await form.locator('input[name=name]').fill('Caja Ventanilla 2')
    await form.locator('input[name=description]').fill('Segunda caja del local de Florida')
    await form.getByLabel('Mayorista').check()
    if (SHOTS) await page.screenshot({ path: join(ROOT, 'docs/manage-client-new.png') })
    // A double click sends once: the same fill carries the same Idempotency-Key.
    await form.getByTestId('client-save').dblclick()
    await page.getByTestId('client-page').waitFor({ timeout: SLOW })
    await page.getByTestId('client-flash').getByText('Caja «Caja Ventanilla 2» creada con 3 cuentas.').waitFor({ timeout: SLOW })
    const cajas = (await ok('GET', '/api/clients?type=0')).data
    expect(cajas.length).toBe(1)
    const caja = cajas[0]
    expect(caja.accounts.map((a: { currency_name: string; balance: string }) => [a.currency_name, a.balance])).toEqual([
      ['ARS', '0'],
      ['USD', '0'],
      ['EUR', '0'],
    ])
    expect(caja.client_tags.map((ct: { tag: { name: string } }) => ct.tag.name)).toEqual(['Mayorista'])
    expect(caja.description).toBe('Segunda caja del local de Florida')
    expect(await page.getByTestId('balance').allTextContents()).toEqual(['ARS 0,00', 'USD 0,00', 'EUR 0,00'])
    expect(await axeViolations(page)).toEqual([])

    // Edit: an emptied name is refused next to it; then saved.
    const edit = page.getByTestId('client-edit')
    await edit.locator('input[name=name]').fill(' ')
    await edit.getByTestId('client-edit-save').click()
    expect(await edit.getByTestId('error-edit-name').textContent()).toBe('El nombre no puede quedar vacío.')
    await edit.locator('input[name=name]').fill('Caja Florida')
    await edit.locator('textarea[name=description]').fill('Caja del local de Florida, planta baja')
    await edit.getByTestId('client-edit-save').click()
    await edit.getByTestId('client-edit-message').getByText('Cambios guardados.').waitFor({ timeout: SLOW })
    await page.locator('h1').getByText('Caja Florida').waitFor({ timeout: SLOW })
    // An account more, and the tags changed from the same page.
    const add = page.getByTestId('account-add')
    await add.locator('input[name=currency]').fill('BRL')
    await add.locator('input[name=account-name]').fill('Reales billetes')
    await add.getByTestId('account-add-save').click()
    await page.getByTestId('account-message').getByText('Cuenta en BRL abierta con saldo 0,00.').waitFor({ timeout: SLOW })
    await page.locator('[data-testid=balance-row][data-currency=BRL]').waitFor({ timeout: SLOW })
    const tagBox = page.getByTestId('client-tags')
    await tagBox.getByLabel('Turismo').check()
    await tagBox.getByTestId('client-tags-message').getByText('Etiqueta «Turismo» asignada.').waitFor({ timeout: SLOW })
    await tagBox.getByLabel('Mayorista').uncheck()
    await tagBox.getByTestId('client-tags-message').getByText('Etiqueta «Mayorista» quitada.').waitFor({ timeout: SLOW })
    const saved = await ok('GET', `/api/clients/${caja.id}`)
    expect([saved.name, saved.description, saved.type]).toEqual(['Caja Florida', 'Caja del local de Florida, planta baja', 0])
    expect(saved.accounts.map((a: { name: string; currency_name: string }) => [a.name, a.currency_name])).toEqual([
      ['ARS', 'ARS'],
      ['USD', 'USD'],
      ['EUR', 'EUR'],
      ['Reales billetes', 'BRL'],
    ])
    expect(saved.client_tags.map((ct: { tag: { name: string } }) => ct.tag.name)).toEqual(['Turismo'])
    expect(await axeViolations(page)).toEqual([])
    if (SHOTS) await page.screenshot({ path: join(ROOT, 'docs/manage-client.png') })
    await checkSizes('ficha de caja')

    // A client of type 1 from the list's other button.
    await section('clientes', 'clients-section')
    await page.getByTestId('new-client').click()
    await form.waitFor({ timeout: SLOW })
    expect(await page.locator('h1').textContent()).toBe('Nuevo cliente')
    await form.locator('input[name=name]').fill('Pérez Importaciones SRL')
    await form.locator('input[name=description]').fill('Importador mayorista, cuenta corriente en dólares')
    await form.getByLabel('Quitar la cuenta 1').click()
    // The identity document (contract §19): typed as people write it, stored without dots.
    await form.locator('select[name=document-type]').selectOption('DNI')
    await form.locator('input[name=document-number]').fill('20.123.456')
    await form.locator('input[name=document-country]').fill('A')
    await form.getByTestId('client-save').click()
    expect(await form.getByTestId('error-client-document-country').textContent()).toBe('El país va con su código de dos letras, por ejemplo AR o UY.')
    await form.locator('input[name=document-country]').fill('AR')
    await form.locator('input[name=name]').press('Enter')
    await page.getByTestId('client-flash').getByText('Cliente «Pérez Importaciones SRL» creado con una cuenta.').waitFor({ timeout: SLOW })
    expect(await page.getByTestId('client-document').textContent()).toBe('DNI 20123456')

    // The same document for someone else: refused next to the number, naming who has it.
    await section('clientes', 'clients-section')
    await page.getByTestId('new-client').click()
    await form.locator('input[name=name]').fill('Otro Pérez')
    await form.locator('select[name=document-type]').selectOption('DNI')
    await form.locator('input[name=document-number]').fill('20123456')
    await form.getByTestId('client-save').click()
    await form.getByTestId('error-client-document-number').getByText('Ese documento ya es de «Pérez Importaciones SRL». Si es la misma persona, use esa ficha.').waitFor({ timeout: SLOW })
    expect(await form.getByTestId('client-message').textContent()).toBe('El documento ya está registrado en otro cliente: no se guardó nada.')
    expect(await axeViolations(page)).toEqual([])

    await section('clientes', 'clients-section')
    await page.getByTestId('client-row').nth(1).waitFor({ timeout: SLOW })
    expect(await page.getByTestId('client-row').locator('th a').allTextContents()).toEqual(['Caja Florida', 'Pérez Importaciones SRL'])
    expect(await page.getByTestId('row-document').allTextContents()).toEqual(['DNI 20123456'])
    expect(await page.getByTestId('clients-count').textContent()).toBe('2 resultados · página 1 de 1')
    // Found by its document, typed with dots.
    await page.locator('input[name=documento]').fill('20.123.456')
    await page.getByTestId('clients-count').getByText('1 resultado · página 1 de 1').waitFor({ timeout: SLOW })
    expect(await page.getByTestId('client-row').locator('th a').allTextContents()).toEqual(['Pérez Importaciones SRL'])
    await page.locator('input[name=documento]').fill('')
    await page.getByTestId('clients-count').getByText('2 resultados · página 1 de 1').waitFor({ timeout: SLOW })
    if (SHOTS) await page.screenshot({ path: join(ROOT, 'docs/manage-clients.png') })
    await checkSizes('clientes')
  }, 90_000)

  test('a balance: shown with every digit, the 409 on delete said in words; the statement downloaded; a grant given, used and revoked', async () => {
    const [caja] = (await ok('GET', '/api/clients?type=0')).data
    const [perez] = (await ok('GET', '/api/clients?type=1')).data
    const usd = (c: { accounts: { id: number; currency_name: string }[] }) => c.accounts.find((a) => a.currency_name === 'USD')!.id
    const type = (await ok('GET', '/api/operation-types')).data[0].id
    const op = await ok('POST', '/api/operations', {
      operation_type_id: type,
      client_id: perez.id,
      status: 'completed',
      transactions: [
        { account_id: usd(perez), amount: '-1234567.000001' },
        { account_id: usd(caja), amount: '1234567.000001' },
      ],
    })
    await page.goto(`${server.base}/manage/clientes/${perez.id}`)
    await page.getByTestId('balance').first().waitFor({ timeout: SLOW })
    expect(await page.getByTestId('balance').allTextContents()).toEqual(['USD -1.234.567,000001'])

    // Deleting with money on it: refused, in words naming the account.
    await page.getByTestId('client-delete-start').click()
    await page.keyboard.press('Enter')
    const refusal = await page.getByTestId('client-delete-message').textContent({ timeout: SLOW })
    expect(refusal).toBe(
      'No se puede eliminar «Pérez Importaciones SRL» porque tiene saldo (USD -1.234.567,000001). Solo se elimina con todas sus cuentas en cero: registre una operación que las salde y vuelva a intentar.',
    )
    expect((await ok('GET', `/api/clients/${perez.id}`)).id).toBe(perez.id)
    expect(await axeViolations(page)).toEqual([])

    // The statement as the browser saves it: the server's CSV, every digit.
    const download = page.waitForEvent('download', { timeout: SLOW })
    await page.getByTestId('statement-csv').click()
    const file = await download
    expect(file.suggestedFilename()).toBe(`estado-de-cuenta-${perez.id}.csv`)
    const csv = readFileSync((await file.path())!, 'utf8')
    expect(csv.split('\r\n')[0]).toBe('account_id,account_name,currency,transaction_id,operation_id,completed_at,description,amount,running_balance')
    expect(csv).toContain(',-1234567.000001,-1234567.000001')
    const jsonDownload = page.waitForEvent('download', { timeout: SLOW })
    await page.getByTestId('statement-json').click()
    const json = readFileSync((await (await jsonDownload).path())!, 'utf8')
    expect(json).toContain('"balance":-1234567.000001')
    // A range backwards is said before anything is asked.
    await page.locator('input[name=from]').fill('2026-12-31')
    await page.locator('input[name=to]').fill('2026-01-01')
    await page.getByTestId('statement-csv').click()
    expect(await page.getByTestId('error-statement-range').textContent()).toBe('«Desde» es posterior a «hasta».')

    // An external grant: days out of range refused; then the customer's link (with its QR code) and, for a system,
    // the key and the API call.
    const grants = page.getByTestId('client-grants')
    await grants.locator('input[name=days]').fill('400')
    await grants.getByTestId('grant-create').click()
    expect(await grants.getByTestId('error-grant-days').textContent()).toBe('Entre 1 y 365 días.')
    await grants.locator('input[name=days]').fill('7')
    await grants.getByTestId('grant-create').click()
    const shown = grants.getByTestId('grant')
    await shown.waitFor({ timeout: SLOW })
    const link = await shown.getByTestId('grant-link').inputValue()
    const [, token] = new RegExp(`^${server.base.replace(/[.:/]/g, '\\$&')}/estado-de-cuenta/${perez.id}#(\\S+)$`).exec(link) ?? []
    expect(token).toBeTruthy()
    expect(await shown.getByRole('img', { name: /Código QR del enlace/ }).count()).toBe(1)
    expect(await shown.getByTestId('grant-open').getAttribute('href')).toBe(link)
    await shown.getByTestId('grant-link-copy').click()
    await shown.getByText(/Copiado\.|Quedó seleccionado/).waitFor({ timeout: SLOW })
    await shown.locator('summary').click()
    expect(await shown.getByTestId('grant-token').inputValue()).toBe(token)
    const api = `${server.base}/api/external/clients/${perez.id}/statement?format=csv`
    expect(await shown.getByTestId('grant-command').inputValue()).toBe(`curl -H "Authorization: Bearer ${token}" "${api}"`)
    expect((await fetch(api, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200)
    expect(await axeViolations(page)).toEqual([])
    if (SHOTS) await page.screenshot({ path: join(ROOT, 'docs/manage-client-grant.png') })

    // The customer opens the link: the page reads the statement with the key from the fragment, as a bearer header;
    // the key is never in an address the server sees.
    const customer = await chromium.context.newPage()
    const asked: { url: string; auth: string | undefined }[] = []
    customer.on('request', (r) => {
      if (new URL(r.url()).pathname.startsWith('/api/')) asked.push({ url: r.url(), auth: r.headers().authorization })
    })
    await customer.setViewportSize({ width: 1366, height: 768 })
    await customer.goto(link)
    const account = customer.getByTestId('statement-account')
    await account.waitFor({ timeout: SLOW })
    expect(await customer.locator('h1').textContent()).toBe('Estado de cuenta de Pérez Importaciones SRL')
    expect(await account.locator('h2').textContent()).toBe('USD')
    expect(await account.getByTestId('balance').textContent()).toBe('USD -1.234.567,000001')
    expect(await account.getByTestId('opening').textContent()).toBe('USD 0,00')
    expect(await account.getByTestId('movement-amount').allTextContents()).toEqual(['-1.234.567,000001'])
    expect(await account.getByTestId('movement-balance').allTextContents()).toEqual(['-1.234.567,000001'])
    expect(asked.length).toBeGreaterThan(0)
    for (const a of asked) {
      expect(a.url).not.toContain(token)
      expect(a.auth).toBe(`Bearer ${token}`)
    }
    expect(await axeViolations(customer)).toEqual([])
    if (SHOTS) await customer.screenshot({ path: join(ROOT, 'docs/statement.png') })
    await checkSizes('estado de cuenta', customer, [
      { width: 1366, height: 768 },
      { width: 390, height: 844 },
    ])
    await customer.setViewportSize({ width: 390, height: 844 })
    expect(await axeViolations(customer)).toEqual([])
    if (SHOTS) await customer.screenshot({ path: join(ROOT, 'docs/statement-phone.png'), fullPage: true })
    // A range before the first movement: its balances, no movements; a range backwards is said before asking.
    await customer.locator('input[name=from]').fill('2020-01-01')
    await customer.locator('input[name=to]').fill('2020-01-31')
    await customer.getByTestId('statement-show').click()
    await customer.getByTestId('statement-range').getByText('Del 01/01/2020 al 31/01/2020', { exact: false }).waitFor({ timeout: SLOW })
    expect(await account.getByText('Sin movimientos en estas fechas.').count()).toBe(1)
    expect(await account.getByTestId('closing').textContent()).toBe('USD 0,00')
    await customer.locator('input[name=from]').fill('2020-02-01')
    await customer.getByTestId('statement-show').click()
    expect(await customer.getByTestId('statement-range-error').textContent()).toBe('«Desde» es posterior a «Hasta».')
    // The CSV, as the customer's browser saves it: every digit.
    await customer.locator('input[name=from]').fill('')
    await customer.locator('input[name=to]').fill('')
    const saved = customer.waitForEvent('download', { timeout: SLOW })
    await customer.getByTestId('statement-csv').click()
    const customerFile = await saved
    expect(customerFile.suggestedFilename()).toBe(`estado-de-cuenta-${perez.id}.csv`)
    expect(readFileSync((await customerFile.path())!, 'utf8')).toContain(',-1234567.000001,-1234567.000001')

    // Revoked from the client's page: the customer's page says so in words, with the day.
    await shown.getByTestId('grant-revoke').click()
    const grantId = await grants.getByTestId('grant-message').getByText(/revocado/).textContent({ timeout: SLOW })
    expect(grantId).toMatch(/^Acceso n\.º \d+ revocado: su clave ya no abre el estado de cuenta\.$/)
    await customer.reload()
    const revokedWords = await customer.getByTestId('statement-problem').textContent({ timeout: SLOW })
    expect(revokedWords).toMatch(/^La casa de cambio revocó este enlace el \d{2}\/\d{2}\/\d{4}: ya no muestra el estado de cuenta\. Pídale uno nuevo\.$/)
    expect(await customer.getByTestId('statement-csv').count()).toBe(0)
    expect(await axeViolations(customer)).toEqual([])
    await customer.close()
    // Revoking the same number again, typed: said in words.
    await grants.locator('input[name=grant-id]').fill(/\d+/.exec(grantId!)![0])
    await grants.getByTestId('grant-revoke-typed').click()
    await grants.getByTestId('grant-message').getByText('Ese acceso no existe, es de otro cliente o ya estaba revocado.').waitFor({ timeout: SLOW })

    // The document changed from the client's page, stored as the receipts will print it.
    const edit = page.getByTestId('client-edit')
    await edit.locator('select[name=document-type]').selectOption('CUIT')
    await edit.locator('input[name=document-number]').fill('20-12.345.678-3')
    await edit.getByTestId('client-edit-save').click()
    await edit.getByTestId('client-edit-message').getByText('Cambios guardados.').waitFor({ timeout: SLOW })
    expect(await page.getByTestId('client-document').textContent()).toBe('CUIT 20123456783')
    expect(await edit.locator('input[name=document-number]').inputValue()).toBe('20123456783')
    expect((await ok('GET', `/api/clients/${perez.id}`)).document).toEqual({ type: 'CUIT', number: '20123456783', country: 'AR' })

    // Back to zero, the delete goes through and the list says so.
    await ok('POST', `/api/operations/${op.id}/cancel`)
    await page.reload()
    await page.getByTestId('client-delete-start').click({ timeout: SLOW })
    await page.getByTestId('client-delete-confirm').click()
    await page.getByTestId('clients-section').waitFor({ timeout: SLOW })
    await page.getByTestId('client-flash').getByText('«Pérez Importaciones SRL» eliminado.', { exact: false }).waitFor({ timeout: SLOW })
    await page.getByTestId('clients-count').getByText('1 resultado · página 1 de 1').waitFor({ timeout: SLOW })
    expect(await page.getByTestId('client-row').count()).toBe(1)
    const gone = await fetch(`${server.base}/api/clients/${perez.id}`, { headers: { 'x-api-key': scene.key } })
    expect(gone.status).toBe(404)
  }, 90_000)

  test('Empresa: the number in the header and its links; the owner fixes the receipts data, mistakes said next to their fields', async () => {
    await section('empresa', 'company-section')
    await page.getByTestId('company-section-number').waitFor({ timeout: SLOW })
    const name = (await ok('GET', '/api/company')).name
    expect(await page.getByTestId('company-number').textContent()).toBe(`Empresa n.º ${companyId}${name}`)
    expect(await page.getByTestId('company-section-number').textContent()).toBe(String(companyId))
    expect(await page.getByTestId('manage-link').inputValue()).toBe(`${server.base}/manage?empresa=${companyId}`)
    expect(await page.getByTestId('staff-link').inputValue()).toBe(`${server.base}/staff?empresa=${companyId}`)
    const form = page.getByTestId('company-form')
    expect(await form.locator('input[name=till_tolerance]').inputValue()).toBe('0,00')
    await form.locator('input[name=legal_name]').fill('Cambios Registros S.A.')
    await form.locator('input[name=tax_id]').fill('30-71234567-8')
    await form.locator('input[name=receipt_point]').fill('0')
    await form.locator('input[name=local_currency]').fill('pesos')
    await form.locator('input[name=till_tolerance]').fill('1000.50')
    await form.getByTestId('company-save').click()
    expect(await form.getByTestId('error-company-tax_id').textContent()).toBe(
      'El dígito verificador no coincide (con esos números terminaría en 1). Revise el CUIT, o pulse «Guardar igual» si es correcto así.',
    )
    expect(await form.getByTestId('error-company-receipt_point').textContent()).toBe('Un número entero de 1 a 99999.')
    expect(await form.getByTestId('error-company-local_currency').textContent()).toBe('Tres letras mayúsculas, por ejemplo ARS.')
    expect(await form.getByTestId('error-company-till_tolerance').textContent()).toContain('Separador equivocado')
    expect(await page.evaluate(() => document.activeElement?.getAttribute('name'))).toBe('tax_id')
    expect(await form.getByTestId('company-message').textContent()).toBe('Hay datos para corregir; no se guardó nada.')
    expect((await ok('GET', '/api/company')).legal_name).toBeNull()
    expect(await axeViolations(page)).toEqual([])

    await form.locator('input[name=tax_id]').fill('30-71234567-9')
    await form.locator('input[name=receipt_point]').fill('3')
    await form.locator('input[name=local_currency]').fill('ARS')
    await form.locator('input[name=till_tolerance]').fill('1.000,50')
    await form.locator('input[name=address]').fill('Florida 123, CABA')
    await form.locator('input[name=license]').fill('BCRA 12345')
    await form.locator('input[name=name]').fill('Cambios Registros Florida')
    // The check digit is a doubt, not a refusal: asked once, then saved as the owner confirms it.
    await form.getByTestId('company-save').click()
    expect(await form.getByTestId('error-company-tax_id').textContent()).toContain('terminaría en 1')
    expect(await form.getByTestId('company-save').textContent()).toBe('Guardar igual')
    expect((await ok('GET', '/api/company')).name).not.toBe('Cambios Registros Florida')
    await form.getByTestId('company-save').click()
    await form.getByTestId('company-message').getByText('Datos de la empresa guardados.').waitFor({ timeout: SLOW })
    const saved = await ok('GET', '/api/company')
    expect(saved).toMatchObject({
      id: companyId,
      name: 'Cambios Registros Florida',
      legal_name: 'Cambios Registros S.A.',
      tax_id: '30-71234567-9',
      address: 'Florida 123, CABA',
      license: 'BCRA 12345',
      receipt_point: 3,
      local_currency: 'ARS',
      till_tolerance: '1000.5',
    })
    // The header follows the new name; the tolerance reads back as typed.
    await page.getByTestId('company-number').getByText('Cambios Registros Florida').waitFor({ timeout: SLOW })
    expect(await form.locator('input[name=till_tolerance]').inputValue()).toBe('1.000,50')
    // Nothing changed: nothing sent. An emptied field clears it.
    await form.getByTestId('company-save').click()
    await form.getByTestId('company-message').getByText('No hay cambios para guardar.').waitFor({ timeout: SLOW })
    await form.locator('input[name=license]').fill('')
    await form.getByTestId('company-save').click()
    await form.getByTestId('company-message').getByText('Datos de la empresa guardados.').waitFor({ timeout: SLOW })
    expect((await ok('GET', '/api/company')).license).toBeNull()
    if (SHOTS) {
      await page.evaluate(() => window.scrollTo(0, 0))
      await page.screenshot({ path: join(ROOT, 'docs/manage-company.png') })
    }
    await checkSizes('empresa')
  }, 60_000)

  test('someone who may only look: no forms, the balances and the statement still there', async () => {
    await signIn(viewer())
    await section('clientes', 'clients-section')
    await page.getByTestId('client-row').first().waitFor({ timeout: SLOW })
    expect(await page.getByTestId('new-caja').count()).toBe(0)
    await page.getByTestId('client-row').first().locator('a').click()
    await page.getByTestId('client-facts').waitFor({ timeout: SLOW })
    expect(await page.getByTestId('client-edit').count()).toBe(0)
    expect(await page.getByTestId('client-grants').count()).toBe(0)
    expect(await page.getByTestId('statement-csv').count()).toBe(1)
    await section('etiquetas', 'tags-section')
    await page.getByTestId('tag-row').first().waitFor({ timeout: SLOW })
    expect(await page.getByTestId('tag-create').count()).toBe(0)
    await section('tipos', 'types-section')
    await page.getByTestId('operation-type-row').first().waitFor({ timeout: SLOW })
    expect(await page.getByTestId('operation-type-create').count()).toBe(0)
    expect(await axeViolations(page)).toEqual([])
    await section('empresa', 'company-section')
    await page.getByText('Solo el dueño de la cuenta puede cambiar estos datos.').waitFor({ timeout: SLOW })
    expect(await page.getByTestId('company-save').count()).toBe(0)
    expect(await page.locator('input[name=legal_name]').getAttribute('readonly')).not.toBeNull()
    expect(await axeViolations(page)).toEqual([])
    await signIn(owner())
  }, 60_000)

  test('50,000 clients: the first page shows within a second, the search and the type filter narrow it, the pages turn', async () => {
    const t0 = performance.now()
    for (let batch = 0; batch < 50; batch++)
      await ok('POST', '/api/clients/batch', {
        clients: Array.from({ length: 1000 }, (_, i) => {
          const n = batch * 1000 + i
          return {
            name: `Cliente ${String(n).padStart(5, '0')}`,
            type: 1,
            description: n === 31_337 ? 'Aguja en el pajar' : `Minorista zona ${n % 40}`,
            accounts: [{ currency_name: 'USD' }],
          }
        }),
      })
    console.log(`seeded 50,000 clients in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
    await page.goto(`${server.base}/manage/tipos`)
    await page.getByTestId('types-section').waitFor({ timeout: SLOW })
    const started = performance.now()
    await page.locator('nav a[href="/manage/clientes"]').click()
    await page.getByTestId('client-row').first().waitFor({ timeout: SLOW })
    const firstPage = performance.now() - started
    console.log(`first page of 50,001 clients on screen in ${firstPage.toFixed(0)} ms`)
    expect(firstPage).toBeLessThan(1000)
    expect(await page.getByTestId('client-row').count()).toBe(50)
    expect(await page.getByTestId('clients-count').textContent()).toBe('50.001 resultados · página 1 de 1.001')

    await page.getByTestId('page-next').click()
    await page.getByTestId('clients-count').getByText('página 2 de 1.001').waitFor({ timeout: SLOW })
    expect(await page.getByTestId('client-row').first().locator('th a').textContent()).toBe('Cliente 00049')
    await page.getByTestId('page-last').click()
    await page.getByTestId('clients-count').getByText('página 1.001 de 1.001').waitFor({ timeout: SLOW })
    expect(await page.getByTestId('client-row').count()).toBe(1)

    await page.locator('input[name=buscar]').fill('aguja')
    await page.getByTestId('clients-count').getByText('1 resultado · página 1 de 1').waitFor({ timeout: SLOW })
    expect(await page.getByTestId('client-row').locator('th a').allTextContents()).toEqual(['Cliente 31337'])
    await page.locator('input[name=buscar]').fill('')
    await page.locator('select[name=tipo]').selectOption('0')
    await page.getByTestId('client-row').locator('th a').getByText('Caja Florida').waitFor({ timeout: SLOW })
    expect(await page.getByTestId('clients-count').textContent()).toBe('1 resultado · página 1 de 1')
    await page.locator('select[name=tipo]').selectOption('1')
    await page.locator('input[name=buscar]').fill('zona 7')
    await page.getByTestId('clients-count').getByText('1.250 resultados · página 1 de 25').waitFor({ timeout: SLOW })
    // The filters live in the address: a reload keeps them.
    await page.reload()
    await page.getByTestId('clients-count').getByText('1.250 resultados · página 1 de 25').waitFor({ timeout: SLOW })
    expect(await page.locator('input[name=buscar]').inputValue()).toBe('zona 7')
    expect(await axeViolations(page)).toEqual([])
    await checkSizes('clientes con 50.000')

    // No screen reads every client (paging through them all took 251 requests here): Nueva operación reads the
    // cajas and each picker's first page; Operaciones the cajas and the names behind the ids on its page.
    const named = (await ok('GET', '/api/clients?search=cliente%200001&type=1&pageSize=10')).data as { id: number; name: string; accounts: { id: number }[] }[]
    const [caja] = (await ok('GET', '/api/clients?type=0')).data as { accounts: { id: number; currency_name: string }[] }[]
    const type = (await ok('GET', '/api/operation-types')).data[0].id
    for (const c of named)
      await ok('POST', '/api/operations', {
        operation_type_id: type,
        client_id: c.id,
        transactions: [
          { account_id: c.accounts[0].id, amount: '100' },
          { account_id: caja.accounts.find((a) => a.currency_name === 'USD')!.id, amount: '-100' },
        ],
      })
    const clientRequests = async (path: string, ready: () => Promise<unknown>) => {
      const urls: string[] = []
      const seen = (r: { url(): string }) => void (new URL(r.url()).pathname === '/api/clients' && urls.push(decodeURIComponent(new URL(r.url()).search)))
      page.on('request', seen)
      await page.locator(`nav a[href="/manage/${path}"]`).click()
      await ready()
      await page.waitForTimeout(500)
      page.off('request', seen)
      console.log(`${path}: ${urls.length} requests to /api/clients: ${urls.join(' ')}`)
      return urls
    }
    const opening = await clientRequests('nueva', () => page.getByText(/coinciden: se muestran los primeros 50/).nth(2).waitFor({ timeout: SLOW }))
    expect(opening.length).toBeLessThanOrEqual(5)
    // A customer among 50,000, found by name in the multi-leg form: its accounts join the legs' choices.
    const generic = page.getByTestId('generic-form')
    await generic.locator('input[name=generic-client-search]').fill('cliente 31337')
    const needle = generic.locator('select[name=generic-client] option', { hasText: 'Cliente 31337' })
    await needle.waitFor({ state: 'attached', timeout: SLOW })
    await generic.locator('select[name=generic-client]').selectOption((await needle.getAttribute('value'))!)
    await generic.getByLabel('Cuenta del movimiento 1').locator('option', { hasText: 'Cliente 31337 · USD (USD)' }).waitFor({ state: 'attached', timeout: SLOW })
    expect(await axeViolations(page)).toEqual([])

    const listing = await clientRequests('operaciones', () => page.locator('[data-testid=operation-row]', { hasText: named[named.length - 1].name }).waitFor({ timeout: SLOW }))
    expect(listing.length).toBeLessThanOrEqual(5)
    for (const c of named) expect(await page.locator('[data-testid=operation-row]', { hasText: c.name }).count()).toBe(1)
    expect(await page.getByTestId('pending-op').first().textContent()).toMatch(/Cliente 0001\d · USD/)
  }, 300_000)
})
