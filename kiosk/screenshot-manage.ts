/**
 * Renders the manager app (1366×768, or MANAGE_SHOT_VIEWPORT=WxH) with demo data and writes docs/manage-rates.png, docs/manage-display.png,
 * docs/manage-links.png and docs/manage-monitor.png:
 *   bun kiosk/screenshot-manage.ts [outDir]
 * Runs the real server on a throwaway embedded database, so the pictures show the app exactly as served.
 */
import { join } from 'node:path'
import { ensureKioskBuilt, launchChromium, ROOT } from '../tests/kiosk/browser'
import { openScene } from '../tests/kiosk/scene'

const out = process.argv[2] ?? join(ROOT, 'docs')
const PASSWORD = 'gerencia segura 2026'
const PERMISSIONS = (process.env.MANAGE_SHOT_PERMISSIONS ?? 'company.admin').split(',')

ensureKioskBuilt()
// A throwaway embedded database, given as long to start as startServer gives it by default.
const scene = await openScene('Cambios del Centro', { exactName: true, timeoutMs: 180_000 })
const { server, companyId } = scene
const call = scene.ok

const [width, height] = (process.env.MANAGE_SHOT_VIEWPORT ?? '1366x768').split('x').map(Number)
const chromium = await launchChromium({ width, height })
try {
  const cambio = await call('POST', '/api/ventanilla/services', { name: 'Cambio de divisas', prefix: 'A' })
  const pagos = await call('POST', '/api/ventanilla/services', { name: 'Pagos y transferencias', prefix: 'B' })
  await call('PUT', '/api/ventanilla/rates', {
    rates: [
      { currency: 'USD', buy: '1165.50', sell: '1205.50' },
      { currency: 'EUR', buy: '1250', sell: '1310.25' },
      { currency: 'BRL', buy: '205.10', sell: '221.90' },
      { currency: 'UYU', buy: '27.40', sell: '30.15' },
    ],
  })
  await call('PUT', '/api/ventanilla/settings', {
    displayName: 'Cambios del Centro — Sucursal Florida',
    logoUrl: '',
    showLogo: false,
    timezone: 'America/Argentina/Buenos_Aires',
    tickerText: 'Lunes a viernes de 10 a 18 h · Sábados de 10 a 13 h',
    announceSound: true,
    announceTts: true,
    privacyMode: 'first_last_initial',
  })
  await call('POST', '/api/employees', { email: 'gerencia@cambios.example', name: 'Sofía Martínez', permissions: PERMISSIONS, password: PASSWORD })
  await call('POST', '/api/employees', { email: 'lucia@cambios.example', name: 'Lucía Fernández', permissions: ['ventanilla.call'], password: PASSWORD })
  await call('POST', '/api/ventanilla/tokens', { name: 'TV sala de espera' })
  await call('POST', '/api/ventanilla/dispenser-tokens', { name: 'Tablet entrada' })
  const customers: [number, string, boolean][] = [
    [cambio.id, 'Juan Pérez', false],
    [cambio.id, 'María González', false],
    [pagos.id, 'Carlos Díaz', false],
    [cambio.id, 'Rosa Benítez', true],
    [cambio.id, 'Diego Romero', false],
    [pagos.id, 'Ana Sosa', false],
  ]
  for (const [service_id, customer_name, priority] of customers) await call('POST', '/api/ventanilla/tickets', { service_id, customer_name, priority })
  const first = await call('POST', '/api/ventanilla/calls', { desk: 'Caja 1' })
  await call('POST', `/api/ventanilla/tickets/${first.id}/finish`)
  await call('POST', '/api/ventanilla/calls', { desk: 'Caja 1' })
  await call('POST', '/api/ventanilla/calls', { desk: 'Caja 2', service_id: pagos.id })

  const page = await chromium.context.newPage()
  await page.goto(`${server.base}/manage?empresa=${companyId}`)
  await page.fill('input[name=email]', 'gerencia@cambios.example')
  await page.fill('input[name=password]', PASSWORD)
  await page.keyboard.press('Enter')
  await page.getByTestId('nav').waitFor()
  const shots: [string, string, string][] = [
    ['cotizaciones', 'rates-table', 'manage-rates.png'],
    ['pantalla', 'preview', 'manage-display.png'],
    ['enlaces', 'tokens-dispenser', 'manage-links.png'],
    ['monitor', 'serving', 'manage-monitor.png'],
  ]
  for (const [path, ready, file] of shots) {
    await page.locator(`nav a[href="/manage/${path}"]`).click()
    await page.getByTestId(ready).waitFor()
    await page.waitForTimeout(300)
    if (path === 'enlaces') {
      await page.getByTestId('tokens-kiosk').getByTestId('token-name').fill('TV vidriera')
      await page.getByTestId('tokens-kiosk').getByTestId('token-create').click()
      await page.getByTestId('new-link').waitFor()
      await page.waitForFunction(() => [...document.querySelectorAll<HTMLButtonElement>('[data-testid=token-create]')].every((b) => !b.disabled))
    }
    await page.screenshot({ path: join(out, file) })
    console.log(`wrote ${join(out, file)}`)
  }
} finally {
  await chromium.close()
  await scene.stop()
}
