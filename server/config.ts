import { join, resolve } from 'node:path'
import { createPrivateKey } from 'node:crypto'
import { availableParallelism } from 'node:os'

export interface Config {
  port: number
  databaseUrl?: string
  /** `transaction` when DATABASE_URL goes through a pooler in transaction pooling (PgBouncer). */
  databasePoolMode: 'session' | 'transaction'
  /** Postgres itself, for LISTEN/NOTIFY and the migration lock; DATABASE_URL when unset. */
  databaseDirectUrl?: string
  /** A standby (or a list preferring one) that statement exports and audit verification read from. */
  databaseReadUrl?: string
  dataDir: string
  publicBaseUrl: string
  signingSecret: string
  /** PKCS#8 PEM of the Ed25519 key signing audit digests; '' means the one kept under DATA_DIR. */
  auditSigningKey: string
  s3?: {
    bucket: string
    endpoint?: string
    region: string
    accessKeyId?: string
    secretAccessKey?: string
    forcePathStyle: boolean
  }
  superadmin: { jwtSecret?: string; jwksUrl?: string; emails: string[] }
  maxUploadBytes: number
  /** Bound on every non-multipart request body (JSON above all); uploads have `maxUploadBytes`. */
  maxJsonBytes: number
  /** Deepest nesting of a JSON body (400 VALIDATION_ERROR past it). */
  maxJsonDepth: number
  /** Most array items and object members of a JSON body (413 past it); the batch routes allow BATCH_MAX_JSON_ELEMENTS. */
  maxJsonElements: number
  batchMaxJsonElements: number
  /** A body must arrive whole within this many ms of the request (408 and the connection closed). */
  bodyTimeoutMs: number
  /**
   * The most a request's URL and headers may hold (431 HEADERS_TOO_LARGE past it). Below LISTENER_HEADER_BYTES, the
   * bound the listener is started with, past which it answers a bare 431 itself.
   */
  maxHeaderBytes: number
  /** Seconds a connection may stay silent before the listener closes it (event streams are exempt). */
  idleTimeoutS: number
  /** Requests in progress at once from one client address (429 past it). */
  maxRequestsPerAddress: number
  /** How long a request waits for a database connection before 503 with Retry-After. */
  dbQueueTimeoutMs: number
  /**
   * Password hashes and checks one process runs at once (at most one per core; by default half the cores, shared
   * among PROCESSES) and how long one may wait for its turn before 503 SERVICE_UNAVAILABLE.
   */
  passwordHashing: { concurrency: number; queueMs: number }
  /** Statement exports: their own small pool, how many per company at once, and their bounds. */
  exports: { poolMax: number; perCompany: number; maxRows: number; statementTimeoutMs: number; restPercent: number }
  /** Abuse limits of the public ventanilla event stream. */
  sse: { maxStreamsPerToken: number; maxStreamsPerAddress: number; maxPendingEvents: number }
  dbPoolMax: number
  /** Server processes sharing `port` (the first starts and watches the others); each has its own pools. */
  processes: number
  rateLimit: { perKey: number; perIp: number; perCompany: number }
  /** Live API keys one company may hold (409 API_KEY_LIMIT_REACHED past it); 0: no total. */
  maxApiKeysPerCompany: number
  /** Bytes of attachments one company may keep (413 QUOTA_EXCEEDED past it); 0: no quota. */
  storageQuotaBytesPerCompany: number
  /** Behind a balancer that appends the client address to X-Forwarded-For, limit per that address. */
  trustProxy: boolean
  /** Browser origins allowed to call the API across origins (CORS_ORIGINS, a comma list); none by default. */
  corsOrigins: string[]
  webhooks: WebhookConfig
  metrics: MetricsConfig
}

/**
 * `GET /metrics` (server/modules/monitoring): off unless one of these is set. With `token` it answers only
 * `Authorization: Bearer <token>`; with `port` it leaves the main port for a listener of its own on 127.0.0.1, one
 * port per process (`port + n` for the n-th copy of a PROCESSES start), which the token then guards too.
 */
export interface MetricsConfig {
  token?: string
  port?: number
}

export interface WebhookConfig {
  /** `http://` endpoint URLs are accepted (else `https://` only). */
  allowHttp: boolean
  /** Endpoints on loopback, private, link-local, CGNAT or metadata addresses are accepted. */
  allowPrivate: boolean
  /** Seconds to wait before each retry; its length is the number of retries. */
  retrySchedule: number[]
  /** An endpoint whose every attempt failed for this long is disabled. */
  disableAfterHours: number
  /** An attempt without a 2xx within this is a failure. */
  timeoutMs: number
  /** Attempts in flight at once in one process, and to one endpoint across all processes. */
  concurrency: number
  perEndpoint: number
  /** How often a worker looks for due deliveries nothing woke it for (another process's retries, a lease that ran out). */
  pollMs: number
}

/** 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const DEFAULT_RETRY_SCHEDULE = [5, 300, 1800, 7200, 18000, 36000, 36000]

function schedule(env: Record<string, string | undefined>, name: string): number[] {
  const raw = env[name]
  if (raw === undefined || raw.trim() === '') return DEFAULT_RETRY_SCHEDULE
  const parts = raw.split(',').map((p) => p.trim())
  if (parts.length > 50 || parts.some((p) => !/^\d{1,7}$/.test(p)))
    throw new ConfigError(`${name} must be a comma list of at most 50 whole numbers of seconds, got "${raw}"`)
  return parts.map(Number)
}

export class ConfigError extends Error {}

/**
 * The request-head bound the listener is started with (`bun --max-http-header-size=65536 server/main.ts`, as the
 * package scripts and scripts/cluster.sh do): past it Bun answers 431 with no body, before the application sees the
 * request; below it MAX_HEADER_BYTES is checked by the application, which answers with `{ error, code }`.
 */
export const LISTENER_HEADER_BYTES = 65_536

function integer(env: Record<string, string | undefined>, name: string, fallback: number, min: number, max: number) {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max)
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`)
  return Number(raw)
}

function url(env: Record<string, string | undefined>, name: string, protocols: string[]) {
  const raw = env[name]
  if (!raw) return undefined
  let parsed: URL
  try {
    parsed = new URL(raw)
  } catch {
    throw new ConfigError(`${name} must be a URL, got "${raw}"`)
  }
  if (!protocols.includes(parsed.protocol)) throw new ConfigError(`${name} must start with ${protocols.join(' or ')}`)
  return raw
}

/** A comma list of origins (`https://app.example.com`): scheme, host and port only, as browsers send `Origin`. */
function origins(env: Record<string, string | undefined>, name: string): string[] {
  const list = (env[name] ?? '').split(',').map((o) => o.trim()).filter(Boolean)
  return list.map((raw) => {
    let parsed: URL
    try {
      parsed = new URL(raw)
    } catch {
      throw new ConfigError(`${name} must be a comma list of origins, got "${raw}"`)
    }
    if (!['http:', 'https:'].includes(parsed.protocol) || parsed.origin !== raw.replace(/\/$/, ''))
      throw new ConfigError(`${name}: "${raw}" is not an origin (scheme://host[:port], nothing after it)`)
    return parsed.origin
  })
}

/**
 * A Postgres URL, which may list several hosts as libpq does (`postgres://u@h1:5432,h2:5432/db?target_session_attrs=
 * read-write`): the WHATWG parser refuses a host list, so each host is checked on its own in the first one's place.
 */
function postgresUrl(env: Record<string, string | undefined>, name: string) {
  const raw = env[name]
  if (!raw) return undefined
  const shape = /^(postgres(?:ql)?:\/\/)((?:[^@/?#]*@)?)([^/?#]*)(.*)$/.exec(raw)
  if (!shape) throw new ConfigError(`${name} must be a URL starting with postgres:// or postgresql://, got "${raw}"`)
  const [, scheme, userinfo, hosts, rest] = shape
  const list = hosts.split(',')
  if (list.length > 1 && list.some((h) => h === '' || h.startsWith('/')))
    throw new ConfigError(`${name} lists hosts separated by commas, each host[:port], got "${hosts}"`)
  for (const host of list) {
    let parsed: URL
    try {
      parsed = new URL(`${scheme}${userinfo}${host}${rest}`)
    } catch {
      throw new ConfigError(`${name} must be a URL, got "${raw}"`)
    }
    if (list.length > 1 && !parsed.hostname) throw new ConfigError(`${name}: every host of a list needs a name, got "${hosts}"`)
  }
  const attrs = /[?&]target_session_attrs=([^&#]*)/.exec(rest)?.[1]
  if (attrs !== undefined && !['read-write', 'read-only', 'primary', 'standby', 'prefer-standby'].includes(attrs))
    throw new ConfigError(`${name}: target_session_attrs must be read-write, primary, read-only, standby or prefer-standby, got "${attrs}"`)
  return raw
}

/** A PKCS#8 PEM Ed25519 private key; `\n` escapes are accepted for environments that keep one line per variable. */
function ed25519Pem(env: Record<string, string | undefined>, name: string): string {
  const raw = (env[name] ?? '').replace(/\\n/g, '\n').trim()
  if (!raw) return ''
  let type: string | undefined
  try {
    type = createPrivateKey(raw).asymmetricKeyType
  } catch {
    throw new ConfigError(`${name} must be a PKCS#8 PEM private key`)
  }
  if (type !== 'ed25519') throw new ConfigError(`${name} must be an Ed25519 key, got ${type}`)
  return `${raw}\n`
}

/** Reads and checks the environment; a bad value stops the start with a message naming the variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const port = integer(env, 'PORT', 3000, 0, 65535)
  const dataDir = resolve(env.DATA_DIR || './data')
  const bool = (name: string) => {
    const raw = (env[name] ?? '').toLowerCase()
    if (raw === '' || raw === 'false' || raw === '0') return false
    if (raw === 'true' || raw === '1') return true
    throw new ConfigError(`${name} must be true or false, got "${env[name]}"`)
  }
  const poolMode = env.DATABASE_POOL_MODE || 'session'
  if (poolMode !== 'session' && poolMode !== 'transaction')
    throw new ConfigError(`DATABASE_POOL_MODE must be session or transaction, got "${poolMode}"`)
  const databaseUrl = postgresUrl(env, 'DATABASE_URL')
  const databaseDirectUrl = postgresUrl(env, 'DATABASE_DIRECT_URL')
  if (databaseDirectUrl && !databaseUrl) throw new ConfigError('DATABASE_DIRECT_URL needs DATABASE_URL')
  const databaseReadUrl = postgresUrl(env, 'DATABASE_READ_URL')
  if (databaseReadUrl && !databaseUrl) throw new ConfigError('DATABASE_READ_URL needs DATABASE_URL')
  const processes = integer(env, 'PROCESSES', 1, 1, 64)
  if (processes > 1 && !databaseUrl) throw new ConfigError('PROCESSES above 1 needs DATABASE_URL: the embedded database belongs to one process')
  const signingSecret = env.SIGNING_SECRET ?? ''
  const perKey = integer(env, 'RATE_LIMIT_PER_MINUTE', 6000, 0, 1_000_000)
  if (signingSecret && signingSecret.length < 16) throw new ConfigError('SIGNING_SECRET must be at least 16 characters')
  return {
    port,
    databaseUrl,
    databasePoolMode: poolMode,
    databaseDirectUrl,
    databaseReadUrl,
    auditSigningKey: ed25519Pem(env, 'AUDIT_SIGNING_KEY'),
    dataDir,
    publicBaseUrl: (url(env, 'PUBLIC_BASE_URL', ['http:', 'https:']) ?? `http://localhost:${port}`).replace(/\/$/, ''),
    signingSecret,
    s3: env.S3_BUCKET
      ? {
          bucket: env.S3_BUCKET,
          endpoint: url(env, 'S3_ENDPOINT', ['http:', 'https:']),
          region: env.S3_REGION || 'us-east-1',
          accessKeyId: env.S3_ACCESS_KEY_ID,
          secretAccessKey: env.S3_SECRET_ACCESS_KEY,
          forcePathStyle: bool('S3_FORCE_PATH_STYLE'),
        }
      : undefined,
    superadmin: {
      jwtSecret: env.SUPERADMIN_JWT_SECRET || undefined,
      jwksUrl: url(env, 'SUPERADMIN_JWKS_URL', ['http:', 'https:']),
      emails: (env.SUPERADMIN_EMAILS ?? '')
        .split(',')
        .map((e) => e.trim().toLowerCase())
        .filter(Boolean),
    },
    maxUploadBytes: integer(env, 'MAX_UPLOAD_BYTES', 20 * 1024 * 1024, 1, 2 ** 31),
    maxJsonBytes: integer(env, 'MAX_JSON_BYTES', 1024 * 1024, 1024, 2 ** 31),
    maxJsonDepth: integer(env, 'MAX_JSON_DEPTH', 64, 1, 10_000),
    maxJsonElements: integer(env, 'MAX_JSON_ELEMENTS', 10_000, 10, 10_000_000),
    batchMaxJsonElements: integer(env, 'BATCH_MAX_JSON_ELEMENTS', 100_000, 10, 10_000_000),
    bodyTimeoutMs: integer(env, 'BODY_TIMEOUT_MS', 30_000, 100, 3_600_000),
    maxHeaderBytes: integer(env, 'MAX_HEADER_BYTES', 16 * 1024, 1024, LISTENER_HEADER_BYTES - 4096),
    idleTimeoutS: integer(env, 'IDLE_TIMEOUT_S', 30, 1, 255),
    maxRequestsPerAddress: integer(env, 'MAX_REQUESTS_PER_ADDRESS', 256, 0, 1_000_000),
    dbQueueTimeoutMs: integer(env, 'DB_QUEUE_TIMEOUT_MS', 5000, 1, 600_000),
    passwordHashing: {
      concurrency: integer(env, 'PASSWORD_HASH_CONCURRENCY', Math.max(1, Math.floor(availableParallelism() / (2 * processes))), 1, availableParallelism()),
      queueMs: integer(env, 'PASSWORD_HASH_QUEUE_MS', 2000, 1, 60_000),
    },
    exports: {
      poolMax: integer(env, 'EXPORT_POOL_MAX', 2, 1, 100),
      perCompany: integer(env, 'EXPORTS_PER_COMPANY', 2, 1, 1000),
      maxRows: integer(env, 'EXPORT_MAX_ROWS', 1_000_000, 1, 100_000_000),
      statementTimeoutMs: integer(env, 'EXPORT_STATEMENT_TIMEOUT_MS', 120_000, 100, 3_600_000),
      restPercent: integer(env, 'EXPORT_REST_PERCENT', 100, 0, 1000),
    },
    sse: {
      maxStreamsPerToken: integer(env, 'SSE_MAX_STREAMS_PER_TOKEN', 20, 1, 100_000),
      maxStreamsPerAddress: integer(env, 'SSE_MAX_STREAMS_PER_ADDRESS', 50, 1, 100_000),
      maxPendingEvents: integer(env, 'SSE_MAX_PENDING_EVENTS', 32, 1, 10_000),
    },
    dbPoolMax: integer(env, 'DB_POOL_MAX', 10, 1, 500),
    processes,
    rateLimit: {
      perKey,
      perIp: integer(env, 'RATE_LIMIT_IP_PER_MINUTE', 600, 0, 1_000_000),
      // Several keys of one company may each be busy; the company as a whole gets a few keys' worth.
      perCompany: integer(env, 'RATE_LIMIT_COMPANY_PER_MINUTE', 4 * perKey, 0, 4_000_000),
    },
    maxApiKeysPerCompany: integer(env, 'MAX_API_KEYS_PER_COMPANY', 200, 0, 1_000_000),
    storageQuotaBytesPerCompany: integer(env, 'STORAGE_QUOTA_BYTES_PER_COMPANY', 10 * 1024 ** 3, 0, 2 ** 53 - 1),
    trustProxy: bool('TRUST_PROXY'),
    corsOrigins: origins(env, 'CORS_ORIGINS'),
    webhooks: {
      allowHttp: bool('WEBHOOK_ALLOW_HTTP'),
      allowPrivate: bool('WEBHOOK_ALLOW_PRIVATE'),
      retrySchedule: schedule(env, 'WEBHOOK_RETRY_SCHEDULE'),
      disableAfterHours: integer(env, 'WEBHOOK_DISABLE_AFTER_HOURS', 120, 1, 100_000),
      timeoutMs: integer(env, 'WEBHOOK_TIMEOUT_SECONDS', 15, 1, 300) * 1000,
      concurrency: integer(env, 'WEBHOOK_CONCURRENCY', 128, 1, 1000),
      perEndpoint: integer(env, 'WEBHOOK_CONCURRENCY_PER_ENDPOINT', 32, 1, 1000),
      pollMs: integer(env, 'WEBHOOK_POLL_MS', 1000, 10, 3_600_000),
    },
    metrics: metricsConfig(env, port, processes),
  }
}

/**
 * The metrics settings. The main port is shared by every process of a PROCESSES start (SO_REUSEPORT), so a scrape
 * there would reach whichever process the kernel picks and each series would jump between processes' figures:
 * several processes need METRICS_PORT, where each has a port of its own.
 */
function metricsConfig(env: Record<string, string | undefined>, port: number, processes: number): MetricsConfig {
  const token = env.METRICS_TOKEN || undefined
  if (token !== undefined && (token.length < 16 || /\s/.test(token)))
    throw new ConfigError('METRICS_TOKEN must be at least 16 characters without spaces')
  const raw = env.METRICS_PORT
  if (raw === undefined || raw === '') {
    if (token !== undefined && processes > 1)
      throw new ConfigError(
        'METRICS_TOKEN serves /metrics on PORT, which the PROCESSES share: a scrape would reach any one of them. Set METRICS_PORT as well: each process then answers on a port of its own (METRICS_PORT + n)',
      )
    return { token }
  }
  const metricsPort = integer(env, 'METRICS_PORT', 0, 1, 65535 - (processes - 1))
  if (port >= metricsPort && port < metricsPort + processes)
    throw new ConfigError(`METRICS_PORT needs ports ${metricsPort}–${metricsPort + processes - 1} apart from PORT (${port})`)
  return { token, port: metricsPort }
}

export const filesDir = (config: Config) => join(config.dataDir, 'files')
