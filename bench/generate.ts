/**
 * Fills a dedicated Postgres database with realistic volume for the read benchmarks:
 * 100 companies, 100,000 clients with 2 accounts each (ARS and USD/EUR), 1,000,000 operations with 3 transactions
 * each (two exchange legs and a commission) and the audit rows all of that produces (about 5.8M).
 *
 * The schema comes from the service's own migrations (openDatabase). Rows are written set-based
 * (generate_series, INSERT … SELECT), one database transaction per batch of companies, two batches at a time.
 * The audit trigger is switched off for the load (session_replication_role = replica) and the audit rows are
 * written in bulk with the trigger's exact shape (to_jsonb snapshots through audit_redact, the same `changes`
 * diff, the same action mapping), because the trigger stamps every row with now(): the trail would otherwise
 * sit on a single instant instead of spanning the year the data covers, and date-range filters would mean nothing.
 *
 * Balances equal the sum of completed amounts per account. A marker table records the schema fingerprint, the
 * volume and every finished batch: a rerun on a complete database returns at once, an interrupted one resumes,
 * and a schema change (new migration) starts over on a fresh database.
 *
 *   bun bench/generate.ts   (env: BENCH_PG_URL admin url, BENCH_SCALE_DB, BENCH_COMPANIES, BENCH_CLIENTS, BENCH_OPS per company)
 */
import postgres from 'postgres'
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { openDatabase } from '../db/client'
import { issueKey } from '../server/access/keys'
import { companiesToSeal, sealCompany } from '../server/modules/audit/chain'
import { envNumber, figure, printFigures, ROOT } from './lib/common'

const ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
export const SCALE_DB = process.env.BENCH_SCALE_DB ?? 'fos_bench_scale'
const COMPANIES = envNumber('BENCH_COMPANIES', 100)
const CLIENTS = envNumber('BENCH_CLIENTS', 1000)
const OPS = envNumber('BENCH_OPS', 10_000)
const PER_BATCH = 5
const WORKERS = 2
const EMPLOYEES = 5
const TAGS = 8
const CAJAS = Math.min(50, CLIENTS)
const DEADLINE_MS = 40 * 60 * 1000

export function scaleUrl(db = SCALE_DB) {
  const url = new URL(ADMIN_URL)
  url.pathname = `/${db}`
  return url.toString()
}

function fingerprint() {
  const hash = createHash('sha256')
  const dir = join(ROOT, 'db', 'migrations')
  for (const f of readdirSync(dir).filter((f) => f.endsWith('.sql')).sort()) hash.update(f).update(readFileSync(join(dir, f)))
  hash.update(JSON.stringify({ COMPANIES, CLIENTS, OPS, PER_BATCH, EMPLOYEES, TAGS, version: 1 }))
  return hash.digest('hex').slice(0, 16)
}

const q = (s: string) => `'${s.replace(/'/g, "''")}'`
const arr = (items: string[]) => `array[${items.map(q).join(',')}]`
const SURNAMES = arr(
  'García González Rodríguez Fernández López Martínez Pérez Gómez Díaz Sánchez Romero Sosa Álvarez Torres Ruiz Ramírez Flores Benítez Acosta Medina Herrera Suárez Aguirre Giménez Gutiérrez Pereyra Rojas Molina Castro Ortiz Silva Núñez Luna Juárez Cabrera Ríos Morales Ferreyra Godoy Domínguez'.split(' '),
)
const GIVEN = arr(
  'Juan María José Ana Carlos Laura Jorge Lucía Luis Sofía Miguel Valentina Diego Martina Pablo Camila Martín Florencia Sergio Julieta Ricardo Paula Alejandro Carolina Fernando Agustina Gustavo Gabriela Roberto Daniela'.split(' '),
)
const FIRMS = arr(['S.A.', 'S.R.L.', 'S.A.S.', 'Hnos.', 'y Asociados'])
const SEGMENTS = arr(['Importador mayorista', 'Exportador', 'Comercio minorista', 'Productor agropecuario', 'Distribuidor mayorista', 'Particular', 'Turista', 'Financiera', 'Inmobiliaria', 'Estudio contable'])
const TRADES = arr(['textil', 'granos', 'electrónica', 'autopartes', 'alimentos', 'vinos', 'maquinaria', 'software', 'ganadería', 'construcción', 'farmacia', 'transporte'])
const CITIES = arr(['Buenos Aires', 'Rosario', 'Córdoba', 'Mendoza', 'La Plata', 'Mar del Plata', 'Salta', 'Tucumán', 'Neuquén', 'Bahía Blanca'])
const CHANNELS = arr(['mostrador', 'transferencia', 'efectivo', 'cheque', 'cable', 'arbitraje'])
const TAG_NAMES = arr(['VIP', 'Frecuente', 'Nuevo', 'Riesgo', 'Mayorista', 'Exterior', 'Referido', 'Moroso'])
const COLORS = arr(['#E53935', '#1E88E5', '#43A047', '#FB8C00', '#8E24AA', '#00ACC1', '#6D4C41', '#546E7A'])

/** Column names per table, and the tables with an array or json column. */
type Columns = { names: Map<string, string[]>; nested: Set<string> }

/** The `changes` expression of audit_capture() (db/sql/audit.sql), row by row; used for tables with nested values. */
const CHANGES_FN = `
create or replace function bench_audit_changes(old_row jsonb, new_row jsonb) returns jsonb language sql immutable as $$
  select coalesce(jsonb_agg(jsonb_build_object('field', k, 'before', old_row->k, 'after', new_row->k) order by k), '[]'::jsonb)
    from jsonb_object_keys(coalesce(old_row, '{}'::jsonb) || coalesce(new_row, '{}'::jsonb)) as k
   where coalesce(old_row->k, 'null'::jsonb) is distinct from coalesce(new_row->k, 'null'::jsonb)
$$`

/**
 * The `changes` of audit_capture() for a row of `table`: every column whose value differs between the
 * snapshots, by name in byte order, as {field, before, after}. For tables of scalar columns it is built from
 * the column list with one JSON path filter, which gives the same jsonb at a fraction of the cost of the
 * trigger's per-row key loop and aggregate (that loop dominated the load time); a JSON path comparison does not
 * compare arrays, so tables with nested values use the trigger's own expression.
 */
function changes(columns: Columns, table: string, before: string, after: string) {
  if (columns.nested.has(table)) return `bench_audit_changes(${before}, ${after})`
  const fields = [...columns.names.get(table)!].sort().map((c) => `jsonb_build_object('field', '${c}', 'before', ${before}->'${c}', 'after', ${after}->'${c}')`)
  return `jsonb_path_query_array(jsonb_build_array(${fields.join(', ')}), 'strict $[*] ? (@.before != @.after)')`
}

/** Every audited table the generator writes, so the outer audit statements can pick the right column list. */
const changesByEntity = (columns: Columns, before: string, after: string) =>
  `case entity ${[...columns.names.keys()].map((t) => `when '${t}' then ${changes(columns, t, before, after)}`).join(' ')} end`

const EMAIL = (company: string, n: string) => `'empleado' || ${n} || '@empresa' || ${company} || '.test'`
/** The year the data covers ends at the generator's start, so "the last 30 days" always has data. */
const YEAR_START = `(now() - interval '365 days')`

/** Companies, employees, operation/transaction types and tags (explicit ids so batches can compute references). */
function setupSql(columns: Columns): string[] {
  return [
    `insert into companies (id, name, created_at, updated_at)
       select c, 'Empresa ' || lpad(c::text, 3, '0') || ' ' || (${FIRMS})[1 + c % 5], ${YEAR_START} - interval '60 days', ${YEAR_START} - interval '60 days'
       from generate_series(1, ${COMPANIES}) c`,
    `insert into employees (id, company_id, email, name, permissions, created_at, updated_at)
       select (c - 1) * ${EMPLOYEES} + n, c, ${EMAIL('c', 'n')}, (${GIVEN})[1 + (c * 7 + n) % 30] || ' ' || (${SURNAMES})[1 + (c * 3 + n) % 40],
              array['clients.view','clients.edit','operations.view','operations.create','operations.approve','audit.view'],
              ${YEAR_START} - interval '50 days', ${YEAR_START} - interval '50 days'
       from generate_series(1, ${COMPANIES}) c, generate_series(1, ${EMPLOYEES}) n`,
    `insert into operation_types (id, company_id, name, kind, created_at, updated_at)
       select (c - 1) * 4 + n, c, (array['Cambio','Ajuste','Transferencia','Presupuesto'])[n], (array['exchange','up_down','other','budget'])[n],
              ${YEAR_START} - interval '40 days', ${YEAR_START} - interval '40 days'
       from generate_series(1, ${COMPANIES}) c, generate_series(1, 4) n`,
    `insert into transaction_types (id, company_id, name, is_commission, created_at, updated_at)
       select (c - 1) * 2 + n, c, (array['Movimiento','Comisión'])[n], n = 2, ${YEAR_START} - interval '40 days', ${YEAR_START} - interval '40 days'
       from generate_series(1, ${COMPANIES}) c, generate_series(1, 2) n`,
    `insert into tags (id, company_id, name, color, created_at, updated_at)
       select (c - 1) * ${TAGS} + n, c, (${TAG_NAMES})[n], (${COLORS})[n], ${YEAR_START} - interval '40 days', ${YEAR_START} - interval '40 days'
       from generate_series(1, ${COMPANIES}) c, generate_series(1, ${TAGS}) n`,
    ...['companies', 'employees', 'operation_types', 'transaction_types', 'tags'].map(
      (table) => `insert into audit_logs (company_id, entity, entity_id, action, raw_action, before, after, changes, created_at)
         select company_id, '${table}', id, 'create', 'INSERT', null, after, ${changes(columns, table, 'null::jsonb', 'after')}, created_at
         from (select ${table === 'companies' ? 'id' : 'company_id'} company_id, id, audit_redact(to_jsonb(x)) after, created_at from ${table} x) s
         order by created_at, id`,
    ),
    ...['companies', 'employees', 'operation_types', 'transaction_types', 'tags', 'clients', 'accounts', 'operations', 'transactions'].map(
      (table) => `select setval(pg_get_serial_sequence('${table}', 'id'), ${
        { companies: COMPANIES, employees: COMPANIES * EMPLOYEES, operation_types: COMPANIES * 4, transaction_types: COMPANIES * 2, tags: COMPANIES * TAGS, clients: COMPANIES * CLIENTS, accounts: COMPANIES * CLIENTS * 2, operations: COMPANIES * OPS, transactions: COMPANIES * OPS * 3 }[table]
      })`,
    ),
  ]
}

/**
 * One batch of companies [$1, $2]: clients, accounts, tags on clients, operations, transactions, balances, audit.
 * Ids are explicit: client k of company c is (c-1)*CLIENTS + k, its accounts 2·id-1 (ARS) and 2·id (USD, or EUR
 * for every fourth client), operation j is (c-1)*OPS + j and its transactions 3·id-2 … 3·id.
 *
 * Operation life cycles: 60% created completed, 25% created pending then approved (an `update` audit row),
 * 10% still pending, 5% created pending then cancelled (a `cancel` audit row).
 */
function batchSql(columns: Columns): string[] {
  const inBatch = (col = 'company_id') => `${col} between $1 and $2`
  return [
    `insert into clients (id, company_id, name, description, type, created_at, updated_at)
       select (c - 1) * ${CLIENTS} + k, c,
              case when k <= ${CAJAS} then 'Caja ' || (array['Central','Sucursal Norte','Sucursal Sur','Tesorería','Bóveda'])[1 + k % 5] || ' ' || k
                   when k % 7 = 0 then (${SURNAMES})[1 + floor(r1 * 40)::int] || ' ' || (${FIRMS})[1 + k % 5]
                   else (${SURNAMES})[1 + floor(r1 * 40)::int] || ', ' || (${GIVEN})[1 + floor(r2 * 30)::int] end,
              case when k <= ${CAJAS} then 'Caja interna de la empresa'
                   else (${SEGMENTS})[1 + floor(r2 * 10)::int] || ' del rubro ' || (${TRADES})[1 + floor(r3 * 12)::int] || ', ' || (${CITIES})[1 + floor(r1 * 10)::int] end,
              case when k <= ${CAJAS} then 0 else 1 end, ts, ts
       from (select c, k, random() r1, random() r2, random() r3, ${YEAR_START} - random() * interval '30 days' ts
             from generate_series($1::int, $2::int) c, generate_series(1, ${CLIENTS}) k) s`,
    `insert into accounts (id, company_id, client_id, name, currency_name, balance, created_at, updated_at)
       select 2 * cl.id - 2 + v.n, cl.company_id, cl.id, v.cur, v.cur, 0, cl.created_at, cl.created_at
       from clients cl cross join lateral (values (1, 'ARS'), (2, case when cl.id % 4 = 0 then 'EUR' else 'USD' end)) v(n, cur)
       where ${inBatch('cl.company_id')}`,
    `insert into client_tags (company_id, client_id, tag_id, created_at)
       select cl.company_id, cl.id, (cl.company_id - 1) * ${TAGS} + t.n, cl.created_at + interval '1 hour'
       from clients cl cross join generate_series(1, ${TAGS}) t(n)
       where ${inBatch('cl.company_id')} and cl.type = 1 and (hashint4(cl.id * 16 + t.n) & 1023) < 200`,
    `insert into operations (id, company_id, operation_type_id, client_id, description, date, status, created_by, created_at, updated_at)
       select (c - 1) * ${OPS} + j, c, (c - 1) * 4 + case when r2 < 0.9 then 1 when r2 < 0.95 then 2 else 3 end,
              (c - 1) * ${CLIENTS} + ${CAJAS} + 1 + floor(r1 * ${CLIENTS - CAJAS})::int,
              (array['Compra','Venta'])[1 + floor(r3 * 2)::int] || ' de divisas por ' || (${CHANNELS})[1 + floor(r4 * 6)::int] || ' ref ' || ((c - 1) * ${OPS} + j),
              d, case when life < 0.85 then 'completed' when life < 0.95 then 'pending' else 'cancelled' end,
              case when r4 < 0.7 then (c - 1) * ${EMPLOYEES} + 1 + floor(r3 * ${EMPLOYEES})::int end,
              d, case when life < 0.60 or (life >= 0.85 and life < 0.95) then d else d + (r2 * interval '3 hours') + interval '1 minute' end
       from (select c, j, random() r1, random() r2, random() r3, random() r4, random() life,
                    ${YEAR_START} + random() * interval '365 days' - interval '4 hours' d
             from generate_series($1::int, $2::int) c, generate_series(1, ${OPS}) j) s`,
    `insert into transactions (id, company_id, operation_id, account_id, currency, amount, status, transaction_type_id, is_commission, description, completed_at, created_at, updated_at)
       with o as materialized (
         select id, company_id, client_id, status, created_at, updated_at,
                round((10 + random() * 9990)::numeric, 2) as units, round((850 + random() * 400)::numeric, 2) as rate,
                case when random() < 0.5 then 1 else -1 end as s
         from operations where ${inBatch()}
       )
       select 3 * o.id - 3 + v.n, o.company_id, o.id, case when v.n = 2 then 2 * o.client_id else 2 * o.client_id - 1 end,
              case when v.n = 2 then case when o.client_id % 4 = 0 then 'EUR' else 'USD' end else 'ARS' end,
              case v.n when 1 then -o.s * o.units * o.rate when 2 then o.s * o.units else -round(o.units * o.rate * 0.005, 2) end,
              o.status, (o.company_id - 1) * 2 + case when v.n = 3 then 2 else 1 end, v.n = 3,
              case v.n when 1 then 'Pesos' when 2 then 'Divisa' else 'Comisión 0,5%' end,
              case when o.status = 'completed' then o.updated_at end, o.created_at, o.updated_at
       from o cross join (values (1), (2), (3)) v(n)`,
    `update accounts a set balance = s.total, updated_at = s.last
       from (select account_id, sum(amount) as total, max(completed_at) as last
             from transactions where ${inBatch()} and status = 'completed' group by account_id) s
       where a.id = s.account_id`,
    // The trail, oldest first within the batch, as the trigger would have written it.
    `insert into audit_logs (company_id, entity, entity_id, action, raw_action, actor_email, before, after, changes, created_at)
       select company_id, entity, entity_id, action, raw_action, actor_email, before, after, ${changesByEntity(columns, 'before', 'after')}, at
       from (
         select company_id, 'clients' entity, id entity_id, 'create' action, 'INSERT' raw_action, null actor_email,
                null::jsonb before, audit_redact(to_jsonb(x)) after, created_at at
           from clients x where ${inBatch()}
         union all
         select company_id, 'accounts', id, 'create', 'INSERT', null, null,
                audit_redact(to_jsonb(x)) || jsonb_build_object('balance', 0.000000, 'updated_at', created_at), created_at
           from accounts x where ${inBatch()}
         union all
         select company_id, 'accounts', id, 'update', 'UPDATE', null,
                audit_redact(to_jsonb(x)) || jsonb_build_object('balance', 0.000000, 'updated_at', created_at), audit_redact(to_jsonb(x)), updated_at
           from accounts x where ${inBatch()} and updated_at > created_at
         union all
         select company_id, 'client_tags', id, 'create', 'INSERT', null, null, to_jsonb(x), created_at
           from client_tags x where ${inBatch()}
         union all
         select x.company_id, 'operations', x.id, 'create', 'INSERT', e.email, null,
                case when x.updated_at > x.created_at then to_jsonb(x) || jsonb_build_object('status', 'pending', 'updated_at', x.created_at) else to_jsonb(x) end,
                x.created_at
           from operations x left join employees e on e.id = x.created_by where ${inBatch('x.company_id')}
         union all
         select x.company_id, 'operations', x.id, case when x.status = 'cancelled' then 'cancel' else 'update' end, 'UPDATE',
                ${EMAIL('x.company_id', '1')}, to_jsonb(x) || jsonb_build_object('status', 'pending', 'updated_at', x.created_at), to_jsonb(x), x.updated_at
           from operations x where ${inBatch('x.company_id')} and x.updated_at > x.created_at
         union all
         select x.company_id, 'transactions', x.id, 'create', 'INSERT', e.email, null,
                case when x.updated_at > x.created_at
                     then to_jsonb(x) || jsonb_build_object('status', 'pending', 'completed_at', null, 'updated_at', x.created_at) else to_jsonb(x) end,
                x.created_at
           from transactions x join operations o on o.id = x.operation_id left join employees e on e.id = o.created_by
          where ${inBatch('x.company_id')}
         union all
         select x.company_id, 'transactions', x.id, case when x.status = 'cancelled' then 'cancel' else 'update' end, 'UPDATE',
                ${EMAIL('x.company_id', '1')},
                to_jsonb(x) || jsonb_build_object('status', 'pending', 'completed_at', null, 'updated_at', x.created_at), to_jsonb(x), x.updated_at
           from transactions x where ${inBatch('x.company_id')} and x.updated_at > x.created_at
       ) rows
       order by at`,
  ]
}

const elapsed = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`

/** Makes sure the scale database exists and is complete; returns its URL. Safe to call from other bench scripts. */
export async function ensureScaleDatabase(log: (line: string) => void = console.log): Promise<{ url: string; reused: boolean }> {
  const started = performance.now()
  const print = fingerprint()
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} })
  const url = scaleUrl()
  try {
    const [exists] = await admin`select 1 from pg_database where datname = ${SCALE_DB}`
    if (exists) {
      const db = postgres(url, { max: 1, onnotice: () => {} })
      const [marker] = await db`select to_regclass('bench_scale_marker') is not null as present`
      const state = marker.present ? await db`select step, detail from bench_scale_marker` : []
      await db.end()
      const schema = state.find((r) => r.step === 'schema')
      if (state.some((r) => r.step === 'complete') && schema?.detail === print) {
        log(`generate: ${SCALE_DB} is complete (schema ${print}), reused`)
        return { url, reused: true }
      }
      if (schema?.detail !== print) {
        log(`generate: ${SCALE_DB} was made for another schema or volume, recreating`)
        await admin.unsafe(`drop database ${SCALE_DB} with (force)`)
      } else log(`generate: ${SCALE_DB} is incomplete, resuming`)
    }
    const [again] = await admin`select 1 from pg_database where datname = ${SCALE_DB}`
    if (!again) await admin.unsafe(`create database ${SCALE_DB}`)
  } finally {
    await admin.end()
  }

  const migrated = performance.now()
  const database = await openDatabase({ url, poolMax: WORKERS })
  const sql = postgres(url, { max: WORKERS + 1, onnotice: () => {}, connection: { timezone: 'UTC' } })
  const hardStop = setTimeout(() => {
    log('generate: deadline passed, stopping')
    process.exit(1)
  }, DEADLINE_MS)
  try {
    await sql`create table if not exists bench_scale_marker (step text primary key, detail text, done_at timestamptz not null default now())`
    await sql`create table if not exists bench_scale_keys (company_id integer primary key, key text not null)`
    await sql.unsafe(CHANGES_FN)
    const columns: Columns = { names: new Map(), nested: new Set() }
    for (const r of await sql`select table_name, column_name, data_type from information_schema.columns where table_schema = current_schema()
        and table_name in ('companies', 'employees', 'operation_types', 'transaction_types', 'tags', 'clients', 'accounts', 'client_tags', 'operations', 'transactions')`) {
      columns.names.set(r.table_name, [...(columns.names.get(r.table_name) ?? []), r.column_name])
      if (['ARRAY', 'json', 'jsonb'].includes(r.data_type)) columns.nested.add(r.table_name)
    }
    await sql`insert into bench_scale_marker (step, detail) values ('schema', ${print}) on conflict (step) do nothing`
    log(`generate: schema ready in ${elapsed(migrated)} (${COMPANIES} companies, ${CLIENTS} clients and ${OPS} operations each)`)

    const done = new Set((await sql`select step from bench_scale_marker`).map((r) => r.step as string))
    if (!done.has('setup')) {
      const t0 = performance.now()
      await sql.begin(async (tx) => {
        await tx`set local session_replication_role = replica`
        for (const text of setupSql(columns)) await tx.unsafe(text)
        await tx`insert into bench_scale_marker (step) values ('setup')`
      })
      log(`generate: companies, employees, types and tags in ${elapsed(t0)}`)
    }

    const batches: [number, number][] = []
    for (let c = 1; c <= COMPANIES; c += PER_BATCH) batches.push([c, Math.min(COMPANIES, c + PER_BATCH - 1)])
    const pending = batches.filter(([a]) => !done.has(`batch ${a}`))
    const statements = batchSql(columns)
    const loadStart = performance.now()
    let finished = batches.length - pending.length
    const worker = async () => {
      for (let next = pending.shift(); next; next = pending.shift()) {
        const [a, b] = next
        const t0 = performance.now()
        await sql.begin(async (tx) => {
          await tx`set local session_replication_role = replica`
          await tx`set local work_mem = '64MB'`
          for (const [i, text] of statements.entries()) {
            const s0 = performance.now()
            await tx.unsafe(text, [a, b])
            if (process.env.BENCH_VERBOSE) log(`  statement ${i + 1}: ${elapsed(s0)}`)
          }
          await tx`insert into bench_scale_marker (step) values (${`batch ${a}`})`
        })
        finished++
        log(`generate: batch ${finished}/${batches.length} (companies ${a}-${b}) in ${elapsed(t0)}, total ${elapsed(loadStart)}`)
      }
    }
    await Promise.all(Array.from({ length: WORKERS }, worker))

    if (!done.has('seal')) {
      const t0 = performance.now()
      // As a running service keeps it: every audit row has its place in its company's chain, so a server started
      // on this database finds no backlog to seal while it is being measured.
      // The load wrote its audit rows with triggers off, so they are queued for their places here, as the trigger would.
      await sql`insert into audit_pending (company_id, audit_id) select company_id, id from audit_logs where company_id is not null on conflict do nothing`
      const companies = await companiesToSeal(database.db)
      let next = 0
      let sealed = 0
      await Promise.all(
        Array.from({ length: WORKERS }, async () => {
          while (next < companies.length) sealed += await sealCompany(database.db, companies[next++])
        }),
      )
      await sql`insert into bench_scale_marker (step) values ('seal')`
      log(`generate: audit chain sealed (${sealed} rows) in ${elapsed(t0)}`)
    }

    if (!done.has('vacuum')) {
      const t0 = performance.now()
      // Sets hint bits and the visibility map (index-only counts) and gives the planner statistics, as autovacuum would.
      for (const table of ['companies', 'employees', 'clients', 'accounts', 'tags', 'client_tags', 'operations', 'transactions', 'audit_logs'])
        await sql.unsafe(`vacuum (analyze) ${table}`)
      await sql`insert into bench_scale_marker (step) values ('vacuum')`
      log(`generate: vacuum analyze in ${elapsed(t0)}`)
    }

    const keyed = await sql`select count(*)::int as n from bench_scale_keys`
    if (keyed[0].n < COMPANIES) {
      // Through the service's own key issuing, with the trigger on: these rows audit at the time they are made.
      await sql`delete from bench_scale_keys`
      for (let c = 1; c <= COMPANIES; c++) {
        const key = await database.db.transaction((tx) => issueKey(tx, c, null, 'bench'))
        await sql`insert into bench_scale_keys (company_id, key) values (${c}, ${key.key})`
      }
    }
    const [counts] = await sql`select (select count(*) from clients)::int clients, (select count(*) from accounts)::int accounts,
      (select count(*) from operations)::int operations, (select count(*) from transactions)::int transactions,
      (select count(*) from audit_logs)::int audit_logs,
      (select count(*) from accounts a where balance <> coalesce((select sum(amount) from transactions t where t.account_id = a.id and t.status = 'completed'), 0))::int unbalanced,
      pg_size_pretty(pg_database_size(current_database())) size`
    if (counts.unbalanced !== 0) throw new Error(`${counts.unbalanced} accounts whose balance is not the sum of completed amounts`)
    await sql`insert into bench_scale_marker (step, detail) values ('complete', ${JSON.stringify(counts)}) on conflict (step) do nothing`
    log(`generate: complete in ${elapsed(started)}: ${JSON.stringify(counts)}`)
    return { url, reused: false }
  } finally {
    clearTimeout(hardStop)
    await sql.end({ timeout: 5 })
    await database.close()
  }
}

if (import.meta.main) {
  const t0 = performance.now()
  const { reused } = await ensureScaleDatabase()
  const seconds = (performance.now() - t0) / 1000
  printFigures([figure(reused ? 'scale database check (complete, reused)' : 'generate scale database (1M operations, 5.8M audit rows)', seconds, null, 's', '<= 1800')])
  process.exit(0)
}
