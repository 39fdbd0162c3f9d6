import { beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { SignJWT } from 'jose'
import { sha256 } from '../../server/lib/secrets'
import { SUPERADMIN_EMAIL, SUPERADMIN_SECRET, testApp } from '../helpers'

// Opening the shared app runs the migrations, which on embedded PGlite can take longer than one test's budget.
beforeAll(async () => {
  await testApp()
}, 120_000)

const BAD_IDS = ['abc', '0', '-1', '1.5', '2147483648', '1e3', '%2012', '0x10', '012']

function sign(claims: Record<string, unknown>, opts: { secret?: string; exp?: number | string | null } = {}) {
  const jwt = new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setIssuedAt()
  if (opts.exp !== null) jwt.setExpirationTime(opts.exp ?? '5m')
  return jwt.sign(new TextEncoder().encode(opts.secret ?? SUPERADMIN_SECRET))
}

describe('superadmin', () => {
  test('only a valid, unexpired, allow-listed token passes', async () => {
    const t = await testApp()
    const body = { name: 'Casa Uno' }
    const rejected = [
      undefined,
      'not-a-jwt',
      await sign({ email: SUPERADMIN_EMAIL }, { secret: 'another-secret-of-enough-length-000' }),
      await sign({ email: SUPERADMIN_EMAIL }, { exp: Math.floor(Date.now() / 1000) - 60 }),
      await sign({ email: SUPERADMIN_EMAIL }, { exp: null }),
      await sign({ email: 'intruder@fos.test' }),
      await sign({ sub: 'no-email' }),
    ]
    for (const token of rejected) {
      const r = await t.request('POST', '/api/superadmin/companies', { bearer: token, body })
      expect(r.status).toBe(401)
      expect(r.body.code).toBe('UNAUTHORIZED')
    }
    const good = await sign({ email: SUPERADMIN_EMAIL })
    const basic = await t.request('POST', '/api/superadmin/companies', { headers: { authorization: `Basic ${good}` }, body })
    expect(basic.status).toBe(401)
    const companyKeyInstead = await t.request('POST', '/api/superadmin/companies', { key: (await t.newCompany()).key, body })
    expect(companyKeyInstead.status).toBe(401)

    const created = await t.request('POST', '/api/superadmin/companies', { bearer: await sign({ email: SUPERADMIN_EMAIL.toUpperCase() }), body })
    expect(created.status).toBe(201)
    expect(created.body).toEqual({
      id: expect.any(Number),
      name: 'Casa Uno',
      timezone: 'America/Argentina/Buenos_Aires',
      modules: { mesas: false, ventanilla: false },
    })
    const tz = await t.request('POST', '/api/superadmin/companies', { bearer: good, body: { name: 'Casa Dos', timezone: 'America/Montevideo' } })
    expect(tz.body.timezone).toBe('America/Montevideo')
    for (const bad of [{}, { name: '' }, { name: 'x', timezone: 'Mars/Olympus' }]) {
      const r = await t.request('POST', '/api/superadmin/companies', { bearer: good, body: bad })
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('VALIDATION_ERROR')
    }
  })

  test('PATCH changes the name, time zone and module flags', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const token = await t.superToken()
    const on = await t.request('PATCH', `/api/superadmin/companies/${c.id}`, { bearer: token, body: { modules: { mesas: true } } })
    expect(on.status).toBe(200)
    expect(on.body).toMatchObject({ id: c.id, modules: { mesas: true, ventanilla: false } })
    const both = await t.request('PATCH', `/api/superadmin/companies/${c.id}`, {
      bearer: token,
      body: { name: 'Renombrada', timezone: 'UTC', modules: { ventanilla: true } },
    })
    expect(both.body).toEqual({ id: c.id, name: 'Renombrada', timezone: 'UTC', modules: { mesas: true, ventanilla: true } })
    const off = await t.request('PATCH', `/api/superadmin/companies/${c.id}`, { bearer: token, body: { modules: { mesas: false, ventanilla: false } } })
    expect(off.body.modules).toEqual({ mesas: false, ventanilla: false })

    expect((await t.request('PATCH', `/api/superadmin/companies/${c.id}`, { body: { name: 'x' } })).status).toBe(401)
    const missing = await t.request('PATCH', '/api/superadmin/companies/2147483647', { bearer: token, body: { name: 'x' } })
    expect(missing.status).toBe(404)
    expect(missing.body.code).toBe('NOT_FOUND')
    const badFlag = await t.request('PATCH', `/api/superadmin/companies/${c.id}`, { bearer: token, body: { modules: { mesas: 'yes' } } })
    expect(badFlag.status).toBe(400)
    for (const id of BAD_IDS) {
      const r = await t.request('PATCH', `/api/superadmin/companies/${id}`, { bearer: token, body: { name: 'x' } })
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('INVALID_ID')
    }
  })

  test('company keys: issued once, kept only as a hash, working at once', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const token = await t.superToken()
    const issued = await t.request('POST', `/api/superadmin/companies/${c.id}/api-keys`, { bearer: token, body: { name: 'backoffice' } })
    expect(issued.status).toBe(201)
    expect(issued.body).toEqual({
      id: expect.any(Number),
      name: 'backoffice',
      key: expect.stringMatching(/^fos_[0-9a-f]{12}_[A-Za-z0-9_-]{32}$/),
      prefix: expect.any(String),
      created_at: expect.stringMatching(/Z$/),
    })
    expect(issued.body.key).toContain(issued.body.prefix)
    const [row] = await t.ctx.database.rows<Record<string, unknown>>(sql`select * from api_keys where id = ${issued.body.id}`)
    expect(row.key_hash).toBe(sha256(issued.body.key))
    expect(JSON.stringify(row)).not.toContain(issued.body.key)
    expect((await t.request('GET', '/api/employees', { key: issued.body.key })).status).toBe(200)

    const unknown = await t.request('POST', '/api/superadmin/companies/2147483647/api-keys', { bearer: token, body: { name: 'x' } })
    expect(unknown.status).toBe(404)
    expect((await t.request('POST', `/api/superadmin/companies/${c.id}/api-keys`, { bearer: token, body: {} })).status).toBe(400)
    expect((await t.request('POST', `/api/superadmin/companies/${c.id}/api-keys`, { body: { name: 'x' } })).status).toBe(401)
  })

  test('company creation honours Idempotency-Key', async () => {
    const t = await testApp()
    const token = await t.superToken()
    const headers = { 'idempotency-key': `company-${crypto.randomUUID()}` }
    const first = await t.request('POST', '/api/superadmin/companies', { bearer: token, body: { name: 'Casa Idem' }, headers })
    const second = await t.request('POST', '/api/superadmin/companies', { bearer: token, body: { name: 'Casa Idem' }, headers })
    expect(first.status).toBe(201)
    expect(second.status).toBe(201)
    expect(second.body).toEqual(first.body)
    const reused = await t.request('POST', '/api/superadmin/companies', { bearer: token, body: { name: 'Otra Casa' }, headers })
    expect(reused.status).toBe(409)
    expect(reused.body.code).toBe('IDEMPOTENCY_KEY_REUSED')
    const [{ n }] = await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from companies where name = 'Casa Idem' and id >= ${first.body.id}`)
    expect(n).toBe(1)
  })

  test('any other superadmin path is 401 without a valid token; with one, 405 with Allow for a known path, else 404', async () => {
    const t = await testApp()
    const token = await t.superToken()
    const cases: [string, string, string | null][] = [
      ['GET', '/api/superadmin/companies', 'POST'],
      ['GET', '/api/superadmin/companies/1', 'PATCH'],
      ['DELETE', '/api/superadmin/companies/1', 'PATCH'],
      ['POST', '/api/superadmin/anything', null],
    ]
    for (const [method, path, allow] of cases) {
      const anonymous = await t.request(method, path)
      expect(anonymous.status).toBe(401)
      expect(anonymous.body.code).toBe('UNAUTHORIZED')
      const expired = await t.request(method, path, { bearer: await sign({ email: SUPERADMIN_EMAIL }, { exp: Math.floor(Date.now() / 1000) - 60 }) })
      expect(expired.status).toBe(401)
      const allowed = await t.request(method, path, { bearer: token })
      expect([allowed.status, allowed.body.code, allowed.headers.get('allow')]).toEqual(allow ? [405, 'METHOD_NOT_ALLOWED', allow] : [404, 'NOT_FOUND', null])
    }
  })
})

describe('employees and keys', () => {
  test('create, list, get, update, delete', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const created = await t.request('POST', '/api/employees', {
      key: c.key,
      body: { email: 'Ana@Fos.Test', name: 'Ana', permissions: ['clients.view', 'audit.view'] },
    })
    expect(created.status).toBe(201)
    expect(created.body).toEqual({ id: expect.any(Number), email: 'ana@fos.test', name: 'Ana', permissions: ['clients.view', 'audit.view'], client_ids: [] })
    const dup = await t.request('POST', '/api/employees', { key: c.key, body: { email: 'ana@fos.test', name: 'Otra', permissions: [] } })
    expect(dup.status).toBe(409)
    for (const body of [
      { email: 'not-an-email', name: 'x', permissions: [] },
      { email: 'b@fos.test', name: 'x', permissions: ['clients.fly'] },
      { email: 'b@fos.test', name: 'x' },
    ]) {
      const r = await t.request('POST', '/api/employees', { key: c.key, body })
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('VALIDATION_ERROR')
    }
    const unknownClient = await t.request('POST', '/api/employees', { key: c.key, body: { email: 'b@fos.test', name: 'B', permissions: [], client_ids: [2147483647] } })
    expect(unknownClient.status).toBe(422)
    expect(unknownClient.body.code).toBe('UNKNOWN_CLIENT')
    const client = (await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Cli', type: 1 } })).body
    const scoped = await t.request('POST', '/api/employees', { key: c.key, body: { email: 'b@fos.test', name: 'B', permissions: [], client_ids: [client.id] } })
    expect(scoped.body.client_ids).toEqual([client.id])

    const id = created.body.id
    expect((await t.request('GET', `/api/employees/${id}`, { key: c.key })).body).toEqual(created.body)
    const patched = await t.request('PATCH', `/api/employees/${id}`, { key: c.key, body: { name: 'Ana María', permissions: [] } })
    expect(patched.status).toBe(200)
    expect(patched.body).toMatchObject({ id, name: 'Ana María', permissions: [] })
    const list = await t.request('GET', '/api/employees', { key: c.key })
    expect(list.body.data.map((e: any) => e.id)).toEqual([id, scoped.body.id])
    const del = await t.request('DELETE', `/api/employees/${id}`, { key: c.key })
    expect(del.status).toBe(200)
    expect(del.body).toEqual({ deleted: true })
    expect((await t.request('GET', `/api/employees/${id}`, { key: c.key })).status).toBe(404)
    expect((await t.request('GET', '/api/employees', { key: c.key })).body.data.map((e: any) => e.id)).toEqual([scoped.body.id])
  })

  test('an employee key gets 403 on every employee and key route', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const emp = await c.employee(['clients.view', 'clients.edit', 'audit.view', 'operations.approve'])
    const routes = [
      ['GET', '/api/employees', undefined],
      ['POST', '/api/employees', { email: 'x@fos.test', name: 'x', permissions: [] }],
      ['GET', `/api/employees/${emp.id}`, undefined],
      ['PATCH', `/api/employees/${emp.id}`, { name: 'x' }],
      ['DELETE', `/api/employees/${emp.id}`, undefined],
      ['POST', `/api/employees/${emp.id}/api-keys`, { name: 'x' }],
      ['DELETE', '/api/api-keys/1', undefined],
    ] as const
    for (const [method, path, body] of routes) {
      const r = await t.request(method, path, { key: emp.key, body })
      expect(r.status).toBe(403)
      expect(r.body.code).toBe('FORBIDDEN')
      expect((await t.request(method, path, { body })).status).toBe(401)
    }
    expect((await t.request('GET', `/api/employees/${emp.id}`, { key: c.key })).body.name).not.toBe('x')
  })

  test('revoking a key, or deleting its employee, ends it at the next request', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const other = await t.newCompany()
    const emp = await c.employee(['clients.view'])
    expect((await t.request('GET', '/api/clients', { key: emp.key })).status).toBe(200)
    const second = await t.request('POST', `/api/employees/${emp.id}/api-keys`, { key: c.key, body: { name: 'phone' } })
    expect(second.status).toBe(201)

    const foreign = await t.request('DELETE', `/api/api-keys/${second.body.id}`, { key: other.key })
    expect(foreign.status).toBe(404)
    const revoked = await t.request('DELETE', `/api/api-keys/${second.body.id}`, { key: c.key })
    expect(revoked.status).toBe(200)
    expect(revoked.body).toEqual({ deleted: true })
    const after = await t.request('GET', '/api/clients', { key: second.body.key })
    expect(after.status).toBe(401)
    expect(after.body.code).toBe('UNAUTHORIZED')
    expect((await t.request('DELETE', `/api/api-keys/${second.body.id}`, { key: c.key })).status).toBe(404)
    expect((await t.request('GET', '/api/clients', { key: emp.key })).status).toBe(200)

    await t.request('DELETE', `/api/employees/${emp.id}`, { key: c.key })
    const gone = await t.request('GET', '/api/clients', { key: emp.key })
    expect(gone.status).toBe(401)
    expect(gone.body.code).toBe('UNAUTHORIZED')

    // A company can revoke its own last key; the next call with it is 401 like any other.
    const spare = await t.request('POST', `/api/superadmin/companies/${c.id}/api-keys`, { bearer: await t.superToken(), body: { name: 'spare' } })
    expect((await t.request('DELETE', `/api/api-keys/${spare.body.id}`, { key: spare.body.key })).status).toBe(200)
    expect((await t.request('GET', '/api/employees', { key: spare.body.key })).status).toBe(401)
    expect((await t.request('GET', '/api/employees', { key: c.key })).status).toBe(200)
  })

  test('malformed and unknown keys are 401 before anything else', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const tampered = `${c.key.slice(0, -1)}${c.key.endsWith('A') ? 'B' : 'A'}`
    for (const key of ['', 'nope', tampered, `fos_000000000000_${'A'.repeat(32)}`, c.key.toUpperCase()]) {
      const r = await t.request('POST', '/api/employees', { headers: { 'x-api-key': key }, body: { bogus: true } })
      expect(r.status).toBe(401)
      expect(r.body).toEqual({ error: expect.any(String), code: 'UNAUTHORIZED' })
    }
    const badId = await t.request('GET', '/api/employees/abc', {})
    expect(badId.status).toBe(401)
  })

  test('ids: only a plain positive decimal up to 2^31−1; a valid id of another company is 404', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const other = await t.newCompany()
    const theirs = await other.employee(['clients.view'])
    for (const id of BAD_IDS) {
      for (const [method, path, body] of [
        ['GET', `/api/employees/${id}`, undefined],
        ['PATCH', `/api/employees/${id}`, { name: 'x' }],
        ['DELETE', `/api/employees/${id}`, undefined],
        ['POST', `/api/employees/${id}/api-keys`, { name: 'x' }],
        ['DELETE', `/api/api-keys/${id}`, undefined],
      ] as const) {
        const r = await t.request(method, path, { key: c.key, body })
        expect(r.status).toBe(400)
        expect(r.body.code).toBe('INVALID_ID')
      }
    }
    for (const [method, path, body] of [
      ['GET', `/api/employees/${theirs.id}`, undefined],
      ['PATCH', `/api/employees/${theirs.id}`, { name: 'hijack' }],
      ['DELETE', `/api/employees/${theirs.id}`, undefined],
      ['POST', `/api/employees/${theirs.id}/api-keys`, { name: 'x' }],
      ['GET', '/api/employees/2147483647', undefined],
    ] as const) {
      const r = await t.request(method, path, { key: c.key, body })
      expect(r.status).toBe(404)
      expect(r.body.code).toBe('NOT_FOUND')
    }
    expect((await t.request('GET', '/api/clients', { key: theirs.key })).status).toBe(200)
    expect((await t.request('GET', `/api/employees/${theirs.id}`, { key: other.key })).body.name).not.toBe('hijack')
  })

  test('health answers once the database does', async () => {
    const t = await testApp()
    const health = await t.request('GET', '/health')
    expect(health.status).toBe(200)
    expect(health.body).toEqual({ status: 'ok' })
  })
})
