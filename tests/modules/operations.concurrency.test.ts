import { beforeAll, describe, expect } from 'bun:test'
import { sql } from 'drizzle-orm'
import { postgresTest, testApp } from '../helpers'
import { balanceOf, ledgerCheck, ledgerSetup, seedClient } from './operations.fixtures'

/** A small deterministic generator, so a failing interleaving can be replayed from its seed. */
function prng(seed: number) {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let x = s
    x = Math.imul(x ^ (x >>> 15), x | 1)
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61)
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

// Building the shared app (migrations included) can take long on a busy machine; it is not a test's own time.
beforeAll(async () => {
  await testApp()
}, 120_000)

describe('operations under concurrency', () => {
  postgresTest('20 concurrent approves of one operation: exactly one 200, balance moved once', async () => {
    const t = await testApp()
    const s = await ledgerSetup(t)
    const op = await t.request('POST', '/api/operations', {
      key: s.c.key,
      body: {
        operation_type_id: s.typeId,
        transactions: [
          { account_id: s.caja.accounts[0], amount: '250.125' },
          { account_id: s.cli.accounts[0], amount: '-250.125' },
        ],
      },
    })
    expect(op.status).toBe(201)
    const replies = await Promise.all(
      Array.from({ length: 20 }, () => t.request('POST', `/api/operations/${op.body.id}/approve`, { key: s.c.key })),
    )
    const statuses = replies.map((r) => r.status)
    expect(statuses.filter((x) => x === 200)).toHaveLength(1)
    expect(statuses.filter((x) => x === 409)).toHaveLength(19)
    expect(replies.filter((r) => r.status === 409).every((r) => r.body.code === 'NOT_ALL_PENDING')).toBe(true)
    expect(await balanceOf(t, s.caja.accounts[0])).toBe('250.125000')
    expect(await balanceOf(t, s.cli.accounts[0])).toBe('-250.125000')
  })

  postgresTest('pending creates over a client\'s accounts in descending order racing its deletion: each answers, none deadlocks', async () => {
    const t = await testApp()
    const s = await ledgerSetup(t)
    for (let round = 0; round < 10; round++) {
      const victim = await seedClient(t, s.c, { currencies: ['ARS', 'USD', 'EUR'], name: `Baja ${round}` })
      const [a, b, c] = victim.accounts
      // Legs that go against the ascending order a client deletion locks the accounts in.
      const legs = [{ account_id: c, amount: '1' }, { account_id: b, amount: '2' }, { account_id: a, amount: '-3' }]
      const replies = await Promise.all([
        ...Array.from({ length: 4 }, () => t.request('POST', '/api/operations', { key: s.c.key, body: { operation_type_id: s.typeId, transactions: legs } })),
        t.request('DELETE', `/api/clients/${victim.id}`, { key: s.c.key }),
        ...Array.from({ length: 4 }, () => t.request('POST', '/api/operations', { key: s.c.key, body: { operation_type_id: s.typeId, transactions: legs } })),
      ])
      const deleted = replies[4]
      expect(deleted.status).toBe(200)
      for (const r of [...replies.slice(0, 4), ...replies.slice(5)]) {
        expect([201, 422]).toContain(r.status)
        if (r.status === 422) expect(r.body.code).toBe('UNKNOWN_ACCOUNT')
      }
    }
  })

  postgresTest('two concurrent creates with one Idempotency-Key make one operation', async () => {
    const t = await testApp()
    const s = await ledgerSetup(t)
    const body = {
      operation_type_id: s.typeId,
      status: 'completed',
      transactions: [{ account_id: s.caja.accounts[0], amount: '9.99' }],
    }
    const headers = { 'idempotency-key': `race-${crypto.randomUUID()}` }
    const replies = await Promise.all(
      Array.from({ length: 8 }, () => t.request('POST', '/api/operations', { key: s.c.key, body, headers })),
    )
    expect(replies.map((r) => r.status)).toEqual(Array(8).fill(201))
    expect(new Set(replies.map((r) => r.body.id)).size).toBe(1)
    const [row] = await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from operations where company_id = ${s.c.id}`)
    expect(row.n).toBe(1)
    expect(await balanceOf(t, s.caja.accounts[0])).toBe('9.990000')
  })

  postgresTest(
    'random approve / revert / cancel over shared accounts keeps balance == sum(completed) and never answers 5xx',
    async () => {
      const t = await testApp()
      const seed = Number(process.env.LEDGER_SEED ?? 20260101)
      const rand = prng(seed)
      const s = await ledgerSetup(t)
      const extra = await seedClient(t, s.c, { currencies: ['ARS', 'USD', 'EUR'], name: 'Mesa' })
      const accountIds = [...s.caja.accounts, ...s.cli.accounts, ...extra.accounts]
      const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)]

      const ops: number[] = []
      const createRandom = async () => {
        const legs = 1 + Math.floor(rand() * 4)
        const transactions = Array.from({ length: legs }, () => ({
          account_id: pick(accountIds),
          amount: `${rand() < 0.5 ? '-' : ''}${Math.floor(rand() * 1000) + 1}.${String(Math.floor(rand() * 1e6)).padStart(6, '0')}`,
        }))
        const r = await t.request('POST', '/api/operations', {
          key: s.c.key,
          body: { operation_type_id: s.typeId, status: rand() < 0.3 ? 'completed' : 'pending', transactions },
        })
        if (r.status !== 201) throw new Error(`seed ${seed}: create ${r.status} ${JSON.stringify(r.body)}`)
        ops.push(r.body.id)
      }
      for (let i = 0; i < 30; i++) await createRandom()

      const actions = ['approve', 'approve', 'revert', 'cancel']
      const seen = new Map<number, number>()
      const worker = async (rounds: number) => {
        for (let i = 0; i < rounds; i++) {
          // Creates that complete at once race the transitions for the same account locks.
          if (rand() < 0.1) {
            await createRandom()
            continue
          }
          const r = await t.request('POST', `/api/operations/${pick(ops)}/${pick(actions)}`, { key: s.c.key })
          seen.set(r.status, (seen.get(r.status) ?? 0) + 1)
          if (r.status >= 500) throw new Error(`seed ${seed}: ${r.status} ${JSON.stringify(r.body)}`)
        }
      }
      await Promise.all(Array.from({ length: 16 }, () => worker(25)))

      expect([...seen.keys()].every((code) => code === 200 || code === 409)).toBe(true)
      expect(seen.get(200) ?? 0).toBeGreaterThan(0)
      const rows = await ledgerCheck(t, accountIds)
      expect(rows).toHaveLength(accountIds.length)
      for (const row of rows) expect({ id: row.id, balance: row.balance }).toEqual({ id: row.id, balance: row.completed })
      const derived = await t.ctx.database.rows<{ id: number; status: string; expected: string }>(sql`
        select o.id, o.status,
               case when bool_and(x.status = 'pending') then 'pending' when bool_and(x.status = 'completed') then 'completed'
                    when bool_and(x.status = 'cancelled') then 'cancelled' else 'mixed' end as expected
        from operations o join transactions x on x.operation_id = o.id
        where o.company_id = ${s.c.id} group by o.id`)
      expect(derived.filter((d) => d.status !== d.expected)).toEqual([])
    },
    120_000,
  )
})
