import { describe, expect, test } from 'bun:test'
import { testApp, type Company, type TestApp } from '../helpers'
import { accounts, clients } from '../../db/schema'

/** Clients and accounts are another module's API; the ledger tests seed them straight into the database. */
async function seedClient(t: TestApp, c: Company, opts: { type?: 0 | 1; currencies?: string[]; name?: string } = {}) {
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

async function balanceOf(t: TestApp, accountId: number) {
  const [row] = await t.ctx.database.rows<{ balance: string }>(
    (await import('drizzle-orm')).sql`select balance::text from accounts where id = ${accountId}`,
  )
  return row.balance
}

async function setup(t: TestApp) {
  const c = await t.newCompany()
  const type = await t.request('POST', '/api/operation-types', { key: c.key, body: { name: 'Cambio', kind: 'exchange' } })
  expect(type.status).toBe(201)
  const caja = await seedClient(t, c, { type: 0, currencies: ['ARS', 'USD'], name: 'Caja' })
  const cli = await seedClient(t, c, { type: 1, currencies: ['ARS'], name: 'Juan' })
  return { c, typeId: type.body.id as number, caja, cli }
}

describe('operations ledger', () => {
  test('create, read, approve moves balances once', async () => {
    const t = await testApp()
    const { c, typeId, caja, cli } = await setup(t)
    const created = await t.request('POST', '/api/operations', {
      key: c.key,
      body: {
        operation_type_id: typeId,
        client_id: cli.id,
        transactions: [
          { account_id: caja.accounts[0], amount: '100.5' },
          { account_id: cli.accounts[0], amount: -100.5 },
        ],
      },
    })
    expect(created.status).toBe(201)
    expect(created.body.status).toBe('pending')
    expect(created.body.transactions.map((x: any) => x.amount)).toEqual([100.5, -100.5])
    expect(created.body.transactions[0].currency).toBe('ARS')
    expect(created.body.attachments).toEqual([])
    const got = await t.request('GET', `/api/operations/${created.body.id}`, { key: c.key })
    expect(got.status).toBe(200)
    expect(got.body).toEqual(created.body)
    const ok = await t.request('POST', `/api/operations/${created.body.id}/approve`, { key: c.key })
    expect(ok.status).toBe(200)
    expect(ok.body).toEqual({ operation_id: created.body.id, message: expect.any(String), approved_transactions: 2 })
    expect(await balanceOf(t, caja.accounts[0])).toBe('100.500000')
    const again = await t.request('POST', `/api/operations/${created.body.id}/approve`, { key: c.key })
    expect(again.status).toBe(409)
    expect(again.body.code).toBe('NOT_ALL_PENDING')
    expect(await balanceOf(t, caja.accounts[0])).toBe('100.500000')
  })
})
