import { Elysia } from 'elysia'
import type { AppContext } from '../../context'
import { telemetryOf, type Telemetry } from '../../infra/telemetry'
import { OVERLOAD_RETRY_AFTER_S } from '../../lib/admission'
import { ApiError } from '../../lib/errors'
import { ErrorBody } from '../../lib/models'
import { sameDigest, sha256 } from '../../lib/secrets'
import { apiErrorResponse } from '../../plugins/errors'
import { MonitoringModel as M } from './model'
import { addScrapeTimeFigures, alive, readiness } from './service'

const TAG = 'Health'

const noSuchRoute = () => new ApiError(404, 'NOT_FOUND', 'Not found')

/**
 * A scrape: the registry in the Prometheus text format, once the caller holds the token (when there is one). The
 * token is compared as a digest, in constant time; a company key, a grant or a session cookie is no token here.
 */
async function scrape(app: AppContext, telemetry: Telemetry, request: Request): Promise<Response> {
  const token = app.config.metrics.token
  if (token !== undefined) {
    const given = /^Bearer\s+(\S+)$/i.exec(request.headers.get('authorization') ?? '')?.[1]
    if (given === undefined || !sameDigest(sha256(given), sha256(token)))
      throw new ApiError(401, 'UNAUTHORIZED', 'Send the metrics token: Authorization: Bearer <METRICS_TOKEN>', undefined, { 'www-authenticate': 'Bearer realm="metrics"' })
  }
  return new Response(await telemetry.registry.metrics(), { headers: { 'content-type': telemetry.registry.contentType, 'cache-control': 'no-store' } })
}

const METRICS_DESCRIPTION = [
  'The figures of the server process that answers, in the Prometheus text format, for Prometheus to scrape (every series: docs/metrics.md in the repository).',
  'Off by default: 404 `NOT_FOUND` as for any unknown path. With `METRICS_TOKEN` set it answers here, only to `Authorization: Bearer <METRICS_TOKEN>`',
  '(anything else, a company key included, 401 `UNAUTHORIZED`); with `METRICS_PORT` set it leaves this port for a listener of each process of its own on',
  '127.0.0.1 (port `METRICS_PORT + n` for the n-th process of a `PROCESSES` start), guarded by the token too when there is one.',
  'No label carries a company, a key, an address or a concrete path.',
].join(' ')

/**
 * The probes, on every process: liveness (`/health`), readiness for a balancer (`/health/ready`) and the metrics
 * scrape (`/metrics`, off unless METRICS_TOKEN or METRICS_PORT is set). None takes a credential of a company,
 * none is rate limited (server/plugins/rate-limit.ts), and none opens a tenant transaction.
 */
export const monitoringModule = (app: AppContext) => {
  const telemetry = telemetryOf(app)
  if (telemetry) addScrapeTimeFigures(app, telemetry)
  const onMainPort = telemetry && app.config.metrics.port === undefined ? telemetry : undefined
  return new Elysia()
    .get(
      '/health',
      async () => {
        await alive(app)
        return { status: 'ok' as const }
      },
      {
        // Exempt from the rate limits: never 429.
        response: { 200: M.alive, 503: ErrorBody },
        detail: {
          tags: [TAG],
          security: [],
          summary: 'Liveness: answers once the database does',
          description:
            'The process runs and its database answers a `select 1`. Does not say whether the database takes writes or holds this version\'s migrations: that is `/health/ready`.',
        },
      },
    )
    .get(
      '/health/ready',
      async () => {
        const r = await readiness(app)
        if (!r.ready) throw new ApiError(503, 'SERVICE_UNAVAILABLE', `Not ready: ${r.reason}`, undefined, { 'retry-after': String(OVERLOAD_RETRY_AFTER_S) })
        return { status: 'ready' as const }
      },
      {
        response: { 200: M.ready, 503: ErrorBody },
        detail: {
          tags: [TAG],
          security: [],
          summary: 'Readiness: this process should be given traffic',
          description: [
            '200 `{ status: "ready" }` when, in one statement on this process\'s own pool answered within 3 s, the database is a primary that takes writes',
            '(`not pg_is_in_recovery()` and `transaction_read_only` off: a standby, or a node promoted but still kept read-only, is not) and it holds every',
            'migration this version ships (a newer version may have applied more). Otherwise 503 `SERVICE_UNAVAILABLE` with `Retry-After`, its `error` saying',
            'which check failed. HAProxy takes a process out of rotation on it (`scripts/balanced.sh`); concurrent probes share one check.',
          ].join(' '),
        },
      },
    )
    .get(
      '/metrics',
      ({ request }) => {
        if (!onMainPort) throw noSuchRoute()
        return scrape(app, onMainPort, request)
      },
      {
        response: { 200: M.metrics, 401: ErrorBody, 404: ErrorBody },
        detail: {
          tags: [TAG],
          security: [{ metricsToken: [] }],
          summary: 'Metrics for Prometheus (off unless METRICS_TOKEN is set)',
          description: METRICS_DESCRIPTION,
        },
      },
    )
}

/**
 * METRICS_PORT: `/metrics` of this process alone, on a loopback listener of its own (the main port is shared by
 * the processes of a PROCESSES start, so a scrape there could reach any of them). Nothing else is served there.
 */
export function serveMetrics(app: AppContext, port: number) {
  const telemetry = telemetryOf(app)
  if (!telemetry) throw new Error('metrics are off')
  return Bun.serve({
    hostname: '127.0.0.1',
    port,
    async fetch(request) {
      try {
        if (new URL(request.url).pathname !== '/metrics') throw noSuchRoute()
        if (request.method !== 'GET' && request.method !== 'HEAD')
          return new Response(JSON.stringify({ error: `${request.method} is not answered here; use GET, HEAD`, code: 'METHOD_NOT_ALLOWED' }), {
            status: 405,
            headers: { 'content-type': 'application/json; charset=utf-8', allow: 'GET, HEAD' },
          })
        return await scrape(app, telemetry, request)
      } catch (e) {
        if (e instanceof ApiError) return apiErrorResponse(e)
        app.log({ level: 'error', msg: 'metrics scrape failed', error: e instanceof Error ? e.message : String(e) })
        return apiErrorResponse(new ApiError(500, 'INTERNAL_ERROR', 'Internal error'))
      }
    },
  })
}
