import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { buildTestApp, postgresTest, type Company, type TestApp } from '../helpers'
import { startS3Server, type S3Server } from '../store'

const MAX = 256 * 1024
const bytes = (n: number, seed = 1): Uint8Array<ArrayBuffer> => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) % 256)

function form(data: Uint8Array<ArrayBuffer> | string, name: string, type: string, field = 'file') {
  const f = new FormData()
  f.append(field, new File([data], name, { type }))
  return f
}

async function newOperation(t: TestApp, c: Company) {
  const type = await t.request('POST', '/api/operation-types', { key: c.key, body: { name: 'Gastos', kind: 'other' } })
  expect(type.status).toBe(201)
  const client = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Caja', type: 0, accounts: [{ currency_name: 'ARS' }] } })
  expect(client.status).toBe(201)
  const op = await t.request('POST', '/api/operations', {
    key: c.key,
    body: { operation_type_id: type.body.id, transactions: [{ account_id: client.body.accounts[0].id, amount: '-10.5' }] },
  })
  expect(op.status).toBe(201)
  return { id: op.body.id as number, clientId: client.body.id as number }
}

interface Backend {
  name: 'disk' | 's3'
  t: TestApp
  /** Keys of the objects the store holds for a company. */
  objects(companyId: number): Promise<string[]>
  close(): Promise<void>
}

async function diskBackend(): Promise<Backend> {
  const dataDir = mkdtempSync(join(tmpdir(), 'fos-att-disk-'))
  const t = await buildTestApp({ dataDir, maxUploadBytes: MAX })
  return {
    name: 'disk',
    t,
    async objects(companyId) {
      const dir = join(dataDir, 'files', String(companyId))
      return existsSync(dir) ? readdirSync(dir) : []
    },
    async close() {
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

async function s3Backend(): Promise<Backend> {
  const server: S3Server = await startS3Server()
  const t = await buildTestApp({ s3: server.config, maxUploadBytes: MAX })
  return {
    name: 's3',
    t,
    async objects(companyId) {
      return server.keys(`${companyId}/`)
    },
    close: () => server.close(),
  }
}

for (const make of [diskBackend, s3Backend]) {
  describe(`attachments (${make === diskBackend ? 'disk' : 's3'} store)`, () => {
    let b: Backend
    let t: TestApp
    beforeAll(async () => {
      b = await make()
      t = b.t
    })
    afterAll(async () => {
      t?.travel(0)
      await b?.close()
    })

    const upload = (key: string, opId: number | string, body: BodyInit, headers?: Record<string, string>) =>
      t.request('POST', `/api/operations/${opId}/attachments`, { key, raw: body, headers })

    /** Follows a signed link as a browser would: disk links through the app itself, S3 links to the S3 server. */
    const download = (url: string) =>
      b.name === 'disk' ? t.app.handle(new Request(url)) : fetch(url)

    test('exact bytes round-trip through signed_url; list is 4.1; company key uploader is all null', async () => {
      const c = await t.newCompany()
      const op = await newOperation(t, c)
      const data = bytes(100_000)
      const up = await upload(c.key, op.id, form(data, 'recibo ñ.pdf', 'application/pdf'))
      expect(up.status).toBe(201)
      expect(Object.keys(up.body).sort()).toEqual(['created_at', 'file_name', 'id', 'mime_type', 'signed_url', 'size_bytes', 'uploaded_by'])
      expect(up.body).toMatchObject({ file_name: 'recibo ñ.pdf', mime_type: 'application/pdf', size_bytes: 100_000 })
      expect(up.body.uploaded_by).toEqual({ id: null, name: null, email: null })
      expect(up.body.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)

      const list = await t.request('GET', `/api/operations/${op.id}/attachments`, { key: c.key })
      expect(list.status).toBe(200)
      expect(Object.keys(list.body)).toEqual(['attachments'])
      expect(list.body.attachments).toHaveLength(1)
      expect({ ...list.body.attachments[0], signed_url: null }).toEqual({ ...up.body, signed_url: null })

      for (const url of [up.body.signed_url, list.body.attachments[0].signed_url]) {
        const res = await download(url)
        expect(res.status).toBe(200)
        expect(res.headers.get('content-type')).toBe('application/pdf')
        expect(res.headers.get('content-disposition')).toBe(`attachment; filename="recibo _.pdf"; filename*=UTF-8''recibo%20%C3%B1.pdf`)
        expect(new Uint8Array(await res.arrayBuffer())).toEqual(data)
      }
      if (b.name === 'disk') {
        const res = await download(up.body.signed_url)
        expect(res.headers.get('x-content-type-options')).toBe('nosniff')
      }
      expect(await b.objects(c.id)).toHaveLength(1)
    })

    test('employee uploader is resolved by email; a deleted employee keeps only the email', async () => {
      const c = await t.newCompany()
      const op = await newOperation(t, c)
      const e = await c.employee(['operations.view', 'attachments.edit'])
      const up = await upload(e.key, op.id, form('a,b\n1,2\n', 'datos.csv', 'text/csv'))
      expect(up.status).toBe(201)
      expect(up.body.uploaded_by).toEqual({ id: e.id, name: 'Empleado 1', email: e.email })
      expect(up.body.mime_type).toBe('text/csv')
      const listed = await t.request('GET', `/api/operations/${op.id}/attachments`, { key: e.key })
      expect(listed.body.attachments[0].uploaded_by).toEqual({ id: e.id, name: 'Empleado 1', email: e.email })
      expect((await t.request('DELETE', `/api/employees/${e.id}`, { key: c.key })).status).toBe(200)
      const after = await t.request('GET', `/api/operations/${op.id}/attachments`, { key: c.key })
      expect(after.body.attachments[0].uploaded_by).toEqual({ id: null, name: null, email: e.email })
    })

    test('tampered links are refused', async () => {
      const c = await t.newCompany()
      const op = await newOperation(t, c)
      const up = await upload(c.key, op.id, form('secreto', 'nota.txt', 'text/plain'))
      const url = new URL(up.body.signed_url)
      const sigParam = b.name === 'disk' ? 'sig' : 'X-Amz-Signature'
      const sig = url.searchParams.get(sigParam)!
      const tampered = [
        (u: URL) => u.searchParams.set(sigParam, (sig[0] === 'a' ? 'b' : 'a') + sig.slice(1)),
        (u: URL) => u.searchParams.set(b.name === 'disk' ? 'type' : 'response-content-type', 'text/html'),
        (u: URL) => u.searchParams.set(b.name === 'disk' ? 'expires' : 'X-Amz-Expires', b.name === 'disk' ? String(Number(u.searchParams.get('expires')) + 86400) : '7200'),
      ]
      for (const change of tampered) {
        const u = new URL(url)
        change(u)
        const res = await download(u.toString())
        expect(res.status).toBe(403)
        if (b.name === 'disk') expect(await res.json()).toMatchObject({ code: 'FORBIDDEN' })
      }
      expect((await download(url.toString())).status).toBe(200)
    })

    test('a link made 3601 s ago is refused; one made 3599 s ago still works', async () => {
      const c = await t.newCompany()
      const op = await newOperation(t, c)
      await upload(c.key, op.id, form('hola', 'a.txt', 'text/plain'))
      try {
        t.travel(-3601_000)
        const old = await t.request('GET', `/api/operations/${op.id}/attachments`, { key: c.key })
        t.travel(-3599_000)
        const recent = await t.request('GET', `/api/operations/${op.id}/attachments`, { key: c.key })
        t.travel(0)
        expect((await download(old.body.attachments[0].signed_url)).status).toBe(403)
        const ok = await download(recent.body.attachments[0].signed_url)
        expect(ok.status).toBe(200)
        expect(await ok.text()).toBe('hola')
      } finally {
        t.travel(0)
      }
    })

    if (make === diskBackend)
      test('disk links stop working once the app clock passes their expiry', async () => {
        const c = await t.newCompany()
        const op = await newOperation(t, c)
        const up = await upload(c.key, op.id, form('hola', 'a.txt', 'text/plain'))
        try {
          t.travel(3599_000)
          expect((await download(up.body.signed_url)).status).toBe(200)
          t.travel(3601_000)
          const res = await download(up.body.signed_url)
          expect(res.status).toBe(403)
          expect(await res.json()).toMatchObject({ code: 'FORBIDDEN' })
        } finally {
          t.travel(0)
        }
      })

    test('415 for a type outside the list, 413 over MAX_UPLOAD_BYTES; nothing stored either way', async () => {
      const c = await t.newCompany()
      const op = await newOperation(t, c)
      const exe = await upload(c.key, op.id, form('MZ', 'setup.exe', 'application/x-msdownload'))
      expect(exe.status).toBe(415)
      expect(exe.body.code).toBe('UNSUPPORTED_MEDIA_TYPE')
      const html = await upload(c.key, op.id, form('<script>', 'x.html', 'text/html'))
      expect(html.status).toBe(415)

      const big = await upload(c.key, op.id, form(bytes(MAX + 1), 'big.pdf', 'application/pdf'))
      expect(big.status).toBe(413)
      expect(big.body.code).toBe('FILE_TOO_LARGE')

      const declared = new Uint8Array(MAX + 128 * 1024)
      const early = await upload(c.key, op.id, declared, {
        'content-type': 'multipart/form-data; boundary=xyz',
        'content-length': String(declared.byteLength),
      })
      expect(early.status).toBe(413)
      expect(early.body.code).toBe('FILE_TOO_LARGE')

      const chunk = new Uint8Array(64 * 1024)
      let sent = 0
      const endless = new ReadableStream<Uint8Array>({
        pull(controller) {
          sent += chunk.byteLength
          if (sent > 64 * MAX) controller.close()
          else controller.enqueue(chunk)
        },
      })
      const streamed = await upload(c.key, op.id, endless, { 'content-type': 'multipart/form-data; boundary=xyz' })
      expect(streamed.status).toBe(413)
      expect(sent).toBeLessThan(4 * MAX)

      expect(await b.objects(c.id)).toEqual([])
      const list = await t.request('GET', `/api/operations/${op.id}/attachments`, { key: c.key })
      expect(list.body.attachments).toEqual([])

      const exact = await upload(c.key, op.id, form(bytes(MAX), 'exact.bin', 'application/octet-stream'))
      expect(exact.status).toBe(201)
      expect(exact.body.size_bytes).toBe(MAX)
    })

    test("the part's own Content-Type decides the type, never the file name's extension", async () => {
      const c = await t.newCompany()
      const op = await newOperation(t, c)
      const part = (fileName: string, type?: string) =>
        `--b0und\r\nContent-Disposition: form-data; name="file"; filename="${fileName}"\r\n${type ? `Content-Type: ${type}\r\n` : ''}\r\nhola\r\n--b0und--\r\n`
      const send = (fileName: string, type?: string) =>
        upload(c.key, op.id, part(fileName, type), { 'content-type': 'multipart/form-data; boundary=b0und' })

      const disguised = await send('factura.pdf', 'text/html')
      expect(disguised.status).toBe(415)
      expect(disguised.body.code).toBe('UNSUPPORTED_MEDIA_TYPE')
      expect((await send('setup.exe', 'text/plain; charset=utf-8')).body.mime_type).toBe('text/plain')
      expect((await send('scan', 'IMAGE/PNG')).body.mime_type).toBe('image/png')
      expect((await send('a.pdf')).body.mime_type).toBe('application/octet-stream')
      expect((await upload(c.key, op.id, form('x', 'notes', 'text/csv'))).body.mime_type).toBe('text/csv')
    })

    test('400 for a missing or malformed file part and for bad ids; 401 without a key', async () => {
      const c = await t.newCompany()
      const op = await newOperation(t, c)
      const path = `/api/operations/${op.id}/attachments`
      const cases: [string, { raw?: BodyInit; body?: unknown; headers?: Record<string, string> }][] = [
        ['other field', { raw: form('x', 'a.txt', 'text/plain', 'document') }],
        ['text field', { raw: (() => { const f = new FormData(); f.append('file', 'just text'); return f })() }],
        ['two files', { raw: (() => { const f = form('x', 'a.txt', 'text/plain'); f.append('file', new File(['y'], 'b.txt')); return f })() }],
        ['malformed', { raw: '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nunterminated', headers: { 'content-type': 'multipart/form-data; boundary=xyz' } }],
        ['no boundary', { raw: 'abc', headers: { 'content-type': 'multipart/form-data' } }],
        ['json', { body: { file: 'x' } }],
        ['empty', {}],
      ]
      for (const [name, opts] of cases) {
        const res = await t.request('POST', path, { key: c.key, ...opts })
        expect({ name, status: res.status, code: res.body.code }).toEqual({ name, status: 400, code: 'VALIDATION_ERROR' })
      }
      expect(await b.objects(c.id)).toEqual([])

      for (const bad of ['abc', '0', '-1', '1.5', '2147483648']) {
        expect((await t.request('GET', `/api/operations/${bad}/attachments`, { key: c.key })).body.code).toBe('INVALID_ID')
        expect((await upload(c.key, bad, form('x', 'a.txt', 'text/plain'))).body.code).toBe('INVALID_ID')
        expect((await t.request('DELETE', `/api/operations/${op.id}/attachments/${bad}`, { key: c.key })).body.code).toBe('INVALID_ID')
      }
      expect((await t.request('GET', path)).status).toBe(401)
      expect((await upload('', op.id, form('x', 'a.txt', 'text/plain'))).status).toBe(401)
      expect((await t.request('DELETE', `${path}/1`)).status).toBe(401)
    })

    test('delete removes row and object; 404 for missing, other company, other operation and client scope', async () => {
      const c = await t.newCompany()
      const other = await t.newCompany()
      const op = await newOperation(t, c)
      const op2 = await newOperation(t, c)
      const otherOp = await newOperation(t, other)
      const up = await upload(c.key, op.id, form(bytes(5000), 'a.png', 'image/png'))
      expect(up.status).toBe(201)
      const path = `/api/operations/${op.id}/attachments`

      for (const [key, opId] of [[other.key, op.id], [c.key, otherOp.id], [c.key, 2147483647]] as const) {
        expect((await t.request('GET', `/api/operations/${opId}/attachments`, { key })).status).toBe(404)
        const post = await upload(key, opId, form('x', 'a.txt', 'text/plain'))
        expect(post.status).toBe(404)
        expect(post.body.code).toBe('NOT_FOUND')
      }
      expect((await t.request('DELETE', `${path}/${up.body.id}`, { key: other.key })).status).toBe(404)
      expect((await t.request('DELETE', `/api/operations/${op2.id}/attachments/${up.body.id}`, { key: c.key })).status).toBe(404)

      const outside = await c.employee(['operations.view', 'attachments.edit'], [op2.clientId])
      const newClient = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Lejano', type: 1 } })
      const scoped = await c.employee(['operations.view', 'attachments.edit'], [newClient.body.id])
      expect((await t.request('GET', path, { key: scoped.key })).status).toBe(404)
      expect((await upload(scoped.key, op.id, form('x', 'a.txt', 'text/plain'))).status).toBe(404)
      expect((await t.request('DELETE', `${path}/${up.body.id}`, { key: scoped.key })).status).toBe(404)
      const seen = await t.request('GET', path, { key: outside.key })
      expect(seen.status).toBe(404)

      const inside = await c.employee(['operations.view'], [op.clientId])
      const visible = await t.request('GET', path, { key: inside.key })
      expect(visible.status).toBe(200)
      expect(visible.body.attachments.map((a: { id: number }) => a.id)).toEqual([up.body.id])

      expect(await b.objects(c.id)).toHaveLength(1)
      const del = await t.request('DELETE', `${path}/${up.body.id}`, { key: c.key })
      expect(del.status).toBe(200)
      expect(del.body).toEqual({ deleted: true })
      expect(await b.objects(c.id)).toEqual([])
      expect((await download(up.body.signed_url)).status).toBe(404)
      expect((await t.request('GET', path, { key: c.key })).body).toEqual({ attachments: [] })
      expect((await t.request('DELETE', `${path}/${up.body.id}`, { key: c.key })).status).toBe(404)
    })

    test('permissions: view needs operations.view, upload and delete need attachments.edit', async () => {
      const c = await t.newCompany()
      const op = await newOperation(t, c)
      const up = await upload(c.key, op.id, form('x', 'a.txt', 'text/plain'))
      const path = `/api/operations/${op.id}/attachments`
      const viewer = await c.employee(['operations.view'])
      const editor = await c.employee(['attachments.edit'])
      expect((await t.request('GET', path, { key: editor.key })).status).toBe(403)
      expect((await t.request('GET', path, { key: viewer.key })).status).toBe(200)
      const denied = await upload(viewer.key, op.id, form('x', 'a.txt', 'text/plain'))
      expect(denied.status).toBe(403)
      expect(denied.body.code).toBe('FORBIDDEN')
      expect((await t.request('DELETE', `${path}/${up.body.id}`, { key: viewer.key })).status).toBe(403)
      expect((await t.request('DELETE', `${path}/${up.body.id}`, { key: editor.key })).status).toBe(200)
    })

    test('Idempotency-Key replays the same upload and refuses different bytes under the same key', async () => {
      const c = await t.newCompany()
      const op = await newOperation(t, c)
      const headers = { 'idempotency-key': `att-${c.id}` }
      const first = await upload(c.key, op.id, form(bytes(2000), 'a.pdf', 'application/pdf'), headers)
      expect(first.status).toBe(201)
      const again = await upload(c.key, op.id, form(bytes(2000), 'a.pdf', 'application/pdf'), headers)
      expect(again.status).toBe(201)
      expect(again.body.id).toBe(first.body.id)
      const changed = await upload(c.key, op.id, form(bytes(2000, 2), 'a.pdf', 'application/pdf'), headers)
      expect(changed.status).toBe(409)
      expect(changed.body.code).toBe('IDEMPOTENCY_KEY_REUSED')
      const renamed = await upload(c.key, op.id, form(bytes(2000), 'b.pdf', 'application/pdf'), headers)
      expect(renamed.status).toBe(409)
      expect(await b.objects(c.id)).toHaveLength(1)
      expect((await t.request('GET', `/api/operations/${op.id}/attachments`, { key: c.key })).body.attachments).toHaveLength(1)
    })

    test('file names cannot inject headers into the download', async () => {
      const c = await t.newCompany()
      const op = await newOperation(t, c)
      const boundary = 'fosboundary'
      const raw = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="x\u0007\\"; evil=1.txt"\r\nContent-Type: text/plain\r\n\r\nhola\r\n--${boundary}--\r\n`
      const up = await upload(c.key, op.id, raw, { 'content-type': `multipart/form-data; boundary=${boundary}` })
      expect(up.status).toBe(201)
      expect(up.body.file_name).not.toContain('\u0007')
      const res = await download(up.body.signed_url)
      expect(res.status).toBe(200)
      const disposition = res.headers.get('content-disposition')!
      expect(disposition).toMatch(/^attachment; filename="[^"\\]*"; filename\*=UTF-8''[A-Za-z0-9%._~!-]+$/)
      expect(res.headers.get('evil')).toBeNull()
    })
  })
}

describe('storage quota per company', () => {
  const QUOTA = 3 * 10_000
  let dataDir: string
  let t: TestApp
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'fos-att-quota-'))
    t = await buildTestApp({ dataDir, maxUploadBytes: MAX, storageQuotaBytesPerCompany: QUOTA })
  })
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }))
  const upload = (key: string, opId: number, body: BodyInit, headers?: Record<string, string>) =>
    t.request('POST', `/api/operations/${opId}/attachments`, { key, raw: body, headers })
  const stored = (companyId: number) => {
    const dir = join(dataDir, 'files', String(companyId))
    return existsSync(dir) ? readdirSync(dir).length : 0
  }

  test('STORAGE_QUOTA_BYTES_PER_COMPANY: 10 GiB by default, 0 for none', async () => {
    const { loadConfig } = await import('../../server/config')
    expect(loadConfig({}).storageQuotaBytesPerCompany).toBe(10 * 1024 ** 3)
    expect(loadConfig({ STORAGE_QUOTA_BYTES_PER_COMPANY: '0' }).storageQuotaBytesPerCompany).toBe(0)
    expect(() => loadConfig({ STORAGE_QUOTA_BYTES_PER_COMPANY: 'lots' })).toThrow('STORAGE_QUOTA_BYTES_PER_COMPANY')
  })

  test('repro: a file past the quota is 413 QUOTA_EXCEEDED with words and nothing stored; deleting gives the bytes back; other companies have their own', async () => {
    const c = await t.newCompany()
    const other = await t.newCompany()
    const op = await newOperation(t, c)
    const made: number[] = []
    for (let i = 0; i < 3; i++) {
      const up = await upload(c.key, op.id, form(bytes(10_000, i), `r${i}.pdf`, 'application/pdf'))
      expect(up.status).toBe(201)
      made.push(up.body.id)
    }
    const over = await upload(c.key, op.id, form(bytes(1, 9), 'one byte more.pdf', 'application/pdf'))
    expect(over.status).toBe(413)
    expect(over.body).toEqual({
      error: expect.stringContaining(`past its storage quota of ${QUOTA} bytes`),
      code: 'QUOTA_EXCEEDED',
      details: { used_bytes: QUOTA, file_bytes: 1, quota_bytes: QUOTA },
    })
    expect(stored(c.id)).toBe(3)
    // Another company is not held back by this one's files.
    const theirs = await upload(other.key, (await newOperation(t, other)).id, form(bytes(10_000), 'r.pdf', 'application/pdf'))
    expect(theirs.status).toBe(201)
    expect((await t.request('DELETE', `/api/operations/${op.id}/attachments/${made[0]}`, { key: c.key })).status).toBe(200)
    expect((await upload(c.key, op.id, form(bytes(10_000, 7), 'again.pdf', 'application/pdf'))).status).toBe(201)
  })

  postgresTest('concurrent uploads are counted one after the other: never past the quota together, no object left behind', async () => {
    const c = await t.newCompany()
    const op = await newOperation(t, c)
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => upload(c.key, op.id, form(bytes(10_000, i), `race ${i}.pdf`, 'application/pdf'))),
    )
    const statuses = answers.map((r) => r.status).sort()
    expect(statuses).toEqual([201, 201, 201, 413, 413, 413, 413, 413])
    for (const r of answers.filter((a) => a.status === 413)) expect(r.body.code).toBe('QUOTA_EXCEEDED')
    const [{ used, n }] = await t.ctx.database.rows<{ used: string; n: number }>(
      sql`select coalesce(sum(size_bytes), 0)::text as used, count(*)::int as n from operation_attachments where company_id = ${c.id} and deleted_at is null`,
    )
    expect([Number(used), Number(n)]).toEqual([QUOTA, 3])
    // The refused uploads' bytes, stored before their transactions refused them, are gone again.
    expect(stored(c.id)).toBe(3)
  })
})

describe('download route', () => {
  test('needs no API key, refuses garbage links with 403 and is documented without security', async () => {
    const { testApp } = await import('../helpers')
    const t = await testApp()
    for (const query of ['', '?key=1/x&expires=1&name=a&type=text/plain&sig=x', '?key=../../etc/passwd&expires=99999999999&name=a&type=b&sig=zz']) {
      const res = await t.request('GET', `/files${query}`)
      expect(res.status).toBe(403)
      expect(res.body.code).toBe('FORBIDDEN')
    }
    const doc = await t.request('GET', '/openapi.json')
    expect(doc.body.paths['/files'].get.security).toEqual([])
    expect(doc.body.paths['/api/operations/{id}/attachments'].post.requestBody.content['multipart/form-data'].schema.required).toEqual(['file'])
    expect(Object.keys(doc.body.paths['/api/operations/{id}/attachments'].post.responses)).toEqual(
      expect.arrayContaining(['201', '400', '401', '403', '404', '413', '415']),
    )
  })
})
