/**
 * The counter console at 1366×768 with a branch's worth of services: the queues' priority rows keep their names whole,
 * and the «Derivar» list stays inside the serving panel. A real server and the built apps in Chromium.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { ensureKioskBuilt, launchChromium, ROOT, type Chromium } from './browser'
import { findLayoutProblems, settled } from './layout'
import { openScene, type Scene } from './scene'
import { startAtCounter } from './staff'

const SLOW = 45_000
const PASSWORD = 'mostrador seguro 2026'
/** With SCREENSHOTS=1 the console is written to docs/polish/ as pictures for people. */
const PICTURES = process.env.SCREENSHOTS === '1' ? join(ROOT, 'docs/polish') : null
/** Which picture of a before/after pair a run writes (SCREENSHOT_STAGE=before on the old code). */
const STAGE = process.env.SCREENSHOT_STAGE ?? 'after'

const SERVICES: [string, string][] = [
  ['Compra/Venta de divisas', 'A'],
  ['Transferencias al exterior', 'B'],
  ['Pagos y cobranzas', 'C'],
  ['Cheques y giros', 'D'],
  ['Atención a empresas y comercios', 'E'],
  ['Consultas y reclamos', 'F'],
]

let scene: Scene
let chromium: Chromium
let page: Page

beforeAll(async () => {
  ensureKioskBuilt()
  scene = await openScene('Cambios Consola')
  const ids: number[] = []
  for (const [name, prefix] of SERVICES) ids.push((await scene.ok('POST', '/api/ventanilla/services', { name, prefix })).id)
  const email = `cajero.${process.pid}@console-e2e.test`
  await scene.ok('POST', '/api/employees', { email, name: 'Lucía Fernández', permissions: ['ventanilla.call'], password: PASSWORD })
  const waiting: [number, string, boolean][] = [
    [ids[0], 'Juan Pérez', false],
    [ids[0], 'Rosa Benítez', true],
    [ids[1], 'María José González Fernández', true],
    [ids[2], 'Carlos Díaz', false],
    [ids[2], 'Ramón Etcheverry', true],
    [ids[4], 'Ana Sosa', true],
  ]
  for (const [service_id, customer_name, priority] of waiting) await scene.ok('POST', '/api/ventanilla/tickets', { service_id, customer_name, priority })

  chromium = await launchChromium({ width: 1366, height: 768 })
  page = await chromium.context.newPage()
  await startAtCounter(page, { base: scene.server.base, companyId: scene.companyId }, email, PASSWORD, 'Caja 2', SLOW)
}, 120_000)

afterAll(async () => {
  await chromium?.close()
  await scene?.stop()
})

describe('counter console at 1366×768 with six services', () => {
  test('a priority ticket in the queues shows its whole name, with its «Prioridad» mark under it', async () => {
    await page.getByTestId('queue-ticket').filter({ hasText: 'Ramón Etcheverry' }).waitFor({ timeout: SLOW })
    await settled(page)
    if (PICTURES) await page.screenshot({ path: join(PICTURES, `console-queues-1366x768-${STAGE}.png`) })
    const cut = await page.locator('[data-testid=queue-ticket] .name').evaluateAll((names) =>
      names.filter((n) => n.scrollWidth > n.clientWidth + 1 || n.getBoundingClientRect().width === 0).map((n) => n.textContent),
    )
    expect(cut).toEqual([])
    for (const name of ['Rosa Benítez', 'María José González Fernández', 'Ramón Etcheverry', 'Ana Sosa'])
      expect(await page.getByTestId('queue-ticket').filter({ hasText: name }).locator('.mark').textContent()).toBe('Prioridad')
    expect(await findLayoutProblems(page)).toEqual([])
  })

  test('«Derivar» lists the other five services inside the serving panel, none scrolled out of sight', async () => {
    await page.keyboard.press('Space')
    await page.getByTestId('current-ticket').waitFor({ timeout: SLOW })
    await page.keyboard.press('t')
    const transfer = page.getByTestId('transfer')
    await transfer.waitFor({ timeout: SLOW })
    await settled(page)
    if (PICTURES) await page.screenshot({ path: join(PICTURES, `console-transfer-1366x768-${STAGE}.png`) })
    expect(await transfer.getByRole('button').count()).toBe(SERVICES.length - 1 + 1)
    const fit = await page.getByTestId('current').evaluate((panel) => {
      const box = panel.getBoundingClientRect()
      const outside = Array.from(panel.querySelectorAll('[data-testid=transfer] button'))
        .map((b) => ({ text: b.textContent?.trim(), r: b.getBoundingClientRect() }))
        .filter(({ r }) => r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5 || r.left < box.left - 0.5 || r.right > box.right + 0.5)
        .map(({ text }) => text)
      return { outside, scrolls: panel.scrollHeight > panel.clientHeight + 1 }
    })
    expect(fit).toEqual({ outside: [], scrolls: false })
    expect(await findLayoutProblems(page)).toEqual([])
    await page.keyboard.press('Escape')
    await transfer.waitFor({ state: 'detached', timeout: SLOW })
  })
})
