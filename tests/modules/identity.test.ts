import { describe, expect, test } from 'bun:test'
import { testApp } from '../helpers'

describe('superadmin and employees', () => {
  test('company lifecycle and keys', async () => {
    const t = await testApp()
    const c = await t.newCompany({ mesas: true })
    const health = await t.request('GET', '/health')
    expect(health.body).toEqual({ status: 'ok' })
    const emps = await t.request('GET', '/api/employees', { key: c.key })
    expect(emps.status).toBe(200)
    expect(emps.body).toEqual({ data: [] })
    const e = await c.employee(['clients.view'])
    const forbidden = await t.request('GET', '/api/employees', { key: e.key })
    expect(forbidden.status).toBe(403)
    expect(forbidden.body.code).toBe('FORBIDDEN')
    const bad = await t.request('GET', '/api/employees/abc', { key: c.key })
    expect(bad.status).toBe(400)
    expect(bad.body.code).toBe('INVALID_ID')
    const none = await t.request('GET', '/api/employees', {})
    expect(none.status).toBe(401)
  })
})
