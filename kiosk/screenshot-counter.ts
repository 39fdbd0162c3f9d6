/**
 * Renders the counter console (1366×768) and the ticket dispenser (1024×768) with demo data and writes
 * docs/staff.png, docs/dispenser.png and docs/dispenser-ticket.png:
 *   bun kiosk/screenshot-counter.ts [outDir]
 * Runs the real server on a throwaway embedded database, so the pictures show the apps exactly as served.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SignJWT } from 'jose'
import { startServer } from '../tests/server'
import { ensureKioskBuilt, launchChromium, ROOT } from '../tests/kiosk/browser'
import { startAtCounter } from '../tests/kiosk/staff'

const out = process.argv[2] ?? join(ROOT, 'docs')
const SECRET = 'screenshot-superadmin-secret-0123456789'
const OPERATOR = 'root@screenshot.test'
const PASSWORD = 'mostrador seguro 2026'

ensureKioskBuilt()
const dataDir = mkdtempSync(join(tmpdir(), 'counter-shots-'))
const server = await startServer({ dataDir, env: { SUPERADMIN_JWT_SECRET: SECRET, SUPERADMIN_EMAILS: OPERATOR } })
let key = ''
async function call(method: string, path: string, body?: unknown, auth: Record<string, string> = { 'x-api-key': key }) {
  const res = await fetch(`${server.base}${path}`, { method, headers: { ...auth, 'content-type': 'application/json' }, body: body && JSON.stringify(body) })
  if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${await res.text()}`)
  return res.json()
}

const chromium = await launchChromium({ width: 1366, height: 768 })
try {
  const jwt = await new SignJWT({ email: OPERATOR }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('10m').sign(new TextEncoder().encode(SECRET))
  const bearer = { authorization: `Bearer ${jwt}` }
  const company = await call('POST', '/api/superadmin/companies', { name: 'Cambios del Centro' }, bearer)
  await call('PATCH', `/api/superadmin/companies/${company.id}`, { modules: { ventanilla: true } }, bearer)
  key = (await call('POST', `/api/superadmin/companies/${company.id}/api-keys`, { name: 'demo' }, bearer)).key
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
  await startAtCounter(staff, { base: server.base, companyId: company.id }, 'lucia@cambios.example', PASSWORD, 'Caja 2')
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
  server.proc.kill('SIGTERM')
  await server.proc.exited
  rmSync(dataDir, { recursive: true, force: true })
}
