/**
 * Renders the kiosk at 1920×1080 with demo data and writes docs/kiosk.png:
 *   bun kiosk/screenshot.ts [out.png] [WIDTHxHEIGHT]
 * The app is served by the real page and asset helpers; the public snapshot API is a stand-in answering the demo snapshot,
 * so no database is needed and the picture does not change from run to run (the clock is fixed too).
 */
import { Elysia } from 'elysia'
import { join } from 'node:path'
import type { AppContext } from '../server/context'
import { kioskModule } from '../server/modules/kiosk'
import { appPage, APPS_DIST } from '../server/lib/app-pages'
import { ensureKioskBuilt, launchChromium, ROOT } from '../tests/kiosk/browser'
import { demoSnapshot } from './demo'

const out = process.argv[2] ?? join(ROOT, 'docs/kiosk.png')
const [width, height] = (process.argv[3] ?? '1920x1080').split('x').map(Number)
const now = new Date('2026-03-12T13:42:00Z')
const snapshot = JSON.stringify(demoSnapshot(now))

ensureKioskBuilt()
const server = new Elysia()
  .use(kioskModule({} as AppContext))
  .get('/kiosk/demo', () => appPage(APPS_DIST, 'index.html'))
  .get('/api/public/ventanilla/:token', () => new Response(snapshot, { headers: { 'content-type': 'application/json' } }))
  .get(
    '/api/public/ventanilla/:token/events',
    // Left open like the real stream, so the page is online when the picture is taken.
    () =>
      new Response(
        new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode(`event: snapshot\ndata: ${snapshot}\n\n`)) }),
        { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-store' } },
      ),
  )
  .listen({ port: 0, hostname: '127.0.0.1' })

const chromium = await launchChromium({ width, height })
try {
  const page = await chromium.context.newPage()
  await page.clock.setFixedTime(now)
  await page.goto(`http://127.0.0.1:${server.server!.port}/kiosk/demo`)
  await page.getByTestId('current-ticket').waitFor()
  await page.evaluate(() => document.fonts.ready)
  await page.screenshot({ path: out, animations: 'disabled' })
  console.log(`wrote ${out} (${width}×${height})`)
} finally {
  await chromium.close()
  await server.stop(true)
}
