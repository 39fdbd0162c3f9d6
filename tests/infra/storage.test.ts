import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { contentDisposition, createStore, diskStore, isObjectKey, newObjectKey, s3Store } from '../../server/infra/storage'
import { testConfig } from '../helpers'
import { startS3Server, type S3Server } from '../store'

const bytes = (n: number) => Uint8Array.from({ length: n }, (_, i) => (i * 7 + 3) % 256)
const meta = { fileName: 'recibo.pdf', contentType: 'application/pdf' }
const link = { fileName: 'recibo.pdf', contentType: 'application/pdf', expiresInSeconds: 3600 }

describe('contentDisposition', () => {
  test('quoted ASCII fallback and UTF-8 name, with nothing that could end or add a header', () => {
    const value = contentDisposition('a "b"\r\nX-Evil: 1; ñ(1)*.pdf')
    expect(value).toBe(`attachment; filename="a _b_X-Evil: 1; _(1)*.pdf"; filename*=UTF-8''a%20%22b%22X-Evil%3A%201%3B%20%C3%B1%281%29%2A.pdf`)
    expect(value).not.toMatch(/[\r\n]/)
    expect(contentDisposition('\r\n')).toBe(`attachment; filename="file"; filename*=UTF-8''file`)
  })
})

describe('object keys', () => {
  test('generated keys are accepted, anything else is refused before touching storage', async () => {
    const key = newObjectKey(42)
    expect(isObjectKey(key)).toBe(true)
    expect(isObjectKey('../../etc/passwd')).toBe(false)
    expect(isObjectKey(`${key}/..`)).toBe(false)
    const store = diskStore(testConfig({ dataDir: mkdtempSync(join(tmpdir(), 'fos-disk-')) }))
    await expect(store.put('../escape', new Blob(['x']), meta)).rejects.toThrow('unsafe object key')
    await expect(store.signedUrl('1/../../x', link)).rejects.toThrow('unsafe object key')
  })
})

describe('disk store', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'fos-disk-'))
  let now = Date.now()
  const store = diskStore(testConfig({ dataDir }), () => new Date(now))
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

  test('stores exact bytes without leftovers, signs links that verify until they expire', async () => {
    const key = newObjectKey(7)
    const data = bytes(70_000)
    await store.put(key, new Blob([data]), meta)
    expect(readdirSync(join(dataDir, 'files', '7'))).toEqual([key.split('/')[1]])
    expect(new Uint8Array(await Bun.file(store.pathOf(key)).arrayBuffer())).toEqual(data)

    const url = new URL(await store.signedUrl(key, link))
    expect(url.origin + url.pathname).toBe('http://fos.test/files')
    const q = Object.fromEntries(url.searchParams)
    expect(store.verify(q)).toEqual({ key, expires: Math.floor(now / 1000) + 3600, fileName: 'recibo.pdf', contentType: 'application/pdf' })

    for (const [field, value] of [
      ['sig', q.sig.slice(0, -1) + (q.sig.endsWith('A') ? 'B' : 'A')],
      ['name', 'other.pdf'],
      ['type', 'text/html'],
      ['expires', String(Number(q.expires) + 3600)],
      ['key', newObjectKey(7)],
    ])
      expect(store.verify({ ...q, [field]: value })).toBeNull()
    expect(store.verify({ ...q, sig: undefined })).toBeNull()

    now += 3599_000
    expect(store.verify(q)).not.toBeNull()
    now += 1_000
    expect(store.verify(q)).toBeNull()
    now = Date.now()

    await store.delete(key)
    expect(await Bun.file(store.pathOf(key)).exists()).toBe(false)
    await store.delete(key)
  })

  test('links of another signing secret do not verify', async () => {
    const other = diskStore(testConfig({ dataDir, signingSecret: 'another-secret-0123456789' }), () => new Date(now))
    const q = Object.fromEntries(new URL(await other.signedUrl(newObjectKey(7), link)).searchParams)
    expect(other.verify(q)).not.toBeNull()
    expect(store.verify(q)).toBeNull()
  })
})

describe('S3 store (s3rver)', () => {
  let s3: S3Server
  beforeAll(async () => {
    s3 = await startS3Server()
  })
  afterAll(async () => {
    await s3?.close()
  })

  test('createStore picks S3 when configured, disk otherwise', () => {
    expect(createStore(testConfig({ s3: s3.config })).kind).toBe('s3')
    expect(createStore(testConfig()).kind).toBe('disk')
  })

  test('exact bytes through a presigned link, with the stored type and disposition; deleted objects are gone', async () => {
    const store = s3Store(testConfig({ s3: s3.config }))
    const key = newObjectKey(9)
    const data = bytes(300_000)
    await store.put(key, new Blob([data]), { fileName: 'extracto ñ.pdf', contentType: 'application/pdf' })
    const url = await store.signedUrl(key, { ...link, fileName: 'extracto ñ.pdf' })
    expect(new URL(url).searchParams.get('X-Amz-Expires')).toBe('3600')
    const res = await fetch(url)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/pdf')
    expect(res.headers.get('content-disposition')).toBe(contentDisposition('extracto ñ.pdf'))
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(data)

    const tampered = new URL(url)
    tampered.searchParams.set('response-content-type', 'text/html')
    expect((await fetch(tampered)).status).toBe(403)

    await store.delete(key)
    expect((await fetch(url)).status).toBe(404)
    await store.delete(key)
  })

  test('a link signed by a clock 3601 s behind is expired for the server; 3599 s behind still works', async () => {
    let offset = 0
    const store = s3Store(testConfig({ s3: s3.config }), () => new Date(Date.now() + offset))
    const key = newObjectKey(9)
    await store.put(key, new Blob(['hola']), { fileName: 'a.txt', contentType: 'text/plain' })
    offset = -3601_000
    const old = await fetch(await store.signedUrl(key, link))
    expect(old.status).toBe(403)
    expect(await old.text()).toContain('expired')
    offset = -3599_000
    const fresh = await fetch(await store.signedUrl(key, link))
    expect(fresh.status).toBe(200)
    expect(await fresh.text()).toBe('hola')
  })

  test('wrong credentials are refused by the server', async () => {
    const store = s3Store(testConfig({ s3: { ...s3.config, secretAccessKey: 'not-the-secret' } }))
    await expect(store.put(newObjectKey(9), new Blob(['x']), meta)).rejects.toThrow()
  })
})
