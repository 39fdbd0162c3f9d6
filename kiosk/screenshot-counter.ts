/**
 * Renders the counter console (1366×768) and the ticket dispenser (1024×768) with demo data and writes
 * docs/staff.png, docs/dispenser.png and docs/dispenser-ticket.png:
 *   bun kiosk/screenshot-counter.ts [outDir]
 * Runs the real server on a throwaway embedded database, so the pictures show the apps exactly as served.
 */
import { join } from 'node:path'
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

const chromium = await launchChromium({ width: 1366, height: 768 })
try {
  const cambio = await call('POST', '/api/ventanilla/services', { name: 'Cambio de divisas', prefix: 'A' })
  const pagos = await call('POST', '/api/ventanilla/services', { name: 'Pagos y transferencias', prefix: 'B' })
  await call('POST', '/api/employees', { email: 'lucia@cambios.example', name: 'Lucía Fernández', permissions: ['ventanilla.call'], password: PASSWORD })
  const customers: [number, string, boolean][] = [
    [cambio.id, 'Juan Pérez', false],
    [cambio.id, 'María González', false],
    [pagos.id, 'Carlos Díaz', false],
    [cambio.id, 'Rosa Benítez', true],
    [cambio.id, 'Diego Romero', false],
    [pagos.id, 'Ana Sosa', false],
    [cambio.id, 'Martín Acosta', false],
  ]
  for (const [service_id, customer_name, priority] of customers) await call('POST', '/api/ventanilla/tickets', { service_id, customer_name, priority })
  const dispenserUrl = (await call('POST', '/api/ventanilla/dispenser-tokens', { name: 'Tablet entrada' })).dispenser_url

  const staff = await chromium.context.newPage()
  await startAtCounter(staff, { base: server.base, companyId }, 'lucia@cambios.example', PASSWORD, 'Caja 2')
  await staff.keyboard.press('Space')
  await staff.getByTestId('current-ticket').waitFor()
  await staff.waitForTimeout(2200)
  await staff.screenshot({ path: join(out, 'staff.png') })

  const dispenser = await chromium.context.newPage()
  await dispenser.setViewportSize({ width: 1024, height: 768 })
  await dispenser.goto(dispenserUrl)
  await dispenser.getByTestId('service-button').first().waitFor()
  await dispenser.evaluate(() => document.fonts.ready)
  await dispenser.screenshot({ path: join(out, 'dispenser.png') })
  await dispenser.getByTestId('service-button').first().click()
  await dispenser.getByTestId('issued-number').waitFor()
  await dispenser.screenshot({ path: join(out, 'dispenser-ticket.png') })
  console.log(`wrote ${join(out, 'staff.png')}, ${join(out, 'dispenser.png')}, ${join(out, 'dispenser-ticket.png')}`)
} finally {
  await chromium.close()
  await scene.stop()
}
