import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { ConfigError, LISTENER_HEADER_BYTES, loadConfig, type Config } from './config'
import { DatabaseSetupError, isConnectionLost, openDatabase, type Database } from '../db/client'
import { surviveWritesOnDroppedConnections } from '../db/hosts'
import { createStore } from './infra/storage'
import { createApp } from './app'
import { multipartBound } from './plugins/body-limit'
import type { AppContext } from './context'
import { DomainEvents } from './lib/events'
import { deliveryWorker } from './modules/webhooks'
import { closeExports } from './modules/exports/limits'
import { auditSigningKeyPem } from './modules/audit/signing-key'
import { startAuditChain } from './modules/audit/worker'
import { announceListening, isCopy, processSlot, startCopies, whenFirstGone } from './infra/processes'
import { serveMetrics } from './modules/monitoring'
import { newSetupLink } from './modules/setup/service'

/** Past this declared length Bun itself answers (a bare 413); below it the body limit answers with a body. */
const listenerBodyBound = (config: Config) => Math.max(2 ** 30, multipartBound(config.maxUploadBytes) + 1)

/** Every line names its process when several serve the port. */
const logAs = (pid: number | undefined) => (entry: Record<string, unknown>) =>
  console.log(JSON.stringify({ time: new Date().toISOString(), ...(pid !== undefined && { pid }), ...entry }))

/** Without SIGNING_SECRET the embedded default keeps one under DATA_DIR, so links survive a restart. */
function signingSecret(config: Config): string {
  if (config.signingSecret) return config.signingSecret
  const file = join(config.dataDir, 'signing-secret')
  if (!existsSync(file)) {
    mkdirSync(config.dataDir, { recursive: true })
    writeFileSync(file, randomBytes(32).toString('base64url'), { mode: 0o600 })
  }
  return readFileSync(file, 'utf8').trim()
}

/**
 * Opens the database, retrying while no host of DATABASE_URL answers (every host down, or none taking writes yet):
 * meanwhile the port answers every request 503 SERVICE_UNAVAILABLE with Retry-After (a balancer's health check
 * sees the process alive but not ready), and the log says what it waits for.
 */
async function openWhenReachable(config: Config, log: (entry: Record<string, unknown>) => void, open: () => Promise<Database>): Promise<Database> {
  let waiting: ReturnType<typeof Bun.serve> | undefined
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        return await open()
      } catch (e) {
        if (!isConnectionLost(e)) throw e
        const code = (e as { code?: string }).code ?? (e as { cause?: { code?: string } }).cause?.code
        log({ level: 'warn', msg: 'no database host takes writes yet; retrying', attempt, error: code, hint: 'every host of DATABASE_URL is down, or only standbys answer' })
        waiting ??= Bun.serve({
          port: config.port,
          reusePort: config.processes > 1,
          fetch: () =>
            new Response(JSON.stringify({ error: 'The database is not reachable yet; retry shortly', code: 'SERVICE_UNAVAILABLE' }), {
              status: 503,
              headers: { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1' },
            }),
        })
        await Bun.sleep(Math.min(250 * attempt, 2000))
      }
    }
  } finally {
    waiting?.stop(true)
  }
}

async function main() {
  let config: Config
  try {
    config = loadConfig()
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(`Configuration error: ${e.message}`)
      process.exit(2)
    }
    throw e
  }
  config = { ...config, signingSecret: signingSecret(config), auditSigningKey: auditSigningKeyPem(config) }
  const log = logAs(config.processes > 1 ? process.pid : undefined)
  const copy = isCopy()
  if (config.databaseUrl) surviveWritesOnDroppedConnections(log)
  const database = await openWhenReachable(config, log, () =>
    openDatabase({
      url: config.databaseUrl,
      dataDir: config.databaseUrl ? undefined : join(config.dataDir, 'pglite'),
      poolMax: config.dbPoolMax,
      poolMode: config.databasePoolMode,
      directUrl: config.databaseDirectUrl,
    }),
  ).catch((e) => {
    if (!(e instanceof DatabaseSetupError)) throw e
    console.error(`Database setup error: ${e.message}`)
    process.exit(2)
  })
  const ctx: AppContext = {
    config,
    database,
    db: database.db,
    store: createStore(config),
    clock: () => new Date(),
    log,
    events: new DomainEvents(),
  }
  const app = createApp(ctx)
  if (process.argv.includes('--demo') && !copy) {
    const { seedDemo } = await import('./demo')
    await seedDemo(ctx, app)
  }
  // While no company exists the operator needs a way in: a link with a fresh token, in the log and as a plain line
  // that is easy to find and copy, printed before the service answers so that it is there once it does. The copies
  // of a PROCESSES start leave it to the first process.
  const setupLink = copy ? null : await newSetupLink(ctx.db, config.publicBaseUrl, ctx.clock())
  if (setupLink) {
    log({ level: 'info', msg: setupLink })
    console.log(setupLink)
  }
  // A silent connection is closed after IDLE_TIMEOUT_S; event streams lift it for themselves (they speak every 20 s).
  // Bun answers a body declared over its own bound with a bare 413 before any handler runs, so that bound sits far
  // above the body limit's (server/plugins/body-limit.ts), which answers `{ error, code }` for what lies between.
  // With several processes each listens with SO_REUSEPORT (server/infra/processes.ts); alone, a second server started
  // on the same port by mistake fails to listen instead of sharing it.
  const server = app.listen({
    port: config.port,
    idleTimeout: config.idleTimeoutS,
    maxRequestBodySize: listenerBodyBound(config),
    reusePort: config.processes > 1,
  })
  // METRICS_PORT: each process answers /metrics on a loopback port of its own, the n-th copy on METRICS_PORT + n.
  let metrics: ReturnType<typeof serveMetrics> | undefined
  if (config.metrics.port !== undefined) {
    const metricsPort = config.metrics.port + processSlot()
    try {
      metrics = serveMetrics(ctx, metricsPort)
    } catch (e) {
      console.error(`Metrics listener error: cannot listen on 127.0.0.1:${metricsPort} (METRICS_PORT): ${e instanceof Error ? e.message : String(e)}`)
      process.exit(2)
    }
  }
  const auditChain = startAuditChain(ctx)
  const worker = deliveryWorker(ctx).start()
  const port = server.server!.port!
  const copies = config.processes > 1 && !copy ? startCopies(config.processes - 1, port, log, ['--demo']) : undefined

  let stopping = false
  const stop = async (signal: string) => {
    if (stopping) return
    stopping = true
    log({ level: 'info', msg: 'stopping', signal })
    await Promise.all([copies?.stop(), server.stop(true), metrics?.stop(true)])
    await worker.stop()
    await closeExports(ctx)
    await auditChain.stop()
    await database.close()
    process.exit(0)
  }
  process.on('SIGTERM', () => void stop('SIGTERM'))
  process.on('SIGINT', () => void stop('SIGINT'))
  // Said once the signals are heard: whoever waits for this line may stop the process at once and see it say so.
  log({ level: 'info', msg: 'listening', port, database: database.kind, store: ctx.store.kind, ...(metrics && { metrics_port: metrics.port }) })
  // Started without `--max-http-header-size` above MAX_HEADER_BYTES, the listener refuses long heads first, bodiless.
  const listenerHeadBound = (await import('node:http')).maxHeaderSize
  if (listenerHeadBound <= config.maxHeaderBytes)
    log({ level: 'warn', msg: `start with bun --max-http-header-size=${LISTENER_HEADER_BYTES}: a request head over ${listenerHeadBound} bytes is answered 431 without a body` })
  if (copy) {
    whenFirstGone(() => void stop('first process gone'))
    announceListening()
  }
}

await main()
