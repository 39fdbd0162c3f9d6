import { beforeAll, describe, expect, test } from 'bun:test'
import { testApp } from '../helpers'

beforeAll(async () => {
  await testApp()
}, 120_000)

const directives = (csp: string) => Object.fromEntries(csp.split(';').map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name, values]))

describe('docs security headers', () => {
  test('/docs: Swagger UI from our own files only, under a policy that allows nothing else', async () => {
    const t = await testApp()
    const res = await t.request('GET', '/docs')
    expect(res.status).toBe(200)
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    expect(res.headers.get('referrer-policy')).toBe('no-referrer')
    const csp = directives(res.headers.get('content-security-policy') ?? '')
    expect(csp['default-src']).toEqual(["'none'"])
    expect(csp['script-src']).toEqual(["'self'"])
    expect(csp['style-src']).toEqual(["'self'"])
    expect(csp['frame-ancestors']).toEqual(["'none'"])
    expect(csp['base-uri']).toEqual(["'none'"])

    const html = res.body as string
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)]
    expect(scripts.length).toBeGreaterThan(0)
    for (const [, attrs, body] of scripts) {
      // No inline code at all: every script is a same-origin file the page's policy lets in.
      expect(body.trim()).toBe('')
      const src = /\bsrc="([^"]+)"/.exec(attrs)![1]
      expect(src.startsWith('/docs/assets/')).toBe(true)
      const asset = await t.request('GET', src)
      expect(asset.status).toBe(200)
      expect(asset.headers.get('content-type')).toContain('javascript')
      expect(asset.headers.get('x-content-type-options')).toBe('nosniff')
    }
    expect(html.match(/(href|src)="https?:/g)).toBeNull()
    const css = await t.request('GET', '/docs/assets/swagger-ui.css')
    expect(css.status).toBe(200)
    expect(css.headers.get('content-type')).toContain('text/css')
    for (const path of ['/docs/assets/../../package.json', '/docs/assets/index.html', '/docs/assets/%2e%2e/package.json'])
      expect((await t.request('GET', path)).status).toBe(404)
  })

  test('/openapi.json: data only, nosniff, no referrer; other routes are not affected', async () => {
    const t = await testApp()
    const res = await t.request('GET', '/openapi.json')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('application/json')
    expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; frame-ancestors 'none'")
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    expect(res.headers.get('referrer-policy')).toBe('no-referrer')
    const query = await t.request('GET', '/openapi.json?x=1')
    expect(query.headers.get('x-content-type-options')).toBe('nosniff')
    const health = await t.request('GET', '/health')
    expect(health.headers.get('content-security-policy')).toBeNull()
  })
})
