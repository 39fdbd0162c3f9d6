import { and, desc, eq, inArray, isNull, is, sql, type SQL } from 'drizzle-orm'
import { getTableConfig, PgTable } from 'drizzle-orm/pg-core'
import * as schema from '../../../db/schema'
import { auditLogs, auditSeals, employees } from '../../../db/schema'
import { rowsOf, type Executor } from '../../../db/client'
import { clientScope, type Caller } from '../../access/caller'
import { invalid } from '../../lib/errors'
import { pagination } from '../../lib/models'
import { operationVisible } from '../../lib/scope'

/**
 * The tables the audit trigger is attached to, read from the same rule db/sql/audit.sql applies (a table with
 * a company column, plus companies itself), so a new table is filterable as soon as it exists. No table here
 * is an internal impersonation table, so the default view is every audited table of the company.
 */
const NOT_AUDITED = new Set(['audit_logs', 'audit_digests', 'audit_seals', 'audit_pending', 'idempotency_keys', 'till_states', 'till_movements'])
const AUDITED = new Set(
  (Object.values(schema) as unknown[])
    .filter((v): v is PgTable => is(v, PgTable))
    .map((table) => getTableConfig(table))
    .filter((c) => !NOT_AUDITED.has(c.name) && (c.name === 'companies' || c.columns.some((col) => col.name === 'company_id')))
    .map((c) => c.name),
)
/** Named by the interface as examples of the filter; no such records are kept, so they answer an empty page instead of 400. */
const KNOWN_ELSEWHERE = ['cheques', 'invoices']

function singular(name: string) {
  if (name.endsWith('ies')) return `${name.slice(0, -3)}y`
  if (name.endsWith('s')) return name.slice(0, -1)
  return name
}

const TABLE_ALIASES = new Map<string, string>()
for (const name of [...AUDITED, ...KNOWN_ELSEWHERE]) {
  TABLE_ALIASES.set(name, name)
  TABLE_ALIASES.set(singular(name), name)
}

/** `operation`, `operations`, `Operations`, `cost-center` → the table name; anything else is a 400. */
export function resolveTable(raw: string): string {
  const table = TABLE_ALIASES.get(raw.trim().toLowerCase().replace(/-/g, '_'))
  if (!table)
    throw invalid('Unknown table', [{ field: 'table', message: `unknown table "${raw}"; one of ${[...AUDITED].sort().join(', ')} (or the singular)` }])
  return table
}

/** Argentina has kept UTC−03:00 all year since 2009; the contract fixes date-only bounds to it. */
const ART = '-03:00'
const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})?$/i

/**
 * A query bound as the first instant it excludes (`to`) or includes (`from`). An upper date-time includes the
 * whole millisecond it names, because entries show milliseconds while the database keeps microseconds.
 */
export function parseBound(field: 'from' | 'to', raw: string): Date {
  const bad = () => invalid(`Invalid ${field}`, [{ field, message: 'expected YYYY-MM-DD or an ISO 8601 date-time' }])
  const day = DATE_ONLY.exec(raw)
  if (day) {
    const start = new Date(`${raw}T00:00:00.000${ART}`)
    const check = new Date(Date.UTC(+day[1], +day[2] - 1, +day[3]))
    if (Number.isNaN(start.getTime()) || check.getUTCDate() !== +day[3] || check.getUTCMonth() !== +day[2] - 1) throw bad()
    return field === 'from' ? start : new Date(start.getTime() + 24 * 60 * 60 * 1000)
  }
  if (!DATE_TIME.test(raw)) throw bad()
  const zoned = /(Z|[+-]\d{2}:\d{2})$/i.test(raw) ? raw : `${raw}Z`
  const at = new Date(zoned)
  if (Number.isNaN(at.getTime())) throw bad()
  return field === 'from' ? at : new Date(at.getTime() + 1)
}

export interface AuditQuery {
  table?: string
  from?: string
  to?: string
  employee_id?: number
  action?: string
  channel?: string
  page?: number
  pageSize?: number
}

type Row = typeof auditLogs.$inferSelect

const OBJECT = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * Tool runs record `{ requested_by }`; a tool run's detail stored bare is the requester itself, so it is wrapped the
 * same way. The other channels' details (the CLI's command, a dispenser) are answered as recorded.
 */
function channelDetail(channel: string | null, stored: unknown): Record<string, unknown> {
  if (!OBJECT(stored)) return {}
  if (channel !== 'messaging' && channel !== 'twin') return stored
  return 'requested_by' in stored ? stored : { requested_by: stored }
}

export async function listAuditLogs(db: Executor, caller: Caller, q: AuditQuery) {
  const page = q.page ?? 1
  const pageSize = q.pageSize ?? 50
  const empty = { data: [], pagination: pagination(page, pageSize, 0) }
  const table = q.table !== undefined ? resolveTable(q.table) : undefined
  const from = q.from !== undefined ? parseBound('from', q.from) : undefined
  const toExclusive = q.to !== undefined ? parseBound('to', q.to) : undefined

  // Rows of a null company can never equal the caller's company, so historical unowned rows stay hidden.
  const where: (SQL | undefined)[] = [eq(auditLogs.companyId, caller.companyId)]
  if (table) where.push(eq(auditLogs.entity, table))
  if (q.action) where.push(eq(auditLogs.action, q.action))
  if (q.channel) where.push(eq(auditLogs.channel, q.channel))
  if (from) where.push(sql`${auditLogs.createdAt} >= ${from.toISOString()}::timestamptz`)
  if (toExclusive) where.push(sql`${auditLogs.createdAt} < ${toExclusive.toISOString()}::timestamptz`)

  if (q.employee_id !== undefined) {
    const [emp] = await db
      .select({ email: employees.email })
      .from(employees)
      .where(and(eq(employees.id, q.employee_id), eq(employees.companyId, caller.companyId)))
    if (!emp) return empty
    where.push(eq(auditLogs.actorEmail, emp.email.toLowerCase()))
  }

  // A client-scoped employee sees only operation and transaction rows of operations visible to them.
  if (clientScope(caller)) {
    if (table && table !== 'operations' && table !== 'transactions') return empty
    const txOperation = sql`coalesce((${auditLogs.after}->>'operation_id')::integer, (${auditLogs.before}->>'operation_id')::integer)`
    where.push(
      sql`((${auditLogs.entity} = 'operations' and ${operationVisible(caller, auditLogs.entityId)})
        or (${auditLogs.entity} = 'transactions' and ${operationVisible(caller, txOperation)}))`,
    )
  }

  const filter = and(...where)
  const offset = (page - 1) * pageSize
  const rows =
    table && !q.action && !clientScope(caller)
      ? await pageAcrossActions(db, filter, pageSize, offset)
      : await db
          .select()
          .from(auditLogs)
          .where(filter)
          .orderBy(desc(auditLogs.createdAt), desc(auditLogs.id))
          .limit(pageSize)
          .offset(offset)
  // The exact total is a bare count(*) of the same predicate. Every filter but channel is a key column of an
  // audit index (company_id, entity, action, created_at / actor_email), so Postgres counts index entries of
  // just the matching range (index-only, no jsonb snapshot is read) instead of visiting the table.
  const [{ total }] = await db.select({ total: sql<number>`count(*)`.mapWith(Number) }).from(auditLogs).where(filter)

  const actors = await currentEmployees(db, caller.companyId, rows)
  const seals = await placesOf(db, rows)
  return { data: rows.map((r) => entryDto(r, actors, seals.get(r.id))), pagination: pagination(page, pageSize, total) }
}

const ACTIONS = ['create', 'update', 'cancel', 'revert', 'delete']

/**
 * A table filter without an action: the (company_id, entity, action, created_at, id) index yields rows in time
 * order only within one action, so each action is read newest-first off its own index range (at most
 * offset+limit entries each) and the short lists are merged. A plain `order by` here would either sort every
 * row of the table or walk the whole company's history skipping other tables.
 */
async function pageAcrossActions(db: Executor, filter: SQL | undefined, limit: number, offset: number): Promise<Row[]> {
  const branches = ACTIONS.map(
    (action) => sql`(select id, created_at from audit_logs where ${filter} and action = ${action}
      order by created_at desc, id desc limit ${offset + limit})`,
  )
  const picked = await db.execute(
    sql`select id from (${sql.join(branches, sql` union all `)}) merged order by created_at desc, id desc limit ${limit} offset ${offset}`,
  )
  const ids = rowsOf<{ id: string | number }>(picked).map((r) => Number(r.id))
  if (ids.length === 0) return []
  const full = await db.select().from(auditLogs).where(inArray(auditLogs.id, ids))
  const byId = new Map(full.map((r) => [r.id, r]))
  return ids.map((id) => byId.get(id)!)
}

/** The page's places in the chain, by primary key: one short lookup beside the page rather than a join inside it. */
async function placesOf(db: Executor, rows: Row[]) {
  const byId = new Map<number, Place>()
  if (rows.length === 0) return byId
  const found = await db
    .select({ auditId: auditSeals.auditId, seq: auditSeals.seq, hash: auditSeals.hash })
    .from(auditSeals)
    .where(inArray(auditSeals.auditId, rows.map((r) => r.id)))
  for (const f of found) byId.set(f.auditId, { seq: f.seq, hash: f.hash })
  return byId
}

interface Place {
  seq: number
  hash: string
}

async function currentEmployees(db: Executor, companyId: number, rows: Row[]) {
  const emails = [...new Set(rows.map((r) => r.actorEmail).filter((e): e is string => Boolean(e)))]
  const byEmail = new Map<string, { id: number; name: string }>()
  if (emails.length === 0) return byEmail
  const found = await db
    .select({ id: employees.id, name: employees.name, email: employees.email })
    .from(employees)
    .where(and(eq(employees.companyId, companyId), isNull(employees.deletedAt), inArray(sql`lower(${employees.email})`, emails.map((e) => e.toLowerCase()))))
  for (const e of found) byEmail.set(e.email.toLowerCase(), { id: e.id, name: e.name })
  return byEmail
}

/**
 * `to_jsonb` writes timestamptz as `2026-01-02T03:04:05.123456+00:00`; the API's times are UTC with `Z`, microseconds
 * kept. Only timestamp columns (`*_at`, `date`) are touched, so text that merely looks like a time stays as written.
 */
const isTimeColumn = (field: string) => field.endsWith('_at') || field === 'date'
const PG_TIMESTAMPTZ = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d{1,6})?([+-]\d{2}(?::\d{2})?)$/

function utc(field: string, value: unknown): unknown {
  if (typeof value !== 'string' || !isTimeColumn(field)) return value
  const m = PG_TIMESTAMPTZ.exec(value)
  if (!m) return value
  const at = new Date(`${m[1]}${m[3].length === 3 ? `${m[3]}:00` : m[3]}`)
  if (Number.isNaN(at.getTime())) return value
  return `${at.toISOString().slice(0, 19)}${m[2] ?? ''}Z`
}

/** A row snapshot is always an object (interface 2.8): `{}` before a create and after a hard delete. */
function snapshot(stored: unknown): Record<string, unknown> {
  if (!OBJECT(stored)) return {}
  return Object.fromEntries(Object.entries(stored).map(([k, v]) => [k, utc(k, v)]))
}

function entryDto(r: Row, actors: Map<string, { id: number; name: string }>, place: Place | undefined) {
  const who = r.actorEmail ? actors.get(r.actorEmail.toLowerCase()) : undefined
  return {
    id: r.id,
    entity: r.entity,
    entity_id: r.entityId,
    action: r.action as 'create',
    raw_action: r.rawAction as 'INSERT',
    actor: { id: who?.id ?? null, name: who?.name ?? null, email: r.actorEmail ?? null },
    channel: r.channel ?? null,
    channel_detail: channelDetail(r.channel, r.channelDetail),
    timestamp: r.createdAt.toISOString(),
    before: snapshot(r.before),
    after: snapshot(r.after),
    changes: Array.isArray(r.changes)
      ? (r.changes as { field: string; before: unknown; after: unknown }[]).map((c) => ({ field: c.field, before: utc(c.field, c.before), after: utc(c.field, c.after) }))
      : [],
    seq: place?.seq ?? null,
    hash: place?.hash ?? null,
  }
}
