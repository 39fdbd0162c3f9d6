import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AppContext } from '../../server/context'
import { kioskModule } from '../../server/modules/kiosk'
import { appPages } from '../../server/modules/ventanilla'
import { testApp } from '../helpers'

const root = mkdtempSync(join(tmpdir(), 'kiosk-route-'))
const dist = join(root, 'dist')
const ctx = {} as AppContext
const built = kioskModule(ctx, dist)
const missing = kioskModule(ctx, join(root, 'nowhere'))
const get = (app: { handle: (r: Request) => Promise<Response> }, path: string) => app.handle(new Request(`http://localhost${path}`))

beforeAll(() => {
  mkdirSync(join(dist, 'assets'), { recursive: true })
  writeFileSync(join(dist, 'index.html'), '<!doctype html><title>kiosk</title>')
  writeFileSync(join(dist, 'statement.html'), '<!doctype html><title>Estado de cuenta</title>')
  writeFileSync(join(dist, 'assets', 'index-abc.js'), 'console.log(1)')
  writeFileSync(join(dist, 'assets', 'index-abc.css'), 'body{}')
  writeFileSync(join(root, 'secret.txt'), 'outside the build')
})

afterAll(() => rmSync(root, { recursive: true, force: true }))

const expectSecurityHeaders = (res: Response) => {
  const csp = res.headers.get('content-security-policy') ?? ''
  expect(csp).toContain("default-src 'none'")
  expect(csp).toContain("script-src 'self'")
  expect(csp).toContain("connect-src 'self'")
  expect(csp).toContain("img-src 'self' https: data:")
  expect(csp).not.toContain('unsafe-inline')
  expect(res.headers.get('x-content-type-options')).toBe('nosniff')
  expect(res.headers.get('referrer-policy')).toBe('no-referrer')
}

describe('GET /kiosk/{token}', () => {
  let pages: ReturnType<typeof appPages>
  let missingPages: ReturnType<typeof appPages>
  let live: { id: number; token: string }
  let key: string
  beforeAll(async () => {
    const t = await testApp()
    pages = appPages(t.ctx, dist)
    missingPages = appPages(t.ctx, join(root, 'nowhere'))
    const c = await t.newCompany({ ventanilla: true })
    key = c.key
    live = (await t.request('POST', '/api/ventanilla/tokens', { key, body: { name: 'TV' } })).body
  })

  test('a live token gets the app page, uncached, with the security headers', async () => {
    const res = await get(pages, `/kiosk/${live.token}`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(res.headers.get('cache-control')).toBe('no-cache')
    expectSecurityHeaders(res)
    expect(await res.text()).toContain('<title>kiosk</title>')
  })

  test('an unknown or revoked token is 404, with the app as the body so the screen says it is disabled', async () => {
    for (const token of ['some-token_123', `vtk_000000000000_${'a'.repeat(32)}`]) {
      const res = await get(pages, `/kiosk/${token}`)
      expect(res.status).toBe(404)
      expectSecurityHeaders(res)
      expect(await res.text()).toContain('<title>kiosk</title>')
    }
    const t = await testApp()
    await t.request('DELETE', `/api/ventanilla/tokens/${live.id}`, { key })
    expect((await get(pages, `/kiosk/${live.token}`)).status).toBe(404)
  })

  test('when the token cannot be checked (database away) the page is served, so the screen keeps its last state', async () => {
    const away = {
      db: {
        select: () => {
          throw new Error('connection refused')
        },
      },
    } as unknown as AppContext
    const res = await get(appPages(away, dist), `/kiosk/${live.token}`)
    expect(res.status).toBe(200)
    expect(await res.text()).toContain('<title>kiosk</title>')
  })

  test('without a build answers 503 with a JSON error naming the build command', async () => {
    const res = await get(missingPages, '/kiosk/abc')
    expect(res.status).toBe(503)
    const body = await res.json()
    expect(body.code).toBe('KIOSK_NOT_BUILT')
    expect(body.error).toContain('kiosk:build')
    expectSecurityHeaders(res)
  })
})

describe('GET /kiosk/assets/*', () => {
  test('serves built files with their content type and a year-long immutable cache', async () => {
    const js = await get(built, '/kiosk/assets/index-abc.js')
    expect(js.status).toBe(200)
    expect(js.headers.get('content-type')).toStartWith('text/javascript')
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    expectSecurityHeaders(js)
    expect(await js.text()).toBe('console.log(1)')
    const css = await get(built, '/kiosk/assets/index-abc.css')
    expect(css.headers.get('content-type')).toStartWith('text/css')
  })

  test('a missing asset is 404; without a build, 503', async () => {
    expect((await get(built, '/kiosk/assets/nope.js')).status).toBe(404)
    expect((await get(missing, '/kiosk/assets/index-abc.js')).status).toBe(503)
  })

  test.each([
    '/kiosk/assets/..%2findex.html',
    '/kiosk/assets/..%2f..%2fsecret.txt',
    '/kiosk/assets/%2e%2e/%2e%2e/secret.txt',
    '/kiosk/assets/%2e%2e%2f%2e%2e%2fsecret.txt',
    `/kiosk/assets/${encodeURIComponent(join(root, 'secret.txt'))}`,
    '/kiosk/assets/index-abc.js%00.png',
    '/kiosk/assets/%E0%A4%A',
    '/kiosk/assets/',
  ])('no file outside the assets folder: %s', async (path) => {
    const res = await get(built, path)
    expect(res.status).toBe(404)
    expect(await res.text()).not.toContain('outside the build')
  })
})

describe('GET /estado-de-cuenta/{client id}', () => {
  test('any client id gets the statement page, uncached, with the security headers; the key stays in the fragment', async () => {
    for (const id of ['1', '2147483647']) {
      const res = await get(built, `/estado-de-cuenta/${id}`)
      expect(res.status).toBe(200)
      expect(res.headers.get('cache-control')).toBe('no-cache')
      expectSecurityHeaders(res)
      expect(await res.text()).toContain('Estado de cuenta')
    }
  })

  test('an id that is not one is 404; without a build, 503', async () => {
    for (const id of ['0', 'abc', '2147483648', '01', '-1']) expect((await get(built, `/estado-de-cuenta/${id}`)).status).toBe(404)
    expect((await get(missing, '/estado-de-cuenta/1')).status).toBe(503)
  })
})

test('the service registers the kiosk routes, hidden from the API document', async () => {
  const t = await testApp()
  const res = await t.request('GET', '/kiosk/any-token')
  // An unknown token: 404 with the page once the app is built, 503 before.
  expect([404, 503]).toContain(res.status)
  expect(res.headers.get('content-security-policy')).toContain("default-src 'none'")
  const doc = await t.request('GET', '/openapi.json')
  expect(Object.keys(doc.body.paths).some((p) => p.startsWith('/kiosk') || p.startsWith('/estado-de-cuenta'))).toBe(false)
  expect([200, 503]).toContain((await t.request('GET', '/estado-de-cuenta/7')).status)
})
