import { beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { accounts } from '../../db/schema'
import { testApp, type Company, type TestApp } from '../helpers'

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** Balances move only through the ledger; these tests put money on an account directly to reach the rules. */
async function setBalance(t: TestApp, accountId: number, balance: string) {
  await t.ctx.db.update(accounts).set({ balance }).where(eq(accounts.id, accountId))
}

async function newClient(t: TestApp, c: Company, body: Record<string, unknown>) {
  const r = await t.request('POST', '/api/clients', { key: c.key, body })
  if (r.status !== 201) throw new Error(`client create: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body
}

// Opening the shared app runs the migrations, which on embedded PGlite can take longer than one test's budget.
beforeAll(async () => {
  await testApp()
}, 120_000)

describe('clients', () => {
  test('create answers the full client with accounts and tags', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const tag = await t.request('POST', '/api/tags', { key: c.key, body: { name: 'VIP', color: '#ff8800' } })
    expect(tag.status).toBe(201)
    expect(tag.body).toEqual({
      id: expect.any(Number),
      name: 'VIP',
      color: '#ff8800',
      company_id: c.id,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    })
    const r = await t.request('POST', '/api/clients', {
      key: c.key,
      body: {
        name: 'Caja central',
        type: 0,
        accounts: [{ currency_name: 'USD' }, { name: 'Pesos', currency_name: 'ARS' }],
        tag_ids: [tag.body.id],
      },
    })
    expect(r.status).toBe(201)
    const client = r.body
    expect(client).toEqual({
      id: expect.any(Number),
      name: 'Caja central',
      description: '',
      company_id: c.id,
      type: 0,
      document: null,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
      accounts: [
        {
          id: expect.any(Number),
          name: 'USD',
          currency_name: 'USD',
          client_id: client.id,
          balance: 0,
          created_at: expect.stringMatching(ISO),
          updated_at: expect.stringMatching(ISO),
        },
        expect.objectContaining({ name: 'Pesos', currency_name: 'ARS', balance: 0 }),
      ],
      client_tags: [
        { id: expect.any(Number), client_id: client.id, tag_id: tag.body.id, created_at: expect.stringMatching(ISO), tag: tag.body },
      ],
    })
    const got = await t.request('GET', `/api/clients/${client.id}`, { key: c.key })
    expect(got.status).toBe(200)
    expect(got.body).toEqual(client)
  })

  test('create validates its body and its tag references', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const other = await t.newCompany()
    const foreignTag = await t.request('POST', '/api/tags', { key: other.key, body: { name: 'x', color: '#000000' } })
    for (const body of [
      {},
      { name: '', type: 0 },
      { name: 'A', type: 2 },
      { name: 'A', type: '1' },
      { name: 'A', type: 1, accounts: [{ name: 'x' }] },
    ]) {
      const r = await t.request('POST', '/api/clients', { key: c.key, body })
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('VALIDATION_ERROR')
    }
    for (const tag_ids of [[999999999], [foreignTag.body.id]]) {
      const r = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'A', type: 1, tag_ids } })
      expect(r.status).toBe(422)
      expect(r.body.code).toBe('UNKNOWN_TAG')
    }
    const list = await t.request('GET', '/api/clients', { key: c.key })
    expect(list.body).toEqual({ data: [], count: 0 })
  })

  test('list: order, count, filters and pages', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const b1 = await newClient(t, c, { name: 'Bravo', type: 1, description: 'Cliente mayorista 50% off' })
    const a = await newClient(t, c, { name: 'Alfa', type: 0, description: 'caja principal' })
    const b2 = await newClient(t, c, { name: 'Bravo', type: 1, description: 'Minorista_norte' })
    const ch = await newClient(t, c, { name: 'Charlie', type: 1, description: 'MAYORISTA sur', accounts: [{ currency_name: 'EUR' }] })

    const all = await t.request('GET', '/api/clients', { key: c.key })
    expect(all.status).toBe(200)
    expect(all.body.count).toBe(4)
    expect(all.body.data.map((x: any) => x.id)).toEqual([a.id, b1.id, b2.id, ch.id])
    expect(all.body.data[3].accounts[0]).toMatchObject({ currency_name: 'EUR', balance: 0 })
    expect(all.body).not.toHaveProperty('pagination')

    const page2 = await t.request('GET', '/api/clients?page=2&pageSize=3', { key: c.key })
    expect(page2.body.count).toBe(4)
    expect(page2.body.data.map((x: any) => x.id)).toEqual([ch.id])
    const beyond = await t.request('GET', '/api/clients?page=9&pageSize=3', { key: c.key })
    expect(beyond.status).toBe(200)
    expect(beyond.body).toEqual({ data: [], count: 4 })

    const mayorista = await t.request('GET', '/api/clients?description=mayORista', { key: c.key })
    expect(mayorista.body.data.map((x: any) => x.id)).toEqual([b1.id, ch.id])
    expect(mayorista.body.count).toBe(2)
    const percent = await t.request('GET', `/api/clients?description=${encodeURIComponent('50%')}`, { key: c.key })
    expect(percent.body.data.map((x: any) => x.id)).toEqual([b1.id])
    const wildcard = await t.request('GET', `/api/clients?description=${encodeURIComponent('a%s')}`, { key: c.key })
    expect(wildcard.body).toEqual({ data: [], count: 0 })
    const underscore = await t.request('GET', '/api/clients?description=_', { key: c.key })
    expect(underscore.body.data.map((x: any) => x.id)).toEqual([b2.id])

    const cajas = await t.request('GET', '/api/clients?type=0', { key: c.key })
    expect(cajas.body.data.map((x: any) => x.id)).toEqual([a.id])
    const externals = await t.request('GET', '/api/clients?type=1&description=mayorista&pageSize=1', { key: c.key })
    expect(externals.body.count).toBe(2)
    expect(externals.body.data.map((x: any) => x.id)).toEqual([b1.id])

    for (const q of ['pageSize=0', 'pageSize=201', 'page=0', 'type=2', 'type=x', 'page=abc', 'page=-1', 'type=-1']) {
      const r = await t.request('GET', `/api/clients?${q}`, { key: c.key })
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('VALIDATION_ERROR')
      // `details` names the parameter, also when it parses as a number but breaks a bound.
      expect(r.body.details.map((d: any) => d.field)).toEqual([q.split('=')[0]])
    }
    const max = await t.request('GET', '/api/clients?pageSize=200', { key: c.key })
    expect(max.status).toBe(200)
  })

  test('search: a part of the name or of the description, ignoring case, with type, description and pages', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const other = await t.newCompany()
    const lucia = await newClient(t, c, { name: 'Gómez, Lucía', type: 1, description: 'Importador textil' })
    const sur = await newClient(t, c, { name: 'Importadora Sur', type: 1, description: 'Mayorista' })
    const caja = await newClient(t, c, { name: 'Caja Gómez', type: 0, description: 'Caja del local' })
    const rivas = await newClient(t, c, { name: 'Rivas 100% SA', type: 1, description: 'cliente_de_prueba' })
    const ab = await newClient(t, c, { name: 'Ab', type: 1, description: 'clientexdeprueba' })
    const gone = await newClient(t, c, { name: 'Gómez borrado', type: 1 })
    expect((await t.request('DELETE', `/api/clients/${gone.id}`, { key: c.key })).status).toBe(200)
    await newClient(t, other, { name: 'Gómez de otra empresa', type: 1, description: 'Importador' })
    const mine = [lucia, sur, caja, rivas, ab]
    const search = async (query: string) => {
      const r = await t.request('GET', `/api/clients?${query}`, { key: c.key })
      expect(r.status).toBe(200)
      return { ids: r.body.data.map((x: { id: number }) => x.id), count: r.body.count }
    }

    expect(await search('search=g%C3%B3mez')).toEqual({ ids: [caja.id, lucia.id], count: 2 })
    // The name of one, the description of the other; either case.
    expect(await search('search=IMPORTADOR')).toEqual({ ids: [lucia.id, sur.id], count: 2 })
    expect(await search('search=importador&type=0')).toEqual({ ids: [], count: 0 })
    expect(await search('search=importador&description=textil')).toEqual({ ids: [lucia.id], count: 1 })
    expect(await search('search=importador&pageSize=1&page=2')).toEqual({ ids: [sur.id], count: 2 })
    expect(await search('search=g%C3%B3mez&type=0')).toEqual({ ids: [caja.id], count: 1 })
    expect(await search('search=')).toEqual({ ids: [ab.id, caja.id, lucia.id, sur.id, rivas.id], count: 5 })

    // Words with three letters in a row go through the trigram index, shorter ones row by row: both read `%` and `_`
    // as themselves and agree with a plain substring test, case aside.
    const words = ['imp', 'IM', 'a', 'ab', '%', '100%', 'a%s', '_', 'e_d', 'nte_de', 'de pr', 'xyz', ' ', 'caja del', 'ía']
    for (const w of words) {
      const expected = mine
        .filter((x) => `${x.name}\n${x.description}`.toLowerCase().includes(w.toLowerCase()))
        .sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : x.id - y.id))
        .map((x) => x.id)
      expect({ w, ...(await search(`search=${encodeURIComponent(w)}`)) }).toEqual({ w, ids: expected, count: expected.length })
    }
    // The description filter takes the same two paths.
    expect(await search('description=_')).toEqual({ ids: [rivas.id], count: 1 })
    expect(await search('description=nte_de')).toEqual({ ids: [rivas.id], count: 1 })

    const long = await t.request('GET', `/api/clients?search=${'x'.repeat(201)}`, { key: c.key })
    expect(long.status).toBe(400)
    expect(long.body.details.map((d: { field: string }) => d.field)).toEqual(['search'])
  })

  test('ids and account_ids: the named live clients of the company, with the other filters; bad lists are 400', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const other = await t.newCompany()
    const a = await newClient(t, c, { name: 'Ana', type: 1, accounts: [{ currency_name: 'USD' }, { currency_name: 'ARS' }] })
    const b = await newClient(t, c, { name: 'Beto', type: 0, accounts: [{ currency_name: 'USD' }] })
    const z = await newClient(t, c, { name: 'Zoe', type: 1, accounts: [{ currency_name: 'EUR' }] })
    const gone = await newClient(t, c, { name: 'Borrado', type: 1, accounts: [{ currency_name: 'USD' }] })
    expect((await t.request('DELETE', `/api/clients/${gone.id}`, { key: c.key })).status).toBe(200)
    const foreign = await newClient(t, other, { name: 'Ajeno', type: 1, accounts: [{ currency_name: 'USD' }] })
    const list = async (query: string, key = c.key) => {
      const r = await t.request('GET', `/api/clients?${query}`, { key })
      expect(r.status).toBe(200)
      return { ids: r.body.data.map((x: { id: number }) => x.id), count: r.body.count }
    }

    expect(await list(`ids=${z.id},${a.id},${foreign.id},${gone.id}`)).toEqual({ ids: [a.id, z.id], count: 2 })
    expect(await list(`ids=${a.id},${a.id}`)).toEqual({ ids: [a.id], count: 1 })
    expect(await list(`ids=${a.id},${b.id}&type=0`)).toEqual({ ids: [b.id], count: 1 })
    expect(await list(`ids=${a.id},${b.id},${z.id}&search=e&pageSize=1`)).toEqual({ ids: [b.id], count: 2 })
    const accounts = [a.accounts[1].id, z.accounts[0].id, foreign.accounts[0].id, gone.accounts[0].id]
    expect(await list(`account_ids=${accounts.join(',')}`)).toEqual({ ids: [a.id, z.id], count: 2 })
    expect(await list(`account_ids=${a.accounts[0].id},${a.accounts[1].id}&ids=${a.id},${b.id}`)).toEqual({ ids: [a.id], count: 1 })
    // A client-scoped employee gets only what its scope holds.
    const scoped = await c.employee(['clients.view'], [z.id])
    expect(await list(`ids=${a.id},${z.id}`, scoped.key)).toEqual({ ids: [z.id], count: 1 })
    expect(await list(`account_ids=${a.accounts[0].id}`, scoped.key)).toEqual({ ids: [], count: 0 })

    const many = Array.from({ length: 201 }, (_, i) => i + 1).join(',')
    for (const [field, value] of [
      ['ids', ''],
      ['ids', 'a'],
      ['ids', '1,,2'],
      ['ids', '0'],
      ['ids', '-3'],
      ['ids', '2147483648'],
      ['ids', many],
      ['account_ids', '1.5'],
      ['account_ids', many],
    ]) {
      const r = await t.request('GET', `/api/clients?${field}=${value}`, { key: c.key })
      expect({ field, value: value.slice(0, 20), status: r.status, code: r.body.code }).toEqual({ field, value: value.slice(0, 20), status: 400, code: 'VALIDATION_ERROR' })
      expect(r.body.details.map((d: { field: string }) => d.field)).toEqual([field])
    }
    expect((await t.request('GET', `/api/clients?ids=${Array.from({ length: 200 }, (_, i) => i + 1).join(',')}`, { key: c.key })).status).toBe(200)
  })

  test('update, accounts, soft delete and the zero-balance rule', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const client = await newClient(t, c, { name: 'Delta', type: 1, accounts: [{ currency_name: 'USD' }] })
    const patched = await t.request('PATCH', `/api/clients/${client.id}`, { key: c.key, body: { description: 'nuevo', type: 0 } })
    expect(patched.status).toBe(200)
    expect(patched.body).toMatchObject({ id: client.id, name: 'Delta', description: 'nuevo', type: 0 })
    expect(patched.body.accounts).toHaveLength(1)
    const badPatch = await t.request('PATCH', `/api/clients/${client.id}`, { key: c.key, body: { name: '' } })
    expect(badPatch.status).toBe(400)

    const acc = await t.request('POST', `/api/clients/${client.id}/accounts`, { key: c.key, body: { currency_name: 'ARS' } })
    expect(acc.status).toBe(201)
    expect(acc.body).toEqual({
      id: expect.any(Number),
      name: 'ARS',
      currency_name: 'ARS',
      client_id: client.id,
      balance: 0,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    })
    const named = await t.request('POST', `/api/clients/${client.id}/accounts`, { key: c.key, body: { name: 'Cuenta euros', currency_name: 'EUR' } })
    expect(named.body.name).toBe('Cuenta euros')
    const noCurrency = await t.request('POST', `/api/clients/${client.id}/accounts`, { key: c.key, body: { name: 'x' } })
    expect(noCurrency.status).toBe(400)

    await setBalance(t, acc.body.id, '-0.000001')
    const refused = await t.request('DELETE', `/api/clients/${client.id}`, { key: c.key })
    expect(refused.status).toBe(409)
    expect(refused.body.code).toBe('BALANCE_NOT_ZERO')
    expect((await t.request('GET', `/api/clients/${client.id}`, { key: c.key })).status).toBe(200)

    await setBalance(t, acc.body.id, '0')
    const deleted = await t.request('DELETE', `/api/clients/${client.id}`, { key: c.key })
    expect(deleted.status).toBe(200)
    expect(deleted.body).toEqual({ deleted: true })
    for (const [method, path, body] of [
      ['GET', `/api/clients/${client.id}`, undefined],
      ['PATCH', `/api/clients/${client.id}`, { name: 'x' }],
      ['DELETE', `/api/clients/${client.id}`, undefined],
      ['POST', `/api/clients/${client.id}/accounts`, { currency_name: 'USD' }],
    ] as const) {
      const r = await t.request(method, path, { key: c.key, body })
      expect(r.status).toBe(404)
      expect(r.body.code).toBe('NOT_FOUND')
    }
    const list = await t.request('GET', '/api/clients', { key: c.key })
    expect(list.body).toEqual({ data: [], count: 0 })
  })

  test('tags: list, validate, attach (idempotent), detach', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const other = await t.newCompany()
    for (const color of ['red', '#fff', '#GGGGGG', '#1234567', 'ff0000']) {
      const r = await t.request('POST', '/api/tags', { key: c.key, body: { name: 'x', color } })
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('VALIDATION_ERROR')
    }
    const zeta = (await t.request('POST', '/api/tags', { key: c.key, body: { name: 'Zeta', color: '#00AA00' } })).body
    const alpha = (await t.request('POST', '/api/tags', { key: c.key, body: { name: 'Alpha', color: '#0000aa' } })).body
    await t.request('POST', '/api/tags', { key: other.key, body: { name: 'Other', color: '#000000' } })
    const tags = await t.request('GET', '/api/tags', { key: c.key })
    expect(tags.status).toBe(200)
    expect(tags.body.data.map((x: any) => x.id)).toEqual([alpha.id, zeta.id])

    const client = await newClient(t, c, { name: 'Echo', type: 1 })
    const first = await t.request('POST', `/api/clients/${client.id}/tags`, { key: c.key, body: { tag_id: zeta.id } })
    expect(first.status).toBe(201)
    expect(first.body).toEqual({ id: expect.any(Number), client_id: client.id, tag_id: zeta.id, created_at: expect.stringMatching(ISO), tag: zeta })
    const again = await t.request('POST', `/api/clients/${client.id}/tags`, { key: c.key, body: { tag_id: zeta.id } })
    expect(again.status).toBe(200)
    expect(again.body).toEqual(first.body)
    const unknown = await t.request('POST', `/api/clients/${client.id}/tags`, { key: c.key, body: { tag_id: 2147483647 } })
    expect(unknown.status).toBe(422)
    expect(unknown.body.code).toBe('UNKNOWN_TAG')
    const withTag = await t.request('GET', `/api/clients/${client.id}`, { key: c.key })
    expect(withTag.body.client_tags).toEqual([first.body])

    const removed = await t.request('DELETE', `/api/clients/${client.id}/tags/${zeta.id}`, { key: c.key })
    expect(removed.status).toBe(200)
    expect(removed.body).toEqual({ deleted: true })
    const twice = await t.request('DELETE', `/api/clients/${client.id}/tags/${zeta.id}`, { key: c.key })
    expect(twice.status).toBe(404)
    expect((await t.request('GET', `/api/clients/${client.id}`, { key: c.key })).body.client_tags).toEqual([])
    const badTagId = await t.request('DELETE', `/api/clients/${client.id}/tags/1e3`, { key: c.key })
    expect(badTagId.status).toBe(400)
    expect(badTagId.body.code).toBe('INVALID_ID')
  })

  test('balances: exact sums by currency over cajas and accounts of live clients', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const other = await t.newCompany()
    expect((await t.request('GET', '/api/balances', { key: c.key })).body).toEqual({ data: [] })
    const caja1 = await newClient(t, c, { name: 'Caja 1', type: 0, accounts: [{ currency_name: 'USD' }, { currency_name: 'ARS' }] })
    const caja2 = await newClient(t, c, { name: 'Caja 2', type: 0, accounts: [{ currency_name: 'USD' }] })
    const ext = await newClient(t, c, { name: 'Ext', type: 1, accounts: [{ currency_name: 'USD' }] })
    const gone = await newClient(t, c, { name: 'Gone', type: 1, accounts: [{ currency_name: 'USD' }] })
    const foreign = await newClient(t, other, { name: 'Foreign', type: 0, accounts: [{ currency_name: 'USD' }] })
    await setBalance(t, caja1.accounts[0].id, '0.1')
    await setBalance(t, caja2.accounts[0].id, '0.2')
    await setBalance(t, caja1.accounts[1].id, '1000000000000.123456')
    await setBalance(t, ext.accounts[0].id, '-5.5')
    await setBalance(t, foreign.accounts[0].id, '99')
    expect((await t.request('DELETE', `/api/clients/${gone.id}`, { key: c.key })).status).toBe(200)
    await setBalance(t, gone.accounts[0].id, '77')

    const r = await t.request('GET', '/api/balances', { key: c.key })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({
      data: [
        { currency: 'ARS', cajas: 1000000000000.123456, accounts: 0 },
        { currency: 'USD', cajas: 0.3, accounts: -5.5 },
      ],
    })
  })

  test('permissions: clients.view reads, clients.edit writes, no key is 401', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const client = await newClient(t, c, { name: 'Foxtrot', type: 1 })
    const tag = (await t.request('POST', '/api/tags', { key: c.key, body: { name: 't', color: '#123456' } })).body
    const nobody = await c.employee(['operations.view'])
    const viewer = await c.employee(['clients.view'])
    const editor = await c.employee(['clients.edit', 'clients.view'])
    const reads = [
      ['GET', '/api/clients'],
      ['GET', `/api/clients/${client.id}`],
      ['GET', '/api/tags'],
      ['GET', '/api/balances'],
    ] as const
    const writes = [
      ['POST', '/api/clients', { name: 'n', type: 1 }],
      ['PATCH', `/api/clients/${client.id}`, { name: 'n' }],
      ['POST', `/api/clients/${client.id}/accounts`, { currency_name: 'USD' }],
      ['POST', '/api/tags', { name: 'n', color: '#000000' }],
      ['POST', `/api/clients/${client.id}/tags`, { tag_id: tag.id }],
      ['DELETE', `/api/clients/${client.id}/tags/${tag.id}`, undefined],
      ['DELETE', `/api/clients/${client.id}`, undefined],
    ] as const
    for (const [method, path] of reads) {
      expect((await t.request(method, path, {})).status).toBe(401)
      const denied = await t.request(method, path, { key: nobody.key })
      expect(denied.status).toBe(403)
      expect(denied.body.code).toBe('FORBIDDEN')
      expect((await t.request(method, path, { key: viewer.key })).status).toBe(200)
    }
    for (const [method, path, body] of writes) {
      expect((await t.request(method, path, { body })).status).toBe(401)
      expect((await t.request(method, path, { key: 'fos_bogus_key', body })).status).toBe(401)
      const denied = await t.request(method, path, { key: viewer.key, body })
      expect(denied.status).toBe(403)
      expect(denied.body.code).toBe('FORBIDDEN')
    }
    for (const [method, path, body] of writes) {
      const ok = await t.request(method, path, { key: editor.key, body })
      expect([200, 201]).toContain(ok.status)
    }
  })

  test('a client-scoped employee reads only the clients of its scope; the others are 404', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const mine = await newClient(t, c, { name: 'Mine', type: 1 })
    const theirs = await newClient(t, c, { name: 'Theirs', type: 1 })
    const scoped = await c.employee(['clients.view', 'clients.edit'], [mine.id])
    const list = await t.request('GET', '/api/clients', { key: scoped.key })
    expect(list.body.count).toBe(1)
    expect(list.body.data.map((x: { id: number }) => x.id)).toEqual([mine.id])
    expect((await t.request('GET', `/api/clients/${mine.id}`, { key: scoped.key })).status).toBe(200)
    expect((await t.request('GET', `/api/clients/${theirs.id}`, { key: scoped.key })).status).toBe(404)
    expect((await t.request('PATCH', `/api/clients/${theirs.id}`, { key: scoped.key, body: { name: 'x' } })).status).toBe(404)
  })

  test('every client route answers 404 for a record of another company', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const other = await t.newCompany()
    const theirs = await newClient(t, other, { name: 'Theirs', type: 0 })
    const theirTag = (await t.request('POST', '/api/tags', { key: other.key, body: { name: 't', color: '#123456' } })).body
    await t.request('POST', `/api/clients/${theirs.id}/tags`, { key: other.key, body: { tag_id: theirTag.id } })
    const mine = await newClient(t, c, { name: 'Mine', type: 0 })
    const routes = [
      ['GET', `/api/clients/${theirs.id}`, undefined],
      ['PATCH', `/api/clients/${theirs.id}`, { name: 'hijack' }],
      ['DELETE', `/api/clients/${theirs.id}`, undefined],
      ['POST', `/api/clients/${theirs.id}/accounts`, { currency_name: 'USD' }],
      ['POST', `/api/clients/${theirs.id}/tags`, { tag_id: theirTag.id }],
      ['DELETE', `/api/clients/${theirs.id}/tags/${theirTag.id}`, undefined],
      ['DELETE', `/api/clients/${mine.id}/tags/${theirTag.id}`, undefined],
    ] as const
    for (const [method, path, body] of routes) {
      const r = await t.request(method, path, { key: c.key, body })
      expect(r.status).toBe(404)
      expect(r.body.code).toBe('NOT_FOUND')
    }
    const foreignTag = await t.request('POST', `/api/clients/${mine.id}/tags`, { key: c.key, body: { tag_id: theirTag.id } })
    expect(foreignTag.status).toBe(422)
    expect(foreignTag.body.code).toBe('UNKNOWN_TAG')
    const still = await t.request('GET', `/api/clients/${theirs.id}`, { key: other.key })
    expect(still.body).toMatchObject({ name: 'Theirs', client_tags: [expect.objectContaining({ tag_id: theirTag.id })] })
    expect((await t.request('GET', '/api/tags', { key: c.key })).body).toEqual({ data: [] })
  })

  test('invalid ids in client paths are 400 INVALID_ID', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    for (const id of ['abc', '0', '-1', '1.5', '2147483648', '1e3']) {
      for (const [method, path, body] of [
        ['GET', `/api/clients/${id}`, undefined],
        ['PATCH', `/api/clients/${id}`, { name: 'x' }],
        ['DELETE', `/api/clients/${id}`, undefined],
        ['POST', `/api/clients/${id}/accounts`, { currency_name: 'USD' }],
        ['POST', `/api/clients/${id}/tags`, { tag_id: 1 }],
        ['DELETE', `/api/clients/${id}/tags/1`, undefined],
      ] as const) {
        const r = await t.request(method, path, { key: c.key, body })
        expect(r.status).toBe(400)
        expect(r.body.code).toBe('INVALID_ID')
      }
    }
  })

  test('Idempotency-Key replays a client create and refuses a different body', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const headers = { 'idempotency-key': 'client-create-1' }
    const body = { name: 'Golf', type: 1, accounts: [{ currency_name: 'USD' }] }
    const first = await t.request('POST', '/api/clients', { key: c.key, body, headers })
    const second = await t.request('POST', '/api/clients', { key: c.key, body, headers })
    expect(first.status).toBe(201)
    expect(second.status).toBe(201)
    expect(second.body).toEqual(first.body)
    const reused = await t.request('POST', '/api/clients', { key: c.key, body: { ...body, name: 'Hotel' }, headers })
    expect(reused.status).toBe(409)
    expect(reused.body.code).toBe('IDEMPOTENCY_KEY_REUSED')
    expect((await t.request('GET', '/api/clients', { key: c.key })).body.count).toBe(1)
  })

  test('Idempotency-Key on tagging a client replays the first answer, status included', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const client = await newClient(t, c, { name: 'India', type: 1 })
    const tag = (await t.request('POST', '/api/tags', { key: c.key, body: { name: 'VIP', color: '#123456' } })).body
    const other = (await t.request('POST', '/api/tags', { key: c.key, body: { name: 'Otro', color: '#654321' } })).body
    const headers = { 'idempotency-key': 'tag-attach-1' }
    const first = await t.request('POST', `/api/clients/${client.id}/tags`, { key: c.key, body: { tag_id: tag.id }, headers })
    const second = await t.request('POST', `/api/clients/${client.id}/tags`, { key: c.key, body: { tag_id: tag.id }, headers })
    expect(first.status).toBe(201)
    expect(second.status).toBe(201)
    expect(second.body).toEqual(first.body)
    await t.request('POST', `/api/clients/${client.id}/tags`, { key: c.key, body: { tag_id: other.id } })
    const reused = await t.request('POST', `/api/clients/${client.id}/tags`, { key: c.key, body: { tag_id: other.id }, headers })
    expect(reused.status).toBe(409)
    expect(reused.body.code).toBe('IDEMPOTENCY_KEY_REUSED')
  })
})
