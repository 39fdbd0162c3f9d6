import { and, eq, sql, type Placeholder } from 'drizzle-orm'
import { idempotencyKeys } from '../../db/schema'
import { rowsOf, type Db, type Tx } from '../../db/client'
import { fixedStatement } from '../../db/statement'
import { keyHolds, type Caller } from '../access/caller'
import type { AppContext } from '../context'
import { Admission } from './admission'
import { telemetryOf } from '../infra/telemetry'
import { eventTransaction } from './events'
import { conflict, invalid } from './errors'
import { sha256 } from './secrets'

/**
 * How a route touches the database. `write`: one read-write transaction. `read`: a read-only transaction.
 * `snapshot`: read-only at repeatable read, for figures that must agree with each other. All three run as the
 * tenant role, so row-level security confines every statement to the caller's company.
 */
export type TxMode = 'write' | 'read' | 'snapshot'

export interface WriteOptions {
  /** `messaging` or `twin` when a bot tool run makes the change; the audit trail records it. */
  channel?: string
  channelDetail?: unknown
  /** Another pool to run on (long reads kept apart from the one ordinary requests use); its own limits apply. */
  on?: Db
  /**
   * A caller remembered from an earlier key lookup, confirmed by the transaction's first statement (`keyHolds`);
   * when the key no longer resolves to that caller the transaction rolls back with CredentialChanged, whatever the
   * body did.
   */
  credential?: Credential
}

export interface Credential {
  prefix: string
  state: string
}

/** A tenant transaction's remembered caller no longer held when it began: nothing it did is kept. */
export class CredentialChanged extends Error {
  constructor() {
    super('The credentials of this request changed since they were last read')
  }
}

/**
 * The role a tenant transaction acts as (db/sql/rls.sql): neither owner nor superuser, so the row-level
 * policies confine every statement of the transaction to `app.company_id`, even one that forgets its filter.
 */
export const TENANT_ROLE = 'fos_app'

/**
 * One tenant transaction. Its first statement tells the audit trigger who is acting (a company key has no email,
 * so its actor stays null), names the company for row-level security, takes the tenant role and confirms a caller
 * remembered for its key (`opts.credential`); `set_config(…, true)` is `SET LOCAL`, so all of it ends with the
 * transaction. A read marks itself read-only in the same statement; a snapshot's isolation level has to be set by
 * BEGIN, before any statement. No parallel plans: a
 * request's statement waits for its workers to start (a tenant's count of 120,000 operations: 42 ms with one worker,
 * 21 ms without), and under concurrency the workers only take the cores other requests are waiting for. A statement
 * built to spread one long job over the cores (the audit chain's verify) asks for them back itself.
 */
export async function tenantTx<T>(app: AppContext, caller: Caller, mode: TxMode, fn: (tx: Tx) => Promise<T>, opts: WriteOptions = {}) {
  const release = opts.on ? undefined : await admission(app)?.enter(caller.companyId)
  try {
    return await runTenantTx(app, caller, mode, fn, opts)
  } finally {
    release?.()
  }
}

const admissions = new WeakMap<AppContext, Admission>()

/**
 * The pool's admission line (its waits feed fos_db_pool_wait_seconds when metrics are on); the embedded database
 * has one connection and queues in itself.
 */
export function admission(app: AppContext): Admission | undefined {
  if (app.database.kind !== 'postgres') return undefined
  let a = admissions.get(app)
  if (!a) {
    const wait = telemetryOf(app)?.poolWait
    admissions.set(app, (a = new Admission(app.config.dbPoolMax, app.config.dbQueueTimeoutMs, wait && ((s) => wait.observe(s)))))
  }
  return a
}

const AS_TENANT = fixedStatement<{ actor: string; channel: string; detail: string; company: string; readOnly: 'on' | 'off'; keyPrefix: string | null; keyState: string | null }>(
  (p) => sql`select
    set_config('app.actor_email', ${p.actor}, true),
    set_config('app.channel', ${p.channel}, true),
    set_config('app.channel_detail', ${p.detail}, true),
    set_config('app.company_id', ${p.company}, true),
    set_config('transaction_read_only', ${p.readOnly}, true),
    set_config('max_parallel_workers_per_gather', '0', true),
    set_config('role', ${sql.raw(`'${TENANT_ROLE}'`)}, true),
    ${keyHolds(p.keyPrefix, p.keyState)} as held`,
)

async function runTenantTx<T>(app: AppContext, caller: Caller, mode: TxMode, fn: (tx: Tx) => Promise<T>, opts: WriteOptions) {
  const run = async (tx: Tx) => {
    // Sent without waiting for its answer: the connection runs statements in the order they are sent, so the
    // body's first statement already acts as the tenant, and the two travel in one round trip.
    const configured = Promise.resolve(
      AS_TENANT(tx, {
        actor: caller.employee?.email ?? '',
        channel: opts.channel ?? '',
        detail: opts.channelDetail ? JSON.stringify(opts.channelDetail) : '',
        company: String(caller.companyId),
        readOnly: mode === 'write' ? 'off' : 'on',
        keyPrefix: opts.credential?.prefix ?? null,
        keyState: opts.credential?.state ?? null,
      }),
    ).then((answer) => {
      if (rowsOf<{ held: boolean }>(answer)[0]?.held === false) throw new CredentialChanged()
    })
    // Awaited once the body is done; until then a refusal must not count as unhandled.
    configured.catch(() => {})
    try {
      return await fn(tx)
    } finally {
      await configured
    }
  }
  const db = opts.on ?? app.db
  return eventTransaction(db, app.events, run, mode === 'snapshot' ? { isolationLevel: 'repeatable read', accessMode: 'read only' } : undefined)
}

/** A write transaction for code that is not a route of its own (a bot tool run inside the MCP endpoint). */
export const write = <T>(app: AppContext, caller: Caller, fn: (tx: Tx) => Promise<T>, opts: WriteOptions = {}) =>
  tenantTx(app, caller, 'write', fn, opts)

/*
 * Plans of a statement inserting rows, and of the foreign-key checks it runs.
 *
 * The statement itself: planned with its parameters, an insert from arrays knows how many rows each array holds, so
 * that plan always looks cheaper than the generic one and Postgres planned it afresh on every single create (0.2 ms,
 * a fifth of its execution). Its plan does not depend on the tenant (it reads tables by id alone), so for a few rows
 * it is planned once per session, generically, with sequential scans off; many rows get a plan for their number.
 *
 * Its key checks: Postgres keeps each session's plan of a key check (`select 1 from operations where id = $1`) for
 * the life of the session, generic after its first five uses, until an ANALYZE of the table. A plan made while the
 * table was nearly empty (a new database, a tenant's first operations) is any scan at all, since all cost the same:
 * a sequential scan, or with those off another index that holds `id` behind its leading column, which walks the whole
 * index at every check once the table has grown (52 pages per check at 10,000 operations, tests/plans.test.ts). So a
 * statement inserting a few rows has its checks planned afresh, for the tables as they are (tens of microseconds
 * each); before one inserting many, the session's cached plans are dropped, so each is made again once. The rest of
 * the write keeps cached plans.
 */

/** Rows one statement may insert with their key checks planned one by one; above it the session's plans are renewed. */
const FEW_ROWS = 50

/** A new id of `table`, drawn by the statement itself: its serial's sequence, named once and resolved as it is planned. */
export const nextId = (table: 'clients' | 'operations') => sql.raw(`nextval('${table}_id_seq'::regclass)::int`)

/**
 * The opening of an insert statement that draws its ids first, `ids(n, id)` in input order from 1, so the rows it
 * inserts further on can name the row they belong to by its place in the input.
 */
export const drawnIds = (table: 'clients' | 'operations', count: Placeholder) => sql`with ids as materialized (
    select n, ${nextId(table)} as id from generate_series(1, ${count}::int) as n
  )`

/** How the insert's key checks are planned: given to it to set in its select list (`set_config('plan_cache_mode', $n, true)`). */
export type KeyCheckPlans = 'force_custom_plan' | 'auto'

/**
 * Runs `insert`, a statement inserting `rows` rows, as described above; it sets the plan mode it is given in its
 * select list, which decides how the checks run as the statement ends are planned. The settings around it travel
 * with the statement, without waiting for their answers: the connection runs statements in the order they are sent.
 */
export async function insertPlanned<T>(tx: Tx, rows: number, insert: (keyChecks: KeyCheckPlans) => PromiseLike<T>): Promise<T> {
  const few = rows <= FEW_ROWS
  if (!few) await tx.execute(sql`discard plans`)
  return planned(tx, { mode: few ? 'force_generic_plan' : 'auto', seqScans: 'off' }, insert(few ? 'force_custom_plan' : 'auto'))
}

type PlanSettings = { mode: 'force_generic_plan' | 'force_custom_plan' | 'auto'; seqScans: 'on' | 'off' }

/** The plan settings around an insert; values as parameters, so the session prepares it once. */
const PLAN_SETTINGS = fixedStatement<PlanSettings>(
  (p) => sql`select set_config('plan_cache_mode', ${p.mode}::text, true), set_config('enable_seqscan', ${p.seqScans}::text, true)`,
)

const USUAL_PLANS: PlanSettings = { mode: 'auto', seqScans: 'on' }

/** A fixed `statement` under `settings`, the transaction's usual ones restored after it, all three sent together. */
async function planned<T>(tx: Tx, settings: PlanSettings, statement: PromiseLike<T>): Promise<T> {
  const [, result] = await Promise.all([PLAN_SETTINGS(tx, settings), statement, PLAN_SETTINGS(tx, USUAL_PLANS)])
  return result
}

/**
 * A single-row insert the query builder writes (a client's account, a tag link): planned afresh with its key checks,
 * so that neither is a plan kept from when the tables were small.
 */
export async function insertOne<T>(tx: Tx, insert: PromiseLike<T>): Promise<T> {
  const [, result] = await Promise.all([PLAN_SETTINGS(tx, { mode: 'force_custom_plan', seqScans: 'on' }), insert])
  // A query builder's statement reaches the connection a few turns of the event loop after a fixed statement started
  // beside it, so the usual settings are restored only once the insert has answered, never ahead of it.
  await PLAN_SETTINGS(tx, USUAL_PLANS)
  return result
}

/** Marks the rest of an open write as made by a bot tool run, for the audit trail. */
export async function setAuditChannel(tx: Tx, channel: string, detail: unknown) {
  await tx.execute(sql`select set_config('app.channel', ${channel}, true), set_config('app.channel_detail', ${JSON.stringify(detail)}, true)`)
}

const RETENTION_MS = 24 * 60 * 60 * 1000

/** What makes two requests "the same": method, concrete path and the JSON body (or a digest of an upload). */
export const requestFingerprint = (method: string, path: string, body: unknown) => sha256(`${method} ${path}\n${JSON.stringify(body ?? null)}`)

function checkIdempotencyKey(key: string) {
  if (key.length < 1 || key.length > 255) throw invalid('Idempotency-Key must be 1 to 255 characters', [{ field: 'Idempotency-Key', message: '1 to 255 characters' }])
}

/**
 * Whose Idempotency-Keys a request claims and replays: its company's, and within it its principal's, the employee
 * making it (by key or session), or 0 for the company itself (its keys, the public dispenser). A key is replayed only
 * to the principal that chose it: another caller with the same key, a client-scoped employee above all, gets what it
 * would get had the key never been used, never the answer of an operation it may neither create nor see.
 */
export interface KeyScope {
  company: number
  principal: number
}

export const idempotencyScope = (caller: Pick<Caller, 'companyId' | 'employee'>): KeyScope => ({
  company: caller.companyId,
  principal: caller.employee?.id ?? 0,
})

const inScope = (scope: KeyScope, key: string) =>
  and(eq(idempotencyKeys.companyId, scope.company), eq(idempotencyKeys.principal, scope.principal), eq(idempotencyKeys.key, key))

/**
 * Claims an Idempotency-Key inside the write's own transaction, so a concurrent duplicate waits on the claim and
 * then replays what committed, and a failed first attempt leaves no claim behind. Answers the first response when
 * this is a replay; a different request under the same key is 409. Keys are claimed within `scope` (`idempotencyScope`).
 */
export async function claimKey(
  app: AppContext,
  tx: Tx,
  scope: KeyScope,
  key: string,
  hash: string,
  status: number,
): Promise<{ status: number; body: unknown } | null> {
  checkIdempotencyKey(key)
  const claimed = await tx
    .insert(idempotencyKeys)
    .values({ companyId: scope.company, principal: scope.principal, key, requestHash: hash, status, response: {} })
    .onConflictDoNothing()
    .returning({ key: idempotencyKeys.key })
    .prepare('idempotency_claim')
    .execute()
  if (claimed.length > 0) return null
  const [prior] = await tx.select().from(idempotencyKeys).where(inScope(scope, key)).for('update')
  if (app.clock().getTime() - prior.createdAt.getTime() < RETENTION_MS) {
    if (prior.requestHash !== hash) throw conflict('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with a different request')
    return { status: prior.status, body: prior.response }
  }
  await tx
    .update(idempotencyKeys)
    .set({ requestHash: hash, status, response: {}, createdAt: app.clock() })
    .where(inScope(scope, key))
  return null
}

/** Stores the answer of a claimed key; `status`, when given, is the one actually sent (an upsert may answer 200 or 201). */
export async function keepAnswer(tx: Tx, scope: KeyScope, key: string, body: unknown, status?: number) {
  await tx
    .update(idempotencyKeys)
    .set({ ...(status === undefined ? {} : { status }), response: body ?? null })
    .where(inScope(scope, key))
    .prepare('idempotency_answer')
    .execute()
}

/** Rolls back the replaying transaction while carrying the stored answer out of it. */
class Replay extends Error {
  constructor(readonly status: number, readonly body: unknown) {
    super('replay')
  }
}

/** Claims of creates made outside any company (superadmin company creation); no company has id 0. */
export const PLATFORM_SCOPE: KeyScope = { company: 0, principal: 0 }

export interface IdempotentRequest {
  key: string | undefined
  method: string
  path: string
  /** What makes two requests "the same": the JSON body, or a digest of a multipart upload. */
  fingerprint: unknown
}

/**
 * An idempotent create whose fingerprint is only known inside the handler (a streamed upload) or that runs in a
 * transaction of its own (platform scope, a tool call inside the MCP endpoint). Routes with a parsed body declare
 * `idempotent` in their policy instead.
 */
export async function claimOnce<T>(
  app: AppContext,
  scope: KeyScope,
  run: (body: (tx: Tx) => Promise<T>) => Promise<T>,
  req: IdempotentRequest,
  set: { status?: number | string },
  fn: (tx: Tx) => Promise<T>,
  status = 201,
): Promise<T> {
  if (req.key === undefined) {
    const body = await run(fn)
    set.status = status
    return body
  }
  const key = req.key
  const hash = requestFingerprint(req.method, req.path, req.fingerprint)
  try {
    const body = await run(async (tx) => {
      const prior = await claimKey(app, tx, scope, key, hash, status)
      if (prior) throw new Replay(prior.status, prior.body)
      const result = await fn(tx)
      await keepAnswer(tx, scope, key, result)
      return result
    })
    set.status = status
    return body
  } catch (e) {
    if (e instanceof Replay) {
      set.status = e.status
      return e.body as T
    }
    throw e
  }
}

/** claimOnce in a tenant write transaction. */
export const createOnce = <T>(
  app: AppContext,
  caller: Caller,
  req: IdempotentRequest,
  set: { status?: number | string },
  fn: (tx: Tx) => Promise<T>,
  opts: WriteOptions & { status?: number } = {},
) => claimOnce(app, idempotencyScope(caller), (body) => write(app, caller, body, opts), req, set, fn, opts.status ?? 201)
