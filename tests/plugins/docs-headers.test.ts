import { beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { DOCS_SCRIPT_ORIGIN } from '../../server/plugins/openapi'
import { testApp } from '../helpers'

beforeAll(async () => {
  await testApp()
}, 120_000)

const directives = (csp: string) => Object.fromEntries(csp.split(';').map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name, values]))

describe('docs security headers', () => {
  test('/docs: a CSP that lets in exactly the page\'s scripts, nosniff, no referrer', async () => {
    const t = await testApp()
    const res = await t.request('GET', '/docs')
    expect(res.status).toBe(200)
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    expect(res.headers.get('referrer-policy')).toBe('no-referrer')
    const csp = directives(res.headers.get('content-security-policy') ?? '')
    expect(csp['default-src']).toEqual(["'none'"])
    expect(csp['frame-ancestors']).toEqual(["'none'"])
    expect(csp['base-uri']).toEqual(["'none'"])
    const scriptSrc: string[] = csp['script-src']
    expect(scriptSrc.filter((s) => s.startsWith("'unsafe"))).toEqual([])

    const html = res.body as string
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)]
    expect(scripts.length).toBeGreaterThan(0)
    const origins = new Set<string>()
    for (const [, attrs, body] of scripts) {
      const src = /\bsrc="([^"]+)"/.exec(attrs)?.[1]
      if (src) {
        origins.add(new URL(src).origin)
        continue
      }
      // An inline element runs only if its exact text is hashed into the policy.
      expect(scriptSrc).toContain(`'sha256-${createHash('sha256').update(body).digest('base64')}'`)
    }
    expect([...origins]).toEqual([DOCS_SCRIPT_ORIGIN])
    expect(scriptSrc.filter((s) => !s.startsWith("'sha256-"))).toEqual([DOCS_SCRIPT_ORIGIN])
    // Nothing else is fetched from another origin by the markup itself.
    expect(html.match(/<link\b[^>]*href="https?:/g)).toBeNull()
    expect(JSON.parse(/data-configuration='([^']*)'/.exec(html)![1]).withDefaultFonts).toBe(false)
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
