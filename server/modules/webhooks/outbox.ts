import { sql, type SQL } from 'drizzle-orm'
import { rowsOf, type Executor, type Tx } from '../../../db/client'
import { parseExactJson } from '../../../db/json'
import { fixedStatement, statementsByShape } from '../../../db/statement'
import { pgArray } from '../../lib/arrays'
import type { DomainEvent } from '../../lib/events'
import { invalid } from '../../lib/errors'

/**
 * What integrators are told about: every type here is recorded and can be subscribed to (exactly, by family
 * such as `operation.*`, or with `*`). Other announcements (`company.updated`) stay between features.
 */
export const EVENT_TYPES = [
  'client.created',
  'client.updated',
  'client.deleted',
  'account.created',
  'operation.created',
  'operation.approved',
  'operation.reverted',
  'operation.cancelled',
  'attachment.created',
  'attachment.deleted',
  'cost_center.created',
  'cost_center.updated',
  'messaging_tool.created',
  'messaging_tool.updated',
  'messaging_tool.deleted',
  'mesa_line.created',
  'mesa_line.deleted',
  'ventanilla_ticket.created',
  'ventanilla_ticket.called',
  'ventanilla_ticket.finished',
  'ventanilla_ticket.no_show',
  'ventanilla_ticket.transferred',
  'till_session.opened',
  'till_session.closed',
  'webhook_endpoint.disabled',
  'webhook.test',
] as const

const RECORDED = new Set<string>(EVENT_TYPES)

/** Endpoint filters an event matches: everything, its family (`operation.*`) or its exact type. */
export function patternsOf(type: string): string[] {
  const dot = type.indexOf('.')
  return ['*', ...(dot > 0 ? [`${type.slice(0, dot)}.*`] : []), type]
}

/** The outbox's statements of each shape: the event types, and the functions that render an object or add facts. */
const oneStatements = statementsByShape<ReturnType<typeof recordOneText>>()
const manyStatements = statementsByShape<ReturnType<typeof recordManyText>>()

/**
 * Records `event` and queues it for every enabled endpoint of the company that subscribes to it, in one statement
 * of the announcing transaction (`outbox_record`, db/sql/outbox.sql): the event commits with the change or not at
 * all. A `webhook.test` goes only to the endpoint it names. Answers how many deliveries it queued.
 */
async function recordOne(tx: Tx, event: DomainEvent): Promise<number> {
  const { companyId, type, renderSql, facts } = event
  const statement = oneStatements([type, renderSql, facts], () => recordOneText(type, renderSql, facts))
  const object = renderSql ? null : JSON.stringify((await event.render?.()) ?? null)
  const [row] = rowsOf<{ queued: number }>(
    await statement(tx, { company: companyId, kind: event.object.kind, id: event.object.id, object, data: JSON.stringify(event.data ?? {}) }),
  )
  return Number(row.queued)
}

function recordOneText(type: string, renderSql: DomainEvent['renderSql'], facts: DomainEvent['facts']) {
  return fixedStatement<{ company: number; kind: string; id: number; object: string | null; data: string }>((p) => {
    const object = renderSql ? sql`(${renderSql(sql`${p.id}::int`)})` : sql`${p.object}::jsonb`
    const more = facts ? sql` || coalesce(${facts(sql`${p.id}::int`)}, '{}'::jsonb)` : sql``
    return sql`select outbox_record(${p.company}::int, ${type}::text, ${p.kind}::text, ${p.id}::int,
      jsonb_build_object('object', ${object}) || ${p.data}::jsonb${more},
      ${pgArray(patternsOf(type), 'text')}, ${type === 'webhook.test' ? sql`${p.id}::int` : sql`null::int`}) as queued`
  })
}

/**
 * Events of one company whose objects are rendered in code, sharing one way of adding facts, in one statement
 * whatever their number (a batch create): ids are drawn in the order given, and each is queued for the endpoints
 * that take its type (`webhook_targets`, with the patterns `patternsOf` gives each type present).
 */
async function recordMany(tx: Tx, events: DomainEvent[]): Promise<number> {
  const { companyId, facts } = events[0]
  const rows = await Promise.all(
    events.map(async (e) => ({
      type: e.type,
      kind: e.object.kind,
      id: e.object.id,
      object: (await e.render?.()) ?? null,
      data: e.data ?? {},
    })),
  )
  const types = [...new Set(rows.map((r) => r.type))].sort()
  const statement = manyStatements([...types, facts], () => recordManyText(types, facts))
  return rowsOf(await statement(tx, { company: companyId, rows: JSON.stringify(rows) })).length
}

function recordManyText(types: string[], facts: DomainEvent['facts']) {
  // A CASE, not a lookup in a subquery: webhook_targets is inlined only while its arguments hold no subquery.
  const patterns = sql`case ev.type ${sql.join(types.map((type) => sql`when ${type} then ${pgArray(patternsOf(type), 'text')}`), sql` `)} end`
  return fixedStatement<{ company: number; rows: string }>(
    (p) => sql`with ev as (
        insert into events (company_id, type, object_kind, object_id, data)
        select ${p.company}::int, u.type, u.kind, u.id,
          jsonb_build_object('object', u.object) || u.data${facts ? sql` || coalesce(${facts(sql.raw('u.id'))}, '{}'::jsonb)` : sql``}
        from rows from (jsonb_to_recordset(${p.rows}::jsonb) as (type text, kind text, id int, object jsonb, data jsonb))
          with ordinality as u(type, kind, id, object, data, n)
        order by u.n
        returning id, type, object_kind, object_id
      )
      insert into webhook_deliveries (company_id, endpoint_id, event_id, object_key)
      select ${p.company}::int, w.id, ev.id, ev.object_kind || ':' || ev.object_id from ev
      cross join lateral webhook_targets(${p.company}::int, ${patterns}) w(id)
      returning 1`,
  )
}

/**
 * Records what was announced, in order. Events whose object is a SQL expression, and endpoint tests, take a
 * statement each; the rest, announced together, take one between them. Answers how many deliveries it queued.
 */
export async function record(tx: Tx, announced: DomainEvent[]): Promise<number> {
  const events = announced.filter((e) => RECORDED.has(e.type))
  if (events.length === 0) return 0
  const [first] = events
  const together = events.every(
    (e) => e.type !== 'webhook.test' && !e.renderSql && e.companyId === first.companyId && e.facts === first.facts,
  )
  if (together) return recordMany(tx, events)
  let queued = 0
  for (const e of events) queued += await recordOne(tx, e)
  return queued
}

// ------------------------------------------------------------------------------------------------ the feed

export interface EventDto {
  id: string
  type: string
  created_at: string
  data: { object: unknown; [fact: string]: unknown }
}

interface EventRow {
  id: string | number
  type: string
  data: EventDto['data'] | string
  created_at: string
  seq: string | number | null
}

export const eventId = (id: number | string) => `evt_${id}`

/** The number inside `evt_<n>`, or null for anything else. */
export function eventNumber(raw: string): number | null {
  const m = /^evt_([1-9][0-9]{0,15})$/.exec(raw)
  return m && Number.isSafeInteger(Number(m[1])) ? Number(m[1]) : null
}

const dto = (r: EventRow): EventDto => ({
  id: eventId(r.id),
  type: r.type,
  created_at: r.created_at,
  data: typeof r.data === 'string' ? (parseExactJson(r.data) as EventDto['data']) : r.data,
})

const CURSOR_PREFIX = 'cur_'

export const encodeCursor = (seq: number) => CURSOR_PREFIX + Buffer.from(`feed.${seq}`).toString('base64url')

function decodeCursor(raw: string): number | null {
  if (!raw.startsWith(CURSOR_PREFIX)) return null
  const m = /^feed\.(\d{1,16})$/.exec(Buffer.from(raw.slice(CURSOR_PREFIX.length), 'base64url').toString())
  return m ? Number(m[1]) : null
}

const columns = sql`id, type, data, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at, seq`

/** Any constant: the first key of the per-company sealing lock. */
const SEAL_LOCK = 727_415

/**
 * Gives feed positions to the company's committed events that have none yet, in id order. Event ids are taken
 * at insert, not at commit, so a feed in id order could hand out id 12 while id 11 is still uncommitted, and
 * never show 11 to that consumer. Positions are instead given after commit, by one sealer per company at a time
 * (a transaction-scoped advisory lock): the next sealer starts only once this one has committed, so every
 * position it gives is greater than any a consumer has already seen, and a late commit simply gets a later
 * position. Needs a write transaction of the company.
 */
async function seal(tx: Tx, companyId: number) {
  await tx.execute(sql`select pg_advisory_xact_lock(${SEAL_LOCK}, ${companyId})`)
  // A statement of its own, so its snapshot includes whatever the previous sealer committed before it let go.
  await tx.execute(sql`with fresh as (
      select id, nextval('events_feed_seq') as seq from (
        select id from events where company_id = ${companyId} and seq is null order by id limit 100000) unsealed
    )
    update events e set seq = fresh.seq from fresh where e.id = fresh.id`)
}

async function positionOf(db: Executor, companyId: number, after: string): Promise<number> {
  const cursor = decodeCursor(after)
  if (cursor !== null) return cursor
  const n = eventNumber(after)
  const [row] = n === null ? [] : rowsOf<{ seq: number | string | null }>(await db.execute(sql`select seq from events where id = ${n} and company_id = ${companyId}`))
  if (!row || row.seq === null) throw invalid('after must be an event id of this company or a next_cursor', [{ field: 'after', message: 'unknown event id or cursor' }])
  return Number(row.seq)
}

/**
 * One page of the company's events in feed order (the order their transactions committed, give or take
 * transactions committing at the same moment), after sealing what has committed since the last read.
 */
export async function listEvents(tx: Tx, companyId: number, q: { after?: string; limit?: number; type?: string }) {
  const limit = q.limit ?? 100
  await seal(tx, companyId)
  const from = q.after ? await positionOf(tx, companyId, q.after) : 0
  const types = (q.type ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  const rows = rowsOf<EventRow>(
    await tx.execute(sql`select ${columns} from events
      where company_id = ${companyId} and seq > ${from}
        ${types.length ? sql`and type = any(${pgArray(types, 'text')})` : sql``}
      order by seq limit ${limit}`),
  )
  const last = rows.at(-1)
  return { data: rows.map(dto), next_cursor: encodeCursor(last ? Number(last.seq) : from) }
}

export async function getEvent(db: Executor, companyId: number, raw: string): Promise<EventDto | null> {
  const n = eventNumber(raw)
  if (n === null) return null
  const [row] = rowsOf<EventRow>(await db.execute(sql`select ${columns} from events where id = ${n} and company_id = ${companyId}`))
  return row ? dto(row) : null
}

/** Events are kept 30 days at least; older ones and their delivery records go in batches. */
export async function pruneEvents(db: Executor, keepDays = 35): Promise<void> {
  await db.execute(sql`with gone as (
      delete from events where id in (
        select id from events where created_at < now() - make_interval(days => ${keepDays}) order by id limit 5000)
      returning id
    ), attempts as (
      delete from webhook_attempts where event_id in (select id from gone)
    )
    delete from webhook_deliveries where event_id in (select id from gone)`)
}
