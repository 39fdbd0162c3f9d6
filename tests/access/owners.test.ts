import { beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { buildTestApp, postgresTest, testApp, type Company, type TestApp } from '../helpers'

let t: TestApp

beforeAll(async () => {
  t = await testApp()
})

const employeeCount = async (companyId: number) =>
  Number((await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from employees where company_id = ${companyId} and deleted_at is null`))[0].n)

let seq = 0
const create = (c: Company, key: string, permissions: string[], extra: Record<string, unknown> = {}) =>
  t.request('POST', '/api/employees', { key, body: { email: `p${++seq}.${c.id}@fos.test`, name: `Persona ${seq}`, permissions, ...extra } })

describe('owners (company.admin)', () => {
  test('an owner passes company-key-only routes and every permission; the audit trail names the owner', async () => {
    const c = await t.newCompany()
    const owner = await c.employee(['company.admin'])
    const plain = await c.employee(['clients.view'])
    const client = await t.request('POST', '/api/clients', { key: owner.key, body: { name: 'Cliente del dueño', type: 0 } })
    expect(client.status).toBe(201)
    const [row] = await t.ctx.database.rows<{ actor_email: string | null }>(
      sql`select actor_email from audit_logs where company_id = ${c.id} and entity = 'clients' and entity_id = ${client.body.id} and action = 'create'`,
    )
    expect(row.actor_email).toBe(owner.email)
    expect((await t.request('GET', '/api/employees', { key: owner.key })).status).toBe(200)
    expect((await t.request('GET', '/api/api-keys', { key: owner.key })).status).toBe(200)
    expect((await t.request('GET', '/api/api-keys', { key: plain.key })).status).toBe(403)
    expect((await t.request('GET', '/api/employees', { key: plain.key })).status).toBe(403)
  })

  test('an owner issues company keys; the key acts as the company; others get 403', async () => {
    const c = await t.newCompany()
    const owner = await c.employee(['company.admin'])
    const manager = await c.employee(['employees.manage', 'clients.view'])
    const issued = await t.request('POST', '/api/api-keys', { key: owner.key, body: { name: 'integración' } })
    expect(issued.status).toBe(201)
    const { key, ...rest } = issued.body
    expect(key).toMatch(/^fos_/)
    expect(Object.keys(rest).sort()).toEqual(['created_at', 'id', 'name', 'prefix'])
    expect(rest.name).toBe('integración')
    expect((await t.request('GET', '/api/employees', { key })).status).toBe(200)
    expect((await t.request('POST', '/api/api-keys', { key: manager.key, body: { name: 'x' } })).status).toBe(403)
    expect((await t.request('POST', '/api/api-keys', { key: c.key, body: { name: 'from the company key' } })).status).toBe(201)
    expect((await t.request('POST', '/api/api-keys', { key: owner.key, body: {} })).status).toBe(400)
  })

  test('GET /api/api-keys lists live keys without values, with the employee and last use', async () => {
    const c = await t.newCompany()
    const clerk = await c.employee(['clients.view'])
    await t.request('GET', '/api/clients', { key: clerk.key })
    const extra = (await t.request('POST', '/api/api-keys', { key: c.key, body: { name: 'temporal' } })).body
    await t.request('DELETE', `/api/api-keys/${extra.id}`, { key: c.key })
    // The use is noted off the request's path.
    let listed = (await t.request('GET', '/api/api-keys', { key: c.key })).body.data
    for (let i = 0; i < 50 && !listed.some((k: { last_used_at: string | null; employee_id: number | null }) => k.employee_id === clerk.id && k.last_used_at); i++) {
      await Bun.sleep(20)
      listed = (await t.request('GET', '/api/api-keys', { key: c.key })).body.data
    }
    expect(listed).toHaveLength(2)
    const [main, emp] = listed
    expect(main).toEqual({ id: expect.any(Number), name: 'main', prefix: expect.any(String), employee_id: null, created_at: expect.any(String), last_used_at: expect.any(String) })
    expect(emp).toMatchObject({ name: 'emp', employee_id: clerk.id })
    expect(Date.now() - Date.parse(emp.last_used_at)).toBeLessThan(60_000)
    expect(JSON.stringify(listed)).not.toContain(c.key)
    expect(listed.some((k: { key?: string }) => 'key' in k)).toBe(false)
  })

  test('repro: GET /api/api-keys is paged: 50 by default, pageSize up to 200, data plus pagination', async () => {
    const c = await t.newCompany()
    for (let i = 0; i < 59; i++) expect((await t.request('POST', '/api/api-keys', { key: c.key, body: { name: `k${i}` } })).status).toBe(201)
    const first = await t.request('GET', '/api/api-keys', { key: c.key })
    expect(first.status).toBe(200)
    expect(first.body.data).toHaveLength(50)
    expect(first.body.pagination).toEqual({ page: 1, pageSize: 50, total: 60, totalPages: 2 })
    const second = await t.request('GET', '/api/api-keys?page=2', { key: c.key })
    expect(second.body.data).toHaveLength(10)
    expect(second.body.data[9].name).toBe('k58')
    expect((await t.request('GET', '/api/api-keys?pageSize=200', { key: c.key })).body.data).toHaveLength(60)
    for (const q of ['pageSize=201', 'pageSize=0', 'page=0'])
      expect((await t.request('GET', `/api/api-keys?${q}`, { key: c.key })).body.code).toBe('VALIDATION_ERROR')
  })

  test('repro: a company holds at most MAX_API_KEYS_PER_COMPANY live keys; one more is 409 with words; revoking makes room', async () => {
    expect((await import('../../server/config')).loadConfig({}).maxApiKeysPerCompany).toBe(200)
    const limited = await buildTestApp({ maxApiKeysPerCompany: 5 })
    const c = await limited.newCompany()
    const clerk = await c.employee([])
    // The company key and the clerk's key are two of the five.
    const made: { id: number }[] = []
    for (let i = 0; i < 3; i++) made.push((await limited.request('POST', '/api/api-keys', { key: c.key, body: { name: `k${i}` } })).body)
    for (const refused of [
      await limited.request('POST', '/api/api-keys', { key: c.key, body: { name: 'one too many' } }),
      await limited.request('POST', `/api/employees/${clerk.id}/api-keys`, { key: c.key, body: { name: 'one too many' } }),
      await limited.request('POST', `/api/superadmin/companies/${c.id}/api-keys`, { bearer: await limited.superToken(), body: { name: 'one too many' } }),
    ]) {
      expect(refused.status).toBe(409)
      expect(refused.body).toEqual({ error: expect.stringContaining('5 live API keys'), code: 'API_KEY_LIMIT_REACHED' })
    }
    expect((await limited.request('GET', '/api/api-keys', { key: c.key })).body.pagination.total).toBe(5)
    expect((await limited.request('DELETE', `/api/api-keys/${made[0].id}`, { key: c.key })).status).toBe(200)
    expect((await limited.request('POST', '/api/api-keys', { key: c.key, body: { name: 'in its place' } })).status).toBe(201)
  })

  postgresTest('concurrent issues cannot pass the key total together', async () => {
    const limited = await buildTestApp({ maxApiKeysPerCompany: 10 })
    const c = await limited.newCompany()
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => limited.request('POST', '/api/api-keys', { key: c.key, body: { name: `race ${i}` } })))
    expect(answers.filter((r) => r.status === 201)).toHaveLength(9)
    expect(answers.filter((r) => r.status === 409)).toHaveLength(11)
    const [{ n }] = await limited.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from api_keys where company_id = ${c.id} and revoked_at is null`)
    expect(Number(n)).toBe(10)
  })

  test('only a company key or an owner grants or removes company.admin', async () => {
    const c = await t.newCompany()
    const owner = await c.employee(['company.admin'])
    const manager = await c.employee(['employees.manage', 'clients.view'])
    const before = await employeeCount(c.id)
    const refused = await create(c, manager.key, ['company.admin'])
    expect(refused.status).toBe(403)
    expect(refused.body.error).toContain('company.admin')
    expect(await employeeCount(c.id)).toBe(before)
    const second = await create(c, owner.key, ['company.admin'])
    expect(second.status).toBe(201)
    // An owner may remove another's ownership; a manager may not touch an owner at all.
    expect((await t.request('PATCH', `/api/employees/${second.body.id}`, { key: manager.key, body: { permissions: [] } })).status).toBe(403)
    expect((await t.request('PATCH', `/api/employees/${second.body.id}`, { key: owner.key, body: { permissions: ['clients.view'] } })).body.permissions).toEqual(['clients.view'])
  })
})

describe('employees.manage', () => {
  async function setup() {
    const c = await t.newCompany()
    const owner = await c.employee(['company.admin'])
    const manager = await c.employee(['employees.manage', 'ventanilla.call', 'clients.view'])
    return { c, owner, manager }
  }

  test('creates, updates and deletes employees within its own permissions', async () => {
    const { c, manager } = await setup()
    const made = await create(c, manager.key, ['ventanilla.call'], { password: 'una clave bastante larga' })
    expect(made.status).toBe(201)
    const updated = await t.request('PATCH', `/api/employees/${made.body.id}`, { key: manager.key, body: { permissions: ['ventanilla.call', 'clients.view'], name: 'Otro nombre' } })
    expect(updated.status).toBe(200)
    expect(updated.body).toMatchObject({ name: 'Otro nombre', permissions: ['ventanilla.call', 'clients.view'] })
    const key = await t.request('POST', `/api/employees/${made.body.id}/api-keys`, { key: manager.key, body: { name: 'caja' } })
    expect(key.status).toBe(201)
    expect((await t.request('GET', '/api/clients', { key: key.body.key })).status).toBe(200)
    expect((await t.request('DELETE', `/api/api-keys/${key.body.id}`, { key: manager.key })).status).toBe(200)
    expect((await t.request('GET', '/api/clients', { key: key.body.key })).status).toBe(401)
    expect((await t.request('DELETE', `/api/employees/${made.body.id}`, { key: manager.key })).status).toBe(200)
  })

  test('granting or removing a permission it lacks is 403 and nothing is written', async () => {
    const { c, manager } = await setup()
    const before = await employeeCount(c.id)
    const grant = await create(c, manager.key, ['ventanilla.call', 'mesas.manage'])
    expect(grant.status).toBe(403)
    expect(grant.body).toEqual({ error: 'You cannot grant or remove permissions you do not hold: mesas.manage', code: 'FORBIDDEN' })
    expect(await employeeCount(c.id)).toBe(before)
    const clerk = (await create(c, c.key, ['ventanilla.call'])).body
    const widen = await t.request('PATCH', `/api/employees/${clerk.id}`, { key: manager.key, body: { permissions: ['ventanilla.call', 'audit.view'], name: 'Cambiado' } })
    expect(widen.status).toBe(403)
    const [row] = await t.ctx.database.rows<{ name: string; permissions: string[] }>(sql`select name, permissions from employees where id = ${clerk.id}`)
    expect(row).toEqual({ name: clerk.name, permissions: ['ventanilla.call'] })
  })

  test('an employee holding more than the manager, or an owner, is out of its reach', async () => {
    const { c, owner, manager } = await setup()
    const strong = (await create(c, c.key, ['ventanilla.call', 'mesas.manage'])).body
    for (const [method, path, body] of [
      ['PATCH', `/api/employees/${owner.id}`, { name: 'x' }],
      ['PATCH', `/api/employees/${owner.id}`, { password: 'otra clave muy larga' }],
      ['DELETE', `/api/employees/${owner.id}`, undefined],
      ['POST', `/api/employees/${owner.id}/api-keys`, { name: 'robada' }],
      ['POST', `/api/employees/${strong.id}/api-keys`, { name: 'robada' }],
      ['PATCH', `/api/employees/${strong.id}`, { password: 'otra clave muy larga' }],
    ] as const) {
      const res = await t.request(method, path, { key: manager.key, body })
      expect([method, path, res.status]).toEqual([method, path, 403])
      expect(res.body.code).toBe('FORBIDDEN')
    }
    const keys = await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from api_keys where employee_id in (${owner.id}, ${strong.id})`)
    expect(Number(keys[0].n)).toBe(1)
    // Nor a company key, nor the owner's key.
    const listed = (await t.request('GET', '/api/api-keys', { key: c.key })).body.data as { id: number; employee_id: number | null }[]
    for (const k of listed.filter((k) => k.employee_id === null || k.employee_id === owner.id))
      expect((await t.request('DELETE', `/api/api-keys/${k.id}`, { key: manager.key })).status).toBe(403)
  })

  test('never its own permissions', async () => {
    const { manager } = await setup()
    const mine = await t.request('PATCH', `/api/employees/${manager.id}`, { key: manager.key, body: { permissions: ['employees.manage', 'ventanilla.call'] } })
    expect(mine.status).toBe(403)
    expect(mine.body.error).toContain('own permissions')
    expect((await t.request('PATCH', `/api/employees/${manager.id}`, { key: manager.key, body: { name: 'Mi nombre' } })).status).toBe(200)
  })

  test('a manager limited to clients gives only limits within its own', async () => {
    const c = await t.newCompany()
    const a = (await t.request('POST', '/api/clients', { key: c.key, body: { name: 'A', type: 0 } })).body.id
    const b = (await t.request('POST', '/api/clients', { key: c.key, body: { name: 'B', type: 1 } })).body.id
    const manager = await c.employee(['employees.manage', 'clients.view'], [a])
    expect((await create(c, manager.key, ['clients.view'])).status).toBe(403)
    expect((await create(c, manager.key, ['clients.view'], { client_ids: [a, b] })).status).toBe(403)
    expect((await create(c, manager.key, ['clients.view'], { client_ids: [a] })).status).toBe(201)
  })

  test('without employees.manage an employee key is refused', async () => {
    const c = await t.newCompany()
    const clerk = await c.employee(['clients.view'])
    expect((await create(c, clerk.key, [])).status).toBe(403)
  })
})
