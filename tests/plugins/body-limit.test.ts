import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildTestApp, type TestApp } from '../helpers'
import { startServer } from '../server'
import { multipartBound } from '../../server/plugins/body-limit'

const LIMIT = 4096
let built: Promise<TestApp> | undefined
/** One app with a small bound, shared by these tests (on PGlite each app is its own database). */
const limited = () => (built ??= buildTestApp({ maxJsonBytes: LIMIT }))

/** A body with no Content-Length, delivered in chunks, as a chunked upload arrives. */
function chunked(text: string, size = 1000) {
  const bytes = new TextEncoder().encode(text)
  return new ReadableStream<Uint8Array>({
    start(c) {
      for (let i = 0; i < bytes.length; i += size) c.enqueue(bytes.slice(i, i + size))
      c.close()
    },
  })
}

describe('request body limit', () => {
  test('the default bound is 1 MiB and MAX_JSON_BYTES changes it', async () => {
    const { loadConfig } = await import('../../server/config')
    expect(loadConfig({}).maxJsonBytes).toBe(1024 * 1024)
    expect(loadConfig({ MAX_JSON_BYTES: '2048' }).maxJsonBytes).toBe(2048)
    expect(() => loadConfig({ MAX_JSON_BYTES: 'lots' })).toThrow('MAX_JSON_BYTES')
  })

  test('a JSON body declared larger than the bound is 413 PAYLOAD_TOO_LARGE and writes nothing', async () => {
    const t = await limited()
    const c = await t.newCompany()
    const body = JSON.stringify({ name: 'Grande', type: 1, description: 'x'.repeat(LIMIT) })
    const res = await t.request('POST', '/api/clients', {
      key: c.key,
      raw: body,
      headers: { 'content-type': 'application/json', 'content-length': String(new TextEncoder().encode(body).length) },
    })
    expect(res.status).toBe(413)
    expect(res.body).toEqual({ error: expect.any(String), code: 'PAYLOAD_TOO_LARGE' })
    const [{ n }] = await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from clients where company_id = ${c.id}`)
    expect(n).toBe(0)
  })

  test('a chunked body without Content-Length is counted as it is read; one under the bound arrives whole', async () => {
    const t = await limited()
    const c = await t.newCompany()
    const big = JSON.stringify({ name: 'Grande', type: 1, description: 'x'.repeat(LIMIT) })
    const over = await app(t, c.key, big)
    expect(over.status).toBe(413)
    expect(await over.json()).toEqual({ error: expect.any(String), code: 'PAYLOAD_TOO_LARGE' })

    const small = await app(t, c.key, JSON.stringify({ name: 'Chico', type: 1, description: 'y'.repeat(1900) }))
    expect(small.status).toBe(201)
    expect((await small.json()).name).toBe('Chico')
    const [{ n }] = await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from clients where company_id = ${c.id}`)
    expect(n).toBe(1)
  })

  test('bodies under the bound parse as before: malformed JSON is still 400, empty bodies on body-less routes pass', async () => {
    const t = await limited()
    const c = await t.newCompany()
    const bad = await t.request('POST', '/api/clients', { key: c.key, raw: '{"name": ', headers: { 'content-type': 'application/json' } })
    expect(bad.status).toBe(400)
    expect(bad.body.code).toBe('VALIDATION_ERROR')
    const ok = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Normal', type: 0 } })
    expect(ok.status).toBe(201)
    const type = await t.request('POST', '/api/operation-types', { key: c.key, body: { name: 'Mov', kind: 'other' } })
    const op = await t.request('POST', '/api/operations', {
      key: c.key,
      body: { operation_type_id: type.body.id, transactions: [{ account_id: (await account(t, c.key)), amount: '10.5' }] },
    })
    expect(op.status).toBe(201)
    const approved = await t.request('POST', `/api/operations/${op.body.id}/approve`, { key: c.key, raw: '', headers: { 'content-type': 'application/json' } })
    expect(approved.status).toBe(200)
  })

  test('uploads are multipart and keep their own, larger limit', async () => {
    const t = await limited()
    const c = await t.newCompany()
    const type = await t.request('POST', '/api/operation-types', { key: c.key, body: { name: 'Mov', kind: 'other' } })
    const op = await t.request('POST', '/api/operations', {
      key: c.key,
      body: { operation_type_id: type.body.id, transactions: [{ account_id: await account(t, c.key), amount: 1 }] },
    })
    const form = new FormData()
    form.append('file', new File(['z'.repeat(LIMIT * 4)], 'big.txt', { type: 'text/plain' }))
    const res = await t.request('POST', `/api/operations/${op.body.id}/attachments`, { key: c.key, raw: form })
    expect(res.status).toBe(201)
    expect(res.body.size_bytes).toBe(LIMIT * 4)
  })
})

async function account(t: TestApp, key: string): Promise<number> {
  const client = await t.request('POST', '/api/clients', { key, body: { name: 'Caja', type: 0, accounts: [{ currency_name: 'ARS' }] } })
  return client.body.accounts[0].id
}

function app(t: TestApp, key: string, text: string) {
  return t.app.handle(
    new Request('http://fos.test/api/clients', {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: chunked(text),
      duplex: 'half',
    } as RequestInit),
  )
}

/** A body that counts what is pulled from it: `pulled()` says how much of it anything read. */
function counted(text: string, size = 16 * 1024) {
  const bytes = new TextEncoder().encode(text)
  let at = 0
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      if (at >= bytes.length) return c.close()
      c.enqueue(bytes.slice(at, at + size))
      at += size
    },
    // Nothing is pulled before someone reads.
  }, { highWaterMark: 0 })
  return { stream, pulled: () => at }
}

/** The body of repro 1, smaller: deep brackets that a JSON parser would recurse through. */
const DEEP = '['.repeat(200_000) + ']'.repeat(200_000)

/** Content-Type headers nothing here parses; `null` sends none at all, an array sends the header twice. */
const ODD: (string | string[] | null)[] = [
  'multipart/xxjson',
  'multipart/mixed; boundary=x',
  'application/json-seq',
  'application/jsonx',
  'text/json',
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/octet-stream',
  'APPLICATION/JSON',
  'application/json, application/json',
  ['application/json', 'application/json'],
  ['application/json', 'multipart/form-data; boundary=x'],
  null,
]

function send(t: TestApp, method: string, path: string, type: string | string[] | null, text: string, extra: Record<string, string> = {}) {
  const headers = new Headers(extra)
  for (const value of type === null ? [] : Array.isArray(type) ? type : [type]) headers.append('content-type', value)
  const body = counted(text)
  const started = performance.now()
  const answer = t.app.handle(new Request(`http://fos.test${path}`, { method, headers, body: body.stream, duplex: 'half' } as RequestInit))
  return answer.then(async (res) => ({ status: res.status, body: await res.json().catch(() => null), ms: performance.now() - started, pulled: body.pulled() }))
}

describe('content types: only what a route declares is parsed, the rest is 415 before the body is read', () => {
  test('every route class refuses odd content types with 415 UNSUPPORTED_MEDIA_TYPE and reads none of the body', async () => {
    const t = await limited()
    const c = await t.newCompany()
    const staff = await c.employee([])
    const type = await t.request('POST', '/api/operation-types', { key: c.key, body: { name: 'Mov', kind: 'other' } })
    const op = await t.request('POST', '/api/operations', {
      key: c.key,
      body: { operation_type_id: type.body.id, transactions: [{ account_id: await account(t, c.key), amount: 1 }] },
    })
    const token = await t.superToken()
    // Sign-in (no credential, the framework's own parser), a JSON write behind the route policy, a body-less
    // write, a route reading its own body (MCP), the upload route, and a superadmin route.
    const routes: [string, string, Record<string, string>][] = [
      ['POST', '/api/sessions', {}],
      ['POST', '/api/clients', { 'x-api-key': c.key }],
      ['POST', `/api/operations/${op.body.id}/approve`, { 'x-api-key': c.key }],
      ['POST', '/api/mcp', { 'x-api-key': c.key }],
      ['POST', `/api/operations/${op.body.id}/attachments`, { 'x-api-key': c.key }],
      ['POST', '/api/superadmin/companies', { authorization: `Bearer ${token}` }],
      ['PATCH', `/api/employees/${staff.id}`, { 'x-api-key': c.key }],
    ]
    const seen: string[] = []
    for (const [method, path, headers] of routes)
      for (const odd of ODD) {
        const r = await send(t, method, path, odd, DEEP, headers)
        seen.push(`${method} ${path} ${JSON.stringify(odd)} → ${r.status} ${r.body?.code} pulled ${r.pulled}`)
        expect({ path, odd, status: r.status, code: r.body?.code }).toEqual({ path, odd, status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' })
        expect(r.body.error).toEqual(expect.any(String))
        expect(r.pulled).toBe(0)
      }
    expect(seen.length).toBe(routes.length * ODD.length)
    // Nothing was written by any of them.
    const [{ n }] = await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from clients where company_id = ${c.id}`)
    expect(n).toBe(1)
  })

  test('multipart/form-data is read only by the route that takes files: elsewhere 415 after the caller is known, body unread', async () => {
    const t = await limited()
    const c = await t.newCompany()
    const multipart = 'multipart/form-data; boundary=x'
    const form = `--x\r\nContent-Disposition: form-data; name="name"\r\n\r\n${'a'.repeat(3000)}\r\n--x--\r\n`
    for (const [path, headers] of [
      ['/api/sessions', {}],
      ['/api/clients', { 'x-api-key': c.key }],
      ['/api/superadmin/companies', { authorization: `Bearer ${await t.superToken()}` }],
    ] as const) {
      const r = await send(t, 'POST', path, multipart, form, headers)
      expect({ path, status: r.status, code: r.body?.code, pulled: r.pulled }).toEqual({ path, status: 415, code: 'UNSUPPORTED_MEDIA_TYPE', pulled: 0 })
    }
    // Authentication still comes first on a company route.
    const anonymous = await send(t, 'POST', '/api/clients', multipart, form)
    expect([anonymous.status, anonymous.body.code, anonymous.pulled]).toEqual([401, 'UNAUTHORIZED', 0])
  })

  test('JSON (with or without parameters) and empty bodies still pass; a declared multipart length over its bound is 413 with a body', async () => {
    const t = await limited()
    const c = await t.newCompany()
    const ok = await send(t, 'POST', '/api/clients', 'application/json; charset=utf-8', JSON.stringify({ name: 'Con charset', type: 0 }), { 'x-api-key': c.key })
    expect(ok.status).toBe(201)
    const plain = await send(t, 'POST', '/api/clients', 'application/json', JSON.stringify({ name: 'Sin charset', type: 0 }), { 'x-api-key': c.key })
    expect(plain.status).toBe(201)
    // An empty body needs no type: a body-less write sent as fetch sends it.
    const type = await t.request('POST', '/api/operation-types', { key: c.key, body: { name: 'Mov', kind: 'other' } })
    const op = await t.request('POST', '/api/operations', {
      key: c.key,
      body: { operation_type_id: type.body.id, transactions: [{ account_id: await account(t, c.key), amount: 1 }] },
    })
    expect((await t.request('POST', `/api/operations/${op.body.id}/approve`, { key: c.key })).status).toBe(200)

    const bound = multipartBound(t.ctx.config.maxUploadBytes)
    const huge = await send(t, 'POST', `/api/operations/${op.body.id}/attachments`, 'multipart/form-data; boundary=x', 'x', {
      'x-api-key': c.key,
      'content-length': String(bound + 1),
    })
    expect([huge.status, huge.body.code, huge.pulled]).toEqual([413, 'PAYLOAD_TOO_LARGE', 0])
  })

  test('repro: a multipart/xxjson body of 20 MB of brackets to sign-in over HTTP is refused at once', async () => {
    const server = await startServer({ dataDir: mkdtempSync(join(tmpdir(), 'fos-body-')), databaseUrl: process.env.TEST_DATABASE_URL })
    try {
      const body = '['.repeat(10_000_000) + ']'.repeat(10_000_000)
      const started = performance.now()
      const res = await fetch(`${server.base}/api/sessions`, { method: 'POST', headers: { 'content-type': 'multipart/xxjson' }, body })
      const ms = performance.now() - started
      expect(res.status).toBe(415)
      expect(await res.json()).toEqual({ error: expect.any(String), code: 'UNSUPPORTED_MEDIA_TYPE' })
      expect(res.headers.get('connection')).toBe('close')
      console.log(`[body-limit] multipart/xxjson 20 MB → ${res.status} in ${ms.toFixed(0)} ms`)
      // Still serving.
      expect((await fetch(`${server.base}/health`)).status).toBe(200)
    } finally {
      server.proc.kill('SIGTERM')
      await server.proc.exited
    }
  }, 120_000)
})

/** The probe's body: 120,000 short strings in an array, 729 KB, beside a sign-in's three fields. */
const manyElements = () =>
  JSON.stringify({ company_id: 1, email: 'a@b.c', password: 'xxxxxxxxxxxx', name: 'Muchos', type: 1, pad: Array.from({ length: 120_000 }, (_, i) => String(i % 1000)) })

describe('parse cost: elements, and a small sign-in', () => {
  test('repro: 729 KB holding 120,000 elements is refused before it is parsed: at once on sign-in (4 KiB), while it arrives elsewhere', async () => {
    const t = await buildTestApp()
    const c = await t.newCompany()
    const body = manyElements()
    expect(new TextEncoder().encode(body).length).toBeGreaterThan(700_000)
    // Anonymous sign-in: its declared length alone is over the route's 4 KiB; nothing is read.
    const pulled = counted(body)
    const signIn = await t.app.handle(
      new Request('http://fos.test/api/sessions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': String(body.length) },
        body: pulled.stream,
        duplex: 'half',
      } as RequestInit),
    )
    expect(signIn.status).toBe(413)
    expect(await signIn.json()).toEqual({ error: expect.any(String), code: 'PAYLOAD_TOO_LARGE' })
    expect(pulled.pulled()).toBe(0)
    // A sign-in of the usual size still works as before (401 for a wrong password, not a size refusal).
    const small = await t.request('POST', '/api/sessions', { body: { company_id: c.id, email: 'x@fos.test', password: 'x'.repeat(12) } })
    expect(small.status).toBe(401)
    // Authenticated, chunked: refused once the scan passes MAX_JSON_ELEMENTS, with most of it never read.
    const scanned = counted(body)
    const res = await t.app.handle(
      new Request('http://fos.test/api/clients', {
        method: 'POST',
        headers: { 'x-api-key': c.key, 'content-type': 'application/json' },
        body: scanned.stream,
        duplex: 'half',
      } as RequestInit),
    )
    expect(res.status).toBe(413)
    expect(await res.json()).toEqual({
      error: `JSON body holds more than ${t.ctx.config.maxJsonElements} elements (array items and object members)`,
      code: 'PAYLOAD_TOO_LARGE',
      details: [{ field: 'body', message: `more than ${t.ctx.config.maxJsonElements} elements` }],
    })
    expect(scanned.pulled()).toBeLessThan(body.length / 4)
    const [{ n }] = await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from clients where company_id = ${c.id}`)
    expect(n).toBe(0)
  })

  test('MAX_JSON_ELEMENTS bounds every JSON body; the batch routes have BATCH_MAX_JSON_ELEMENTS instead', async () => {
    const { loadConfig } = await import('../../server/config')
    expect([loadConfig({}).maxJsonElements, loadConfig({}).batchMaxJsonElements]).toEqual([10_000, 100_000])
    expect(loadConfig({ MAX_JSON_ELEMENTS: '500', BATCH_MAX_JSON_ELEMENTS: '9000' })).toMatchObject({ maxJsonElements: 500, batchMaxJsonElements: 9000 })
    const t = await buildTestApp({ maxJsonElements: 60, batchMaxJsonElements: 600 })
    const c = await t.newCompany()
    const client = (i: number) => ({ name: `C${i}`, type: 1, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] })
    // Twenty clients: about 160 elements, too many for a single write, within a batch's bound.
    const batch = await t.request('POST', '/api/clients/batch', { key: c.key, body: { clients: Array.from({ length: 20 }, (_, i) => client(i)) } })
    expect(batch.status).toBe(201)
    expect(batch.body.data).toHaveLength(20)
    const single = await t.request('POST', '/api/clients', { key: c.key, body: { ...client(99), accounts: Array.from({ length: 40 }, () => ({ currency_name: 'EUR' })) } })
    expect([single.status, single.body.code]).toEqual([413, 'PAYLOAD_TOO_LARGE'])
    const tooBig = await t.request('POST', '/api/clients/batch', { key: c.key, body: { clients: Array.from({ length: 80 }, (_, i) => client(i)) } })
    expect([tooBig.status, tooBig.body.code]).toEqual([413, 'PAYLOAD_TOO_LARGE'])
  })
})

describe('charset', () => {
  const latin1 = (text: string) => Uint8Array.from(text, (ch) => ch.charCodeAt(0))
  const post = (t: TestApp, key: string, bytes: Uint8Array<ArrayBuffer>, contentType: string) =>
    t.request('POST', '/api/clients', { key, raw: bytes, headers: { 'content-type': contentType } })

  test('repro: a body declared ISO-8859-1 is decoded as ISO-8859-1, not stored with U+FFFD', async () => {
    const t = await buildTestApp()
    const c = await t.newCompany()
    const name = 'Peña Ñandú — ¿qué?'.replace('—', '-')
    for (const contentType of ['application/json; charset=ISO-8859-1', 'application/json;charset="latin1"', 'application/json; charset=iso_8859-1']) {
      const made = await post(t, c.key, latin1(JSON.stringify({ name, type: 1 })), contentType)
      expect(made.status).toBe(201)
      expect(made.body.name).toBe(name)
      expect((await t.request('GET', `/api/clients/${made.body.id}`, { key: c.key })).body.name).toBe(name)
    }
    // UTF-8, declared or not, as before.
    for (const contentType of ['application/json', 'application/json; charset=utf-8', 'application/json; charset=UTF8']) {
      const made = await post(t, c.key, new TextEncoder().encode(JSON.stringify({ name, type: 1 })), contentType)
      expect([made.status, made.body.name]).toEqual([201, name])
    }
  })

  test('bytes that are not UTF-8 in a UTF-8 body are 400; any other charset is 415 before the body is read; nothing is written', async () => {
    const t = await buildTestApp()
    const c = await t.newCompany()
    const bad = latin1(JSON.stringify({ name: 'Peña', type: 1 }))
    const refused = await post(t, c.key, bad, 'application/json')
    expect(refused.status).toBe(400)
    expect(refused.body).toEqual({ error: 'The JSON body is not valid UTF-8', code: 'VALIDATION_ERROR', details: [{ field: 'body', message: 'not valid UTF-8' }] })
    for (const charset of ['utf-16', 'windows-1252', 'shift_jis', '']) {
      const r = await post(t, c.key, bad, `application/json; charset=${charset}`)
      expect([r.status, r.body.code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE'])
    }
    const [{ n }] = await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from clients where company_id = ${c.id}`)
    expect(n).toBe(0)
  })
})
