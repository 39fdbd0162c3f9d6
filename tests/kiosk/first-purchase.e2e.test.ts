/**
 * From `npm start` on an empty database to the first approved purchase on screen, as a new casa de cambio does it:
 * the service started the way the README says, its printed setup link opened in Chromium, the company and owner
 * made with the ready start on, then in /manage a second caja and a client with accounts, a USD purchase in
 * Nueva operación, its approval in Operaciones and the result in Posición de caja. The test makes no API call of its
 * own: everything goes through the browser, and what it asserts is what the screens show. It prints each step and
 * the seconds it took.
 */
import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { onPostgres } from '../helpers'
import { freshDatabase } from '../fresh'
import { freePort, serverEnv } from '../server'
import { ensureKioskBuilt, launchChromium, ROOT, type Chromium } from './browser'

const SLOW = 30_000
const SHOTS = process.env.FIRST_PURCHASE_SCREENSHOTS === '1'

const dataDir = mkdtempSync(join(tmpdir(), 'fos-first-purchase-'))
let server: Subprocess | undefined
let chromium: Chromium | undefined

afterAll(async () => {
  await chromium?.close()
  if (server) {
    // npm start runs the server as its child: the whole process group is stopped, as Ctrl-C would.
    try {
      process.kill(-server.pid, 'SIGTERM')
    } catch {
      // Already gone.
    }
    await server.exited
  }
  rmSync(dataDir, { recursive: true, force: true })
})

/** Reads the process's stdout up to the setup line the first start prints. */
async function setupLink(proc: Subprocess): Promise<string> {
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  let text = ''
  for (;;) {
    const found = /^Set up this service: (\S+)$/m.exec(text)
    if (found) {
      // The rest of the log is not read; it must not back up into the server's pipe.
      void (async () => {
        while (!(await reader.read()).done);
      })()
      return found[1]
    }
    const { value, done } = await reader.read()
    if (done) throw new Error(`no setup line in:\n${text}`)
    text += decoder.decode(value, { stream: true })
  }
}

test('npm start on an empty database → setup with the ready start → a caja and a client → a USD purchase approved and in the cash position', async () => {
  ensureKioskBuilt()
  const steps: [string, number][] = []
  const started = performance.now()
  let last = started
  const step = (name: string) => {
    const now = performance.now()
    steps.push([name, (now - last) / 1000])
    last = now
  }

  const port = freePort()
  const env = serverEnv(port, { dataDir, databaseUrl: onPostgres() ? await freshDatabase() : undefined })
  // `setsid`: npm and the server it starts get a process group of their own, stopped together at the end.
  server = Bun.spawn(['setsid', 'npm', 'start'], { cwd: ROOT, env, stdout: 'pipe', stderr: 'inherit' })
  const link = await setupLink(server)
  expect(link).toStartWith(`http://127.0.0.1:${port}/setup#`)
  step('npm start prints the setup link')

  chromium = await launchChromium({ width: 1366, height: 768 })
  const page = await chromium.context.newPage()
  const errors: string[] = []
  page.on('pageerror', (e) => errors.push(e.message))
  await page.goto(link)
  await page.getByLabel('Nombre de la empresa').fill('Cambios del Puerto')
  await page.getByLabel('Tu nombre').fill('Elena Ruiz')
  await page.getByLabel('E-mail').fill('elena@puerto.test')
  await page.getByLabel('Contraseña (al menos 12 caracteres)').fill('una clave del puerto')
  await page.getByLabel('Repetí la contraseña').fill('una clave del puerto')
  expect(await page.getByLabel('Empezar con caja y tipos de operación de ejemplo').isChecked()).toBe(true)
  await page.getByRole('button', { name: 'Crear empresa' }).click()
  // Setup lands in the manager app, signed in, its welcome first with the company number.
  await page.getByTestId('welcome').waitFor({ timeout: SLOW })
  const number = (await page.getByTestId('welcome-company-number').textContent())!
  expect(number).toMatch(/^\d+$/)
  await page.getByTestId('nav').waitFor({ timeout: SLOW })
  expect(new URL(page.url()).searchParams.get('empresa') ?? number).toBe(number)
  step('setup: company, owner and ready start, and the manager app open')

  await page.getByTestId('company-number').getByText('Cambios del Puerto').waitFor({ timeout: SLOW })
  expect(await page.getByTestId('company-number').textContent()).toBe(`Empresa n.º ${number}Cambios del Puerto`)
  await page.getByTestId('welcome-close').click()

  await page.locator('nav a[href="/manage/clientes"]').click()
  await page.getByTestId('client-row').first().waitFor({ timeout: SLOW })
  expect(await page.getByTestId('client-row').locator('th').allTextContents()).toEqual(['Caja principal'])
  await page.getByTestId('new-caja').click()
  await page.locator('input[name=name]').fill('Caja 2')
  await page.getByTestId('client-save').click()
  await page.getByTestId('client-flash').getByText('Caja «Caja 2» creada con 2 cuentas.').waitFor({ timeout: SLOW })
  expect(await page.getByTestId('balance').allTextContents()).toEqual(['ARS 0,00', 'USD 0,00'])
  step('a second caja, with ARS and USD accounts')

  await page.locator('nav a[href="/manage/clientes"]').click()
  await page.getByTestId('new-client').click()
  await page.locator('input[name=name]').fill('Juan Pérez')
  await page.locator('input[name=description]').fill('Cliente de mostrador, compra y vende dólares')
  await page.getByTestId('client-save').click()
  await page.getByTestId('client-flash').getByText('Cliente «Juan Pérez» creado con 2 cuentas.').waitFor({ timeout: SLOW })
  step('a client with ARS and USD accounts')

  await page.locator('nav a[href="/manage/nueva"]').click()
  const form = page.getByTestId('fx-form')
  await form.locator('select[name=box] option', { hasText: 'Caja 2' }).waitFor({ state: 'attached', timeout: SLOW })
  await form.locator('select[name=box]').selectOption({ label: 'Caja 2' })
  await form.locator('select[name=currency]').selectOption('USD')
  // The customer is found by a part of the name, as among thousands.
  await form.locator('input[name=client-search]').fill('pérez')
  const customer = form.locator('select[name=client] option', { hasText: 'Juan Pérez' })
  await customer.waitFor({ state: 'attached', timeout: SLOW })
  await form.locator('select[name=client]').selectOption((await customer.getAttribute('value'))!)
  await form.locator('select[name=type]').selectOption({ label: 'Compra de divisas' })
  await form.locator('input[name=amount]').fill('1.000')
  await form.locator('input[name=rate]').fill('1.165,50')
  expect(await form.getByTestId('fx-legs').textContent()).toContain('recibe USD 1.000,00 y paga ARS 1.165.500,00')
  await form.getByTestId('fx-submit').click()
  const made = await form.getByTestId('fx-message').getByText(/Operación \d+ registrada/).textContent({ timeout: SLOW })
  const opId = /Operación (\d+)/.exec(made!)![1]
  step('a USD 1.000 purchase at 1.165,50 recorded')

  await page.locator('nav a[href="/manage/operaciones"]').click()
  const pending = page.locator(`[data-testid=pending-op][data-id="${opId}"]`)
  await pending.waitFor({ timeout: SLOW })
  expect(await pending.textContent()).toContain('USD 1.000,00')
  await pending.getByTestId('op-approve').click()
  await pending.getByTestId('balance-after').nth(1).waitFor({ timeout: SLOW })
  expect(await pending.getByTestId('balance-after').allTextContents()).toEqual(['USD 1.000,00', 'ARS -1.165.500,00'])
  await page.keyboard.press('Enter')
  await page.getByTestId('op-message').getByText(`Operación ${opId} aprobada.`).waitFor({ timeout: SLOW })
  step('approved in Operaciones')

  await page.locator('nav a[href="/manage/posicion"]').click()
  await page.locator('[data-testid=total-row][data-currency=USD] [data-testid=total-amount]').getByText('1.000,00').waitFor({ timeout: SLOW })
  const boxes = await page.getByTestId('box-row').evaluateAll((rows) => rows.map((r) => Array.from(r.querySelectorAll('td')).map((td) => td.textContent)))
  expect(boxes).toContainEqual(['Caja 2', 'USD', 'USD 1.000,00'])
  expect(boxes).toContainEqual(['Caja 2', 'ARS', 'ARS -1.165.500,00'])
  expect(boxes).toContainEqual(['Caja principal', 'USD', 'USD 0,00'])
  expect(await page.locator('[data-testid=total-row][data-currency=ARS] [data-testid=total-amount]').textContent()).toBe('-1.165.500,00')
  if (SHOTS) await page.screenshot({ path: join(ROOT, 'docs/manage-first-purchase.png') })
  step('the purchase in Posición de caja')
  expect(errors).toEqual([])

  const total = (performance.now() - started) / 1000
  console.log(['From npm start to the first approved purchase on screen:', ...steps.map(([name, s]) => `  ${s.toFixed(1).padStart(5)} s  ${name}`), `  ${total.toFixed(1).padStart(5)} s  in all`].join('\n'))
}, 240_000)
