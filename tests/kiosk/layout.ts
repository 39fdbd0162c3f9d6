/**
 * Layout checks for the screen apps, run inside the page: what a person would call clipped, overlapping or scrolled.
 * Also a feed of generated data (snapshots for the kiosk, a service list for the dispenser) served with the built
 * apps, so a screen can be loaded with any amount of data without building it up through the API.
 */
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { securityHeaders } from '../../server/lib/app-pages'
import { ROOT } from './browser'

export interface LayoutProblem {
  kind: 'outside-viewport' | 'overlap' | 'scrolled' | 'page-scrolls'
  what: string
}

/**
 * Every visible element must lie inside the viewport and show all of its content (scrollWidth/scrollHeight within
 * clientWidth/clientHeight), and no two pieces of text may cover each other. Text is measured by its own glyph
 * boxes (a Range over each text node), not by element boxes, so a number inside a badge inside a card is compared
 * as the text it is. An element marked `data-marquee` (the ticker) holds a line meant to run past its edges;
 * only its own box is checked, against the viewport.
 */
export function findLayoutProblems(page: Page): Promise<LayoutProblem[]> {
  return page.evaluate(() => {
    const problems: { kind: 'outside-viewport' | 'overlap' | 'scrolled' | 'page-scrolls'; what: string }[] = []
    const vw = document.documentElement.clientWidth
    const vh = document.documentElement.clientHeight
    const name = (el: Element) => {
      const cls = typeof el.className === 'string' && el.className ? `.${el.className.trim().split(/\s+/).join('.')}` : ''
      const id = el.getAttribute('data-testid')
      return `${el.tagName.toLowerCase()}${cls}${id ? `[${id}]` : ''} «${(el.textContent ?? '').trim().slice(0, 40)}»`
    }
    const visible = (el: Element) => {
      const style = getComputedStyle(el)
      if (style.visibility === 'hidden' || style.display === 'none' || Number(style.opacity) === 0) return false
      const r = el.getBoundingClientRect()
      return r.width > 0 && r.height > 0
    }
    const inMarquee = (el: Element) => el.closest('[data-marquee]') !== null
    const root = document.scrollingElement ?? document.documentElement
    if (root.scrollWidth > vw || root.scrollHeight > vh) problems.push({ kind: 'page-scrolls', what: `page ${root.scrollWidth}×${root.scrollHeight} in ${vw}×${vh}` })

    for (const el of Array.from(document.body.querySelectorAll('*'))) {
      if (el.matches('script, style') || !visible(el)) continue
      if (el.parentElement?.closest('[data-marquee]')) continue
      const r = el.getBoundingClientRect()
      // Half a pixel for subpixel layout.
      if (r.left < -0.5 || r.top < -0.5 || r.right > vw + 0.5 || r.bottom > vh + 0.5)
        problems.push({ kind: 'outside-viewport', what: `${name(el)} at ${Math.round(r.left)},${Math.round(r.top)}–${Math.round(r.right)},${Math.round(r.bottom)}` })
      if (inMarquee(el)) continue
      const h = el as HTMLElement
      if (h.scrollWidth > h.clientWidth + 1 && h.clientWidth > 0) problems.push({ kind: 'scrolled', what: `${name(el)} scrollWidth ${h.scrollWidth} > clientWidth ${h.clientWidth}` })
      if (h.scrollHeight > h.clientHeight + 1 && h.clientHeight > 0) problems.push({ kind: 'scrolled', what: `${name(el)} scrollHeight ${h.scrollHeight} > clientHeight ${h.clientHeight}` })
    }

    const texts: { rect: DOMRect; what: string }[] = []
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT)
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const parent = node.parentElement
      if (!parent || !node.textContent?.trim() || !visible(parent) || inMarquee(parent)) continue
      const range = document.createRange()
      range.selectNodeContents(node)
      for (const rect of Array.from(range.getClientRects())) if (rect.width > 0 && rect.height > 0) texts.push({ rect, what: name(parent) })
    }
    // Glyph boxes include the font's ascent and descent, which tight line heights let neighbours share by a hair.
    const slack = 2
    for (let i = 0; i < texts.length; i++)
      for (let j = i + 1; j < texts.length; j++) {
        const a = texts[i].rect
        const b = texts[j].rect
        const x = Math.min(a.right, b.right) - Math.max(a.left, b.left)
        const y = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top)
        if (x > slack && y > slack * 2) problems.push({ kind: 'overlap', what: `${texts[i].what} ⟷ ${texts[j].what}` })
      }
    return problems
  })
}

/**
 * The font size, in px, of the smallest visible text the page shows, with where it is; with `selector`, only text
 * inside elements it matches. Text in the ticker (`data-marquee`) counts too.
 */
export function smallestText(page: Page, selector = 'body *'): Promise<{ size: number; what: string } | null> {
  return page.evaluate((selector) => {
    let best: { size: number; what: string } | null = null
    for (const el of Array.from(document.querySelectorAll(selector))) {
      const own = Array.from(el.childNodes).some((n) => n.nodeType === Node.TEXT_NODE && n.textContent?.trim())
      const r = el.getBoundingClientRect()
      if (!own || r.width === 0 || r.height === 0 || getComputedStyle(el).visibility === 'hidden') continue
      const size = parseFloat(getComputedStyle(el).fontSize)
      if (!best || size < best.size) best = { size, what: `${el.tagName.toLowerCase()}.${(el as HTMLElement).className} «${el.textContent?.trim().slice(0, 30)}»` }
    }
    return best
  }, selector)
}

/** Waits for layout work the apps do after data arrives (text fitting runs on animation frames) to settle. */
export async function settled(page: Page) {
  await page.evaluate(async () => {
    await document.fonts.ready
    for (let i = 0; i < 4; i++) await new Promise((r) => requestAnimationFrame(r))
  })
}

const CURRENCIES = ['USD', 'EUR', 'BRL', 'UYU', 'CLP', 'PYG', 'GBP', 'CHF', 'JPY', 'CNY', 'MXN', 'USDT']
const SERVICE_NAMES = [
  'Compra/Venta de divisas',
  'Transferencias',
  'Pagos y cobranzas',
  'Cheques y giros al exterior del país',
  'Atención a empresas y comercios',
  'Consultas',
]

export interface SnapshotSpec {
  currencies: number
  services: number
  recent: number
  /** Digits before the decimals in every rate. */
  rateDigits?: number
  nameLength?: number
  tickerLength?: number
  prefixLength?: number
  current?: boolean
  name?: string
  companyName?: string
}

const sized = (base: string, length: number) => (base.length >= length ? base.slice(0, length) : (base + ' ' + 'Fernández de la Torre Etcheverry '.repeat(4)).slice(0, length).trimEnd())

/** A kiosk snapshot of the given size, in the shape of `GET /api/public/ventanilla/{token}`. */
export function generateSnapshot(spec: SnapshotSpec) {
  const digits = spec.rateDigits ?? 4
  const prefix = (i: number) => String.fromCharCode(65 + i).repeat(spec.prefixLength ?? 1)
  const services = Array.from({ length: spec.services }, (_, i) => ({ id: i + 1, name: SERVICE_NAMES[i % SERVICE_NAMES.length], prefix: prefix(i), waiting: (i * 7) % 23 }))
  const personName = (i: number) => {
    const base = ['María José González', 'Juan Pérez', 'Ana Lucía Rodríguez'][i % 3]
    return spec.name ?? (spec.nameLength ? sized(base, spec.nameLength) : base)
  }
  const call = (i: number) => ({
    ticket: `${prefix(i % spec.services)}-${String(120 - i).padStart(3, '0')}`,
    name: personName(i),
    desk: i % 2 ? 'Caja 12' : 'Escritorio 3',
    service: services[i % spec.services].name,
    calledAt: new Date(Date.now() - i * 240_000).toISOString(),
  })
  const rate = (i: number, spread: number) => Number(`${'9876543210'.repeat(2).slice(i % 3, (i % 3) + digits)}.${String(25 + i * 3).padStart(2, '0')}`) + spread
  return {
    companyName: spec.companyName ?? 'Cambios del Litoral',
    date: new Date().toISOString().slice(0, 10),
    rates: Array.from({ length: spec.currencies }, (_, i) => {
      const buy = rate(i, 0)
      const sell = rate(i, 12.5)
      return { currency: CURRENCIES[i % CURRENCIES.length], buy, sell, mid: (buy + sell) / 2 }
    }),
    services,
    currentCall: spec.current === false ? null : call(0),
    recentCalls: Array.from({ length: spec.recent }, (_, i) => call(i + 1)),
    logoUrl: '',
    showLogo: false,
    timezone: 'America/Argentina/Buenos_Aires',
    tickerText: 'Bienvenidos · Horario de atención de lunes a viernes de 9 a 17 h · Operaciones sujetas a disponibilidad · '
      .repeat(10)
      .slice(0, spec.tickerLength ?? 80)
      .trimEnd(),
    announceSound: false,
    announceTts: false,
    privacyMode: 'full_name',
    updatedAt: new Date().toISOString(),
  }
}

/**
 * The dispenser's `GET …/services` answer with `count` services whose names are `nameLength` characters long, and
 * its `dispenserAsksName` setting.
 */
export function generateDispenserView(count: number, nameLength: number, asksName: 'off' | 'optional' | 'required' = 'off') {
  const names = [
    'Compra/Venta de divisas y transferencias',
    'Transferencias al exterior y giros SWIFT',
    'Pagos de servicios, impuestos y cobranzas',
    'Cheques de viajero y cambio de billetes',
    'Atención a empresas, comercios y agentes',
    'Consultas, reclamos y trámites generales',
  ]
  return {
    companyName: 'Cambios del Litoral',
    timezone: 'America/Argentina/Buenos_Aires',
    priority: true,
    asksName,
    services: Array.from({ length: count }, (_, i) => ({
      id: i + 1,
      name: sized(names[i % names.length], nameLength),
      prefix: String.fromCharCode(65 + i),
    })),
  }
}

/**
 * The built apps on a local port, fed from memory: `/kiosk/{token}` streams `snapshots[token]` (held open, so the
 * screen stays online), `/dispenser/{token}` lists `dispensers[token]`. The same security headers as the real pages.
 */
export function serveGenerated() {
  const snapshots = new Map<string, unknown>()
  const dispensers = new Map<string, unknown>()
  const dist = join(ROOT, 'kiosk/dist')
  const encoder = new TextEncoder()
  const json = (body: unknown) => Response.json(body, { headers: { 'cache-control': 'no-store' } })
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const path = decodeURIComponent(new URL(req.url).pathname)
      const page = (file: string) => new Response(Bun.file(join(dist, file)), { headers: { 'content-type': 'text/html; charset=utf-8', ...securityHeaders } })
      if (path.startsWith('/kiosk/assets/')) {
        const file = Bun.file(join(dist, path.slice('/kiosk/'.length).replace(/\.\.+/g, '')))
        return (await file.exists()) ? new Response(file, { headers: securityHeaders }) : new Response('missing', { status: 404 })
      }
      let m = /^\/kiosk\/([^/]+)$/.exec(path)
      if (m) return page('index.html')
      m = /^\/dispenser\/([^/]+)$/.exec(path)
      if (m) return page('dispenser.html')
      m = /^\/api\/public\/ventanilla\/([^/]+)(\/events|\/services|\/tickets)?$/.exec(path)
      if (m) {
        const [, token, tail] = m
        if (tail === '/services') return dispensers.has(token) ? json(dispensers.get(token)) : new Response('{}', { status: 404 })
        if (tail === '/tickets') {
          const view = dispensers.get(token) as ReturnType<typeof generateDispenserView> | undefined
          const { service_id } = (await req.json()) as { service_id: number }
          const service = view?.services.find((s) => s.id === service_id)
          if (!service) return new Response('{}', { status: 404 })
          return Response.json({ number: `${service.prefix}-120`, service: service.name, priority: false, waiting_ahead: 12 }, { status: 201 })
        }
        if (!snapshots.has(token)) return new Response('{}', { status: 404 })
        if (!tail) return json(snapshots.get(token))
        const data = `event: snapshot\ndata: ${JSON.stringify(snapshots.get(token))}\n\n`
        return new Response(
          new ReadableStream({
            start(controller) {
              controller.enqueue(encoder.encode(data))
              // Kept open until the page goes away; a comment now and then, as the real stream sends.
              const beat = setInterval(() => {
                try {
                  controller.enqueue(encoder.encode(':\n\n'))
                } catch {
                  clearInterval(beat)
                }
              }, 5000)
              req.signal.addEventListener('abort', () => clearInterval(beat))
            },
          }),
          { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-store' } },
        )
      }
      return new Response('not found', { status: 404 })
    },
  })
  return {
    base: `http://127.0.0.1:${server.port}`,
    snapshots,
    dispensers,
    stop: () => server.stop(true),
  }
}
