import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { onPostgres } from '../helpers'
import { freshDatabase } from '../fresh'
import { startServer, type RunningServer } from '../server'
import { ensureKioskBuilt, launchChromium } from './browser'
import { axeViolations } from './scene'

const SHOTS = process.env.SETUP_SCREENSHOTS

/** Reads the server's stdout up to the setup line it prints before answering. */
async function setupLink(server: RunningServer): Promise<string> {
  const reader = (server.proc.stdout as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  let text = ''
  for (;;) {
    const found = /^Set up this service: (\S+)$/m.exec(text)
    if (found) {
      reader.releaseLock()
      return found[1]
    }
    const { value, done } = await reader.read()
    if (done) throw new Error(`no setup line in:\n${text}`)
    text += decoder.decode(value, { stream: true })
  }
}

const pg = onPostgres() ? describe : describe.skip

pg('the setup page in Chromium', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'fos-setup-e2e-'))
  let server: RunningServer | undefined
  afterAll(async () => {
    server?.proc.kill('SIGTERM')
    await server?.proc.exited
    rmSync(dataDir, { recursive: true, force: true })
  })

  test('keyboard only: mistakes in words, then company, owner and ready start made, and /manage opened at once with the number', async () => {
    ensureKioskBuilt()
    const url = await freshDatabase()
    server = await startServer({ dataDir, databaseUrl: url, stdout: 'pipe' })
    const link = await setupLink(server)
    const browser = await launchChromium({ width: 1280, height: 800 })
    try {
      const page = await browser.context.newPage()
      const errors: string[] = []
      page.on('pageerror', (e) => errors.push(e.message))
      await page.goto(link)
      await page.getByRole('heading', { name: 'Configurar el servicio' }).waitFor()
      await page.waitForFunction(() => document.activeElement?.id === 'companyName')
      // The first field has the focus; everything is reached with Tab.
      await page.keyboard.type('Cambios del Centro')
      await page.keyboard.press('Tab')
      await page.keyboard.press('Control+A')
      await page.keyboard.type('Mars/Olympus')
      await page.getByLabel('Tu nombre').fill('Marta Gómez')
      await page.getByLabel('E-mail').fill('marta@centro')
      await page.getByLabel('Contraseña (al menos 12 caracteres)').fill('corta')
      await page.getByLabel('Repetí la contraseña').fill('corta')
      await page.keyboard.press('Enter')
      await page.getByText('Elegí una zona horaria válida').waitFor()
      await page.getByText('Escribí un e-mail válido').waitFor()
      await page.getByText('La contraseña necesita al menos 12 caracteres.').waitFor()
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('timezone')
      if (SHOTS) await page.screenshot({ path: join(SHOTS, 'setup-errors.png'), fullPage: true })

      await page.getByLabel('Zona horaria').fill('America/Argentina/Cordoba')
      await page.getByLabel('E-mail').fill('marta@centro.test')
      await page.getByLabel('Contraseña (al menos 12 caracteres)').fill('una clave muy segura')
      await page.getByLabel('Repetí la contraseña').fill('una clave muy segura')
      await page.getByLabel('Mesas de cambio').check()
      // The ready start is offered, and on, unless taken off.
      expect(await page.getByLabel('Empezar con caja y tipos de operación de ejemplo').isChecked()).toBe(true)
      expect(await axeViolations(page)).toEqual([])
      if (SHOTS) await page.screenshot({ path: join(SHOTS, 'setup.png'), fullPage: true })
      const opened: string[] = []
      page.on('framenavigated', (frame) => frame === page.mainFrame() && opened.push(frame.url()))
      await page.getByLabel('Repetí la contraseña').press('Enter')
      // No page in between: the manager app, signed in, its welcome first with the company number and the links.
      await page.getByTestId('welcome').waitFor()
      expect(new URL(page.url()).pathname.startsWith('/manage')).toBe(true)
      const cookies = await browser.context.cookies()
      expect(cookies.find((c) => c.name === 'fos_session')?.httpOnly).toBe(true)
      expect(errors).toEqual([])

      const sqlc = postgres(url, { max: 1, onnotice: () => {} })
      let companyId: number
      try {
        const rows = await sqlc`select c.id, c.name, c.timezone, c.mesas_enabled, c.ventanilla_enabled, e.email, e.permissions from companies c join employees e on e.company_id = c.id`
        companyId = rows[0].id
        expect([...rows]).toEqual([
          { id: companyId, name: 'Cambios del Centro', timezone: 'America/Argentina/Cordoba', mesas_enabled: true, ventanilla_enabled: true, email: 'marta@centro.test', permissions: ['company.admin'] },
        ])
        const boxes = await sqlc`select c.name, array_agg(a.currency_name order by a.id) as currencies from clients c join accounts a on a.client_id = c.id group by c.id`
        expect([...boxes]).toEqual([{ name: 'Caja principal', currencies: ['ARS', 'USD', 'EUR', 'BRL'] }])
      } finally {
        await sqlc.end({ timeout: 1 })
      }
      const origin = new URL(link).origin
      // The page the setup opened: the manager app with the company number in its address.
      expect(opened[0]).toBe(`${origin}/manage?empresa=${companyId}`)
      const welcome = page.getByTestId('welcome')
      expect(await welcome.getByTestId('welcome-company-number').textContent()).toBe(String(companyId))
      expect(await welcome.locator('h2').textContent()).toBe('¡Listo! «Cambios del Centro» quedó configurada')
      expect(await welcome.getByTestId('welcome-manage-link').inputValue()).toBe(`${origin}/manage?empresa=${companyId}`)
      expect(await welcome.getByTestId('welcome-staff-link').inputValue()).toBe(`${origin}/staff?empresa=${companyId}`)
      await welcome.getByText('registrar la primera compra').waitFor()
      // It comes first: it has the focus, before the section under it.
      expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('welcome')
      await page.getByTestId('company-number').getByText('Cambios del Centro').waitFor()
      expect(await page.getByTestId('company-number').textContent()).toBe(`Empresa n.º ${companyId}Cambios del Centro`)
      expect(await axeViolations(page)).toEqual([])
      if (SHOTS) await page.screenshot({ path: join(SHOTS, 'manage-welcome.png') })
      // It stays while the owner moves between sections, until «Entendido»; a reload does not bring it back.
      await page.locator('nav a[href="/manage/clientes"]').click()
      await page.getByTestId('clients-section').waitFor()
      expect(await welcome.isVisible()).toBe(true)
      await welcome.getByTestId('welcome-close').focus()
      await page.keyboard.press('Enter')
      await welcome.waitFor({ state: 'detached' })
      await page.reload()
      await page.getByTestId('clients-section').waitFor()
      expect(await page.getByTestId('welcome').count()).toBe(0)
      // Signed out, the counter console on this browser has the number already.
      await browser.context.clearCookies()
      await page.goto(`${origin}/staff`)
      await page.getByTestId('signin').waitFor()
      expect(await page.locator('input[name=company]').inputValue()).toBe(String(companyId))

      // The same link again, now that the service is set up: the page is gone.
      const again = await page.goto(link)
      expect(again?.status()).toBe(404)
    } finally {
      await browser.close()
    }
  }, 240_000)

  test('a link without its token, or with a wrong one, says so in words', async () => {
    ensureKioskBuilt()
    const fresh = mkdtempSync(join(tmpdir(), 'fos-setup-e2e-'))
    const other = await startServer({ dataDir: fresh, databaseUrl: await freshDatabase(), stdout: 'pipe' })
    const browser = await launchChromium({ width: 390, height: 844 })
    try {
      const link = await setupLink(other)
      const page = await browser.context.newPage()
      await page.goto(link.replace(/#.*$/, ''))
      await page.getByText('Este enlace no tiene el código de configuración').waitFor()
      await page.goto(`${link.replace(/#.*$/, '')}#${'x'.repeat(43)}`)
      await page.reload()
      await page.getByLabel('Nombre de la empresa').fill('Casa')
      await page.getByLabel('Tu nombre').fill('Ana')
      await page.getByLabel('E-mail').fill('ana@casa.test')
      await page.getByLabel('Contraseña (al menos 12 caracteres)').fill('una clave muy segura')
      await page.getByLabel('Repetí la contraseña').fill('una clave muy segura')
      await page.getByRole('button', { name: 'Crear empresa' }).click()
      await page.getByText('El enlace de configuración no es válido o ya venció').waitFor()
      if (SHOTS) await page.screenshot({ path: join(SHOTS, 'setup-phone-wrong-token.png'), fullPage: true })
    } finally {
      await browser.close()
      other.proc.kill('SIGTERM')
      await other.proc.exited
      rmSync(fresh, { recursive: true, force: true })
    }
  }, 240_000)
})
