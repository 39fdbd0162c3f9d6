/**
 * Model-based test of the ledger (contract §3) with fast-check commands on real Postgres: creates (pending or
 * completed, one at a time or in batches), approvals, reverts, cancellations, and pairs of them sent at once. After every step each account's
 * balance equals the sum of its completed amounts (and the model's figure), and every operation's and
 * transaction's status is the one §3's rules give. A pair sent at once must end as one of its two serial orders.
 * LEDGER_SEED replays a run.
 */
import { describe, expect } from 'bun:test'
import fc from 'fast-check'
import { sql } from 'drizzle-orm'
import { postgresTest, testApp, type Company, type TestApp } from '../helpers'
import { D, type Dec } from '../../server/lib/money'

const SEED = Number(process.env.LEDGER_SEED ?? Date.now() % 1_000_000_007)
const ACCOUNTS = 3

type TxStatus = 'pending' | 'completed' | 'cancelled'
type Action = 'approve' | 'revert' | 'cancel'

interface ModelOp {
  id: number
  legs: { account: number; amount: Dec; status: TxStatus }[]
}

interface Model {
  ops: ModelOp[]
}

interface Real {
  t: TestApp
  c: Company
  typeId: number
  accounts: number[]
}

const derived = (op: ModelOp) => {
  const s = new Set(op.legs.map((l) => l.status))
  return s.size === 1 ? [...s][0] : 'mixed'
}

/** What one action does to the model, and the answer it must get. */
function apply(op: ModelOp, action: Action): { status: number; code?: string; next: ModelOp } {
  const status = derived(op)
  const to = (from: TxStatus | null, target: TxStatus) => ({ ...op, legs: op.legs.map((l) => (from === null || l.status === from ? { ...l, status: target } : l)) })
  if (action === 'approve') return status === 'pending' ? { status: 200, next: to('pending', 'completed') } : { status: 409, code: 'NOT_ALL_PENDING', next: op }
  if (action === 'revert') return status === 'completed' ? { status: 200, next: to('completed', 'pending') } : { status: 409, code: 'NOT_ALL_COMPLETED', next: op }
  return status !== 'cancelled' ? { status: 200, next: to(null, 'cancelled') } : { status: 409, code: 'ALREADY_CANCELLED', next: op }
}

async function check(m: Model, r: Real) {
  const rows = await r.t.ctx.database.rows<{ id: number; balance: string; completed: string }>(
    sql`select a.id, a.balance::text as balance,
          coalesce((select sum(t.amount) from transactions t where t.account_id = a.id and t.status = 'completed'), 0)::text as completed
        from accounts a where a.company_id = ${r.c.id} order by a.id`,
  )
  for (const row of rows) {
    const expected = new D(0).plus(
      m.ops.flatMap((o) => o.legs).filter((l) => l.account === row.id && l.status === 'completed').reduce((s, l) => s.plus(l.amount), new D(0)),
    )
    expect({ account: row.id, balance: new D(row.balance).toFixed(6) }).toEqual({ account: row.id, balance: new D(row.completed).toFixed(6) })
    expect({ account: row.id, balance: new D(row.balance).toFixed(6) }).toEqual({ account: row.id, balance: expected.toFixed(6) })
  }
  const txs = await r.t.ctx.database.rows<{ operation_id: number; status: TxStatus; op_status: string }>(
    sql`select t.operation_id, t.status, o.status as op_status from transactions t join operations o on o.id = t.operation_id
        where o.company_id = ${r.c.id} order by t.operation_id, t.id`,
  )
  for (const op of m.ops) {
    const mine = txs.filter((x) => Number(x.operation_id) === op.id)
    expect({ op: op.id, legs: mine.map((x) => x.status), status: mine[0]?.op_status }).toEqual({
      op: op.id,
      legs: op.legs.map((l) => l.status),
      status: derived(op),
    })
  }
}

const amount = fc.oneof(
  fc.integer({ min: -100_000, max: 100_000 }).filter((n) => n !== 0),
  fc
    .tuple(fc.integer({ min: -9999, max: 9999 }), fc.integer({ min: 1, max: 999_999 }))
    .map(([i, f]) => `${i < 0 ? '-' : ''}${Math.abs(i)}.${String(f).padStart(6, '0')}`),
)

class Create implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly legs: { account: number; amount: number | string }[],
    readonly completed: boolean,
  ) {}
  check = () => true
  async run(m: Model, r: Real) {
    const res = await r.t.request('POST', '/api/operations', {
      key: r.c.key,
      body: {
        operation_type_id: r.typeId,
        ...(this.completed && { status: 'completed' }),
        transactions: this.legs.map((l) => ({ account_id: r.accounts[l.account], amount: l.amount })),
      },
    })
    expect(res.status).toBe(201)
    m.ops.push({
      id: res.body.id,
      legs: this.legs.map((l) => ({ account: r.accounts[l.account], amount: new D(String(l.amount)), status: this.completed ? 'completed' : 'pending' })),
    })
    await check(m, r)
  }
  toString = () => `create(${this.completed ? 'completed' : 'pending'}, ${JSON.stringify(this.legs)})`
}

class Act implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly action: Action,
    readonly pick: number,
  ) {}
  check = (m: Readonly<Model>) => m.ops.length > 0
  async run(m: Model, r: Real) {
    const i = this.pick % m.ops.length
    const want = apply(m.ops[i], this.action)
    const res = await r.t.request('POST', `/api/operations/${m.ops[i].id}/${this.action}`, { key: r.c.key })
    expect({ status: res.status, code: res.body.code }).toEqual({ status: want.status, code: want.code })
    m.ops[i] = want.next
    await check(m, r)
  }
  toString = () => `${this.action}(#${this.pick})`
}

/** `POST /api/operations/batch`: all the creates or none, answered in order. */
class Batch implements fc.AsyncCommand<Model, Real> {
  constructor(readonly items: Create[]) {}
  check = () => true
  async run(m: Model, r: Real) {
    const res = await r.t.request('POST', '/api/operations/batch', {
      key: r.c.key,
      body: {
        operations: this.items.map((item) => ({
          operation_type_id: r.typeId,
          ...(item.completed && { status: 'completed' }),
          transactions: item.legs.map((l) => ({ account_id: r.accounts[l.account], amount: l.amount })),
        })),
      },
    })
    expect(res.status).toBe(201)
    expect(res.body.data).toHaveLength(this.items.length)
    this.items.forEach((item, i) =>
      m.ops.push({
        id: res.body.data[i].id,
        legs: item.legs.map((l) => ({ account: r.accounts[l.account], amount: new D(String(l.amount)), status: item.completed ? 'completed' : 'pending' })),
      }),
    )
    await check(m, r)
  }
  toString = () => `batch(${this.items.map(String).join(', ')})`
}

/** Two actions sent at once: the answers and the final state are those of one of the two serial orders. */
class Pair implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly a: { action: Action; pick: number },
    readonly b: { action: Action; pick: number },
  ) {}
  check = (m: Readonly<Model>) => m.ops.length > 0
  async run(m: Model, r: Real) {
    const ia = this.a.pick % m.ops.length
    const ib = this.b.pick % m.ops.length
    const serial = (first: 'a' | 'b') => {
      const ops = [...m.ops]
      const order = first === 'a' ? [['a', ia, this.a.action], ['b', ib, this.b.action]] : [['b', ib, this.b.action], ['a', ia, this.a.action]]
      const answers: Record<string, number> = {}
      for (const [name, i, action] of order as [string, number, Action][]) {
        const out = apply(ops[i], action)
        answers[name] = out.status
        ops[i] = out.next
      }
      return { ops, answers }
    }
    const [ra, rb] = await Promise.all([
      r.t.request('POST', `/api/operations/${m.ops[ia].id}/${this.a.action}`, { key: r.c.key }),
      r.t.request('POST', `/api/operations/${m.ops[ib].id}/${this.b.action}`, { key: r.c.key }),
    ])
    const got = { a: ra.status, b: rb.status }
    const orders = [serial('a'), serial('b')].filter((o) => o.answers.a === got.a && o.answers.b === got.b)
    expect({ got, possible: orders.length > 0 }).toEqual({ got, possible: true })
    // Both orders may give the same answers with different states only when both touch one operation; the database
    // says which one happened.
    const states = await r.t.ctx.database.rows<{ operation_id: number; status: TxStatus }>(
      sql`select operation_id, status from transactions where operation_id in (${m.ops[ia].id}, ${m.ops[ib].id}) order by operation_id, id`,
    )
    const matching = orders.find((o) =>
      [ia, ib].every((i) => {
        const real = states.filter((s) => Number(s.operation_id) === o.ops[i].id).map((s) => s.status)
        return JSON.stringify(real) === JSON.stringify(o.ops[i].legs.map((l) => l.status))
      }),
    )
    expect(matching).toBeDefined()
    m.ops = matching!.ops
    await check(m, r)
  }
  toString = () => `pair(${this.a.action}#${this.a.pick} ∥ ${this.b.action}#${this.b.pick})`
}

const action = fc.constantFrom<Action>('approve', 'revert', 'cancel')
const pick = fc.nat({ max: 50 })
const create = fc
  .tuple(fc.array(fc.record({ account: fc.nat({ max: ACCOUNTS - 1 }), amount }), { minLength: 1, maxLength: 4 }), fc.boolean())
  .map(([legs, completed]) => new Create(legs, completed))
const commands = [
  create,
  fc.array(create, { minLength: 1, maxLength: 4 }).map((items) => new Batch(items)),
  fc.tuple(action, pick).map(([a, p]) => new Act(a, p)),
  fc.tuple(fc.record({ action, pick }), fc.record({ action, pick })).map(([a, b]) => new Pair(a, b)),
]

describe('ledger model', () => {
  postgresTest(
    `create, batch, approve, revert, cancel and concurrent pairs keep balances equal to completed sums and statuses per §3 (seed ${SEED})`,
    async () => {
      console.log(`[ledger-model] seed ${SEED} (replay with LEDGER_SEED=${SEED})`)
      const t = await testApp()
      await fc.assert(
        fc.asyncProperty(fc.commands(commands, { maxCommands: 30 }), async (cmds) => {
          const c = await t.newCompany()
          const type = await t.request('POST', '/api/operation-types', { key: c.key, body: { name: 'Mov', kind: 'other' } })
          const client = await t.request('POST', '/api/clients', {
            key: c.key,
            body: { name: 'Caja', type: 0, accounts: Array.from({ length: ACCOUNTS }, (_, i) => ({ currency_name: ['ARS', 'USD', 'EUR'][i] })) },
          })
          const real: Real = { t, c, typeId: type.body.id, accounts: client.body.accounts.map((a: { id: number }) => a.id) }
          await fc.asyncModelRun(() => ({ model: { ops: [] }, real }), cmds)
        }),
        { seed: SEED, numRuns: 20 },
      )
    },
    240_000,
  )
})
