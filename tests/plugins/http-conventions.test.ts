import { describe, expect, test } from 'bun:test'
import { buildTestApp, testApp } from '../helpers'
import { loadConfig } from '../../server/config'

const send = (t: Awaited<ReturnType<typeof testApp>>, method: string, path: string, headers: Record<string, string> = {}) =>
  t.app.handle(new Request(`http://fos.test${path}`, { method, headers }))

describe('HTTP conventions', () => {
  test('HEAD answers the GET’s status and ETag with no body; its tag earns a 304', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const get = await send(t, 'GET', '/api/employees', { 'x-api-key': c.key })
    const head = await send(t, 'HEAD', '/api/employees', { 'x-api-key': c.key })
    expect(head.status).toBe(200)
    expect(head.headers.get('etag')).toBe(get.headers.get('etag'))
    expect(await head.text()).toBe('')
    const cached = await send(t, 'HEAD', '/api/employees', { 'x-api-key': c.key, 'if-none-match': get.headers.get('etag')! })
    expect(cached.status).toBe(304)
  })

  test('over the wire, HEAD carries the GET\'s Content-Length or none, never 0 for a non-empty GET (RFC 9110 §9.3.2)', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const client = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Ana', type: 1, accounts: [{ currency_name: 'USD' }] } })
    const grant = await t.request('POST', `/api/clients/${client.body.id}/external-grants`, { key: c.key, body: {} })
    const server = Bun.serve({ port: 0, fetch: (req) => t.app.handle(req) })
    try {
      const checked: string[] = []
      for (const [path, headers] of [
        ['/health', {}],
        ['/openapi.json', {}],
        ['/docs', {}],
        ['/api/employees', { 'x-api-key': c.key }],
        [`/api/external/clients/${client.body.id}/statement`, { authorization: `Bearer ${grant.body.token}` }],
      ] as const) {
        const url = `http://127.0.0.1:${server.port}${path}`
        const get = await fetch(url, { headers })
        const length = (await get.arrayBuffer()).byteLength
        expect([path, get.status, length > 0]).toEqual([path, 200, true])
        const head = await fetch(url, { method: 'HEAD', headers })
        const declared = head.headers.get('content-length')
        expect([path, head.status, declared === null || Number(declared) === length]).toEqual([path, 200, true])
        // A 304 may state only the 200's length (RFC 9110 §8.6).
        const tag = get.headers.get('etag')
        if (tag) {
          const cached = await fetch(url, { method: 'HEAD', headers: { ...headers, 'if-none-match': tag } })
          const stated = cached.headers.get('content-length')
          expect([path, cached.status, stated === null || Number(stated) === length]).toEqual([path, 304, true])
        }
        checked.push(path)
      }
      expect(checked).toHaveLength(5)
    } finally {
      server.stop(true)
    }
  })

  test('/openapi.json is tagged and a matching If-None-Match is 304', async () => {
    const t = await testApp()
    const get = await send(t, 'GET', '/openapi.json')
    const tag = get.headers.get('etag')
    expect(tag).toMatch(/^"[\w-]+"$/)
    const again = await send(t, 'GET', '/openapi.json', { 'if-none-match': tag! })
    expect([again.status, await again.text()]).toEqual([304, ''])
    expect(again.headers.get('content-security-policy')).toBe(get.headers.get('content-security-policy'))
  })

  test('a known path with a method it does not take is 405 with Allow; OPTIONS lists them; an unknown path stays 404', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const put = await send(t, 'PUT', '/api/employees', { 'x-api-key': c.key })
    expect(put.status).toBe(405)
    expect(put.headers.get('allow')).toBe('GET, HEAD, POST')
    expect(await put.json()).toEqual({ error: expect.any(String), code: 'METHOD_NOT_ALLOWED' })
    const post = await send(t, 'POST', '/api/clients/12')
    expect(post.status).toBe(405)
    expect(post.headers.get('allow')!.split(', ')).toEqual(expect.arrayContaining(['GET', 'PATCH', 'DELETE']))
    const options = await send(t, 'OPTIONS', '/api/balances')
    expect(options.status).toBe(204)
    expect(options.headers.get('allow')).toBe('GET, HEAD, OPTIONS')
    expect((await send(t, 'PUT', '/api/no-such-thing')).status).toBe(404)
  })

  test('authenticated GETs are private, revalidated and vary by credential and Accept', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const res = await send(t, 'GET', '/api/employees', { 'x-api-key': c.key })
    expect(res.headers.get('cache-control')).toBe('private, no-cache')
    expect(res.headers.get('vary')).toBe('Accept, X-Api-Key, Authorization, Cookie')
    const open = await send(t, 'GET', '/health')
    expect(open.headers.get('cache-control')).toBeNull()
    expect(open.headers.get('vary')).toBe('Accept')
  })

  test('CORS is off by default: no preflight answer, no grant', async () => {
    const t = await testApp()
    const preflight = await send(t, 'OPTIONS', '/api/employees', { origin: 'https://app.example', 'access-control-request-method': 'GET' })
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull()
    const get = await send(t, 'GET', '/health', { origin: 'https://app.example' })
    expect(get.headers.get('access-control-allow-origin')).toBeNull()
  })

  test('CORS_ORIGINS answers preflights and grants those origins only, errors included', async () => {
    expect(loadConfig({ CORS_ORIGINS: 'https://app.example, http://localhost:5173' }).corsOrigins).toEqual(['https://app.example', 'http://localhost:5173'])
    expect(() => loadConfig({ CORS_ORIGINS: 'https://app.example/path' })).toThrow('CORS_ORIGINS')
    expect(loadConfig({}).corsOrigins).toEqual([])
    const t = await buildTestApp({ corsOrigins: ['https://app.example'] })
    const c = await t.newCompany()
    const preflight = await send(t, 'OPTIONS', '/api/operations', {
      origin: 'https://app.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'x-api-key, content-type, idempotency-key',
    })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example')
    expect(preflight.headers.get('access-control-allow-headers')!.toLowerCase()).toContain('idempotency-key')
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST')
    const stranger = await send(t, 'OPTIONS', '/api/operations', { origin: 'https://evil.example', 'access-control-request-method': 'POST' })
    expect(stranger.status).toBe(403)
    expect(stranger.headers.get('access-control-allow-origin')).toBeNull()

    const get = await send(t, 'GET', '/api/employees', { origin: 'https://app.example', 'x-api-key': c.key })
    expect(get.status).toBe(200)
    expect(get.headers.get('access-control-allow-origin')).toBe('https://app.example')
    expect(get.headers.get('access-control-expose-headers')).toContain('ETag')
    expect(get.headers.get('vary')).toContain('Origin')
    const refused = await send(t, 'GET', '/api/employees', { origin: 'https://app.example', 'x-api-key': 'fos_000000000000_nothing' })
    expect(refused.status).toBe(401)
    expect(refused.headers.get('access-control-allow-origin')).toBe('https://app.example')
    const other = await send(t, 'GET', '/api/employees', { origin: 'https://evil.example', 'x-api-key': c.key })
    expect(other.headers.get('access-control-allow-origin')).toBeNull()
  })
})
