/**
 * What one process counts for Prometheus, with prom-client: a registry per app (tests build several apps in one
 * process), made only when metrics are on (METRICS_TOKEN or METRICS_PORT), so with them off no request pays for any
 * of it. The instruments here are the ones the request path feeds as things happen; the figures read when a scrape
 * comes (pool, streams, the outbox and audit tables) are added by server/modules/monitoring, which knows where
 * those live. No label ever holds a company, a key, an address or a raw path: only route templates and closed sets.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { AppContext } from '../context'

/** Why a request was answered 503 SERVICE_UNAVAILABLE. */
const CAUSES = ['db_pool_queue', 'password_hashing', 'database_unavailable'] as const
export type UnavailableCause = (typeof CAUSES)[number]
/** Which limit refused a request with 429 RATE_LIMITED. */
const LIMITS = ['credential', 'address', 'in_progress', 'streams'] as const
/** Why a sign-in (`POST /api/sessions`) was refused. */
const SIGN_IN_REFUSALS = ['bad_credentials', 'throttled'] as const

/** Methods kept as they are; anything else a client sends is counted as OTHER, so the label stays a closed set. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])
const CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx']

/** Seconds: from a cached read (a few ms) to an export or a long poll (tens of seconds). */
const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
/** Seconds in the pool's admission line: nothing at all, or up to DB_QUEUE_TIMEOUT_MS (5 s by default). */
const WAIT_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]

/**
 * Default metrics of prom-client that say nothing true under Bun (checked with Bun 1.4.5): the active handle,
 * request and resource counts stay 0 (Bun keeps no such lists), no garbage-collection entries are ever observed,
 * the heap spaces are V8's names of which only `old` is filled, and the version is the Node.js release Bun
 * imitates. Left out rather than shown as figures an operator would believe.
 */
const UNTRUE_UNDER_BUN = [
  'nodejs_active_handles',
  'nodejs_active_handles_total',
  'nodejs_active_requests',
  'nodejs_active_requests_total',
  'nodejs_active_resources',
  'nodejs_active_resources_total',
  'nodejs_gc_duration_seconds',
  'nodejs_heap_space_size_total_bytes',
  'nodejs_heap_space_size_used_bytes',
  'nodejs_heap_space_size_available_bytes',
  'nodejs_version_info',
]

export class Telemetry {
  readonly registry = new Registry()

  readonly requests = new Histogram({
    name: 'fos_http_request_duration_seconds',
    help: 'Requests answered, by route template (unmatched: refused before routing, or no such route), method and status class; from arrival to the answer leaving the app (for an event stream, its start)',
    labelNames: ['route', 'method', 'status_class'] as const,
    buckets: REQUEST_BUCKETS,
    registers: [this.registry],
  })

  readonly poolWait = new Histogram({
    name: 'fos_db_pool_wait_seconds',
    help: 'Time a tenant transaction waited in line for a database connection (0 when one was free at once)',
    buckets: WAIT_BUCKETS,
    registers: [this.registry],
  })

  readonly unavailable = new Counter({
    name: 'fos_unavailable_total',
    help: 'Requests answered 503 SERVICE_UNAVAILABLE, by cause: db_pool_queue (no connection within DB_QUEUE_TIMEOUT_MS), password_hashing (no hashing slot within PASSWORD_HASH_QUEUE_MS), database_unavailable (the database refused, timed out or went away)',
    labelNames: ['cause'] as const,
    registers: [this.registry],
  })

  readonly rateLimited = new Counter({
    name: 'fos_rate_limited_total',
    help: 'Requests refused 429 RATE_LIMITED, by limit: credential (RATE_LIMIT_PER_MINUTE), address (RATE_LIMIT_IP_PER_MINUTE), in_progress (MAX_REQUESTS_PER_ADDRESS), streams (SSE_MAX_STREAMS_PER_TOKEN or _PER_ADDRESS)',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  })

  readonly signInRefused = new Counter({
    name: 'fos_sign_in_refusals_total',
    help: 'Employee sign-ins refused, by reason: bad_credentials (401: wrong e-mail or password) or throttled (429: too many failures)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  })

  constructor() {
    // Every cause, limit and reason is there from the start at 0, so rate() and the alerts see the first one.
    for (const cause of CAUSES) this.unavailable.labels({ cause }).inc(0)
    for (const limit of LIMITS) this.rateLimited.labels({ limit }).inc(0)
    for (const reason of SIGN_IN_REFUSALS) this.signInRefused.labels({ reason }).inc(0)
    // The event-loop delay is sampled by a timer; under Bun every 10 ms (prom-client's default) cost an idle process
    // 3.4 ms of CPU a second, every 50 ms 1.5 ms; a 200 ms stall then shows as a 0.15 s delay (the stall less the
    // period it fell in), where it showed as 0.19 s.
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 50 })
    for (const name of UNTRUE_UNDER_BUN) this.registry.removeSingleMetric(name)
    // In place of nodejs_version_info: the runtime that really runs the service.
    new Gauge({ name: 'fos_runtime_info', help: 'The runtime and its version (always 1)', labelNames: ['runtime', 'version'] as const, registers: [this.registry] })
      .labels({ runtime: 'bun', version: Bun.version })
      .set(1)
  }

  /** One answered request. */
  observeRequest(route: string, method: string, status: number, seconds: number) {
    const statusClass = CLASSES[Math.floor(status / 100) - 1] ?? 'other'
    this.requests.observe({ route, method: METHODS.has(method) ? method : 'OTHER', status_class: statusClass }, seconds)
  }
}

const telemetries = new WeakMap<AppContext, Telemetry>()

/** The app's telemetry, made on first use; undefined while metrics are off. */
export function telemetryOf(app: AppContext): Telemetry | undefined {
  if (app.config.metrics.token === undefined && app.config.metrics.port === undefined) return undefined
  let t = telemetries.get(app)
  if (!t) telemetries.set(app, (t = new Telemetry()))
  return t
}
