import { beforeAll, describe, expect, test } from 'bun:test'
import { postgresTest, testApp, type TestApp } from '../helpers'

let t: TestApp

beforeAll(async () => {
  t = await testApp()
}, 120_000)

describe('clients: identity documents (contract §19)', () => {
  test('stored normalised: dots, spaces and dashes removed and nothing else, country AR by default; in every answer', async () => {
    const c = await t.newCompany()
    const made = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Juan Pérez', type: 1, document: { type: 'CUIT', number: ' 20-12.345.678-3 ' } } })
    expect(made.status).toBe(201)
    expect(made.body.document).toEqual({ type: 'CUIT', number: '20123456783', country: 'AR' })
    expect(made.body.accounts).toEqual([])
    const passport = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Ana', type: 1, document: { type: 'PASAPORTE', number: 'aab–123 456', country: 'br' } } })
    expect(passport.body.document).toEqual({ type: 'PASAPORTE', number: 'aab123456', country: 'BR' })
    // Any character but a control one: what the contract's 1–30 characters allow.
    const other = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Ñu', type: 1, document: { type: 'OTRO', number: 'ÑU/12_34' } } })
    expect([other.status, other.body.document?.number]).toEqual([201, 'ÑU/12_34'])
    const control = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'X', type: 1, document: { type: 'OTRO', number: 'AB\u0007' } } })
    expect([control.status, control.body.code]).toEqual([400, 'VALIDATION_ERROR'])
    const long = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'X', type: 1, document: { type: 'OTRO', number: '1234567890123456789012345678901' } } })
    expect([long.status, long.body.code]).toEqual([400, 'VALIDATION_ERROR'])
    const none = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Sin', type: 1 } })
    expect(none.body.document).toBeNull()
    expect((await t.request('GET', `/api/clients/${made.body.id}`, { key: c.key })).body).toEqual(made.body)
    const list = await t.request('GET', '/api/clients', { key: c.key })
    expect(list.body.data.find((x: { id: number }) => x.id === made.body.id)).toEqual(made.body)
    expect(list.body.data.find((x: { id: number }) => x.id === none.body.id).document).toBeNull()
  })

  test('GET /api/clients?document= finds exactly, after the same normalisation, with the other filters', async () => {
    const c = await t.newCompany()
    const a = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Uno', type: 1, description: 'frecuente', document: { type: 'DNI', number: '30123456' } } })
    const b = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Dos', type: 1, document: { type: 'CUIL', number: '30123456' } } })
    await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Tres', type: 1, document: { type: 'DNI', number: '301234567' } } })
    const found = await t.request('GET', '/api/clients?document=30.123.456', { key: c.key })
    expect(found.status).toBe(200)
    expect(found.body.count).toBe(2)
    expect(found.body.data.map((x: { id: number }) => x.id)).toEqual([b.body.id, a.body.id])
    expect((await t.request('GET', '/api/clients?document=3012345', { key: c.key })).body).toEqual({ data: [], count: 0 })
    expect((await t.request('GET', '/api/clients?document=30123456&description=frec', { key: c.key })).body.count).toBe(1)
    expect((await t.request('GET', '/api/clients?document=30123456&type=0', { key: c.key })).body.count).toBe(0)
    const blank = await t.request('GET', '/api/clients?document=..-', { key: c.key })
    expect([blank.status, blank.body.code]).toEqual([400, 'VALIDATION_ERROR'])
    // Another company's client with the same number is not found.
    const other = await t.newCompany()
    expect((await t.request('GET', '/api/clients?document=30123456', { key: other.key })).body.count).toBe(0)
  })

  test('one live client per document and type: 409 DOCUMENT_TAKEN on create and PATCH; a deleted client frees it', async () => {
    const c = await t.newCompany()
    const doc = { type: 'DNI', number: '25.000.111' }
    const first = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Primera', type: 1, document: doc } })
    const dup = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Segunda', type: 1, document: { type: 'DNI', number: '25000111', country: 'UY' } } })
    expect([dup.status, dup.body.code]).toEqual([409, 'DOCUMENT_TAKEN'])
    expect(dup.body.details).toEqual([{ field: 'document', message: expect.stringContaining('DNI 25000111') }])
    const second = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Segunda', type: 1 } })
    const patched = await t.request('PATCH', `/api/clients/${second.body.id}`, { key: c.key, body: { document: doc } })
    expect([patched.status, patched.body.code]).toEqual([409, 'DOCUMENT_TAKEN'])
    expect((await t.request('GET', `/api/clients/${second.body.id}`, { key: c.key })).body.document).toBeNull()
    // Its own document again, another one, and none.
    expect((await t.request('PATCH', `/api/clients/${first.body.id}`, { key: c.key, body: { name: 'Primera bis', document: doc } })).status).toBe(200)
    const changed = await t.request('PATCH', `/api/clients/${second.body.id}`, { key: c.key, body: { document: { type: 'PASAPORTE', number: 'x1' } } })
    expect(changed.body.document).toEqual({ type: 'PASAPORTE', number: 'x1', country: 'AR' })
    const cleared = await t.request('PATCH', `/api/clients/${second.body.id}`, { key: c.key, body: { document: null } })
    expect(cleared.body.document).toBeNull()
    expect((await t.request('PATCH', `/api/clients/${second.body.id}`, { key: c.key, body: { name: 'Sigue' } })).body.document).toBeNull()
    expect((await t.request('DELETE', `/api/clients/${first.body.id}`, { key: c.key })).status).toBe(200)
    expect((await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Tercera', type: 1, document: doc } })).status).toBe(201)
  })

  test('bad documents are 400 naming the field, and nothing is written', async () => {
    const c = await t.newCompany()
    for (const [document, field] of [
      [{ type: 'DNI', number: '...' }, 'document.number'],
      [{ type: 'DNI', number: '1'.repeat(31) }, 'document.number'],
      [{ type: 'DNI', number: '12\u000034' }, 'document.number'],
      [{ type: 'DNI', number: '123', country: 'ZZ' }, 'document.country'],
      [{ type: 'DNI', number: '123', country: 'ARG' }, 'document'],
      [{ type: 'LIBRETA', number: '123' }, 'document'],
      [{ type: 'DNI' }, 'document'],
    ] as const) {
      const r = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'X', type: 1, document } })
      expect([JSON.stringify(document), r.status, r.body.code]).toEqual([JSON.stringify(document), 400, 'VALIDATION_ERROR'])
      expect(r.body.details.map((d: { field: string }) => d.field)).toContain(field)
    }
    expect((await t.request('GET', '/api/clients', { key: c.key })).body.count).toBe(0)
  })

  test('batches: a document taken by a live client or by an earlier item is BATCH_ITEM_INVALID, per item', async () => {
    const c = await t.newCompany()
    await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Existe', type: 1, document: { type: 'DNI', number: '1000' } } })
    const r = await t.request('POST', '/api/clients/batch', {
      key: c.key,
      body: {
        clients: [
          { name: 'A', type: 1, document: { type: 'DNI', number: '2000' } },
          { name: 'B', type: 1, document: { type: 'DNI', number: '1.000' } },
          { name: 'C', type: 1, document: { type: 'DNI', number: '2-000' } },
          { name: 'D', type: 1, document: { type: 'CUIT', number: '2000' } },
          { name: 'E', type: 1, document: { type: 'DNI', number: '' + '-' } },
        ],
      },
    })
    expect([r.status, r.body.code]).toEqual([422, 'BATCH_ITEM_INVALID'])
    expect(r.body.details.map((d: { index: number; code: string }) => [d.index, d.code])).toEqual([
      [1, 'DOCUMENT_TAKEN'],
      [2, 'DOCUMENT_TAKEN'],
      [4, 'VALIDATION_ERROR'],
    ])
    expect(r.body.details[2].details).toEqual([{ field: 'clients.4.document.number', message: expect.any(String) }])
    expect((await t.request('GET', '/api/clients', { key: c.key })).body.count).toBe(1)
    const ok = await t.request('POST', '/api/clients/batch', {
      key: c.key,
      body: { clients: [{ name: 'A', type: 1, document: { type: 'DNI', number: '2000' } }, { name: 'D', type: 1, document: { type: 'CUIT', number: '2000' } }] },
    })
    expect(ok.status).toBe(201)
    expect(ok.body.data.map((x: { document: { type: string } }) => x.document.type)).toEqual(['DNI', 'CUIT'])
  })

  postgresTest('concurrent creates with one document: exactly one 201, the others 409 DOCUMENT_TAKEN', async () => {
    const c = await t.newCompany()
    const replies = await Promise.all(
      Array.from({ length: 8 }, (_, i) => t.request('POST', '/api/clients', { key: c.key, body: { name: `Carrera ${i}`, type: 1, document: { type: 'DNI', number: '44.555.666' } } })),
    )
    expect(replies.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409])
    for (const r of replies.filter((x) => x.status === 409)) expect(r.body.code).toBe('DOCUMENT_TAKEN')
    expect((await t.request('GET', '/api/clients?document=44555666', { key: c.key })).body.count).toBe(1)
  })
})
