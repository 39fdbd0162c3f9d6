/**
 * Following a primary across the hosts of a libpq-style URL (`postgres://u@h1:5432,h2:5432/db?target_session_attrs=
 * read-write`), for postgres.js.
 *
 * postgres.js reads such a URL itself, but while no host qualifies (the primary was just lost and no standby is
 * promoted yet) a new connection cycles through the hosts without end and the statement waiting for it never
 * settles: requests hang instead of answering 503, and refused connections are retried in a tight loop. So the
 * client is given one host, the first, and its `socket` option (postgres.js's documented hook for a socket of the
 * caller's making) picks the host: the one a small probe last found taking writes, else each in turn. When none
 * does, it hands out a connection to the first host after a short pause; postgres.js's own checks then fail the
 * statement at once (connection refused, or target_session_attrs refusing a standby), which the service answers
 * 503 with Retry-After, and the pause bounds how often every pool and listener retries meanwhile.
 */
import { connect as tcpConnect, type Socket } from 'node:net'

type Postgres = typeof import('postgres')

export interface HostList {
  /** The URL with only its first host: what postgres.js is given. */
  url: string
  hosts: { host: string; port: number }[]
  /** The URL of each host alone, without target_session_attrs: for the probes. */
  single: string[]
  /** Which host new connections go to: the one taking writes, or a standby while one answers (else the primary). */
  want: 'primary' | 'standby'
}

/**
 * The hosts of `url` when it lists more than one and asks for a writable host (`read-write`, `primary`) or prefers a
 * standby (`prefer-standby`, for DATABASE_READ_URL); null otherwise (postgres.js reads those itself).
 */
export function hostList(url: string): HostList | null {
  const shape = /^([a-z]+:\/\/(?:[^@/?#]*@)?)([^/?#]*)(.*)$/.exec(url)
  if (!shape) return null
  const [, head, list, rest] = shape
  if (!list.includes(',')) return null
  const attrs = /[?&]target_session_attrs=([^&#]*)/.exec(rest)?.[1]
  if (attrs !== 'read-write' && attrs !== 'primary' && attrs !== 'prefer-standby') return null
  const parts = list.split(',')
  const defaultPort = 5432
  const hosts = parts.map((p) => {
    const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(p)
    return { host: (m?.[1] ?? p).replace(/^\[|\]$/g, ''), port: m?.[2] ? Number(m[2]) : defaultPort }
  })
  // The probes ask each host what it is and decide themselves: with target_session_attrs, postgres.js would retry a
  // host that does not qualify without end, and a probe of a standby would hang until its timeout.
  const bare = rest.replace(/([?&])target_session_attrs=[^&#]*&?/, '$1').replace(/[?&]$/, '')
  const single = parts.map((p) => `${head}${p}${bare}`)
  if (attrs === 'prefer-standby') return { url: single[0], hosts, single, want: 'standby' }
  // postgres.js decides read-write from the default_transaction_read_only a server reports at start, which a hot
  // standby reports off: it would take a standby as writable. `primary` asks whether the server is in recovery.
  return { url: `${head}${parts[0]}${rest.replace(/([?&]target_session_attrs=)read-write/, '$1primary')}`, hosts, single, want: 'primary' }
}

/**
 * A socket handed to postgres.js that has had nothing written to it this long is dropped. postgres.js (3.4.9, the
 * latest release) defers small writes with setImmediate and, when a socket closes while such a write is pending,
 * cancels the immediate without forgetting it (`clearImmediate(nextWriteTimer)` in `closed()` and `terminate()`,
 * never set back to null): every later socket of that pooled connection gets its startup message appended to the
 * stale buffer and never sent, until the connect timeout (reported upstream as the "pool poisoning" of
 * LanternOps/breeze#3225). A failover closes sockets mid-write, so this happened under load here: requests waited
 * 30 s for a connection to the new primary that never started. postgres.js writes a startup message in the turn of
 * the event loop that hands it the socket, so a quiet socket is such a connection: closing it keeps the statement
 * waiting (postgres.js reconnects while its first statement is pending) and each round adds a startup message to the
 * stale buffer, until it is long enough to be written at once; Postgres drops that garbage as a malformed startup
 * packet, and the next round starts clean.
 */
const UNWRITTEN_MS = 200

/** How long a probe's verdict is trusted: a pool opening many connections at once probes once. */
const VERDICT_MS = 1000
/** Pause before a connection is handed out while no host takes writes. */
const NO_PRIMARY_PAUSE_MS = 250
/** A probe or a TCP connect slower than this counts as a host that does not answer. */
const PROBE_TIMEOUT_MS = 2000

function timeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout>
  return Promise.race([p, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), ms)))]).finally(() => clearTimeout(timer))
}

function openSocket(host: string, port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect({ host, port })
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error('connect timed out'))
    }, PROBE_TIMEOUT_MS)
    socket.once('connect', () => {
      clearTimeout(timer)
      socket.removeAllListeners('error')
      resolve(socket)
    })
    socket.once('error', (e) => {
      clearTimeout(timer)
      reject(e)
    })
  })
}

/**
 * postgres.js options for a client of `list`: its `socket` hook connects to whichever host takes writes (or, for a
 * list preferring a standby, to a standby while one answers). The probe clients, one connection per host that
 * closes itself after 5 s idle, are made on first use.
 */
export function primarySocket(postgres: Postgres, list: HostList) {
  let probes: ReturnType<Postgres>[] | null = null
  let known: { index: number; at: number } | null = null
  let probing: Promise<number | null> | null = null

  const probe = async (): Promise<number | null> => {
    // No backoff: postgres.js's default waits longer after each failed connect (seconds after a few), so a probe of a
    // host that is down would wait out its timeout instead of being refused at once.
    probes ??= list.single.map((url) => postgres(url, { max: 1, idle_timeout: 5, connect_timeout: 2, backoff: () => 0, fetch_types: false, prepare: false, onnotice: () => {} }))
    // The last known host first: after a failover it is the one most likely gone, but before one it is the answer.
    const order = list.hosts.map((_, i) => i)
    if (known) order.unshift(...order.splice(order.indexOf(known.index), 1))
    let writable: number | null = null
    for (const i of order) {
      try {
        const [row] = await timeout(probes[i]<{ standby: boolean; writable: boolean }[]>`select pg_is_in_recovery() as standby, not pg_is_in_recovery() and current_setting('transaction_read_only') = 'off' as writable`, PROBE_TIMEOUT_MS)
        if (list.want === 'standby' && row?.standby) return i
        if (row?.writable) {
          if (list.want === 'primary') return i
          writable ??= i
        }
      } catch {
        // Down, not answering, or refused by target_session_attrs: the next.
      }
    }
    return writable
  }

  return {
    async socket(): Promise<Socket> {
      if (!known || Date.now() - known.at > VERDICT_MS) {
        probing ??= probe().finally(() => (probing = null))
        const index = await probing
        known = index === null ? null : { index, at: Date.now() }
      }
      if (known) {
        const { host, port } = list.hosts[known.index]
        try {
          const socket = await openSocket(host, port)
          const watch = setTimeout(() => socket.bytesWritten === 0 && socket.destroy(), UNWRITTEN_MS)
          socket.once('close', () => clearTimeout(watch))
          return socket
        } catch {
          known = null
        }
      }
      await new Promise((r) => setTimeout(r, NO_PRIMARY_PAUSE_MS))
      // postgres.js writes its startup message at once; a socket still connecting keeps it until it connects, and
      // a refused one reports the refusal through the handlers postgres.js attaches.
      return tcpConnect({ host: list.hosts[0].host, port: list.hosts[0].port })
    },
  }
}

/**
 * postgres.js (3.4) can write to a connection whose socket it has already dropped when the server goes away
 * abruptly: a write it deferred to the next turn of the event loop then throws `TypeError: … socket.write` outside
 * any statement's promise, and an uncaught exception ends the process — every request in flight with it. Seen here
 * when the primary is killed under load (postgres.js's own host list and the socket hook alike). The statements of
 * that connection have already failed with the connection error and the pool opens new connections, so this one
 * exception is logged and the process carries on; any other uncaught exception still ends it, as by default.
 */
export function surviveWritesOnDroppedConnections(log: (entry: Record<string, unknown>) => void) {
  process.on('uncaughtException', (error) => {
    const stack = error instanceof Error ? (error.stack ?? '') : ''
    if (error instanceof TypeError && /socket\.write/.test(error.message + stack) && /postgres[\\/]src[\\/]connection\.js/.test(stack)) {
      log({ level: 'warn', msg: 'database connection written after it was dropped; its statements failed, carrying on', error: error.message })
      return
    }
    console.error(error)
    process.exit(1)
  })
}
