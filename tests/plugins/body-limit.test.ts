import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { buildTestApp, type TestApp } from '../helpers'

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
