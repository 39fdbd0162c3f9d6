import { beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { sha256 } from '../../server/lib/secrets'
import { testApp, type Company, type TestApp } from '../helpers'

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

async function audit(t: TestApp, key: string, query = '') {
  return t.request('GET', `/api/audit-logs${query ? `?${query}` : ''}`, { key })
}

const ids = (r: { body: { data: { id: number }[] } }) => r.body.data.map((e) => e.id)

/** Audit rows at exact instants, for bounds no live write could hit on purpose. */
async function auditRowAt(t: TestApp, companyId: number | null, at: string, entityId: number) {
  const [row] = await t.ctx.database.rows<{ id: number }>(sql`
    insert into audit_logs (company_id, entity, entity_id, action, raw_action, changes, after, created_at)
    values (${companyId}, 'clients', ${entityId}, 'create', 'INSERT', '[]'::jsonb, '{}'::jsonb, ${at}::timestamptz)
    returning id`)
  return Number(row.id)
}

async function operationFor(t: TestApp, c: Company, typeId: number, clientId: number, accountIds: number[], status = 'pending') {
  const r = await t.request('POST', '/api/operations', {
    key: c.key,
    body: {
      operation_type_id: typeId,
      client_id: clientId,
      status,
      transactions: [
        { account_id: accountIds[0], amount: '10' },
        { account_id: accountIds[1], amount: '-10' },
      ],
    },
  })
  if (r.status !== 201) throw new Error(`operation create: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body as { id: number; transactions: { id: number }[] }
}

// Opening the shared app runs the migrations, which on embedded PGlite can take longer than one test's budget.
beforeAll(async () => {
  await testApp()
}, 120_000)

describe('audit logs', () => {
  test('entries: shape, action mapping, actor, newest first', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const editor = await c.employee(['clients.edit', 'clients.view'])
    const created = await t.request('POST', '/api/clients', { key: editor.key, body: { name: 'Ana', type: 1 } })
    const id = created.body.id
    await t.request('PATCH', `/api/clients/${id}`, { key: editor.key, body: { description: 'nueva' } })
    await t.request('DELETE', `/api/clients/${id}`, { key: c.key })

    const r = await audit(t, c.key, 'table=clients')
    expect(r.status).toBe(200)
    expect(r.body.pagination).toEqual({ page: 1, pageSize: 50, total: 3, totalPages: 1 })
    const [del, upd, ins] = r.body.data
    expect(ins).toEqual({
      id: expect.any(Number),
      entity: 'clients',
      entity_id: id,
      action: 'create',
      raw_action: 'INSERT',
      actor: { id: editor.id, name: expect.any(String), email: editor.email },
      channel: null,
      channel_detail: {},
      timestamp: expect.stringMatching(ISO),
      before: {},
      after: expect.objectContaining({ id, name: 'Ana', company_id: c.id, type: 1 }),
      changes: expect.arrayContaining([{ field: 'name', before: null, after: 'Ana' }]),
      // No chain sealer runs in this file: the row waits for its place (audit-chain.test.ts seals).
      seq: null,
      hash: null,
    })
    expect(upd).toMatchObject({ action: 'update', raw_action: 'UPDATE', actor: { id: editor.id, email: editor.email } })
    expect(upd.changes).toContainEqual({ field: 'description', before: '', after: 'nueva' })
    expect(upd.before.description).toBe('')
    expect(upd.after.description).toBe('nueva')
    expect(del).toMatchObject({ action: 'delete', raw_action: 'UPDATE', actor: { id: null, name: null, email: null } })
    expect(del.changes.map((x: any) => x.field)).toContain('deleted_at')
    expect(del.id).toBeGreaterThan(upd.id)
    expect(upd.id).toBeGreaterThan(ins.id)
    expect(Date.parse(del.timestamp)).toBeGreaterThanOrEqual(Date.parse(ins.timestamp))

    // Hard deletes map to delete too.
    const tag = (await t.request('POST', '/api/tags', { key: c.key, body: { name: 'x', color: '#000000' } })).body
    const other = (await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Beto', type: 1, tag_ids: [tag.id] } })).body
    await t.request('DELETE', `/api/clients/${other.id}/tags/${tag.id}`, { key: c.key })
    const tagRows = await audit(t, c.key, 'table=client_tag')
    expect(tagRows.body.data.map((e: any) => [e.action, e.raw_action])).toEqual([
      ['delete', 'DELETE'],
      ['create', 'INSERT'],
    ])
    expect(tagRows.body.data[0].after).toEqual({})
    expect(tagRows.body.data[0].before).toMatchObject({ client_id: other.id, tag_id: tag.id })

    // Timestamps inside snapshots and changes are UTC with Z, like every other date-time of the API.
    const PG_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/
    expect(ins.after.created_at).toMatch(PG_UTC)
    expect(Date.parse(ins.after.created_at)).toBe(Date.parse(created.body.created_at))
    expect(del.after.deleted_at).toMatch(PG_UTC)
    expect(del.changes.find((x: any) => x.field === 'deleted_at')).toEqual({ field: 'deleted_at', before: null, after: del.after.deleted_at })
  })

  test('a deleted employee stays on record by email, without id or name', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const gone = await c.employee(['clients.edit'])
    await t.request('POST', '/api/clients', { key: gone.key, body: { name: 'Ana', type: 1 } })
    await t.request('DELETE', `/api/employees/${gone.id}`, { key: c.key })
    const r = await audit(t, c.key, 'table=client')
    expect(r.body.data[0].actor).toEqual({ id: null, name: null, email: gone.email })
    const byId = await audit(t, c.key, `employee_id=${gone.id}&table=clients`)
    expect(byId.body.pagination.total).toBe(1)
  })

  test('cancel and revert are told apart from updates', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const type = (await t.request('POST', '/api/operation-types', { key: c.key, body: { name: 'Cambio', kind: 'exchange' } })).body
    const cli = (await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Ana', type: 1, accounts: [{ currency_name: 'USD' }, { currency_name: 'ARS' }] } })).body
    const op = await operationFor(t, c, type.id, cli.id, cli.accounts.map((a: any) => a.id), 'completed')
    expect((await t.request('POST', `/api/operations/${op.id}/revert`, { key: c.key })).status).toBe(200)
    expect((await t.request('POST', `/api/operations/${op.id}/cancel`, { key: c.key })).status).toBe(200)
    const txRows = await audit(t, c.key, 'table=transaction')
    const actions = txRows.body.data.map((e: any) => e.action)
    expect(actions.filter((a: string) => a === 'revert')).toHaveLength(2)
    expect(actions.filter((a: string) => a === 'cancel')).toHaveLength(2)
    expect(actions.filter((a: string) => a === 'create')).toHaveLength(2)
    const reverts = await audit(t, c.key, 'table=transactions&action=revert')
    expect(reverts.body.pagination.total).toBe(2)
    expect(reverts.body.data.every((e: any) => e.before.status === 'completed' && e.after.status === 'pending')).toBe(true)
    const cancels = await audit(t, c.key, 'action=cancel')
    expect(cancels.body.data.every((e: any) => e.action === 'cancel')).toBe(true)
    expect(cancels.body.data.map((e: any) => e.entity)).toContain('transactions')
  })

  test('table filter: plural, singular alias, case; unknown is 400', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const cli = (await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Ana', type: 0, accounts: [{ currency_name: 'USD' }] } })).body
    const plural = await audit(t, c.key, 'table=clients')
    expect(plural.body.data.map((e: any) => e.entity_id)).toEqual([cli.id])
    for (const alias of ['client', 'Clients', 'CLIENT']) expect(ids(await audit(t, c.key, `table=${alias}`))).toEqual(ids(plural))
    const acc = await audit(t, c.key, 'table=account')
    expect(acc.body.data.map((e: any) => [e.entity, e.entity_id])).toEqual([['accounts', cli.accounts[0].id]])
    const keys = await audit(t, c.key, 'table=api_key')
    expect(keys.body.data.map((e: any) => e.entity)).toEqual(['api_keys'])
    for (const known of ['operation', 'operations', 'transaction', 'mesa', 'employee', 'cheque', 'invoices', 'company']) {
      const r = await audit(t, c.key, `table=${known}`)
      expect(r.status).toBe(200)
    }
    for (const bad of ['bogus', 'audit_logs', 'idempotency_keys', 'clientss', '']) {
      const r = await audit(t, c.key, `table=${bad}`)
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('VALIDATION_ERROR')
    }
    const all = await audit(t, c.key)
    const entities = new Set(all.body.data.map((e: any) => e.entity))
    expect(entities).toEqual(new Set(['companies', 'api_keys', 'clients', 'accounts']))
  })

  test('action, channel and employee filters', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const other = await t.newCompany()
    const a = await c.employee(['clients.edit'])
    const b = await c.employee(['clients.edit'])
    const stranger = await other.employee(['clients.edit'])
    const ca = (await t.request('POST', '/api/clients', { key: a.key, body: { name: 'A', type: 1 } })).body
    await t.request('PATCH', `/api/clients/${ca.id}`, { key: a.key, body: { name: 'A2' } })
    await t.request('POST', '/api/clients', { key: b.key, body: { name: 'B', type: 1 } })

    const byA = await audit(t, c.key, `employee_id=${a.id}`)
    expect(byA.body.data.map((e: any) => e.action)).toEqual(['update', 'create'])
    expect(byA.body.data.every((e: any) => e.actor.id === a.id)).toBe(true)
    const byAUpdates = await audit(t, c.key, `employee_id=${a.id}&action=update`)
    expect(byAUpdates.body.pagination.total).toBe(1)
    const creates = await audit(t, c.key, 'table=clients&action=create')
    expect(creates.body.data.map((e: any) => e.actor.id)).toEqual([b.id, a.id])

    for (const q of [`employee_id=${stranger.id}`, 'employee_id=2147483647']) {
      const r = await audit(t, c.key, q)
      expect(r.status).toBe(200)
      expect(r.body).toEqual({ data: [], pagination: { page: 1, pageSize: 50, total: 0, totalPages: 0 } })
    }
    const none = await audit(t, c.key, 'channel=messaging')
    expect(none.status).toBe(200)
    expect(none.body.pagination.total).toBe(0)
    expect((await audit(t, c.key, 'channel=twin')).status).toBe(200)
    // The interface names `dashboard` as a channel value; no row carries it (API writes have a null channel).
    const dashboard = await audit(t, c.key, 'channel=dashboard')
    expect(dashboard.status).toBe(200)
    expect(dashboard.body.data).toEqual([])
    for (const q of ['action=created', 'action=INSERT', 'channel=bogus', 'employee_id=abc', 'employee_id=0']) {
      const r = await audit(t, c.key, q)
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('VALIDATION_ERROR')
    }
  })

  test('a ticket taken at a dispenser names the dispenser: channel `dispenser` with its id and name', async () => {
    const t = await testApp()
    const c = await t.newCompany({ ventanilla: true })
    const service = (await t.request('POST', '/api/ventanilla/services', { key: c.key, body: { name: 'Cambio', prefix: 'A' } })).body.id as number
    const issued = await t.request('POST', '/api/ventanilla/dispenser-tokens', { key: c.key, body: { name: 'Tablet entrada' } })
    expect((await t.request('POST', `/api/public/ventanilla/${issued.body.token}/tickets`, { body: { service_id: service } })).status).toBe(201)
    // At the counter, the same kind of row names the key, not a dispenser.
    expect((await t.request('POST', '/api/ventanilla/tickets', { key: c.key, body: { service_id: service } })).status).toBe(201)
    const tickets = (await audit(t, c.key, 'table=ventanilla_tickets')).body.data as { channel: string | null; channel_detail: unknown; actor: unknown }[]
    expect(tickets.map((e) => e.channel)).toEqual([null, 'dispenser'])
    expect(tickets[1].channel_detail).toEqual({ dispenser: { id: issued.body.id, name: 'Tablet entrada' } })
    expect(tickets[1].actor).toEqual({ id: null, name: null, email: null })
    const filtered = await audit(t, c.key, 'channel=dispenser')
    expect([filtered.status, filtered.body.data.length]).toEqual([200, 1])
  })

  test('date bounds: date-only values are whole days in Argentina time, inclusive', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    // 2023-12-31 23:59:59.999 and 2024-01-01 00:00:00.000 in Argentina (UTC−03:00).
    const lastOfYear = await auditRowAt(t, c.id, '2024-01-01T02:59:59.999Z', 1)
    const firstOfYear = await auditRowAt(t, c.id, '2024-01-01T03:00:00.000Z', 2)
    const endOfDay = await auditRowAt(t, c.id, '2024-01-02T02:59:59.999Z', 3)
    const nextDay = await auditRowAt(t, c.id, '2024-01-02T03:00:00.000Z', 4)
    await auditRowAt(t, null, '2024-01-01T12:00:00.000Z', 5)
    const window = 'table=clients&from=2023-12-01&to=2024-01-31'
    expect(ids(await audit(t, c.key, window))).toEqual([nextDay, endOfDay, firstOfYear, lastOfYear])
    expect(ids(await audit(t, c.key, 'table=clients&from=2024-01-01&to=2024-01-01'))).toEqual([endOfDay, firstOfYear])
    expect(ids(await audit(t, c.key, 'table=clients&from=2023-12-01&to=2023-12-31'))).toEqual([lastOfYear])
    expect(ids(await audit(t, c.key, 'table=clients&from=2024-01-02&to=2024-01-31'))).toEqual([nextDay])

    const exact = (q: string) => audit(t, c.key, `table=clients&${q.replace(/\+/g, '%2B')}`)
    expect(ids(await exact('from=2024-01-01T03:00:00.000Z&to=2024-01-02T02:59:59.999Z'))).toEqual([endOfDay, firstOfYear])
    expect(ids(await exact('from=2024-01-01T00:00:00-03:00&to=2024-01-01T23:59:59.998-03:00'))).toEqual([firstOfYear])
    expect(ids(await exact('from=2024-01-02T02:59:59.999Z&to=2024-01-02T02:59:59.999Z'))).toEqual([endOfDay])
    expect(ids(await exact('from=2024-01-05&to=2024-01-01'))).toEqual([])

    for (const bad of ['yesterday', '2024-13-01', '2024-02-30', '2024-01-01T25:00:00Z', '1704078000000', '2024-1-1']) {
      const r = await audit(t, c.key, `from=${encodeURIComponent(bad)}`)
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('VALIDATION_ERROR')
      expect(r.body.details[0].message).toMatch(/^(must look like "2026-11-01" or "2026-11-01T03:00:00Z"|expected YYYY-MM-DD or an ISO 8601 date-time)$/)
      expect((await audit(t, c.key, `to=${encodeURIComponent(bad)}`)).status).toBe(400)
    }
  })

  test("date bounds on live rows: today's Argentina date includes them, yesterday's excludes them", async () => {
    const t = await testApp()
    const c = await t.newCompany()
    await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Hoy', type: 1 } })
    const [row] = (await audit(t, c.key, 'table=clients')).body.data
    const artDay = (ms: number) => new Date(ms - 3 * 3600_000).toISOString().slice(0, 10)
    const at = Date.parse(row.timestamp)
    const today = artDay(at)
    const yesterday = artDay(at - 24 * 3600_000)
    const tomorrow = artDay(at + 24 * 3600_000)
    expect(ids(await audit(t, c.key, `table=clients&from=${today}&to=${today}`))).toEqual([row.id])
    expect(ids(await audit(t, c.key, `table=clients&from=${yesterday}&to=${today}`))).toEqual([row.id])
    expect(ids(await audit(t, c.key, `table=clients&to=${yesterday}`))).toEqual([])
    expect(ids(await audit(t, c.key, `table=clients&from=${tomorrow}`))).toEqual([])
    expect(ids(await audit(t, c.key, `table=clients&from=${encodeURIComponent(row.timestamp)}&to=${encodeURIComponent(row.timestamp)}`))).toEqual([row.id])
  })

  test('pagination: default 50, at most 100, newest first, exact total', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    for (let i = 0; i < 5; i++) await auditRowAt(t, c.id, `2024-03-0${i + 1}T12:00:00.000Z`, i + 1)
    const first = await audit(t, c.key, 'table=clients&pageSize=2')
    expect(first.body.pagination).toEqual({ page: 1, pageSize: 2, total: 5, totalPages: 3 })
    expect(first.body.data.map((e: any) => e.entity_id)).toEqual([5, 4])
    const last = await audit(t, c.key, 'table=clients&pageSize=2&page=3')
    expect(last.body.data.map((e: any) => e.entity_id)).toEqual([1])
    const beyond = await audit(t, c.key, 'table=clients&pageSize=2&page=4')
    expect(beyond.status).toBe(200)
    expect(beyond.body).toEqual({ data: [], pagination: { page: 4, pageSize: 2, total: 5, totalPages: 3 } })
    expect((await audit(t, c.key, 'pageSize=100')).status).toBe(200)
    for (const q of ['pageSize=101', 'pageSize=0', 'page=0', 'page=-1', 'pageSize=abc', 'employee_id=0']) {
      const r = await audit(t, c.key, q)
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('VALIDATION_ERROR')
      expect(r.body.details.map((d: any) => d.field)).toEqual([q.split('=')[0]])
    }
  })

  test('permissions and tenancy', async () => {
    const t = await testApp()
    const a = await t.newCompany()
    const b = await t.newCompany()
    const cli = (await t.request('POST', '/api/clients', { key: a.key, body: { name: 'Solo A', type: 1 } })).body
    expect((await audit(t, '')).status).toBe(401)
    expect((await t.request('GET', '/api/audit-logs', { key: 'fos_000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' })).status).toBe(401)
    const noPerm = await a.employee(['clients.view'])
    const denied = await audit(t, noPerm.key)
    expect(denied.status).toBe(403)
    expect(denied.body.code).toBe('FORBIDDEN')
    const auditor = await a.employee(['audit.view'])
    expect((await audit(t, auditor.key, 'table=clients')).body.data.map((e: any) => e.entity_id)).toEqual([cli.id])
    const fromB = await audit(t, b.key, 'table=clients')
    expect(fromB.body.data).toEqual([])
    const bAll = await audit(t, b.key)
    expect(bAll.body.data.every((e: any) => e.entity === 'api_keys' || e.entity === 'companies')).toBe(true)
    expect(bAll.body.data.some((e: any) => e.entity === 'companies' && e.entity_id === a.id)).toBe(false)
  })

  test('a client-scoped employee sees only operation and transaction rows of visible operations', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const type = (await t.request('POST', '/api/operation-types', { key: c.key, body: { name: 'Cambio', kind: 'exchange' } })).body
    const mk = async (name: string) =>
      (await t.request('POST', '/api/clients', { key: c.key, body: { name, type: 1, accounts: [{ currency_name: 'USD' }, { currency_name: 'ARS' }] } })).body
    const mine = await mk('Mine')
    const theirs = await mk('Theirs')
    const visible = await operationFor(t, c, type.id, mine.id, mine.accounts.map((a: any) => a.id))
    const hidden = await operationFor(t, c, type.id, theirs.id, theirs.accounts.map((a: any) => a.id))
    // Visible through a transaction on one of the employee's accounts, though its client is another.
    const viaLeg = await operationFor(t, c, type.id, theirs.id, [theirs.accounts[0].id, mine.accounts[1].id])
    const scoped = await c.employee(['audit.view'], [mine.id])

    const all = await audit(t, scoped.key)
    expect(all.status).toBe(200)
    const seen = all.body.data.map((e: any) => `${e.entity}:${e.entity_id}`).sort()
    const expected = [
      `operations:${visible.id}`,
      ...visible.transactions.map((x) => `transactions:${x.id}`),
      `operations:${viaLeg.id}`,
      ...viaLeg.transactions.map((x) => `transactions:${x.id}`),
    ]
    expect(seen).toEqual(expect.arrayContaining(expected))
    expect(seen.every((s: string) => s.startsWith('operations:') || s.startsWith('transactions:'))).toBe(true)
    expect(seen).not.toContain(`operations:${hidden.id}`)
    for (const x of hidden.transactions) expect(seen).not.toContain(`transactions:${x.id}`)
    expect(all.body.pagination.total).toBe(all.body.data.length)

    const ops = await audit(t, scoped.key, 'table=operation')
    expect(ops.body.data.map((e: any) => e.entity_id).sort()).toEqual([visible.id, viaLeg.id].sort())
    for (const table of ['clients', 'account', 'api_keys', 'companies']) {
      const r = await audit(t, scoped.key, `table=${table}`)
      expect(r.status).toBe(200)
      expect(r.body).toEqual({ data: [], pagination: { page: 1, pageSize: 50, total: 0, totalPages: 0 } })
    }
    expect((await audit(t, scoped.key, 'table=nope')).status).toBe(400)

    const unscoped = await c.employee(['audit.view'])
    const everything = await audit(t, unscoped.key, 'table=operations')
    expect(everything.body.pagination.total).toBe(3)
  })

  test('no response ever carries a key hash or secret', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const emp = await c.employee(['audit.view', 'clients.edit'])
    const extra = await t.request('POST', `/api/employees/${emp.id}/api-keys`, { key: c.key, body: { name: 'second' } })
    await t.request('DELETE', `/api/api-keys/${extra.body.id}`, { key: c.key })
    await t.request('POST', '/api/clients', { key: emp.key, body: { name: 'x', type: 1 } })
    // A key is fos_<12 hex prefix>_<secret>; the secret part alone must not leak either.
    const secrets = [c.key, emp.key, extra.body.key].flatMap((k) => [k, sha256(k), k.slice('fos_'.length + 13)])

    const bodies: string[] = []
    for (const key of [c.key, emp.key]) {
      for (const q of ['', 'table=api_keys', 'table=api_key&action=update', 'table=employees']) {
        const r = await audit(t, key, q)
        expect(r.status).toBe(200)
        bodies.push(JSON.stringify(r.body))
      }
    }
    const keyRows = JSON.parse(bodies[1]).data
    expect(keyRows.length).toBeGreaterThanOrEqual(3)
    expect(keyRows.some((e: any) => e.action === 'update' && e.after.revoked_at)).toBe(true)
    for (const e of keyRows) {
      for (const snap of [e.before, e.after]) if (snap) expect(snap).not.toHaveProperty('key_hash')
      expect(e.changes.map((x: any) => x.field)).not.toContain('key_hash')
    }
    for (const body of bodies) for (const s of secrets) expect(body).not.toContain(s)
  })
})
