/**
 * Secrets stay secret: a realistic flow issues every kind of credential, then no issued secret (API keys, kiosk tokens,
 * grant tokens, the superadmin token, signed-link signatures) nor any stored hash appears in a log line, an audit
 * snapshot or an error body; stored hashes appear in no answer at all. Every answer carries `X-Request-Id`.
 */
import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { buildTestApp, type Reply } from './helpers'

describe('secrets', () => {
  test('no secret in logs, audit snapshots or error bodies; X-Request-Id on every answer', async () => {
    const t = await buildTestApp()
    const lines: string[] = []
    // The app reads ctx.log at each call, so swapping it captures every line from here on.
    t.ctx.log = (entry) => lines.push(JSON.stringify(entry))

    const replies: { label: string; reply: Reply }[] = []
    const req = async (label: string, method: string, path: string, opts: Parameters<typeof t.request>[2] = {}) => {
      const reply = await t.request(method, path, opts)
      replies.push({ label, reply })
      return reply
    }
    const bearer = await t.superToken()
    const company = await req('company', 'POST', '/api/superadmin/companies', { bearer, body: { name: 'Cambio Secreto' } })
    expect(company.status).toBe(201)
    const cid = company.body.id
    await req('modules', 'PATCH', `/api/superadmin/companies/${cid}`, { bearer, body: { modules: { mesas: true, ventanilla: true } } })
    const companyKey = await req('issue company key', 'POST', `/api/superadmin/companies/${cid}/api-keys`, { bearer, body: { name: 'main' } })
    const key = companyKey.body.key as string
    const spareKey = await req('issue spare key', 'POST', `/api/superadmin/companies/${cid}/api-keys`, { bearer, body: { name: 'spare' } })

    const emp = await req('employee', 'POST', '/api/employees', { key, body: { email: 'cajera@fos.test', name: 'Cajera', permissions: ['clients.view', 'operations.view', 'operations.create', 'attachments.edit'] } })
    const empKey = await req('issue employee key', 'POST', `/api/employees/${emp.body.id}/api-keys`, { key, body: { name: 'caja' } })
    expect(empKey.status).toBe(201)
    await req('revoke spare key', 'DELETE', `/api/api-keys/${spareKey.body.id}`, { key })

    const type = await req('type', 'POST', '/api/operation-types', { key, body: { name: 'Otro', kind: 'other' } })
    const client = await req('client', 'POST', '/api/clients', { key: empKey.body.key, body: { name: 'Caja', type: 0, accounts: [{ currency_name: 'ARS' }] } })
    expect(client.status).toBe(403)
    const caja = await req('client', 'POST', '/api/clients', { key, body: { name: 'Caja', type: 0, accounts: [{ currency_name: 'ARS' }] } })
    const op = await req('operation', 'POST', '/api/operations', {
      key: empKey.body.key,
      body: { operation_type_id: type.body.id, status: 'completed', transactions: [{ account_id: caja.body.accounts[0].id, amount: 10 }] },
    })
    expect(op.status).toBe(201)
    const form = new FormData()
    form.append('file', new File(['recibo'], 'recibo.txt', { type: 'text/plain' }))
    const upload = await req('upload', 'POST', `/api/operations/${op.body.id}/attachments`, { key: empKey.body.key, raw: form })
    expect(upload.status).toBe(201)
    const signed = new URL(upload.body.signed_url)
    const download = await t.app.handle(new Request(signed))
    expect(download.status).toBe(200)
    expect(download.headers.get('x-request-id')).toBeTruthy()
    const tampered = await req('tampered link', 'GET', `${signed.pathname}${signed.search.replace(/sig=[^&]+/, 'sig=AAAA')}`)
    expect(tampered.status).toBeGreaterThanOrEqual(400)

    const kiosk = await req('kiosk token', 'POST', '/api/ventanilla/tokens', { key, body: { name: 'Pantalla' } })
    const oldKiosk = await req('old kiosk token', 'POST', '/api/ventanilla/tokens', { key, body: { name: 'Vieja' } })
    await req('revoke kiosk token', 'DELETE', `/api/ventanilla/tokens/${oldKiosk.body.id}`, { key })
    expect((await req('snapshot', 'GET', `/api/public/ventanilla/${kiosk.body.token}`)).status).toBe(200)
    expect((await req('revoked snapshot', 'GET', `/api/public/ventanilla/${oldKiosk.body.token}`)).status).toBe(404)
    await req('kiosk page', 'GET', `/kiosk/${kiosk.body.token}`)
    await req('tokens list', 'GET', '/api/ventanilla/tokens', { key })

    const grant = await req('grant', 'POST', `/api/clients/${caja.body.id}/external-grants`, { key, body: { expires_in_days: 1 } })
    expect((await req('statement', 'GET', `/api/external/clients/${caja.body.id}/statement`, { bearer: grant.body.token })).status).toBe(200)
    expect((await req('statement elsewhere', 'GET', `/api/external/clients/${caja.body.id + 1}/statement`, { bearer: grant.body.token })).status).toBe(404)
    await req('revoke grant', 'DELETE', `/api/clients/${caja.body.id}/external-grants/${grant.body.id}`, { key })
    expect((await req('revoked grant', 'GET', `/api/external/clients/${caja.body.id}/statement`, { bearer: grant.body.token })).status).toBe(401)

    // Failures carrying the credentials: revoked, truncated, forbidden, a deleted employee's key.
    expect((await req('revoked key', 'GET', '/api/clients', { key: spareKey.body.key })).status).toBe(401)
    expect((await req('truncated key', 'GET', '/api/clients', { key: key.slice(0, -3) })).status).toBe(401)
    expect((await req('forbidden', 'GET', '/api/employees', { key: empKey.body.key })).status).toBe(403)
    await req('delete employee', 'DELETE', `/api/employees/${emp.body.id}`, { key })
    expect((await req('deleted employee', 'GET', '/api/clients', { key: empKey.body.key })).status).toBe(401)
    expect((await req('key as bearer', 'GET', '/api/superadmin/companies', { bearer: key })).status).toBeGreaterThanOrEqual(400)

    const issued: Record<string, string> = {
      'superadmin token': bearer,
      'company key': key,
      'revoked company key': spareKey.body.key,
      'employee key': empKey.body.key,
      'kiosk token': kiosk.body.token,
      'revoked kiosk token': oldKiosk.body.token,
      'grant token': grant.body.token,
      'signed link signature': signed.searchParams.get('sig')!,
    }
    for (const [name, value] of Object.entries(issued)) expect(value.length, name).toBeGreaterThanOrEqual(16)
    const hashes = await t.ctx.database.rows<{ what: string; hash: string }>(sql`
      select 'api key ' || id as what, key_hash as hash from api_keys where company_id = ${cid}
      union all select 'kiosk token ' || id, token_hash from ventanilla_tokens where company_id = ${cid}
      union all select 'grant ' || id, token_hash from external_grants where company_id = ${cid}`)
    expect(hashes.length).toBe(6)
    const stored: Record<string, string> = Object.fromEntries(hashes.map((h) => [h.what, h.hash]))
    const secrets = { ...issued, ...stored }

    // The request log is written after each answer is sent; let the last ones land.
    await Bun.sleep(50)
    expect(lines.length).toBeGreaterThanOrEqual(replies.length)
    const audit = await t.ctx.database.rows<{ snapshot: string }>(
      sql`select coalesce(before::text, '') || coalesce(after::text, '') || coalesce(changes::text, '') as snapshot from audit_logs where company_id = ${cid}`,
    )
    expect(audit.length).toBeGreaterThan(10)
    const errorBodies = replies.filter(({ reply }) => reply.status >= 400)
    expect(errorBodies.length).toBeGreaterThanOrEqual(8)

    const leaks: string[] = []
    for (const [name, value] of Object.entries(secrets)) {
      lines.forEach((line, i) => line.includes(value) && leaks.push(`${name} in log line ${i}: ${line}`))
      audit.forEach((row, i) => row.snapshot.includes(value) && leaks.push(`${name} in audit row ${i}`))
      for (const { label, reply } of errorBodies) if (JSON.stringify(reply.body).includes(value)) leaks.push(`${name} in error body of ${label}`)
    }
    for (const [name, value] of Object.entries(stored))
      for (const { label, reply } of replies) if (JSON.stringify(reply.body).includes(value)) leaks.push(`${name} hash in answer of ${label}`)
    expect(leaks).toEqual([])

    // Every answer carries a request id, and the log line of each request names it.
    const missing = replies.filter(({ reply }) => !reply.headers.get('x-request-id')).map(({ label }) => label)
    expect(missing).toEqual([])
    const logged = new Set(lines.map((l) => JSON.parse(l).id))
    expect(replies.filter(({ reply }) => !logged.has(reply.headers.get('x-request-id'))).map(({ label }) => label)).toEqual([])
    const echoed = await t.request('GET', '/health', { headers: { 'x-request-id': 'trace-123' } })
    expect(echoed.headers.get('x-request-id')).toBe('trace-123')
  }, 180_000)
})
