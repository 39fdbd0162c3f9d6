/**
 * The write path at real tenant sizes, each figure beside its plain-SQL ceiling measured in the same run, for a tenant
 * of 5,000 and of 50,000 clients (two accounts each) in two states of statistics:
 *
 * - fresh: the tenant's rows were added after the last ANALYZE (a branch migrating its data into a new database);
 * - skewed: 99 other tenants fill the statistics and the tenant, added after the last ANALYZE, is missing from them.
 *
 * Autovacuum is off on the tables, so the state holds for the whole measurement. Every create ceiling also writes the
 * outbox's event row for each created record (the object as its GET renders it, from the rows just inserted), as the
 * API does since it records events; nothing else is added to it. Figures, each per state:
 *
 * - client creates, 16 in flight: `POST /api/clients` (two accounts) vs the same rows inserted by plain SQL in a
 *   tenant transaction (role, settings and audit triggers as the app's);
 * - operation creates, 16 in flight: `POST /api/operations` (three transactions over random accounts of the tenant)
 *   vs the same rows by plain SQL;
 * - for both creates, without a goal: the statements the route sends (captured from one real request) replayed
 *   prepared by postgres.js vs the same plain SQL, which tells the database's share of a gap from the server's;
 * - exchanges, 16 in flight: `POST /api/exchanges` (a random caja of the tenant, a random identified customer, the
 *   board's rate, a receipt numbered from the company's one counter) vs `POST /api/operations` measured in the same
 *   alternating rounds; made by a cashier key without `operations.approve`, so both sides create pending operations
 *   (goal: within 10 % of creates), and, without a goal, by the company key, which books them completed;
 * - batches of 1,000 operations of three transactions: `POST /api/operations/batch` vs the same rows inserted
 *   set-based (three statements: operations, transactions, events) by plain SQL; and the time of one batch;
 * - batches of 1,000 clients with two accounts: `POST /api/clients/batch` vs set-based plain SQL;
 * - approvals, 32 in flight: `POST /api/operations/{id}/approve` vs the statements the route sends (captured from one
 *   real request, authentication included) replayed prepared by postgres.js;
 * - `GET /api/clients` page of 50 with accounts and tags, 64 in flight: requests/s and p99 vs its captured statements
 *   replayed the same way.
 *
 * HTTP and SQL phases alternate within each figure (HTTP, SQL, SQL, HTTP; each phase BENCH_SECONDS, or BENCH_BATCHES
 * batches), so what drifts while a figure runs weighs on both sides alike. The server is the app as `PROCESSES=N`
 * deploys it, one process per core (BENCH_PROCESSES, the machine's cores by default) on one free port, their pools
 * 16 connections in all; the SQL ceilings use one pool of 16 connections.
 *
 *   bun bench/write.ts   (env: BENCH_ADMIN_URL, BENCH_PROCESSES, BENCH_WRITE_SIZES=5000,50000, BENCH_SECONDS=5, BENCH_BATCHES=2, BENCH_OTHER_CLIENTS=2000,
 *                         BENCH_WRITE_STATES=fresh,skewed, BENCH_WRITE_FIGURES=clients,operations,exchanges,batches,client-batches,approvals,list)
 *
 * The two lists pick states and figures to measure, in the order above; a figure left out leaves out the rows it
 * would have written, so a later figure meets a slightly smaller tenant than in a full run.
 */
import postgres from 'postgres'
import { availableParallelism } from 'node:os'
import { openDatabase } from '../db/client'
import { aboutOperation, captureRoute, replay, replayClient } from './lib/capture'
import { envNumber, envNumbers, figure, percentile, printFigures, rate, timed, type Figure, type Run } from './lib/common'
import { createBenchDatabase } from './lib/database'
import { serveApp, spawnApp, type ServedApp } from './lib/app'
import { freezeStatistics, newCompany, seedOthers, seedTenant } from './lib/tenants'
import { asTenant, outbox, plainOperationCreate, type Event } from './lib/plain'

const SIZES = envNumbers('BENCH_WRITE_SIZES', '5000,50000')
const SECONDS = envNumber('BENCH_SECONDS', 5)
const BATCHES = envNumber('BENCH_BATCHES', 2)
const OTHER_CLIENTS = envNumber('BENCH_OTHER_CLIENTS', 2000)
const STATES = (process.env.BENCH_WRITE_STATES ?? 'fresh,skewed').split(',')
const FIGURES = new Set((process.env.BENCH_WRITE_FIGURES ?? 'clients,operations,exchanges,batches,client-batches,approvals,list').split(','))
const OTHER_OPERATIONS = 500
const POOL = 16
const PROCESSES = envNumber('BENCH_PROCESSES', availableParallelism())
const IN_FLIGHT = 16
const APPROVERS = 32
const READERS = 64
const BATCH = 1000
/** Pending operations made for each approval phase; more than a phase gets through. */
const APPROVALS = envNumber('BENCH_APPROVALS', 6000)

/** Rows by the number in `column`. */
function groupBy(rows: postgres.Row[], column: string) {
  const by = new Map<number, postgres.Row[]>()
  for (const r of rows) by.set(r[column], [...(by.get(r[column]) ?? []), r])
  return by
}

/** Two runs of one side as one: counts and times added, latencies merged. */
const joined = (x: Run, y: Run): Run => ({
  done: x.done + y.done,
  seconds: x.seconds + y.seconds,
  latencies: [...x.latencies, ...y.latencies].sort((m, n) => m - n),
})

/** `BATCHES` batches of `BATCH` rows one after another, each input made before its clock starts. */
async function batches<T>(input: () => T, send: (input: T) => Promise<unknown>): Promise<Run> {
  const runs: number[] = []
  for (let i = 0; i < BATCHES; i++) {
    const made = input()
    const t0 = performance.now()
    await send(made)
    runs.push(performance.now() - t0)
  }
  return { done: BATCH * BATCHES, seconds: runs.reduce((a, b) => a + b, 0) / 1000, latencies: runs.sort((a, b) => a - b) }
}

async function main() {
  const db = await createBenchDatabase('fos_bench_write')
  const url = db.url
  const database = await openDatabase({ url, poolMax: 2 })
  let server: ServedApp | undefined
  const owner = postgres(url, { max: 1, onnotice: () => {} })
  const direct = postgres(url, { max: POOL, onnotice: () => {} })
  const replaying = replayClient(url, POOL)
  const figures: Figure[] = []
  try {
    server = await spawnApp(import.meta.path, [url])
    const { base } = server

    const measure = async (state: string, size: number) => {
      const label = `${state}, ${size.toLocaleString('en')} clients`
      const started = performance.now()
      const { companyId, key } = await newCompany(database, `${state} ${size}`)
      const t = await seedTenant(owner, companyId, size, 0)
      const { accountIds, typeId } = t
      const randomAccount = () => accountIds[Math.floor(Math.random() * accountIds.length)]
      const post = async (path: string, body?: unknown, as = key) => {
        const res = await fetch(`${base}${path}`, {
          method: 'POST',
          headers: { 'x-api-key': as, ...(body !== undefined && { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        })
        const answer = await res.text()
        if (res.status !== 200 && res.status !== 201) throw new Error(`${path}: ${res.status} ${answer.slice(0, 300)}`)
        return JSON.parse(answer)
      }
      const inTenant = (fn: (tx: postgres.TransactionSql) => Promise<unknown>) => asTenant(direct, companyId, fn)
      const operationBody = () => ({
        operation_type_id: typeId,
        transactions: [
          { account_id: randomAccount(), amount: '100' },
          { account_id: randomAccount(), amount: '-60' },
          { account_id: randomAccount(), amount: '-40' },
        ],
      })
      const pair = async (name: string, unit: string, goal: string | null, http: () => Promise<Run>, sql: () => Promise<Run>) => {
        // HTTP, SQL, SQL, HTTP: what drifts during a figure (its tables growing, a checkpoint) weighs on both alike.
        const first = await http()
        const b = joined(await sql(), await sql())
        const a = joined(first, await http())
        console.log(`  ${label}: ${name}: ${rate(a).toFixed(1)} vs ${rate(b).toFixed(1)} ${unit}`)
        figures.push(figure(`${name}, ${label}`, rate(a), rate(b), unit, goal))
        return [a, b]
      }
      /**
       * A create's own statements, captured from one real request and replayed, beside the plain SQL run just
       * measured: how far the database work alone reaches, without the server (no goal; it tells the two apart).
       */
      const replayedCreate = async (name: string, unit: string, path: string, body: unknown, sqlRun: Run) => {
        const statements = await captureRoute(url, path, key, { method: 'POST', body })
        const run = await timed(IN_FLIGHT, SECONDS, () => replay(replaying, statements))
        console.log(`  ${label}: ${name}: ${rate(run).toFixed(1)} vs ${rate(sqlRun).toFixed(1)} ${unit}`)
        figures.push(figure(`${name}, ${label}`, rate(run), rate(sqlRun), unit))
      }

      if (FIGURES.has('clients')) {
        const clientBody = { name: 'Alta', type: 1, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] }
        const [, sqlClients] = await pair(
          `client creates (2 accounts), ${IN_FLIGHT} in flight: HTTP vs plain SQL`,
          'clients/s',
          'ratio >= 0.6',
          () => timed(IN_FLIGHT, SECONDS, () => post('/api/clients', clientBody)),
          () =>
            timed(IN_FLIGHT, SECONDS, () =>
              inTenant(async (tx) => {
                const [client] = await tx`insert into clients (company_id, name, description, type) values (${companyId}, 'Alta', '', 1) returning *`
                const accounts = await tx`insert into accounts (company_id, client_id, name, currency_name)
                  values (${companyId}, ${client.id}, 'ARS', 'ARS'), (${companyId}, ${client.id}, 'USD', 'USD') returning *`
                await outbox(tx, companyId, [['client.created', 'client', { ...client, accounts, client_tags: [] }], ...accounts.map((a) => ['account.created', 'account', a] as Event)])
              }),
            ),
        )
        await replayedCreate(`client creates: the route's statements replayed vs plain SQL`, 'clients/s', '/api/clients', clientBody, sqlClients)
      }

      if (FIGURES.has('operations')) {
        const [, sqlOperations] = await pair(
          `operation creates (3 transactions), ${IN_FLIGHT} in flight: HTTP vs plain SQL`,
          'operations/s',
          'ratio >= 0.6',
          () => timed(IN_FLIGHT, SECONDS, () => post('/api/operations', operationBody())),
          () => timed(IN_FLIGHT, SECONDS, () => plainOperationCreate(direct, companyId, typeId, randomAccount)),
        )
        await replayedCreate(`operation creates: the route's statements replayed vs plain SQL`, 'operations/s', '/api/operations', operationBody(), sqlOperations)
      }

      if (FIGURES.has('exchanges')) {
        // What a branch has before its first exchange: the two operation types, a board, a cashier.
        await owner`insert into operation_types (company_id, name, kind) values (${companyId}, 'Compra de divisas', 'exchange'), (${companyId}, 'Venta de divisas', 'exchange')`
        await owner`insert into ventanilla_rates (company_id, currency, buy, sell) values (${companyId}, 'USD', 1165.5, 1185.5)`
        const cajas = (await owner`select id from clients where company_id = ${companyId} and type = 0`).map((r) => r.id as number)
        const customers = (await owner`select id from clients where company_id = ${companyId} and type = 1`).map((r) => r.id as number)
        const pick = (ids: number[]) => ids[Math.floor(Math.random() * ids.length)]
        const cashier = await post('/api/employees', { email: `cajero-${companyId}@bench.test`, name: 'Cajero', permissions: ['operations.create'] })
        const cashierKey = (await post(`/api/employees/${cashier.id}/api-keys`, { name: 'caja' })).key as string
        const exchangeBody = () => ({ side: Math.random() < 0.5 ? 'buy' : 'sell', currency: 'USD', amount: '100', caja_id: pick(cajas), client_id: pick(customers) })
        await pair(
          `exchanges by a cashier (pending, receipt numbered), ${IN_FLIGHT} in flight: HTTP vs operation creates over HTTP`,
          'req/s',
          'ratio >= 0.9',
          () => timed(IN_FLIGHT, SECONDS, () => post('/api/exchanges', exchangeBody(), cashierKey)),
          () => timed(IN_FLIGHT, SECONDS, () => post('/api/operations', operationBody())),
        )
        await pair(
          `exchanges by the company key (completed, balances moved), ${IN_FLIGHT} in flight: HTTP vs operation creates over HTTP`,
          'req/s',
          null,
          () => timed(IN_FLIGHT, SECONDS, () => post('/api/exchanges', exchangeBody())),
          () => timed(IN_FLIGHT, SECONDS, () => post('/api/operations', operationBody())),
        )
        const [{ gaps }] = await owner`select count(*)::int - coalesce(max(seq), 0) as gaps from receipts where company_id = ${companyId}`
        if (gaps !== 0) throw new Error(`exchanges: receipt numbers are not 1…n (${gaps})`)
      }

      if (FIGURES.has('batches')) {
        const [httpBatch, sqlBatch] = await pair(
          `operations in batches of ${BATCH} (3 transactions each): HTTP vs set-based plain SQL`,
          'operations/s',
          'ratio >= 0.8',
          () =>
            batches(
              () => ({ operations: Array.from({ length: BATCH }, operationBody) }),
              (body) => post('/api/operations/batch', body),
            ),
          () =>
            batches(
              () => Array.from({ length: BATCH * 3 }, randomAccount),
              (legs) =>
                inTenant(async (tx) => {
                  const ops = await tx`insert into operations (company_id, operation_type_id, status)
                    select ${companyId}, ${typeId}, 'pending' from generate_series(1, ${BATCH}) returning *`
                  const ids = ops.map((o) => o.id as number).sort((a, b) => a - b)
                  const transactions = await tx`insert into transactions (company_id, operation_id, account_id, currency, amount, status)
                    select ${companyId}, u.op, u.account, 'ARS', u.amount, 'pending'
                    from unnest(${ids.flatMap((id) => [id, id, id])}::int[], ${legs}::int[], ${Array.from({ length: BATCH }, () => ['100', '-60', '-40']).flat()}::numeric[]) as u(op, account, amount)
                    returning *`
                  const byOp = groupBy(transactions, 'operation_id')
                  await outbox(tx, companyId, ops.map((o): Event => ['operation.created', 'operation', { ...o, transactions: byOp.get(o.id) ?? [], attachments: [] }]))
                }),
            ),
        )
        figures.push(figure(`one batch of ${BATCH} operations over HTTP (median), ${label}`, percentile(httpBatch.latencies, 50), percentile(sqlBatch.latencies, 50), 'ms', '<= 1000'))
      }

      if (FIGURES.has('client-batches')) {
        const clientBatch = await fetch(`${base}/api/clients/batch`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: '{}' })
        await clientBatch.arrayBuffer()
        if (clientBatch.status === 404) console.log(`  ${label}: POST /api/clients/batch is not served; its figure is left out`)
        else
          await pair(
            `clients in batches of ${BATCH} (2 accounts each): HTTP vs set-based plain SQL`,
            'clients/s',
            'ratio >= 0.8',
            () =>
              batches(
                () => ({ clients: Array.from({ length: BATCH }, (_, j) => ({ name: `Lote ${j}`, type: 1, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] })) }),
                (body) => post('/api/clients/batch', body),
              ),
            () =>
              batches(
                () => undefined,
                () =>
                  inTenant(async (tx) => {
                    const rows = await tx`insert into clients (company_id, name, description, type)
                      select ${companyId}, 'Lote ' || g, '', 1 from generate_series(1, ${BATCH}) g returning *`
                    const accounts = await tx`insert into accounts (company_id, client_id, name, currency_name)
                      select ${companyId}, c, v.cur, v.cur from unnest(${rows.map((r) => r.id as number)}::int[]) c cross join (values ('ARS'), ('USD')) v(cur)
                      returning *`
                    const byClient = groupBy(accounts, 'client_id')
                    await outbox(
                      tx,
                      companyId,
                      rows.flatMap((c) => {
                        const own = byClient.get(c.id) ?? []
                        return [['client.created', 'client', { ...c, accounts: own, client_tags: [] }], ...own.map((a) => ['account.created', 'account', a] as Event)] as Event[]
                      }),
                    )
                  }),
              ),
          )
      }

      if (FIGURES.has('approvals')) {
        // Approvals: pending operations of three transactions, made in bulk; each phase takes its own.
        const pendingOps = (count: number) =>
          owner.begin(async (tx) => {
            await tx`set local session_replication_role = replica`
            const ops = await tx`insert into operations (company_id, operation_type_id, status) select ${companyId}, ${typeId}, 'pending' from generate_series(1, ${count}) returning id`
            const ids = ops.map((o) => o.id as number)
            await tx`insert into transactions (company_id, operation_id, account_id, currency, amount, status)
              select ${companyId}, o, ${accountIds[0]}::int + floor(random() * ${accountIds.length})::int, 'ARS', v.amount, 'pending'
              from unnest(${ids}::int[]) o cross join (values (100), (-60), (-40)) v(amount)`
            return ids
          })
        // Captured on an operation whose id is not also the company's, or the replay would swap the company too (it did
        // when this figure ran alone, on a tenant with no operations before it: a ceiling of failed transitions).
        const fresh = await pendingOps(2 + APPROVALS)
        const captureId = fresh.find((id) => id !== companyId)!
        const httpIds = fresh.filter((id) => id !== captureId).slice(0, APPROVALS)
        const sqlIds = await pendingOps(APPROVALS)
        const approve = await captureRoute(url, `/api/operations/${captureId}/approve`, key, { method: 'POST' })
        let h = 0
        let s = 0
        await pair(
          `approvals, ${APPROVERS} in flight: HTTP vs the route's statements replayed`,
          'approvals/s',
          'ratio >= 0.8',
          () => timed(APPROVERS, SECONDS, async () => (h < httpIds.length ? void (await post(`/api/operations/${httpIds[h++]}/approve`)) : false)),
          () => timed(APPROVERS, SECONDS, async () => (s < sqlIds.length ? replay(replaying, aboutOperation(approve, captureId, sqlIds[s++])) : false)),
        )
        // A replayed transition that found nothing to change would still count: both sides must have approved each one.
        const [{ approved }] = await owner`select count(*)::int as approved from operations
          where id = any(${[...httpIds.slice(0, h), ...sqlIds.slice(0, s)]}::int[]) and status = 'completed'`
        if (approved !== h + s) throw new Error(`approvals: ${approved} of ${h + s} operations completed`)
      }

      if (FIGURES.has('list')) {
        const page = '/api/clients?page=2&pageSize=50'
        const list = await captureRoute(url, page, key)
        const [httpList, sqlList] = await pair(
          `GET /api/clients page of 50, ${READERS} in flight: HTTP vs its statements replayed`,
          'req/s',
          'ratio >= 0.8',
          () =>
            timed(READERS, SECONDS, async () => {
              const res = await fetch(`${base}${page}`, { headers: { 'x-api-key': key } })
              await res.arrayBuffer()
              if (res.status !== 200) throw new Error(`${page}: ${res.status}`)
            }),
          () => timed(READERS, SECONDS, () => replay(replaying, list)),
        )
        figures.push(figure(`GET /api/clients p99, ${READERS} in flight, ${label}`, percentile(httpList.latencies, 99), percentile(sqlList.latencies, 99), 'ms', 'ratio <= 1.2'))
      }
      console.log(`  ${label}: done in ${((performance.now() - started) / 1000).toFixed(0)} s`)
    }

    await freezeStatistics(owner)
    if (STATES.includes('fresh')) for (const size of SIZES) await measure('fresh statistics', size)
    if (STATES.includes('skewed')) {
      await seedOthers(owner, database, 99, OTHER_CLIENTS, OTHER_OPERATIONS)
      await owner.unsafe('analyze')
      for (const size of SIZES) await measure('99 other tenants in the statistics', size)
    }

    const [{ bad }] = await owner`select count(*)::int as bad from accounts a
      where a.balance <> coalesce((select sum(amount) from transactions x where x.account_id = a.id and x.status = 'completed'), 0)`
    console.log(`accounts whose balance differs from the sum of their completed transactions: ${bad}`)
    if (bad !== 0) throw new Error('the ledger broke under load')
    printFigures(figures)
  } finally {
    await server?.stop()
    await direct.end({ timeout: 5 })
    await replaying.end({ timeout: 5 })
    await owner.end({ timeout: 5 })
    await database.close()
    await db.drop()
  }
}

if (process.argv[2] === '--serve') await serveApp(process.argv[3], { poolMax: Math.ceil(POOL / PROCESSES), processes: PROCESSES })
else {
  await main()
  process.exit(0)
}
