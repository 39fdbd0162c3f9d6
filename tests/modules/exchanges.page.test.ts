import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AppContext } from '../../server/context'
import { receiptPage } from '../../server/modules/exchanges/page'
import { testApp } from '../helpers'

const root = mkdtempSync(join(tmpdir(), 'receipt-page-'))
const dist = join(root, 'dist')
const get = (app: { handle: (r: Request) => Promise<Response> }, path: string) => app.handle(new Request(`http://localhost${path}`))

beforeAll(() => {
  mkdirSync(dist, { recursive: true })
  writeFileSync(join(dist, 'receipt.html'), '<!doctype html><title>Boleto</title>')
})

afterAll(() => rmSync(root, { recursive: true, force: true }))

describe('GET /receipts/{operation id}', () => {
  test('hands out the receipt app, uncached, under the screens\' CSP; the app signs in and reads the receipt itself', async () => {
    const res = await get(receiptPage({} as AppContext, dist), '/receipts/42')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(res.headers.get('cache-control')).toBe('no-cache')
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'")
    expect(await res.text()).toContain('<title>Boleto</title>')
  })

  test('without a build: 503 naming the build command', async () => {
    const res = await get(receiptPage({} as AppContext, join(root, 'nowhere')), '/receipts/42')
    expect(res.status).toBe(503)
    expect((await res.json()).code).toBe('KIOSK_NOT_BUILT')
  })

  test('in the service: a path that is not an id is 400 INVALID_ID, and the page stays out of the API document', async () => {
    const t = await testApp()
    for (const id of ['abc', '0', '2147483648']) {
      const res = await t.request('GET', `/receipts/${id}`)
      expect([res.status, res.body.code]).toEqual([400, 'INVALID_ID'])
    }
    expect([200, 503]).toContain((await t.request('GET', '/receipts/1')).status)
    const doc = await t.request('GET', '/openapi.json')
    expect(Object.keys(doc.body.paths).some((p) => p.startsWith('/receipts'))).toBe(false)
  })
})
