import { expect } from 'bun:test'
import { sql } from 'drizzle-orm'
import { accounts, clients } from '../../db/schema'
import type { Company, TestApp } from '../helpers'

/** Clients and accounts belong to another module; ledger tests seed them straight into the database. */
export async function seedClient(t: TestApp, c: Company, opts: { type?: 0 | 1; currencies?: string[]; name?: string } = {}) {
  const [client] = await t.ctx.db
    .insert(clients)
    .values({ companyId: c.id, name: opts.name ?? 'Cliente', type: opts.type ?? 1 })
    .returning()
  const accs = await t.ctx.db
    .insert(accounts)
    .values((opts.currencies ?? ['ARS']).map((cur) => ({ companyId: c.id, clientId: client.id, name: cur, currencyName: cur })))
    .returning()
  return { id: client.id, accounts: accs.map((a) => a.id) }
}

/** The stored balance as Postgres prints it, so equality is exact. */
export async function balanceOf(t: TestApp, accountId: number): Promise<string> {
  const [row] = await t.ctx.database.rows<{ balance: string }>(sql`select balance::text as balance from accounts where id = ${accountId}`)
  return row.balance
}

/** For every given account: the stored balance next to the sum of its completed transactions. */
export async function ledgerCheck(t: TestApp, accountIds: number[]) {
  return t.ctx.database.rows<{ id: number; balance: string; completed: string }>(sql`
    select a.id, a.balance::text as balance,
           coalesce((select sum(amount) from transactions x where x.account_id = a.id and x.status = 'completed'), 0)::numeric(28,6)::text as completed
    from accounts a where a.id in (${sql.join(accountIds.map((i) => sql`${i}`), sql`, `)}) order by a.id`)
}

export async function ledgerSetup(t: TestApp) {
  const c = await t.newCompany()
  const type = await t.request('POST', '/api/operation-types', { key: c.key, body: { name: 'Cambio', kind: 'exchange' } })
  expect(type.status).toBe(201)
  const caja = await seedClient(t, c, { type: 0, currencies: ['ARS', 'USD'], name: 'Caja' })
  const cli = await seedClient(t, c, { type: 1, currencies: ['ARS'], name: 'Juan' })
  return { c, typeId: type.body.id as number, caja, cli }
}
