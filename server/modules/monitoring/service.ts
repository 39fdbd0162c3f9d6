import { sql } from 'drizzle-orm'
import { Gauge } from 'prom-client'
import { LAST_MIGRATION, rowsOf } from '../../../db/client'
import { transaction } from '../../../db/driver'
import type { AppContext } from '../../context'
import type { Telemetry } from '../../infra/telemetry'
import { admission } from '../../lib/write'
import { ventanillaHub } from '../ventanilla/hub'

/** A readiness check answers within this, so a balancer's check (5 s in scripts/balanced.sh) hears 503 rather than nothing. */
const READY_TIMEOUT_MS = 3_000
/** The scrape's statement over the outbox and audit tables is cut off past this; the scrape still answers. */
const FIGURES_TIMEOUT_MS = 2_000

/** Liveness: the database answers (a failure becomes 503 in the errors plugin). */
export async function alive(app: AppContext) {
  await app.db.execute(sql`select 1`)
}

export type Readiness = { ready: true } | { ready: false; reason: string }

/** Checks in flight, per app: concurrent probes (a balancer's and a scrape) share one statement. */
const checking = new WeakMap<AppContext, Promise<Readiness>>()

/**
 * Whether this process should be given traffic: its database answers, is a primary that takes writes (a standby,
 * or a promoted node pg_auto_failover still keeps read-only, refuses every write), and holds every migration this
 * code ships (a newer process may have applied more; old code keeps working on them, see db/routines.ts). One
 * statement on the process's own pool, so it also says that the pool itself gets through.
 */
export function readiness(app: AppContext): Promise<Readiness> {
  let check = checking.get(app)
  if (!check) {
    check = checkReadiness(app).finally(() => checking.delete(app))
    checking.set(app, check)
  }
  return check
}

async function checkReadiness(app: AppContext): Promise<Readiness> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<Readiness>((done) => {
    timer = setTimeout(() => done({ ready: false, reason: `the database did not answer within ${READY_TIMEOUT_MS / 1000} s` }), READY_TIMEOUT_MS)
  })
  const asked = app.database
    .rows<{ primary: boolean; writable: boolean; migrated: boolean }>(
      sql`select not pg_is_in_recovery() as primary,
                 current_setting('transaction_read_only') = 'off' as writable,
                 exists (select 1 from drizzle.__drizzle_migrations where created_at = ${LAST_MIGRATION}::bigint) as migrated`,
    )
    .then(([row]): Readiness => {
      if (!row.primary) return { ready: false, reason: 'the database is a standby' }
      if (!row.writable) return { ready: false, reason: 'the database does not take writes yet' }
      if (!row.migrated) return { ready: false, reason: 'the database lacks migrations this version needs' }
      return { ready: true }
    })
    .catch((): Readiness => ({ ready: false, reason: 'the database is not reachable' }))
  try {
    return await Promise.race([asked, late])
  } finally {
    clearTimeout(timer)
  }
}

/** What the scrape reads from the tables, for every company together. Ages in seconds; 0 when nothing waits. */
export interface DatabaseFigures {
  deliveriesPending: number
  deliveriesFailing: number
  oldestPendingS: number
  oldestUnattemptedS: number
  endpointsFailing: number
  auditUnsealed: number
  sealLagS: number
}

/**
 * One statement, read-only, cut off after FIGURES_TIMEOUT_MS. Pending deliveries are read through their partial
 * indexes (`status = 'pending'`); the unsealed audit rows are `audit_pending`, a queue the sealer keeps short, and
 * only the oldest of them is looked up in `audit_logs`. Its cost follows the backlogs, not the tables: a few
 * milliseconds while the worker and the sealer keep up.
 */
export async function databaseFigures(app: AppContext): Promise<DatabaseFigures> {
  return transaction(
    app.db,
    async (tx) => {
      await tx.execute(sql`select set_config('statement_timeout', ${String(FIGURES_TIMEOUT_MS)}, true)`)
      const [row] = rowsOf<Record<string, string | number | null>>(
        await tx.execute(sql`
          with deliveries as (
            select count(*) as pending,
                   count(*) filter (where attempts > 0) as failing,
                   extract(epoch from now() - min(created_at)) as oldest,
                   extract(epoch from now() - min(created_at) filter (where attempts = 0)) as oldest_unattempted
              from webhook_deliveries where status = 'pending'
          ), endpoints as (
            select count(*) as failing from webhook_endpoints where deleted_at is null and enabled and failing_since is not null
          ), unsealed as (
            select count(*) as rows, min(audit_id) as oldest_id from audit_pending
          )
          select d.pending, d.failing, d.oldest, d.oldest_unattempted, e.failing as endpoints_failing, u.rows as unsealed,
                 extract(epoch from now() - a.created_at) as seal_lag
            from deliveries d, endpoints e, unsealed u left join audit_logs a on a.id = u.oldest_id`),
      )
      const n = (v: string | number | null) => Math.max(0, Number(v ?? 0))
      return {
        deliveriesPending: n(row.pending),
        deliveriesFailing: n(row.failing),
        oldestPendingS: n(row.oldest),
        oldestUnattemptedS: n(row.oldest_unattempted),
        endpointsFailing: n(row.endpoints_failing),
        auditUnsealed: n(row.unsealed),
        sealLagS: n(row.seal_lag),
      }
    },
    { accessMode: 'read only' },
  )
}

const collecting = new WeakSet<Telemetry>()

/**
 * The figures read when a scrape comes, added to the app's registry once: the pool's admission line, the open
 * streams, readiness, and the outbox and audit backlogs from the tables (one statement per scrape, shared by the
 * gauges that show it). Those last ones are the database's, the same in every process: aggregate them with max(),
 * not sum(). When the statement fails they are NaN and fos_database_figures_up is 0.
 */
export function addScrapeTimeFigures(app: AppContext, telemetry: Telemetry) {
  if (collecting.has(telemetry)) return
  collecting.add(telemetry)
  const registers = [telemetry.registry]
  const pool = () => admission(app)

  new Gauge({
    name: 'fos_db_pool_in_use',
    help: 'Tenant transactions holding a database connection of this process now (0 on the embedded database)',
    registers,
    collect() {
      this.set(pool()?.inUse ?? 0)
    },
  })
  new Gauge({
    name: 'fos_db_pool_waiting',
    help: 'Tenant transactions waiting in line for a database connection of this process now',
    registers,
    collect() {
      this.set(pool()?.waiting ?? 0)
    },
  })
  new Gauge({
    name: 'fos_db_pool_size',
    help: 'Connections tenant transactions may hold at once in this process (DB_POOL_MAX; 0 on the embedded database)',
    registers,
    collect() {
      this.set(pool()?.size ?? 0)
    },
  })
  new Gauge({
    name: 'fos_streams_open',
    help: 'Event streams open on this process, by kind: screen (TV and dispenser snapshot streams), console (counter queue streams)',
    labelNames: ['kind'] as const,
    registers,
    collect() {
      const open = ventanillaHub(app).streamsByKind()
      this.set({ kind: 'screen' }, open.screen)
      this.set({ kind: 'console' }, open.console)
    },
  })
  new Gauge({
    name: 'fos_ready',
    help: 'Whether this process answers /health/ready with 200 (1) or 503 (0)',
    registers,
    async collect() {
      this.set((await readiness(app)).ready ? 1 : 0)
    },
  })

  // One statement per scrape, whichever of the gauges below asks first.
  let scrape: Promise<DatabaseFigures | null> | undefined
  const figures = () => {
    scrape ??= databaseFigures(app)
      .catch((e) => {
        app.log({ level: 'warn', msg: 'metrics: the outbox and audit figures could not be read', error: e instanceof Error ? e.message : String(e) })
        return null
      })
      .finally(() => setTimeout(() => (scrape = undefined), 0))
    return scrape
  }
  new Gauge({
    name: 'fos_database_figures_up',
    help: 'Whether the outbox and audit figures of this scrape could be read from the database (1) or not (0: they are NaN)',
    registers,
    async collect() {
      this.set((await figures()) ? 1 : 0)
    },
  })
  const fromTables = (name: string, help: string, pick: (f: DatabaseFigures) => number) =>
    new Gauge({
      name,
      help: `${help}; every company together, read from the database (the same in every process)`,
      registers,
      async collect() {
        const f = await figures()
        this.set(f ? pick(f) : Number.NaN)
      },
    })
  fromTables('fos_webhook_deliveries_pending', 'Webhook deliveries not yet delivered nor given up', (f) => f.deliveriesPending)
  fromTables('fos_webhook_deliveries_failing', 'Pending webhook deliveries with at least one failed attempt (waiting for a retry)', (f) => f.deliveriesFailing)
  fromTables('fos_webhook_oldest_pending_seconds', 'Age of the oldest pending webhook delivery, retries included', (f) => f.oldestPendingS)
  fromTables(
    'fos_webhook_oldest_unattempted_seconds',
    'Age of the oldest pending webhook delivery never attempted yet: how far the delivery worker is behind (also grows behind an earlier event of the same object still failing for that endpoint)',
    (f) => f.oldestUnattemptedS,
  )
  fromTables('fos_webhook_endpoints_failing', 'Enabled webhook endpoints whose latest attempts all failed', (f) => f.endpointsFailing)
  fromTables('fos_audit_unsealed_rows', 'Committed audit rows not yet sealed into their company’s hash chain', (f) => f.auditUnsealed)
  fromTables('fos_audit_seal_lag_seconds', 'Age of the oldest audit row waiting for its seal (0 when none waits)', (f) => f.sealLagS)
}
