import { readFileSync, mkdirSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import type { Sql } from 'postgres'
import { registerPool, type Db, type Executor } from './driver'
import { applyRoutines } from './routines'
import { parseExactJson } from './json'
import { primarySocket, hostList } from './hosts'

export type { Db, Executor, Tx } from './driver'

export interface Database {
  kind: 'postgres' | 'pglite'
  db: Db
  /**
   * Subscribe to a NOTIFY channel; resolves to an unsubscribe function. `onListen` runs each time the subscription is
   * in place again after its connection was lost (a failover): notifications sent meanwhile were missed.
   */
  listen(channel: string, onPayload: (payload: string) => void, onListen?: () => void): Promise<() => Promise<void>>
  /** Raw rows of a SQL statement, the same shape on both drivers. */
  rows<T = Record<string, unknown>>(query: ReturnType<typeof sql>, on?: Executor): Promise<T[]>
  close(): Promise<void>
}

const ROOT = join(import.meta.dir, '..')
const MIGRATIONS = join(ROOT, 'db', 'migrations')
/**
 * The last migration this code ships, as the migrator records it (`created_at` of `drizzle.__drizzle_migrations` is
 * the journal entry's `when`): a database that holds it holds every migration this code needs.
 */
export const LAST_MIGRATION: number = (JSON.parse(readFileSync(join(MIGRATIONS, 'meta', '_journal.json'), 'utf8')) as { entries: { when: number }[] }).entries.at(-1)!.when

/** Any constant works; it only has to be the same for every process of this service. */
const MIGRATION_LOCK = 727_401

export function rowsOf<T>(result: unknown): T[] {
  return (Array.isArray(result) ? result : (result as { rows: T[] }).rows) as T[]
}

/**
 * json and jsonb columns read without a binary float on the way (db/json.ts): the drivers' own parse is
 * `JSON.parse`, which would round money of more than 15 or so significant digits. Writing is left to the drivers.
 */
const JSON_OIDS = [114, 3802]
const exactJsonTypes = { exactJson: { to: 3802, from: JSON_OIDS, serialize: (x: unknown) => JSON.stringify(x), parse: parseExactJson } }
const exactJsonParsers = Object.fromEntries(JSON_OIDS.map((oid) => [oid, parseExactJson]))

export interface DatabaseOptions {
  url?: string
  dataDir?: string
  poolMax?: number
  /**
   * `transaction` when `url` reaches Postgres through a pooler in transaction pooling (PgBouncer): nothing may rely
   * on session state between transactions, so no named prepared statements (postgres.js `prepare: false`, as that
   * driver documents for transaction pooling); LISTEN and the migration lock then go through `directUrl`.
   */
  poolMode?: 'session' | 'transaction'
  /** A connection to Postgres itself, for what needs one session; `url` when absent. */
  directUrl?: string
  /** Seconds after which an idle pooled connection is closed (none by default: a server keeps its pool warm). */
  idleTimeoutS?: number
}

/** The start refuses a setup that would lose writes; the message says what to change. */
export class DatabaseSetupError extends Error {}

/** The embedded database's directory is open in another process. */
export class DatabaseBusyError extends DatabaseSetupError {}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * PGlite is one process's database: a second process opening the same directory (the operator CLI while the server
 * runs, a second server by mistake) would write over the first's pages. The first to open it writes its pid into
 * `fos.pid` there, created exclusively; a file naming a process that is gone (killed, crashed) is taken over.
 * Answers the release, run at close.
 */
function claimDirectory(dataDir: string): () => void {
  const file = join(dataDir, 'fos.pid')
  const mine = String(process.pid)
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(file, mine, { flag: 'wx' })
      return () => {
        try {
          if (readFileSync(file, 'utf8').trim() === mine) unlinkSync(file)
        } catch {
          // Already gone: nothing to release.
        }
      }
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
      let holder = 0
      try {
        holder = Number(readFileSync(file, 'utf8').trim())
      } catch {
        continue
      }
      if (holder && holder !== process.pid && alive(holder))
        throw new DatabaseBusyError(
          `the embedded database in ${dataDir} is open in another process (pid ${holder}), most likely the running server; ` +
            'the embedded database serves one process at a time. Stop that process and try again, or run the service on Postgres (DATABASE_URL) to use both at once.',
        )
      try {
        unlinkSync(file)
      } catch {
        // Another process took it over first; the next attempt tells.
      }
    }
  }
  throw new DatabaseBusyError(`the embedded database in ${dataDir} is being opened by another process; try again`)
}

/**
 * At most `max` statements outside transactions and transactions in flight on the pool, so postgres.js always finds
 * an idle connection and never pipelines. Behind PgBouncer (1.18) a pipelined statement outside a transaction is
 * lost: PgBouncer hands the server session back to its pool at the first statement's ReadyForQuery, drops the
 * server's answers to the second ("got packet from server when not linked") and the second waits forever.
 * postgres.js has no option for it (`max_pipeline: 1` still lets one statement queue behind another, and a BEGIN
 * queued so never reserves its connection), so in transaction pooling Drizzle is given this adapter instead of the
 * client itself: the client is left as it is, and the adapter lets a statement or a BEGIN through only when one of
 * the `max` permits is free. Statements inside a transaction run on its reserved connection and are not counted.
 * tests/db/driver.test.ts fails once postgres.js stops pipelining onto a busy connection (the adapter can go then).
 */
export function unpipelined(client: Sql, max: number): Sql {
  let free = max
  const waiting: (() => void)[] = []
  const gated = async <R>(fn: () => PromiseLike<R>): Promise<R> => {
    if (free > 0) free--
    else await new Promise<void>((resolve) => waiting.push(resolve))
    try {
      return await fn()
    } finally {
      // postgres.js marks the connection idle before the statement's promise settles, so the next one finds it idle.
      const next = waiting.shift()
      if (next) next()
      else free++
    }
  }
  const unsafe: Sql['unsafe'] = (...args: Parameters<Sql['unsafe']>) => {
    const run = (values: boolean) => gated(() => (values ? client.unsafe(...args).values() : client.unsafe(...args)))
    // Drizzle awaits `unsafe(…)` or `unsafe(…).values()` at once; the statement is created when a permit is free.
    return { values: () => run(true), then: (ok?: (v: unknown) => unknown, fail?: (e: unknown) => unknown) => run(false).then(ok, fail) } as never
  }
  const begin = (...args: unknown[]) => gated(() => (client.begin as (...a: unknown[]) => Promise<unknown>)(...args))
  return new Proxy(client, {
    get: (target, name, receiver) => (name === 'unsafe' ? unsafe : name === 'begin' ? begin : Reflect.get(target, name, receiver)),
  })
}

/**
 * Whether a failure (or its cause, as drizzle wraps driver errors) is the database connection going away or a server
 * that cannot take writes: the primary was lost (the connection closed, reset, refused), a statement ran on a server
 * that is or became read-only (25006: a standby, or a primary that demoted itself; 25001, "transaction read-write
 * mode must be set before any query": a transaction begun while a promoted node was still read-only and running when
 * pg_auto_failover turned writes on, seen under `bun bench/failover.ts`; the service sets a transaction's mode only
 * in its BEGIN), or a transaction the lost connection left aborted (25P02, nothing of it commits). None is the
 * caller's fault; retried after a failover, the same request succeeds.
 */
export function isConnectionLost(error: unknown): boolean {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 3; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'string' && /^(CONNECTION_(CLOSED|ENDED|DESTROYED)|CONNECT_TIMEOUT|ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH|25001|25006|25P02|57P0[1-3])$/.test(e.code)) return true
  }
  return false
}

export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  return opts.url
    ? openPostgres(opts.url, opts.poolMax ?? 10, opts.poolMode ?? 'session', opts.directUrl ?? opts.url, opts.idleTimeoutS)
    : openPglite(opts.dataDir)
}

type Postgres = typeof import('postgres')

/**
 * A postgres.js client of `url`. As with libpq, `?host=/a/directory` names the directory of a Unix socket (a pooler or
 * a Postgres on the same host: cheaper than loopback TCP for every statement), which postgres.js takes as its `host`
 * option (the socket file is `.s.PGSQL.<the URL's port>`). The parameter is taken out of the URL, which postgres.js
 * would otherwise send as a startup parameter.
 */
export function connect(postgres: Postgres, url: string, options: Parameters<Postgres>[1]) {
  const own = connectionOptions(postgres, url)
  return postgres(own.url, { ...options, ...own.options })
}

/**
 * What postgres.js needs besides `url` to reach the database as libpq would: `?host=/dir` becomes its socket
 * directory (see `connect`), and a URL listing several hosts with target_session_attrs=read-write is given its first
 * host and a socket that connects to whichever host takes writes (db/hosts.ts: postgres.js alone would leave
 * statements waiting without end while no host does).
 */
export function connectionOptions(postgres: Postgres, url: string): { url: string; options: { host?: string; socket?: () => Promise<import('node:net').Socket>; backoff?: (retries: number) => number; connect_timeout?: number } } {
  const list = hostList(url)
  // postgres.js waits longer before each new connection after failed ones (exponentially, up to 20 s, counted across
  // the pool): after a few seconds without a primary, the first minutes of the promoted one would be lost to it.
  // The socket hook already paces attempts while no host takes writes.
  // A connection that has not started within seconds (a host gone without a word, a socket that was never written;
  // see db/hosts.ts) is given up and its statement answered 503, instead of after postgres.js's default 30 s.
  // `connect_timeout` in the URL still decides.
  const connectTimeout = /[?&]connect_timeout=/.test(url) ? {} : { connect_timeout: 5 }
  if (list) return { url: list.url, options: { socket: primarySocket(postgres, list).socket, backoff: (retries: number) => Math.min(0.05 * retries, 0.5), ...connectTimeout } }
  const parsed = new URL(url)
  const dir = parsed.searchParams.get('host')
  if (!dir?.startsWith('/')) return { url, options: {} }
  parsed.searchParams.delete('host')
  return { url: parsed.toString(), options: { host: dir } }
}

/**
 * Whether two client sessions of `url` are served by one server session: what a pooler in transaction (or
 * statement) pooling does, and what neither Postgres itself nor session pooling ever does. The first session's
 * statement ends its transaction and frees its backend; the second session then gets that backend (PgBouncer hands
 * out the most recently freed one) and so reports the same backend pid. Over a direct connection the two pids
 * always differ. A few rounds, in case another client takes the freed backend in between.
 */
async function sharesServerSessions(postgres: Postgres, url: string): Promise<number | null> {
  const a = connect(postgres, url, { max: 1, prepare: false, onnotice: () => {} })
  const b = connect(postgres, url, { max: 1, prepare: false, onnotice: () => {} })
  try {
    for (let round = 0; round < 5; round++) {
      const [{ pid: first }] = await a`select pg_backend_pid() as pid`
      const [{ pid: second }] = await b`select pg_backend_pid() as pid`
      if (first === second) return first as number
    }
    return null
  } finally {
    await Promise.all([a.end({ timeout: 1 }), b.end({ timeout: 1 })])
  }
}

async function openPostgres(url: string, poolMax: number, poolMode: 'session' | 'transaction', directUrl: string, idleTimeoutS?: number): Promise<Database> {
  const { default: postgres } = await import('postgres')
  const { drizzle } = await import('drizzle-orm/postgres-js')
  const { migrate } = await import('drizzle-orm/postgres-js/migrator')

  // Behind transaction pooling a named prepared statement lives on one server session while the next transaction of
  // the same client may run on another. postgres.js then retries the statement it finds missing, and when that
  // statement is the COMMIT (postgres.js prepares it too) the retry runs in a transaction the first failure already
  // aborted, where COMMIT answers ROLLBACK without an error: the write is acknowledged and gone. So a pooled URL
  // without DATABASE_POOL_MODE=transaction stops the start, and the direct URL must really be direct.
  const pooledPid = await sharesServerSessions(postgres, url)
  if (pooledPid !== null && poolMode !== 'transaction')
    throw new DatabaseSetupError(
      `DATABASE_URL reaches Postgres through a pooler in transaction pooling (two client sessions were served by one server session, pid ${pooledPid}). ` +
        'Named prepared statements do not survive that and acknowledged writes would be lost: set DATABASE_POOL_MODE=transaction ' +
        'and DATABASE_DIRECT_URL to a connection to Postgres itself (LISTEN/NOTIFY and the migration lock need one session).',
    )
  if (poolMode === 'transaction') {
    const directPid = directUrl === url ? pooledPid : await sharesServerSessions(postgres, directUrl)
    if (directPid !== null)
      throw new DatabaseSetupError(
        `${directUrl === url ? 'DATABASE_URL (DATABASE_DIRECT_URL is not set)' : 'DATABASE_DIRECT_URL'} is served by a pooler in transaction pooling ` +
          `(two client sessions shared server session pid ${directPid}); LISTEN/NOTIFY and the migration lock need a connection to Postgres itself: ` +
          'set DATABASE_DIRECT_URL to one.',
      )
  }
  const pooled = poolMode === 'transaction'

  // Migrations run on one dedicated session holding an advisory lock, so processes starting together take turns.
  const admin = connect(postgres, directUrl, { max: 1, onnotice: () => {} })
  try {
    await admin`select pg_advisory_lock(${MIGRATION_LOCK})`
    await migrate(drizzle(admin), { migrationsFolder: MIGRATIONS })
    await applyRoutines({ exec: (text) => admin.unsafe(text), query: async (text, params = []) => (await admin.unsafe(text, params as never[])) as never })
    await admin`select pg_advisory_unlock(${MIGRATION_LOCK})`
  } finally {
    await admin.end()
  }

  const base = connect(postgres, url, { max: poolMax, onnotice: () => {}, types: exactJsonTypes, ...(pooled && { prepare: false }), ...(idleTimeoutS && { idle_timeout: idleTimeoutS }) })
  if (pooled) {
    // Fixed statements are sent with their values as literals (db/driver.ts), quotes doubled: exact only so.
    const [{ standard_conforming_strings: conforming }] = await base`show standard_conforming_strings`
    if (conforming !== 'on') {
      await base.end({ timeout: 1 })
      throw new DatabaseSetupError('DATABASE_POOL_MODE=transaction needs standard_conforming_strings = on (the Postgres default); it is off on this server.')
    }
  }
  const client = pooled ? unpipelined(base, poolMax) : base
  // postgres.js gives LISTEN a connection of its own; pooled, that one must bypass the pooler.
  let listener: ReturnType<Postgres> | null = pooled ? null : base
  const db = drizzle(client) as unknown as Db
  registerPool(db, client, { inlineValues: pooled })
  return {
    kind: 'postgres',
    db,
    async listen(channel, onPayload, onListen) {
      listener ??= connect(postgres, directUrl, { max: 1, onnotice: () => {} })
      const sub = await listener.listen(channel, onPayload, onListen)
      return () => sub.unlisten()
    },
    async rows(query, on = db) {
      return rowsOf(await on.execute(query))
    },
    close: async () => {
      await Promise.all([base.end({ timeout: 5 }), listener !== base && listener?.end({ timeout: 5 })])
    },
  }
}

async function openPglite(dataDir?: string): Promise<Database> {
  const { PGlite } = await import('@electric-sql/pglite')
  // The client search index needs them (db/migrations/0013_search_extensions.sql); PGlite loads an extension only
  // when it is named here.
  const { pg_trgm } = await import('@electric-sql/pglite/contrib/pg_trgm')
  const { btree_gin } = await import('@electric-sql/pglite/contrib/btree_gin')
  const { drizzle } = await import('drizzle-orm/pglite')
  const { migrate } = await import('drizzle-orm/pglite/migrator')

  if (dataDir) mkdirSync(dataDir, { recursive: true })
  const release = dataDir ? claimDirectory(dataDir) : () => {}
  let client: InstanceType<typeof PGlite>
  try {
    client = new PGlite({ dataDir, parsers: exactJsonParsers, extensions: { pg_trgm, btree_gin } })
    await client.waitReady
    await migrate(drizzle(client), { migrationsFolder: MIGRATIONS })
    const pglite = client
    await applyRoutines({ exec: (text) => pglite.exec(text), query: async (text, params) => (await pglite.query(text, params)).rows as never })
  } catch (e) {
    release()
    throw e
  }
  const db = drizzle(client) as unknown as Db
  return {
    kind: 'pglite',
    db,
    async listen(channel, onPayload) {
      return client.listen(channel, onPayload)
    },
    async rows(query, on = db) {
      return rowsOf(await on.execute(query))
    },
    close: async () => {
      try {
        await client.close()
      } finally {
        release()
      }
    },
  }
}
