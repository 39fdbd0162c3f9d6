/**
 * Crash safety: a real server process (`bun server/main.ts`) under a concurrent write load is killed with
 * SIGKILL after a seeded number of acknowledged writes, restarted on the same database, and checked:
 * every write answered 2xx is there, nothing is half-applied, and balance == sum(completed) on every account.
 * Once on Postgres and once on the embedded PGlite, several rounds each. Replay with `CRASH_SEED=<n>`.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import Decimal from 'decimal.js'
import postgres from 'postgres'
import type { Subprocess } from 'bun'
import { SignJWT } from 'jose'
import { drizzle } from 'drizzle-orm/postgres-js'
import { openDatabase, rowsOf } from '../db/client'
import { postgresTest, SUPERADMIN_EMAIL, SUPERADMIN_SECRET } from './helpers'
import { startServer } from './server'

const SEED = Number(process.env.CRASH_SEED ?? 20_230_610)
const ROUNDS = 3
const WORKERS = 8
/** The kill comes after this many acknowledged writes, drawn per round from the seed. */
const KILL_AFTER = { min: 20, max: 60 }
const running = new Set<Subprocess>()
const dirs: string[] = []

afterAll(() => {
  for (const p of running) if (p.exitCode === null) p.kill('SIGKILL')
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** mulberry32: small, seedable, good enough to pick actions and amounts. */
function prng(seed: number) {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = Math.imul(a ^ (a >>> 15), 1 | a)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
  return { next, int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)), pick: <T>(xs: T[]) => xs[Math.floor(next() * xs.length)] }
}

/** Each run logs to its own file under the data directory, kept for a failure's post-mortem. */
async function startLogged(dataDir: string, databaseUrl: string | undefined, run: number) {
  const log = Bun.file(join(dataDir, `server-${run}.log`))
  const server = await startServer({ dataDir, databaseUrl, stdout: log, stderr: log, env: { SIGNING_SECRET: 'crash-test-signing-secret-0123456789' } })
  running.add(server.proc)
  return server
}

async function api(base: string, method: string, path: string, init: { key?: string; bearer?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...init.headers }
  if (init.key) headers['x-api-key'] = init.key
  if (init.bearer) headers.authorization = `Bearer ${init.bearer}`
  if (init.body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    signal: AbortSignal.timeout(30_000),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null }
}

async function ok(base: string, method: string, path: string, init: Parameters<typeof api>[3] = {}) {
  const res = await api(base, method, path, init)
  if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

type Status = 'pending' | 'completed' | 'cancelled'
interface Leg {
  account_id: number
  amount: string
}
interface CreateBody {
  operation_type_id: number
  description: string
  status: 'pending' | 'completed'
  transactions: Leg[]
}
interface KnownOp {
  id: number
  legs: Leg[]
  status: Status
  /** The status an unanswered transition would have produced: the restart may show either. */
  maybe?: Status
  busy: boolean
}
interface Unanswered {
  key: string
  body: CreateBody
}

const TRANSITIONS: { action: 'approve' | 'revert' | 'cancel'; from: (s: Status) => boolean; to: Status; weight: number }[] = [
  { action: 'approve', from: (s) => s === 'pending', to: 'completed', weight: 3 },
  { action: 'revert', from: (s) => s === 'completed', to: 'pending', weight: 2 },
  { action: 'cancel', from: (s) => s !== 'cancelled', to: 'cancelled', weight: 1 },
]

interface World {
  base: string
  key: string
  typeId: number
  accounts: number[]
  ops: KnownOp[]
  unanswered: Unanswered[]
  acknowledged: number
}

function money(rng: ReturnType<typeof prng>): string {
  const cents = rng.int(1, 5_000_000)
  return `${rng.next() < 0.5 ? '-' : ''}${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`
}

/**
 * Workers create, approve, revert and cancel. An operation is driven by one worker at a time, so its
 * acknowledged transitions form a sequence and at most one unanswered transition is in flight at the kill.
 */
async function load(world: World, proc: Subprocess, rng: ReturnType<typeof prng>, round: number, killAfter: number) {
  let killed = false
  let seq = 0
  let acked = 0
  const unexpected: string[] = []
  const acknowledge = () => {
    world.acknowledged++
    if (++acked >= killAfter && !killed) {
      killed = true
      proc.kill('SIGKILL')
    }
  }
  const worker = async () => {
    while (!killed) {
      const roll = rng.next()
      const transition = roll < 0.55 ? TRANSITIONS[roll < 0.3 ? 0 : roll < 0.45 ? 1 : 2] : undefined
      const candidates = transition ? world.ops.filter((o) => !o.busy && o.maybe === undefined && transition.from(o.status)) : []
      if (transition && candidates.length > 0) {
        const op = rng.pick(candidates)
        op.busy = true
        let res: Awaited<ReturnType<typeof api>>
        try {
          res = await api(world.base, 'POST', `/api/operations/${op.id}/${transition.action}`, { key: world.key })
        } catch {
          op.maybe = transition.to
          op.busy = false
          return
        }
        op.busy = false
        if (res.status === 200) {
          op.status = transition.to
          acknowledge()
        } else unexpected.push(`${transition.action} ${op.id} from ${op.status}: ${res.status} ${JSON.stringify(res.body)}`)
        continue
      }
      const body: CreateBody = {
        operation_type_id: world.typeId,
        description: `crash round ${round} #${++seq}`,
        status: rng.next() < 0.4 ? 'completed' : 'pending',
        transactions: Array.from({ length: rng.int(1, 3) }, () => ({ account_id: rng.pick(world.accounts), amount: money(rng) })),
      }
      const key = `crash-${SEED}-${round}-${seq}`
      let res: Awaited<ReturnType<typeof api>>
      try {
        res = await api(world.base, 'POST', '/api/operations', { key: world.key, body, headers: { 'idempotency-key': key } })
      } catch {
        world.unanswered.push({ key, body })
        return
      }
      if (res.status === 201) {
        world.ops.push({ id: res.body.id, legs: body.transactions, status: body.status, busy: false })
        acknowledgedCreates.set(key, { body, id: res.body.id })
        acknowledge()
      } else unexpected.push(`create: ${res.status} ${JSON.stringify(res.body)}`)
    }
  }
  await Promise.all(Array.from({ length: WORKERS }, worker))
  await proc.exited
  expect(unexpected).toEqual([])
  expect(killed).toBe(true)
  return acked
}

/** This round's acknowledged creates by Idempotency-Key: a retry after the restart must answer the same operation. */
const acknowledgedCreates = new Map<string, { body: CreateBody; id: number }>()

async function checkAfterRestart(world: World) {
  // Retrying an unanswered create with its key settles it: either its commit is found and replayed, or it runs now.
  for (const u of world.unanswered.splice(0)) {
    const res = await api(world.base, 'POST', '/api/operations', { key: world.key, body: u.body, headers: { 'idempotency-key': u.key } })
    expect(res.status).toBe(201)
    world.ops.push({ id: res.body.id, legs: u.body.transactions, status: u.body.status, busy: false })
  }
  for (const [key, { body, id }] of acknowledgedCreates) {
    const again = await api(world.base, 'POST', '/api/operations', { key: world.key, body, headers: { 'idempotency-key': key } })
    expect({ key, status: again.status, id: again.body?.id }).toEqual({ key, status: 201, id })
  }
  acknowledgedCreates.clear()

  for (const op of world.ops) {
    const res = await api(world.base, 'GET', `/api/operations/${op.id}`, { key: world.key })
    expect({ id: op.id, status: res.status }).toEqual({ id: op.id, status: 200 })
    const allowed = op.maybe ? [op.status, op.maybe] : [op.status]
    const legs = res.body.transactions as { account_id: number; amount: number; status: Status }[]
    expect({ id: op.id, allowed: allowed.includes(res.body.status) }).toEqual({ id: op.id, allowed: true })
    expect(legs.map((l) => ({ account_id: l.account_id, amount: new Decimal(l.amount).toFixed(2) }))).toEqual(
      op.legs.map((l) => ({ account_id: l.account_id, amount: new Decimal(l.amount).toFixed(2) })),
    )
    expect(legs.map((l) => l.status)).toEqual(legs.map(() => res.body.status))
    op.status = res.body.status
    op.maybe = undefined
  }

  // Every operation the company has is one this test knows: no duplicate from a retried create.
  const listed: { id: number; status: Status; transactions: { account_id: number; amount: number; status: Status }[] }[] = []
  for (let page = 1; ; page++) {
    const res = await ok(world.base, 'GET', `/api/operations?page=${page}&pageSize=200`, { key: world.key })
    listed.push(...res.data)
    if (page >= res.pagination.totalPages) break
  }
  expect(listed.map((o) => o.id).sort((a, b) => a - b)).toEqual(world.ops.map((o) => o.id).sort((a, b) => a - b))

  const expected = new Map(world.accounts.map((a) => [a, new Decimal(0)]))
  for (const op of world.ops)
    if (op.status === 'completed') for (const leg of op.legs) expected.set(leg.account_id, expected.get(leg.account_id)!.plus(leg.amount))
  const fromApi = new Map(world.accounts.map((a) => [a, new Decimal(0)]))
  for (const op of listed) for (const x of op.transactions) if (x.status === 'completed') fromApi.set(x.account_id, fromApi.get(x.account_id)!.plus(x.amount))
  const clients = await ok(world.base, 'GET', '/api/clients?pageSize=200', { key: world.key })
  const balances = new Map<number, string>()
  for (const c of clients.data) for (const a of c.accounts) balances.set(a.id, new Decimal(a.balance).toFixed(6))
  for (const a of world.accounts) {
    expect({ account: a, balance: balances.get(a) }).toEqual({ account: a, balance: expected.get(a)!.toFixed(6) })
    expect({ account: a, completed: fromApi.get(a)!.toFixed(6) }).toEqual({ account: a, completed: expected.get(a)!.toFixed(6) })
  }
}

type Rows = <T>(query: ReturnType<typeof sql>) => Promise<T[]>

/** The same rules read straight from the tables, so nothing the API hides can break them. */
async function checkTables(rows: Rows, companyId: number) {
  const broken = await rows(sql`
    select a.id, a.balance::text as balance,
           coalesce((select sum(x.amount) from transactions x where x.account_id = a.id and x.status = 'completed'), 0)::numeric(28,6)::text as completed
    from accounts a
    where a.company_id = ${companyId}
      and a.balance <> coalesce((select sum(x.amount) from transactions x where x.account_id = a.id and x.status = 'completed'), 0)`)
  expect(broken).toEqual([])
  const halfApplied = await rows(sql`
    select o.id, o.status, array_agg(distinct x.status::text) as statuses, count(x.id)::int as legs
    from operations o left join transactions x on x.operation_id = o.id
    where o.company_id = ${companyId}
    group by o.id, o.status
    having count(x.id) = 0 or count(distinct x.status::text) <> 1 or min(x.status::text) <> o.status::text`)
  expect(halfApplied).toEqual([])
  const [{ n }] = await rows<{ n: number }>(sql`select count(*)::int as n from operations where company_id = ${companyId}`)
  return n
}

async function scenario(kind: 'postgres' | 'pglite', rng: ReturnType<typeof prng>) {
  const dataDir = mkdtempSync(join(tmpdir(), `fos-crash-${kind}-`))
  dirs.push(dataDir)
  const databaseUrl = kind === 'postgres' ? process.env.TEST_DATABASE_URL : undefined
  acknowledgedCreates.clear()
  let run = 0
  let server = await startLogged(dataDir, databaseUrl, ++run)

  const bearer = await new SignJWT({ email: SUPERADMIN_EMAIL })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(new TextEncoder().encode(SUPERADMIN_SECRET))
  const company = await ok(server.base, 'POST', '/api/superadmin/companies', { bearer, body: { name: `Crash ${kind} ${SEED}` } })
  const { key } = await ok(server.base, 'POST', `/api/superadmin/companies/${company.id}/api-keys`, { bearer, body: { name: 'load' } })
  const accounts: number[] = []
  for (const [name, type] of [['Caja central', 0], ['Cliente Pérez', 1]] as const) {
    const client = await ok(server.base, 'POST', '/api/clients', {
      key,
      body: { name, type, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] },
    })
    accounts.push(...client.accounts.map((a: { id: number }) => a.id))
  }
  const type = await ok(server.base, 'POST', '/api/operation-types', { key, body: { name: 'Carga', kind: 'other' } })
  const world: World = { base: server.base, key, typeId: type.id, accounts, ops: [], unanswered: [], acknowledged: 0 }

  const client = databaseUrl ? postgres(databaseUrl, { max: 1, onnotice: () => {} }) : undefined
  const pg = client && drizzle(client)
  let survived = 0
  let inFlight = 0
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      const killAfter = rng.int(KILL_AFTER.min, KILL_AFTER.max)
      await load(world, server.proc, rng, round, killAfter)
      inFlight += world.unanswered.length + world.ops.filter((o) => o.maybe).length
      running.delete(server.proc)
      expect(server.proc.signalCode).toBe('SIGKILL')

      if (pg) await checkTables(async (q) => rowsOf(await pg.execute(q)), company.id)
      else {
        // PGlite is one process: the directory is read here between the kill and the restart.
        const db = await openDatabase({ dataDir: join(dataDir, 'pglite') })
        try {
          await checkTables((q) => db.rows(q), company.id)
        } finally {
          await db.close()
        }
      }

      server = await startLogged(dataDir, databaseUrl, ++run)
      world.base = server.base
      await checkAfterRestart(world)
      survived++
    }
  } finally {
    await client?.end({ timeout: 1 })
    server.proc.kill('SIGTERM')
    await server.proc.exited
    running.delete(server.proc)
  }
  console.log(
    `[crash] ${kind}: survived ${survived} kill -9 rounds; ${world.acknowledged} acknowledged writes, ${inFlight} requests in flight at the kills, ${world.ops.length} operations checked (seed ${SEED})`,
  )
  return survived
}

describe('crash safety (kill -9 during a write load)', () => {
  postgresTest(
    'Postgres: acknowledged writes survive, none half-applied, balances hold',
    async () => {
      expect(await scenario('postgres', prng(SEED))).toBe(ROUNDS)
    },
    300_000,
  )

  test(
    'embedded PGlite: acknowledged writes survive, none half-applied, balances hold',
    async () => {
      expect(await scenario('pglite', prng(SEED + 1))).toBe(ROUNDS)
    },
    300_000,
  )
})
