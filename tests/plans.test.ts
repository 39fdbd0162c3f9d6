/**
 * The plans of the hot write and list statements when the statistics do not know the tenant: (a) its rows were added
 * after the last ANALYZE, (b) 99 other tenants fill the statistics and it is missing from them. Every statement the
 * routes send (and those their triggers and foreign keys run) is explained by auto_explain as it runs, with actual row
 * counts, under the tenant role and `app.company_id` exactly as the app runs it; each request is repeated past the
 * point where prepared statements switch to generic plans. A lookup by id must read a handful of rows, never walk the
 * company's rows; the clients list may read the company's matches once, never once per row.
 */
import { describe, expect, beforeAll, afterAll } from 'bun:test'
import postgres from 'postgres'
import { drizzle } from 'drizzle-orm/postgres-js'
import * as schema from '../db/schema'
import { openDatabase, rowsOf, type Database, type Db } from '../db/client'
import { registerPool } from '../db/driver'
import { createApp } from '../server/app'
import type { AppContext } from '../server/context'
import { DomainEvents } from '../server/lib/events'
import { onPostgres, postgresTest, testConfig } from './helpers'
import { freezeStatistics, newCompany, seedOthers, seedTenant, type Tenant } from '../bench/lib/tenants'

const TENANT_CLIENTS = 3000
const TENANT_OPERATIONS = 1000
const OTHERS = 99
const OTHER_CLIENTS = 400
const OTHER_OPERATIONS = 300
/** Rows one statement may read from a tenant table for an id lookup (the tenant holds thousands). */
const LOOKUP_BUDGET = 100
/** A repeated statement switches to a generic plan after five custom ones. */
const REPEAT = 7

const BIG = /^(clients|accounts|operations|transactions)$/
const BIG_INDEX = /^(clients|accounts|operations|transactions)_/

interface PlanNode {
  'Node Type': string
  'Relation Name'?: string
  'Index Name'?: string
  'Actual Rows'?: number
  'Actual Loops'?: number
  'Rows Removed by Filter'?: number
  'Rows Removed by Index Recheck'?: number
  'Shared Hit Blocks'?: number
  'Shared Read Blocks'?: number
  Plans?: PlanNode[]
}

interface Explained {
  text: string
  plan: PlanNode
}

/** Pages a lookup by key may touch per loop: the index's levels and the row's heap page, with room to spare. */
const PAGES_PER_LOOKUP = 8

const blocks = (node: PlanNode) => (node['Shared Hit Blocks'] ?? 0) + (node['Shared Read Blocks'] ?? 0)

/**
 * Rows each node over a tenant table reads (returned plus filtered away, over all loops), and for index scans the
 * pages they touch themselves per loop: an index condition on a column after the leading one (`id` in an index that
 * starts with `company_id`) walks every entry of the company and returns one row, which the row counts alone miss.
 */
function reads(node: PlanNode, out: { node: string; perLoop: number; loops: number; total: number; pagesPerLoop?: number }[] = []) {
  const table = node['Relation Name'] ?? /^([a-z]+)_/.exec(node['Index Name'] ?? '')?.[1]
  if (table && (BIG.test(table) || BIG_INDEX.test(node['Index Name'] ?? ''))) {
    const loops = node['Actual Loops'] || 1
    const perLoop = (node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)
    const own = blocks(node) - (node.Plans ?? []).reduce((sum, child) => sum + blocks(child), 0)
    const pagesPerLoop = /Index/.test(node['Node Type']) ? own / loops : undefined
    out.push({ node: `${node['Node Type']} ${node['Index Name'] ?? node['Relation Name']}`, perLoop, loops, total: perLoop * loops, pagesPerLoop })
  }
  for (const child of node.Plans ?? []) reads(child, out)
  return out
}

const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const name = `fos_plans_${process.pid}`

let admin: postgres.Sql
let owner: postgres.Sql
let database: Database
let client: postgres.Sql
let app: ReturnType<typeof createApp>
const notices: Explained[] = []
let fresh: Tenant
let skewed: Tenant

async function call(method: string, path: string, key: string, body?: unknown, on = app) {
  const res = await on.handle(
    new Request(`http://fos.test${path}`, {
      method,
      headers: { 'x-api-key': key, ...(body !== undefined && { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  )
  const text = await res.text()
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`)
  return JSON.parse(text)
}

/** The plans of every statement `fn` makes the database run, from its REPEAT runs. */
async function explained(fn: () => Promise<unknown>): Promise<Explained[]> {
  notices.length = 0
  for (let i = 0; i < REPEAT; i++) await fn()
  return [...notices]
}

const pick = <T>(list: T[], n: number) => Array.from({ length: n }, () => list[Math.floor(Math.random() * list.length)])

/** Each tenant's desk accounts (ARS, USD), by company. */
const desks = new Map<number, number[]>()

/** A seeded tenant with an auto-fed mesa, so every ledger change also asks which mesas it feeds and finds one. */
async function tenant(companyName: string, clients: number, operations: number): Promise<Tenant> {
  const { companyId, key } = await newCompany(database, companyName)
  const seeded = { companyId, key, ...(await seedTenant(owner, companyId, clients, operations)) }
  await owner`update companies set mesas_enabled = true where id = ${companyId}`
  const internal = await owner`select min(a.id)::int as id from accounts a join clients c on c.id = a.client_id
    where c.company_id = ${companyId} and c.type = 0 group by a.currency_name order by 1`
  await call('POST', '/api/mesas', key, {
    name: 'Mesa',
    local_currency: 'ARS',
    quote_currency: 'USD',
    costing_method: 'wac',
    account_ids: internal.map((r) => r.id),
    blotter_feed_mode: 'auto',
  })
  // A busy desk: its accounts carry many legs, so asking which mesas an operation feeds must go from the operation's
  // legs to the desk, never from the desk's accounts through all their legs.
  await owner`insert into transactions (company_id, operation_id, account_id, currency, amount, status)
    select ${companyId}, (select min(id) from operations where company_id = ${companyId}), a.id, a.currency_name, 1, 'pending'
      from accounts a, generate_series(1, 300) where a.id in ${owner(internal.map((r) => r.id))}`
  desks.set(companyId, internal.map((r) => r.id))
  return seeded
}

/**
 * The app on one connection of its own, with auto_explain reporting each statement's plan to it as a notice (pushed to
 * `notices`), so every plan the session keeps is one the checks below see.
 */
async function explainingApp(url: string, database: Database) {
  const client = postgres(url, {
    max: 1,
    onnotice: (n) => {
      if (!String(n.message).startsWith('duration')) return
      const json = JSON.parse(String(n.message).replace(/^duration: [\d.]+ ms\s+plan:\s*/, ''))
      notices.push({ text: json['Query Text'], plan: json.Plan })
    },
  })
  await client.unsafe(`load 'auto_explain'`)
  await client.unsafe(`set auto_explain.log_min_duration = 0; set auto_explain.log_analyze = on; set auto_explain.log_timing = off;
    set auto_explain.log_format = json; set auto_explain.log_nested_statements = on; set auto_explain.log_level = notice;
    set auto_explain.log_buffers = on`)
  const db = drizzle(client, { schema }) as unknown as Db
  registerPool(db, client)
  const ctx: AppContext = {
    config: testConfig({ databaseUrl: url }),
    database: { ...database, db, rows: async (query, on = db) => rowsOf(await on.execute(query)) },
    db,
    store: undefined as never,
    clock: () => new Date(),
    log: () => {},
    events: new DomainEvents(),
  }
  return { client, app: createApp(ctx) }
}

if (onPostgres()) {
  beforeAll(async () => {
    admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} })
    await admin.unsafe(`create database ${name}`)
    const url = new URL(ADMIN_URL)
    url.pathname = `/${name}`
    database = await openDatabase({ url: url.toString(), poolMax: 2 })
    owner = postgres(url.toString(), { max: 1, onnotice: () => {} })
    ;({ client, app } = await explainingApp(url.toString(), database))

    // (a) Statistics of an empty database; the tenant arrives afterwards.
    await freezeStatistics(owner)
    fresh = await tenant('Recién llegada', TENANT_CLIENTS, TENANT_OPERATIONS)
    // (b) 99 other tenants analysed; the tenant arrives afterwards.
    await seedOthers(owner, database, OTHERS, OTHER_CLIENTS, OTHER_OPERATIONS)
    await owner.unsafe('analyze')
    skewed = await tenant('Nueva en base compartida', TENANT_CLIENTS, TENANT_OPERATIONS)
  }, 240_000)

  afterAll(async () => {
    await client?.end({ timeout: 5 })
    await owner?.end({ timeout: 5 })
    await database?.close()
    await admin?.unsafe(`drop database if exists ${name} with (force)`)
    await admin?.end({ timeout: 5 })
  })
}

function expectLookups(plans: Explained[], what: string) {
  expect(plans.length).toBeGreaterThan(0)
  for (const p of plans) {
    const heavy = reads(p.plan).filter((r) => r.total > LOOKUP_BUDGET || (r.pagesPerLoop ?? 0) > PAGES_PER_LOOKUP * Math.max(1, r.perLoop))
    if (heavy.length) throw new Error(`${what}: ${JSON.stringify(heavy)} in\n${p.text}\n${JSON.stringify(p.plan, null, 1).slice(0, 4000)}`)
  }
}

describe.each([
  ['tenant rows added after the last ANALYZE', () => fresh],
  ['99 other tenants dominate the statistics', () => skewed],
])('plans when %s', (_, who) => {
  postgresTest('creating operations (pending, completed with a client, a batch) reads only the rows it names', async () => {
    const t = who()
    const leg = (account: number, amount: string) => ({ account_id: account, amount })
    const body = (status: 'pending' | 'completed') => {
      const [a, b, c] = pick(t.accountIds, 3)
      return { operation_type_id: t.typeId, status, client_id: pick(t.clientIds, 1)[0], transactions: [leg(a, '100'), leg(b, '-60'), leg(c, '-40')] }
    }
    expectLookups(await explained(() => call('POST', '/api/operations', t.key, body('pending'))), 'create pending')
    expectLookups(await explained(() => call('POST', '/api/operations', t.key, body('completed'))), 'create completed')
    expectLookups(
      await explained(() => call('POST', '/api/operations/batch', t.key, { operations: [body('pending'), body('completed'), body('completed')] })),
      'batch create',
    )
  }, 60_000)

  postgresTest('approving reads only the operation, its transactions and their accounts', async () => {
    const t = who()
    const ids: number[] = []
    for (let i = 0; i < REPEAT; i++) {
      const [a, b] = pick(t.accountIds, 2)
      ids.push((await call('POST', '/api/operations', t.key, { operation_type_id: t.typeId, transactions: [{ account_id: a, amount: 5 }, { account_id: b, amount: -5 }] })).id)
    }
    let next = 0
    expectLookups(await explained(() => call('POST', `/api/operations/${ids[next++]}/approve`, t.key)), 'approve')

    // An exchange on the busy desk itself: the auto feed then reads the operation's legs and writes its blotter line.
    const [ars, usd] = desks.get(t.companyId)!
    const trades: number[] = []
    for (let i = 0; i < REPEAT; i++) {
      const [client] = pick(t.accountIds, 1)
      const body = { operation_type_id: t.typeId, transactions: [{ account_id: ars, amount: 1000 }, { account_id: usd, amount: -1 }, { account_id: client, amount: 1 }] }
      trades.push((await call('POST', '/api/operations', t.key, body)).id)
    }
    next = 0
    const fed = await explained(() => call('POST', `/api/operations/${trades[next++]}/approve`, t.key))
    expect(fed.some((p) => /mesa_lines/.test(p.text) && /insert/i.test(p.text))).toBe(true)
    expectLookups(fed, 'approve on the desk')
  }, 60_000)

  postgresTest('creating clients, one or a batch, reads no other client', async () => {
    const t = who()
    const plans = await explained(() => call('POST', '/api/clients', t.key, { name: 'Nuevo', type: 1, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] }))
    expectLookups(plans, 'client create')
    const many = Array.from({ length: 20 }, (_, i) => ({ name: `Lote ${i}`, type: 1, accounts: [{ currency_name: 'ARS' }] }))
    expectLookups(await explained(() => call('POST', '/api/clients/batch', t.key, { clients: many })), 'client batch')
  }, 60_000)

  postgresTest('a cost center checks its client and its default account by id', async () => {
    const t = who()
    const [{ client, account }] = await owner`select c.id as client, a.id as account from clients c join accounts a on a.client_id = c.id
      where c.company_id = ${t.companyId} and c.type = 0 order by random() limit 1`
    let n = 0
    const create = () => call('POST', '/api/cost-centers', t.key, { name: `Centro ${n++}`, client_id: client, default_currency: 'ARS', default_internal_account_id: account })
    expectLookups(await explained(create), 'cost center create')
  }, 60_000)

  postgresTest('the clients and operations pages read the matches once and each listed record by id', async () => {
    const t = who()
    const pages = [
      ['/api/clients?page=1&pageSize=50', /select count\(\*\) from clients c where/],
      ['/api/clients?page=2&pageSize=50&type=1', /select count\(\*\) from clients c where/],
      ['/api/clients?page=3&pageSize=50&description=cartera%201&type=1', /with matches as/],
      // A word with trigrams goes through the company's trigram entries, a shorter one over the company's rows.
      ['/api/clients?page=1&pageSize=50&search=cliente%20123', /with matches as/],
      ['/api/clients?page=1&pageSize=50&search=12&type=1', /with matches as/],
      ['/api/operations?page=2&pageSize=50', /from "operations"|from "transactions"/],
    ] as const
    for (const [query, statement] of pages) {
      const plans = await explained(() => call('GET', query, t.key))
      const list = plans.filter((p) => statement.test(p.text))
      expect(list.length).toBeGreaterThanOrEqual(REPEAT)
      for (const p of list) {
        const nodes = reads(p.plan)
        // The filter runs once over the company's clients; nothing walks them again per row, and nothing reads another
        // company's rows.
        const repeated = nodes.filter((r) => r.loops > 1 && r.perLoop > 10)
        const total = nodes.reduce((sum, r) => sum + r.total, 0)
        if (repeated.length || total > 4 * TENANT_CLIENTS) throw new Error(`${query}: ${JSON.stringify(nodes)}`)
      }
    }
    // An employee limited to three clients: the page reads those three by id, never the company's clients.
    const employee = await call('POST', '/api/employees', t.key, {
      email: `scoped.${t.companyId}@fos.test`,
      name: 'Scoped',
      permissions: ['clients.view'],
      client_ids: t.clientIds.slice(-3),
    })
    const { key } = await call('POST', `/api/employees/${employee.id}/api-keys`, t.key, { name: 'scoped' })
    const scoped = await explained(() => call('GET', '/api/clients?page=1&pageSize=50', key))
    expect(scoped.filter((p) => /json_build_object\('data'/.test(p.text)).length).toBeGreaterThanOrEqual(REPEAT)
    expectLookups(scoped, 'scoped clients page')
    // The names behind the ids of a page of operations: read by key, by client or by account.
    const named = await explained(() => call('GET', `/api/clients?ids=${t.clientIds.slice(5, 25).join(',')}`, t.key))
    expect(named.filter((p) => /json_build_object\('data'/.test(p.text)).length).toBeGreaterThanOrEqual(REPEAT)
    expectLookups(named, 'clients page by ids')
    expectLookups(await explained(() => call('GET', `/api/clients?account_ids=${t.accountIds.slice(10, 30).join(',')}`, t.key)), 'clients page by account ids')
  }, 60_000)
})

/*
 * A session keeps its plan of each key check for its whole life once the plan turns generic, and a plan made while
 * the tables were nearly empty and analysed as such (a new database's first operations and clients) scans a table
 * whole, or walks another index that holds the id, once the tables have grown. The inserts have their checks planned
 * afresh (server/lib/write.ts): after 10,000 more rows without ANALYZE they must still read only what they name.
 */
postgresTest('key checks still go by key when the tables grew after a session\'s first inserts', async () => {
  const keptName = `${name}_kept`
  await admin.unsafe(`create database ${keptName}`)
  const url = new URL(ADMIN_URL)
  url.pathname = `/${keptName}`
  const small = await openDatabase({ url: url.toString(), poolMax: 1 })
  const smallOwner = postgres(url.toString(), { max: 1, onnotice: () => {} })
  const session = await explainingApp(url.toString(), small)
  try {
    const { companyId, key } = await newCompany(small, 'Primera')
    const t = await seedTenant(smallOwner, companyId, 3, 1)
    await freezeStatistics(smallOwner)
    const create = () => {
      const [a, b, c] = pick(t.accountIds, 3)
      const legs = [{ account_id: a, amount: '100' }, { account_id: b, amount: '-60' }, { account_id: c, amount: '-40' }]
      return call('POST', '/api/operations', key, { operation_type_id: t.typeId, transactions: legs }, session.app)
    }
    const [{ id: tagId }] = await smallOwner`insert into tags (company_id, name, color) values (${companyId}, 'vip', '#aa0000') returning id`
    let n = 0
    const onboard = async () => {
      const client = await call('POST', '/api/clients', key, { name: `Alta ${n++}`, type: 1, accounts: [{ currency_name: 'ARS' }] }, session.app)
      await call('POST', `/api/clients/${client.id}/accounts`, key, { currency_name: 'USD' }, session.app)
      await call('POST', `/api/clients/${client.id}/tags`, key, { tag_id: tagId }, session.app)
    }
    // Past the switch to generic plans, on tables of a page each; the single account and tag inserts first, so they
    // are the ones to make the plans of the checks they share with client creates.
    for (let i = 0; i < REPEAT; i++) await create()
    const first = t.clientIds[0]
    const more = await smallOwner`insert into tags (company_id, name, color)
      select ${companyId}, 'etiqueta ' || g, '#00aa00' from generate_series(1, ${REPEAT}) g returning id`
    for (const [i, currency] of ['EUR', 'BRL', 'UYU', 'CLP', 'PYG', 'BOB', 'PEN'].entries()) {
      await call('POST', `/api/clients/${first}/accounts`, key, { currency_name: currency }, session.app)
      await call('POST', `/api/clients/${first}/tags`, key, { tag_id: more[i].id }, session.app)
    }
    for (let i = 0; i < REPEAT; i++) await onboard()
    await smallOwner.begin(async (tx) => {
      await tx`set local session_replication_role = replica`
      await tx`insert into clients (company_id, name, type) select ${companyId}, 'Crece ' || g, 1 from generate_series(1, 10000) g`
      await tx`insert into accounts (company_id, client_id, name, currency_name)
        select ${companyId}, c.id, 'ARS', 'ARS' from clients c where c.company_id = ${companyId} and c.name like 'Crece %'`
      await tx`insert into operations (company_id, operation_type_id, status) select ${companyId}, ${t.typeId}, 'pending' from generate_series(1, 10000)`
    })
    const plans = await explained(create)
    const checks = plans.filter((p) => /^SELECT 1 FROM ONLY "public"\."(accounts|operations)"/.test(p.text))
    expect(checks.length).toBeGreaterThanOrEqual(REPEAT * 6)
    expectLookups(plans, 'create after the tables grew')
    // A client's accounts (two) and its tag link check the client's key: 10,000 more clients since the plans were made.
    // Only the key checks are held to it here: the session's other prepared statements keep their generic plans as
    // well until an ANALYZE, which autovacuum makes as a table grows and this database is kept from making.
    const keyChecks = (await explained(onboard)).filter((p) => /^SELECT 1 FROM ONLY "public"\."clients"/.test(p.text))
    expect(keyChecks.length).toBeGreaterThanOrEqual(REPEAT * 3)
    expectLookups(keyChecks, 'the key checks of a client, its account and its tag after the tables grew')
  } finally {
    await session.client.end({ timeout: 5 })
    await smallOwner.end({ timeout: 5 })
    await small.close()
    await admin.unsafe(`drop database if exists ${keptName} with (force)`)
  }
}, 120_000)
