import { beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { testApp, type Company, type TestApp } from '../helpers'

let t: TestApp

beforeAll(async () => {
  t = await testApp()
}, 120_000)

const DEFAULTS = {
  legal_name: null,
  tax_id: null,
  address: null,
  license: null,
  receipt_point: 1,
  local_currency: 'ARS',
  till_tolerance: 0,
}

const profileOf = (c: Company, extra: Record<string, unknown> = {}) => ({
  id: c.id,
  name: c.name,
  timezone: 'America/Argentina/Buenos_Aires',
  modules: { mesas: false, ventanilla: false },
  ...DEFAULTS,
  ...extra,
})

const FULL = {
  name: 'Cambios del Sur',
  timezone: 'America/Argentina/Cordoba',
  local_currency: 'UYU',
  till_tolerance: '1234567890123.123457',
  legal_name: 'Cambios del Sur S.A.',
  tax_id: '30-71234567-9',
  address: 'Av. Corrientes 1234, Piso 2, CABA',
  license: 'BCRA Casa de Cambio N.º 123',
  receipt_point: 99999,
}

let sessionSeq = 0
/** A signed-in employee's cookie and the Origin its writes must carry. */
async function sessionOf(c: Company, permissions: string[]) {
  const email = `s${++sessionSeq}.${c.id}@fos.test`
  const password = 'una clave bastante larga'
  const made = await t.request('POST', '/api/employees', { key: c.key, body: { email, name: 'Cajera', permissions, password } })
  expect(made.status).toBe(201)
  const signed = await t.request('POST', '/api/sessions', { body: { company_id: c.id, email, password } })
  expect(signed.status).toBe(201)
  const cookie = /fos_session=([^;]+)/.exec(signed.headers.get('set-cookie') ?? '')![1]
  return { cookie: `fos_session=${cookie}`, origin: 'http://fos.test' }
}

describe('GET /api/company', () => {
  test('any key or session of the company reads the whole profile, defaults included', async () => {
    const c = await t.newCompany({ ventanilla: true })
    const expected = profileOf(c, { modules: { mesas: false, ventanilla: true } })
    const key = await t.request('GET', '/api/company', { key: c.key })
    expect(key.status).toBe(200)
    expect(key.body).toEqual(expected)
    expect(Object.keys(key.body).sort()).toEqual(
      ['address', 'id', 'legal_name', 'license', 'local_currency', 'modules', 'name', 'receipt_point', 'tax_id', 'till_tolerance', 'timezone'],
    )
    // No permission is needed: an employee holding none, a signed-in one, a client-scoped one.
    const bare = await c.employee([])
    expect((await t.request('GET', '/api/company', { key: bare.key })).body).toEqual(expected)
    expect((await t.request('GET', '/api/company', { headers: await sessionOf(c, ['ventanilla.call']) })).body).toEqual(expected)
    const caja = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Caja', type: 0 } })
    const scoped = await c.employee(['operations.view'], [caja.body.id])
    expect((await t.request('GET', '/api/company', { key: scoped.key })).body).toEqual(expected)
  })

  test('without credentials, or with a bad key or an external grant: 401', async () => {
    const c = await t.newCompany()
    expect((await t.request('GET', '/api/company')).status).toBe(401)
    expect((await t.request('GET', '/api/company', { key: 'fos_nothing_here' })).status).toBe(401)
    const client = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Externo', type: 1 } })
    const grant = await t.request('POST', `/api/clients/${client.body.id}/external-grants`, { key: c.key, body: {} })
    expect(grant.status).toBe(201)
    const r = await t.request('GET', '/api/company', { bearer: grant.body.token })
    expect(r.status).toBe(401)
    expect(r.body.code).toBe('UNAUTHORIZED')
  })
})

describe('PATCH /api/company', () => {
  test('every field at once; GET reads it back; the money keeps every digit', async () => {
    const c = await t.newCompany()
    const r = await t.request('PATCH', '/api/company', { key: c.key, body: FULL })
    expect(r.status).toBe(200)
    const expected = { id: c.id, modules: { mesas: false, ventanilla: false }, ...FULL, till_tolerance: 1234567890123.123457 }
    expect(r.body).toEqual(expected)
    expect((await t.request('GET', '/api/company', { key: c.key, headers: { accept: 'application/json; money=string' } })).body.till_tolerance).toBe(
      '1234567890123.123457',
    )
    expect((await t.request('GET', '/api/company', { key: c.key })).body).toEqual(expected)
  })

  test('any subset; texts trimmed; null or "" clears a text; an empty body changes nothing', async () => {
    const c = await t.newCompany()
    await t.request('PATCH', '/api/company', { key: c.key, body: FULL })
    const r = await t.request('PATCH', '/api/company', { key: c.key, body: { legal_name: '  Otra Razón S.R.L.  ', tax_id: null, address: '', receipt_point: 7 } })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ legal_name: 'Otra Razón S.R.L.', tax_id: null, address: null, license: FULL.license, receipt_point: 7, name: FULL.name })
    const before = await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from audit_logs where company_id = ${c.id} and entity = 'companies'`)
    const same = await t.request('PATCH', '/api/company', { key: c.key, body: {} })
    expect(same.status).toBe(200)
    expect(same.body).toEqual(r.body)
    const after = await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from audit_logs where company_id = ${c.id} and entity = 'companies'`)
    expect(after[0].n).toBe(before[0].n)
  })

  test('the bounds: inside them 200, one past them 400 VALIDATION_ERROR naming the field, nothing changed', async () => {
    const c = await t.newCompany()
    const edge = {
      legal_name: 'L'.repeat(200),
      tax_id: 'T'.repeat(20),
      address: 'A'.repeat(300),
      license: 'N'.repeat(100),
      receipt_point: 1,
      local_currency: 'USD',
      till_tolerance: 0,
      name: 'N'.repeat(200),
    }
    const ok = await t.request('PATCH', '/api/company', { key: c.key, body: edge })
    expect(ok.status).toBe(200)
    expect(ok.body).toMatchObject(edge)
    const bad: [Record<string, unknown>, string][] = [
      [{ legal_name: 'L'.repeat(201) }, 'legal_name'],
      [{ tax_id: 'T'.repeat(21) }, 'tax_id'],
      [{ address: 'A'.repeat(301) }, 'address'],
      [{ license: 'N'.repeat(101) }, 'license'],
      [{ receipt_point: 0 }, 'receipt_point'],
      [{ receipt_point: 100000 }, 'receipt_point'],
      [{ receipt_point: 2.5 }, 'receipt_point'],
      [{ receipt_point: '3' }, 'receipt_point'],
      [{ local_currency: 'ars' }, 'local_currency'],
      [{ local_currency: 'ARSS' }, 'local_currency'],
      [{ local_currency: 'AR' }, 'local_currency'],
      [{ till_tolerance: -0.01 }, 'till_tolerance'],
      [{ till_tolerance: '-1' }, 'till_tolerance'],
      [{ till_tolerance: 'diez' }, 'till_tolerance'],
      [{ till_tolerance: '1e22' }, 'till_tolerance'],
      [{ name: '' }, 'name'],
      [{ name: '   ' }, 'name'],
      [{ name: 'N'.repeat(201) }, 'name'],
      [{ timezone: 'Mars/Olympus' }, 'timezone'],
      [{ modules: { mesas: true } }, 'modules'],
      [{ legal_name: 'Válida', receipt_point: 0 }, 'receipt_point'],
    ]
    for (const [body, field] of bad) {
      const r = await t.request('PATCH', '/api/company', { key: c.key, body })
      expect([JSON.stringify(body), r.status, r.body.code]).toEqual([JSON.stringify(body), 400, 'VALIDATION_ERROR'])
      expect(r.body.details.map((d: { field: string }) => d.field)).toContain(field)
    }
    expect((await t.request('GET', '/api/company', { key: c.key })).body).toEqual(ok.body)
  })

  test('company key or owner only: an employee holding every other permission gets 403', async () => {
    const c = await t.newCompany()
    const everything = await c.employee([
      'clients.view', 'clients.edit', 'operations.view', 'operations.create', 'operations.approve', 'attachments.edit', 'cost_centers.view',
      'cost_centers.edit', 'messaging.manage', 'messaging.run', 'mesas.view', 'mesas.manage', 'audit.view', 'metrics.view', 'ventanilla.manage',
      'ventanilla.call', 'webhooks.manage', 'employees.manage',
    ])
    const refused = await t.request('PATCH', '/api/company', { key: everything.key, body: { legal_name: 'Intento' } })
    expect(refused.status).toBe(403)
    expect(refused.body.code).toBe('FORBIDDEN')
    const session = await sessionOf(c, ['ventanilla.manage'])
    expect((await t.request('PATCH', '/api/company', { headers: session, body: { legal_name: 'Intento' } })).status).toBe(403)
    expect((await t.request('GET', '/api/company', { key: c.key })).body.legal_name).toBeNull()

    const owner = await c.employee(['company.admin'])
    const done = await t.request('PATCH', '/api/company', { key: owner.key, body: { legal_name: 'Del dueño S.A.' } })
    expect(done.status).toBe(200)
    const ownerSession = await sessionOf(c, ['company.admin'])
    expect((await t.request('PATCH', '/api/company', { headers: ownerSession, body: { license: 'Registro 9' } })).body.license).toBe('Registro 9')
    // A session's write from another origin is refused before anything is read.
    expect((await t.request('PATCH', '/api/company', { headers: { ...ownerSession, origin: 'https://evil.test' }, body: { license: 'X' } })).status).toBe(403)
  })

  test('isolation: each company reads and changes only its own profile', async () => {
    const a = await t.newCompany()
    const b = await t.newCompany()
    await t.request('PATCH', '/api/company', { key: a.key, body: { legal_name: 'Empresa A S.A.', receipt_point: 3 } })
    expect((await t.request('GET', '/api/company', { key: b.key })).body).toEqual(profileOf(b))
    expect((await t.request('GET', '/api/company', { key: a.key })).body).toMatchObject({ id: a.id, legal_name: 'Empresa A S.A.', receipt_point: 3 })
  })

  test('audited: one companies row naming the actor and the fields that changed', async () => {
    const c = await t.newCompany()
    const owner = await c.employee(['company.admin'])
    await t.request('PATCH', '/api/company', { key: owner.key, body: { tax_id: '30-71234567-9', receipt_point: 2 } })
    const rows = await t.ctx.database.rows<{ action: string; actor_email: string; changes: { field: string; before: unknown; after: unknown }[] }>(
      sql`select action, actor_email, changes from audit_logs where company_id = ${c.id} and entity = 'companies' and action = 'update' order by id`,
    )
    expect(rows).toHaveLength(1)
    expect(rows[0].actor_email).toBe(owner.email)
    expect(rows[0].changes.filter((ch) => ch.field !== 'updated_at')).toEqual([
      { field: 'receipt_point', before: 1, after: 2 },
      { field: 'tax_id', before: null, after: '30-71234567-9' },
    ])
    const api = await t.request('GET', '/api/audit-logs?table=companies', { key: c.key })
    expect(api.status).toBe(200)
    expect(api.body.data.some((e: { entity: string; action: string }) => e.entity === 'companies' && e.action === 'update')).toBe(true)
  })

  test('a new name reaches the waiting-room screen (company.updated)', async () => {
    const c = await t.newCompany({ ventanilla: true })
    const token = await t.request('POST', '/api/ventanilla/tokens', { key: c.key, body: { name: 'TV' } })
    expect(token.status).toBe(201)
    await t.request('PATCH', '/api/company', { key: c.key, body: { name: 'Nombre Nuevo' } })
    const snapshot = await t.request('GET', `/api/public/ventanilla/${token.body.token}`)
    expect(snapshot.body.companyName).toBe('Nombre Nuevo')
  })
})
