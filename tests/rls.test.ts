/**
 * Row-level security (db/sql/rls.sql): inside `write()` the transaction acts as a role that is neither owner nor
 * superuser, so even a query that forgets its company filter sees and changes only the caller's company.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { clients } from '../db/schema'
import { tenantTx, write } from '../server/lib/write'
import type { Caller } from '../server/access/caller'
import { testApp, type Company, type TestApp } from './helpers'

beforeAll(async () => {
  await testApp()
}, 120_000)

async function tenant(t: TestApp) {
  const c = await t.newCompany()
  const post = async (path: string, body: unknown) => {
    const r = await t.request('POST', path, { key: c.key, body })
    if (r.status !== 201) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`)
    return r.body
  }
  const type = await post('/api/operation-types', { name: 'Otro', kind: 'other' })
  const client = await post('/api/clients', { name: 'Caja', type: 0, accounts: [{ currency_name: 'ARS' }] })
  const op = await post('/api/operations', {
    operation_type_id: type.id,
    status: 'completed',
    transactions: [{ account_id: client.accounts[0].id, amount: 100 }],
  })
  return { c, clientId: client.id as number, accountId: client.accounts[0].id as number, operationId: op.id as number }
}

const callerOf = (c: Company): Caller => ({ companyId: c.id, keyId: 0, employee: null, modules: { mesas: false, ventanilla: false } })

describe('row-level security', () => {
  test('a write transaction without company filters sees only its company and cannot change another', async () => {
    const t = await testApp()
    const A = await tenant(t)
    const B = await tenant(t)
    const db = t.ctx.database
    const aBefore = await t.request('GET', `/api/clients/${A.clientId}`, { key: A.c.key })
    const [aAudit] = await db.rows<{ n: number }>(sql`select count(*)::int as n from audit_logs where company_id = ${A.c.id}`)

    const seen = await write(t.ctx, callerOf(B.c), async (tx) => ({
      clients: await db.rows<{ company_id: number }>(sql`select company_id from clients`, tx),
      accounts: await db.rows<{ company_id: number }>(sql`select company_id from accounts`, tx),
      operations: await db.rows<{ company_id: number }>(sql`select company_id from operations`, tx),
      transactions: await db.rows<{ company_id: number }>(sql`select company_id from transactions`, tx),
      companies: await db.rows<{ id: number }>(sql`select id from companies`, tx),
      audit: await db.rows<{ company_id: number }>(sql`select distinct company_id from audit_logs`, tx),
      drizzle: await tx.select({ companyId: clients.companyId }).from(clients),
    }))
    for (const [table, rows] of Object.entries(seen)) {
      expect(rows.length, table).toBeGreaterThan(0)
      for (const row of rows) expect(Object.values(row)[0], table).toBe(B.c.id)
    }
    // The owner, outside write(), still sees both companies: the policy is what hid A above.
    const [both] = await db.rows<{ n: number }>(sql`select count(distinct company_id)::int as n from clients where company_id in (${A.c.id}, ${B.c.id})`)
    expect(both.n).toBe(2)

    const touched = await write(t.ctx, callerOf(B.c), async (tx) => ({
      byId: await db.rows(sql`update clients set name = 'Tomado' where id = ${A.clientId} returning id`, tx),
      all: await db.rows<{ id: number }>(sql`update clients set description = 'sin filtro' returning id`, tx),
      balances: await db.rows(sql`update accounts set balance = 0 where id = ${A.accountId} returning id`, tx),
      cancel: await db.rows(sql`update transactions set status = 'cancelled' where operation_id = ${A.operationId} returning id`, tx),
      gone: await db.rows(sql`delete from operation_attachments where operation_id = ${A.operationId} returning id`, tx),
    }))
    expect(touched.byId).toEqual([])
    expect(touched.all.map((r) => r.id)).toEqual([B.clientId])
    expect(touched.balances).toEqual([])
    expect(touched.cancel).toEqual([])
    expect(touched.gone).toEqual([])

    // A row written for another company is refused by the policy's check, and the whole transaction rolls back.
    const forged = await write(t.ctx, callerOf(B.c), async (tx) => {
      await db.rows(sql`insert into tags (company_id, name, color) values (${B.c.id}, 'Legítimo', '#000000')`, tx)
      await db.rows(sql`insert into tags (company_id, name, color) values (${A.c.id}, 'Intruso', '#000000')`, tx)
    }).catch((e: Error & { cause?: Error }) => (e.cause ?? e).message)
    expect(forged).toMatch(/row-level security/)
    expect((await t.request('GET', '/api/tags', { key: B.c.key })).body.data).toEqual([])

    const aAfter = await t.request('GET', `/api/clients/${A.clientId}`, { key: A.c.key })
    expect(aAfter.body).toEqual(aBefore.body)
    expect(aAfter.body.accounts[0].balance).toBe(100)
    const [aAuditAfter] = await db.rows<{ n: number }>(sql`select count(*)::int as n from audit_logs where company_id = ${A.c.id}`)
    expect(aAuditAfter.n).toBe(aAudit.n)
    expect((await t.request('GET', `/api/clients/${B.clientId}`, { key: B.c.key })).body.description).toBe('sin filtro')
    expect((await t.request('GET', '/api/tags', { key: A.c.key })).body.data).toEqual([])
  })

  test('inside write() and a snapshot tenantTx() the role is neither owner nor superuser and bypasses nothing', async () => {
    const t = await testApp()
    const B = await tenant(t)
    const db = t.ctx.database
    const who = (tx: Parameters<Parameters<typeof write>[2]>[0]) =>
      db.rows<{ user: string; session: string; superuser: boolean; bypass: boolean; owns: number; company: string }>(
        sql`select current_user as user, session_user as session, r.rolsuper as superuser, r.rolbypassrls as bypass,
                   (select count(*)::int from pg_class c where c.relowner = r.oid) as owns,
                   current_setting('app.company_id', true) as company
              from pg_roles r where r.rolname = current_user`,
        tx,
      )
    for (const [role] of [await write(t.ctx, callerOf(B.c), who), await tenantTx(t.ctx, callerOf(B.c), 'snapshot', who)]) {
      expect(role).toEqual({ user: 'fos_app', session: role.session, superuser: false, bypass: false, owns: 0, company: String(B.c.id) })
      expect(role.session).not.toBe('fos_app')
    }
    // The role lasts only as long as the transaction.
    const [after] = await db.rows<{ user: string }>(sql`select current_user as user`)
    expect(after.user).not.toBe('fos_app')

    // Every company table is under a policy for that role.
    const uncovered = await db.rows<{ table_name: string }>(sql`
      select c.relname as table_name from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = current_schema() and c.relkind = 'r'
         and (c.relname = 'companies' or exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'company_id' and not a.attisdropped))
         and (not c.relrowsecurity or not exists (select 1 from pg_policy p where p.polrelid = c.oid and p.polname = 'tenant_isolation'))`)
    expect(uncovered).toEqual([])
  })
})
