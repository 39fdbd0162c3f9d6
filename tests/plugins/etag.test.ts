import { describe, expect, test } from 'bun:test'
import { testApp } from '../helpers'

describe('conditional GETs', () => {
  test('a JSON GET carries an ETag; If-None-Match with it is 304 with no body until the answer changes', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const created = await t.request('POST', '/api/clients', {
      key: c.key,
      body: { name: 'Caja', type: 0, accounts: [{ currency_name: 'ARS' }] },
    })
    expect(created.status).toBe(201)
    expect(created.headers.get('etag')).toBeNull()

    const first = await t.request('GET', '/api/balances', { key: c.key })
    expect(first.status).toBe(200)
    const tag = first.headers.get('etag')!
    expect(tag).toMatch(/^"[A-Za-z0-9_-]+"$/)

    const same = await t.request('GET', '/api/balances', { key: c.key, headers: { 'if-none-match': tag } })
    expect(same.status).toBe(304)
    expect(same.headers.get('etag')).toBe(tag)
    expect(same.headers.get('x-request-id')).toBeTruthy()

    const weakToo = await t.request('GET', '/api/balances', { key: c.key, headers: { 'if-none-match': `"other", W/${tag}` } })
    expect(weakToo.status).toBe(304)

    // A balance moves: the same tag no longer matches and the full answer comes back with a new one.
    const type = await t.request('POST', '/api/operation-types', { key: c.key, body: { name: 'Ajuste', kind: 'other' } })
    const op = await t.request('POST', '/api/operations', {
      key: c.key,
      body: { operation_type_id: type.body.id, status: 'completed', transactions: [{ account_id: created.body.accounts[0].id, amount: '10.5' }] },
    })
    expect(op.status).toBe(201)
    const changed = await t.request('GET', '/api/balances', { key: c.key, headers: { 'if-none-match': tag } })
    expect(changed.status).toBe(200)
    expect(changed.headers.get('etag')).not.toBe(tag)
    expect(changed.body.data.find((b: { currency: string }) => b.currency === 'ARS').cajas).toBe(10.5)
  })

  test('the clients list (sent as finished JSON) and single records get tags too; errors and writes do not', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const made = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Ana', type: 1 } })
    const list = await t.request('GET', '/api/clients', { key: c.key })
    expect(list.headers.get('etag')).toBeTruthy()
    expect((await t.request('GET', '/api/clients', { key: c.key, headers: { 'if-none-match': list.headers.get('etag')! } })).status).toBe(304)
    const one = await t.request('GET', `/api/clients/${made.body.id}`, { key: c.key })
    expect(one.headers.get('etag')).toBeTruthy()
    await t.request('PATCH', `/api/clients/${made.body.id}`, { key: c.key, body: { name: 'Ana María' } })
    const after = await t.request('GET', `/api/clients/${made.body.id}`, { key: c.key, headers: { 'if-none-match': one.headers.get('etag')! } })
    expect(after.status).toBe(200)
    expect(after.body.name).toBe('Ana María')
    const missing = await t.request('GET', '/api/clients/999999', { key: c.key })
    expect(missing.status).toBe(404)
    expect(missing.headers.get('etag')).toBeNull()
  })
})
