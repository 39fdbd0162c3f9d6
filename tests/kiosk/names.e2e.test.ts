/**
 * End to end, on a real server with Debian's chromium: the dispenser asks the customer's name when the company's
 * `dispenserAsksName` setting says so, the counter console shows it, and the console types or corrects it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Page } from 'playwright-core'
import type { RunningServer } from '../server'
import { ensureKioskBuilt, launchChromium, type Chromium } from './browser'
import { openScene, type Scene } from './scene'
import { jsonClient } from '../json-client'

const SLOW = 45_000
/** The contract's bound from a change to every screen that shows it. */
const LIVE = 2_000
const PASSWORD = 'mostrador seguro 2026'

let scene: Scene
let server: RunningServer
let chromium: Chromium
let key: string
let companyId: number
let email: string
let dispenserUrl: string

const ok: Scene['ok'] = (...args) => scene.ok(...args)

beforeAll(async () => {
  ensureKioskBuilt()
  scene = await openScene('Cambios Nombres')
  ;({ server, key, companyId } = scene)
  await ok('POST', '/api/ventanilla/services', { name: 'Cambio de divisas', prefix: 'A' })
  email = `cajera.${process.pid}@names-e2e.test`
  await ok('POST', '/api/employees', { email, name: 'Lucía Fernández', permissions: ['ventanilla.call'], password: PASSWORD })
  dispenserUrl = (await ok('POST', '/api/ventanilla/dispenser-tokens', { name: 'Tablet entrada' })).dispenser_url
  chromium = await launchChromium({ width: 1366, height: 768 })
}, 120_000)

afterAll(async () => {
  await chromium?.close()
  await scene?.stop()
})

let desk: Page
let dispenser: Page

const focused = (page: Page) => page.evaluate(() => document.activeElement?.getAttribute('data-testid') ?? document.activeElement?.getAttribute('name'))
const serving = async () =>
  (await ok('GET', '/api/ventanilla/queue')).serving as { desk: string; ticket: { id: number; number: string; customer_name: string | null }; called_at: string }[]
/** The console takes one action at a time; the next key waits until the last one is answered. */
const idle = () => desk.waitForFunction(() => !(document.querySelector('[data-testid=call-next]') as HTMLButtonElement | null)?.disabled, undefined, { timeout: SLOW })

describe('customer names at the dispenser and the counter', () => {
  test('required: the dispenser refuses an empty name in words, and the console shows the name taken', async () => {
    const settings = await ok('PATCH', '/api/ventanilla/settings', { dispenserAsksName: 'required' })
    expect(settings.dispenserAsksName).toBe('required')

    desk = await chromium.context.newPage()
    await desk.goto(`${server.base}/staff?empresa=${companyId}`)
    await desk.locator('input[name=email]').fill(email, { timeout: SLOW })
    await desk.locator('input[name=password]').fill(PASSWORD)
    await desk.keyboard.press('Enter')
    await desk.locator('input[name=desk]').fill('Caja 1', { timeout: SLOW })
    await desk.getByRole('checkbox').first().check()
    await desk.getByRole('button', { name: 'Comenzar' }).click()
    await desk.getByTestId('queue-A').waitFor({ timeout: SLOW })

    dispenser = await chromium.context.newPage()
    await dispenser.setViewportSize({ width: 1280, height: 800 })
    await dispenser.goto(dispenserUrl)
    await dispenser.getByTestId('service-button').click({ timeout: SLOW })
    await dispenser.getByTestId('name-step').waitFor()
    expect(await focused(dispenser)).toBe('name-field')
    expect(await dispenser.getByRole('heading', { level: 1 }).textContent()).toBe('¿A nombre de quién?')
    expect(await dispenser.getByTestId('name-skip').count()).toBe(0)
    // Spaces alone are no name either.
    await dispenser.getByTestId('name-field').fill('   ')
    await dispenser.getByTestId('name-continue').click()
    expect(await dispenser.getByTestId('name-error').textContent()).toBe('Escriba su nombre para tomar el número.')
    expect(await dispenser.getByTestId('name-field').getAttribute('aria-invalid')).toBe('true')
    // «Volver» goes back to the services and takes nothing.
    await dispenser.getByTestId('name-back').click()
    await dispenser.getByTestId('service-button').waitFor()
    expect((await ok('GET', '/api/ventanilla/queue')).data[0].waiting).toEqual([])

    await dispenser.getByTestId('service-button').click()
    await dispenser.getByTestId('name-field').pressSequentially('Jose\u0301 Nun\u0303ez')
    await dispenser.getByTestId('name-field').press('Enter')
    expect(await dispenser.getByTestId('issued-number').textContent({ timeout: SLOW })).toBe('A-001')
    expect(await dispenser.getByTestId('issued-name').textContent()).toBe('A nombre de José Nuñez')

    // Sent composed (NFC), as the same name typed on any keyboard.
    const queue = (await ok('GET', '/api/ventanilla/queue')).data[0]
    const waiting = queue.waiting
    expect(waiting.map((w: { number: string; customer_name: string }) => [w.number, w.customer_name])).toEqual([['A-001', 'José Nuñez']])
    await desk.getByTestId('queue-ticket').filter({ hasText: 'José Nuñez' }).waitFor({ timeout: LIVE })
    await desk.bringToFront()
    await desk.keyboard.press('Space')
    expect(await desk.getByTestId('current-name').textContent({ timeout: SLOW })).toBe('José Nuñez')

    // The server holds the same rule: no name, no ticket.
    const token = decodeURIComponent(new URL(dispenserUrl).pathname.split('/').pop()!)
    const refused = await jsonClient(server.base)('POST', `/api/public/ventanilla/${encodeURIComponent(token)}/tickets`, { body: { service_id: queue.service_id } })
    expect(refused.status).toBe(400)
    expect((await ok('GET', '/api/ventanilla/queue')).data[0].waiting).toEqual([])
  }, 90_000)

  test('the console corrects the name of the ticket it serves; shortcuts stay quiet while typing', async () => {
    await desk.bringToFront()
    await desk.getByTestId('edit-name').waitFor()
    await desk.keyboard.press('e')
    await desk.getByTestId('name-edit').waitFor()
    expect(await focused(desk)).toBe('name-field')
    expect(await desk.getByTestId('name-field').inputValue()).toBe('José Nuñez')
    // Escape cancels: the name stays, the focus goes back to «Editar nombre».
    await desk.keyboard.type('xyz')
    await desk.keyboard.press('Escape')
    await desk.getByTestId('name-edit').waitFor({ state: 'detached' })
    expect(await desk.getByTestId('current-name').textContent()).toBe('José Nuñez')
    expect(await focused(desk)).toBe('edit-name')

    // Reached by Tab and Enter as well as by its key. The new name holds every shortcut's letter and a space:
    // none of them may call, finish, mark absent or transfer while typed in the field.
    await desk.getByTestId('edit-name').press('Enter')
    await desk.getByTestId('name-edit').waitFor()
    await desk.keyboard.press('Control+A')
    await desk.keyboard.type('Renata Fernández Ortiz')
    await desk.keyboard.press('Enter')
    expect(await desk.getByTestId('message').textContent({ timeout: SLOW })).toBe('Nombre de A-001 guardado.')
    expect(await desk.getByTestId('current-name').textContent()).toBe('Renata Fernández Ortiz')
    expect(await desk.getByTestId('current-ticket').textContent()).toContain('A-001')
    const now = await serving()
    expect(now.map((s) => [s.desk, s.ticket.number, s.ticket.customer_name])).toEqual([['Caja 1', 'A-001', 'Renata Fernández Ortiz']])
    // The shortcuts work again once the field is closed: R calls the same ticket again.
    await desk.keyboard.press('r')
    await idle()
    const deadline = Date.now() + LIVE
    while ((await serving())[0].called_at === now[0].called_at && Date.now() < deadline) await Bun.sleep(100)
    expect((await serving())[0].called_at).not.toBe(now[0].called_at)
  }, 60_000)

  test('optional: «Seguir sin nombre» takes an unnamed ticket; the console can then write one', async () => {
    expect((await ok('PATCH', '/api/ventanilla/settings', { dispenserAsksName: 'optional' })).dispenserAsksName).toBe('optional')
    await desk.bringToFront()
    await desk.keyboard.press('f')
    expect(await desk.getByTestId('message').textContent({ timeout: SLOW })).toBe('A-001 finalizado.')

    await dispenser.goto(dispenserUrl)
    await dispenser.getByTestId('service-button').click({ timeout: SLOW })
    await dispenser.getByTestId('name-skip').click()
    expect(await dispenser.getByTestId('issued-number').textContent({ timeout: SLOW })).toBe('A-002')
    expect(await dispenser.getByTestId('issued-name').count()).toBe(0)
    const waiting = (await ok('GET', '/api/ventanilla/queue')).data[0].waiting
    expect(waiting.map((w: { number: string; customer_name: string | null }) => [w.number, w.customer_name])).toEqual([['A-002', null]])

    await desk.bringToFront()
    await desk.getByTestId('queue-ticket').filter({ hasText: 'A-002' }).waitFor({ timeout: LIVE })
    await desk.keyboard.press('Space')
    await desk.getByTestId('current-ticket').filter({ hasText: 'A-002' }).waitFor({ timeout: SLOW })
    expect(await desk.getByTestId('current').locator('.customer').textContent()).toBe('Sin nombre')
    await desk.keyboard.press('e')
    await desk.getByTestId('name-field').waitFor()
    await desk.keyboard.type('Tomás Ríos')
    await desk.getByTestId('save-name').click()
    expect(await desk.getByTestId('current-name').textContent({ timeout: SLOW })).toBe('Tomás Ríos')
    expect((await serving()).map((s) => [s.ticket.number, s.ticket.customer_name])).toEqual([['A-002', 'Tomás Ríos']])
  }, 60_000)

  test('a ticket closed meanwhile: the console says so in words and lets it go', async () => {
    const [open] = await serving()
    // Finished from elsewhere (another tab, the API) while this console still shows it.
    await ok('POST', `/api/ventanilla/tickets/${open.ticket.id}/finish`)
    const closed = await jsonClient(server.base)('PATCH', `/api/ventanilla/tickets/${open.ticket.id}`, { key, body: { customer_name: 'Otro' } })
    expect([closed.status, closed.body.code]).toEqual([409, 'TICKET_CLOSED'])
    await desk.bringToFront()
    await desk.keyboard.press('e')
    await desk.getByTestId('name-field').waitFor()
    await desk.keyboard.type('Otro nombre')
    await desk.keyboard.press('Enter')
    expect(await desk.getByTestId('message').textContent({ timeout: SLOW })).toBe('A-002 ya estaba cerrado (finalizado o ausente): el nombre no se guardó.')
    expect(await desk.getByTestId('current-ticket').count()).toBe(0)
    expect(await desk.getByTestId('name-edit').count()).toBe(0)
  }, 60_000)
})
