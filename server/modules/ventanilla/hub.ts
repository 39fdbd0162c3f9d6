import { createHash } from 'node:crypto'
import { inArray, eq } from 'drizzle-orm'
import { companies, ventanillaSettings } from '../../../db/schema'
import type { AppContext } from '../../context'
import { SharedSlots, Slots } from '../../lib/slots'
import { buildSnapshot, channelOf, liveQueue, liveTokenIds } from './service'
import { localDate } from '../../lib/time'
import { liveCredentials } from '../../access/sessions'
import { telemetryOf } from '../../infra/telemetry'

const encoder = new TextEncoder()
const HEARTBEAT = encoder.encode(':\n\n')
const REVOKED = encoder.encode('event: revoked\ndata: {"reason":"revoked"}\n\n')
/** Tells EventSource how long to wait before reconnecting. */
export const RETRY = encoder.encode('retry: 3000\n\n')

export interface HubOptions {
  /** Comment line to every stream at this interval; also when tokens and snapshots are re-checked in full. */
  heartbeatMs: number
  /** How often company rows (name, module flag, time zone) and the local date are compared for changes nobody announced. */
  pollMs: number
  /** Minimum time between two rebuilds of one company's snapshot; a burst of changes becomes one rebuild. */
  gapMs: number
}

export interface Sink {
  /** The kiosk token of a screen's stream; 0 for a staff queue stream. */
  tokenId: number
  /** A staff stream: gets `event: queue` frames instead of snapshots. */
  queue?: boolean
  /** What a staff stream was opened with; it ends soon after that session or key stops authenticating. */
  credential?: { session?: number; key?: number }
  /** Whether this stream has been sent a snapshot yet. */
  primed: boolean
  enqueue(bytes: Uint8Array): void
  /** Sends `final` if given, then ends the stream; idempotent. */
  end(final?: Uint8Array): void
  /** Writes the socket has not yet taken. */
  backlog(): number
}

interface Frame {
  json: string
  bytes: Uint8Array
}

interface Feed {
  companyId: number
  sinks: Set<Sink>
  /** Undoes LISTEN once it is in place. */
  unlisten: (() => Promise<void>) | null
  current: Frame | null
  /** The last staff queue frame, built only while a staff stream is open. */
  queueCurrent: Frame | null
  /** Settles once the first snapshot is built (after LISTEN is in place, or after its first attempt failed). */
  first: Promise<void>
  building: boolean
  dirty: boolean
  timer: ReturnType<typeof setTimeout> | null
  lastBuild: number
  fingerprint: string
}

function frame(json: string, event = 'snapshot'): Frame {
  const id = createHash('sha1').update(json).digest('hex').slice(0, 16)
  return { json, bytes: encoder.encode(`id: ${id}\nevent: ${event}\ndata: ${json}\n\n`) }
}

/**
 * One per process. For each company with at least one open stream it LISTENs on the company's channel,
 * rebuilds the snapshot once per change (bursts coalesced) and pushes the same bytes to every stream.
 */
export class VentanillaHub {
  private feeds = new Map<number, Feed>()
  private heartbeat: ReturnType<typeof setInterval> | null = null
  private poll: ReturnType<typeof setInterval> | null = null
  private opts: HubOptions = { heartbeatMs: 15_000, pollMs: 1_000, gapMs: 50 }
  private streamsPerToken = new Slots<number>(() => this.app.config.sse.maxStreamsPerToken)
  private streamsPerAddress = new SharedSlots<string, number>(() => this.app.config.sse.maxStreamsPerAddress)

  constructor(private app: AppContext) {}

  configure(opts: Partial<HubOptions>) {
    this.opts = { ...this.opts, ...opts }
    this.stopTimers()
    if (this.feeds.size) this.startTimers()
  }

  /** Open streams, for one company or in all. */
  subscribers(companyId?: number): number {
    if (companyId !== undefined) return this.feeds.get(companyId)?.sinks.size ?? 0
    let n = 0
    for (const f of this.feeds.values()) n += f.sinks.size
    return n
  }

  /**
   * Takes one of a token's `SSE_MAX_STREAMS_PER_TOKEN` stream slots and one of the client address's
   * `SSE_MAX_STREAMS_PER_ADDRESS` in this process, synchronously, so a burst of connections cannot overshoot;
   * null when either is full. One company holds at most half of an address's slots (`SharedSlots`), so the screens
   * of one tenant never take the last stream from another's behind the same address. The returned release may be
   * called any number of times.
   */
  claim(tokenId: number, companyId: number, address = 'unknown'): (() => void) | null {
    const byToken = this.streamsPerToken.take(tokenId)
    if (!byToken) return this.refused()
    const byAddress = this.streamsPerAddress.take(address, companyId)
    if (!byAddress) {
      byToken()
      return this.refused()
    }
    return () => {
      byToken()
      byAddress()
    }
  }

  /**
   * A staff queue stream's slot: it has no screen token, so only the client address's `SSE_MAX_STREAMS_PER_ADDRESS`
   * applies (the same count and company shares the screens' streams take from). Null when it is full.
   */
  claimStaff(companyId: number, address = 'unknown'): (() => void) | null {
    return this.streamsPerAddress.take(address, companyId) ?? this.refused()
  }

  /** A stream refused for its limits, counted with the other 429s (fos_rate_limited_total). */
  private refused(): null {
    telemetryOf(this.app)?.rateLimited.inc({ limit: 'streams' })
    return null
  }

  /** Open streams of each kind: the screens' snapshot streams (TV and dispenser tokens) and the console's queue streams. */
  streamsByKind(): { screen: number; console: number } {
    const open = { screen: 0, console: 0 }
    for (const f of this.feeds.values()) for (const s of f.sinks) open[s.queue ? 'console' : 'screen']++
    return open
  }

  /** Adds a stream and resolves once it has been sent its first snapshot (or was ended). */
  async attach(companyId: number, sink: Sink, signal: AbortSignal): Promise<void> {
    const feed = this.feeds.get(companyId) ?? this.open(companyId)
    feed.sinks.add(sink)
    const aborted = new Promise<void>((resolve) => {
      if (signal.aborted) resolve()
      else signal.addEventListener('abort', () => resolve(), { once: true })
    })
    await Promise.race([feed.first, aborted])
    if (signal.aborted) return this.detach(companyId, sink)
    const current = sink.queue ? feed.queueCurrent : feed.current
    if (sink.primed) return
    if (current) {
      sink.primed = true
      this.send(feed, sink, current.bytes)
    } else {
      // The first stream of its kind on a feed that so far built only the other kind.
      this.schedule(feed)
    }
  }

  detach(companyId: number, sink: Sink) {
    const feed = this.feeds.get(companyId)
    if (!feed || !feed.sinks.delete(sink) || feed.sinks.size) return
    this.close(feed)
  }

  private open(companyId: number): Feed {
    const feed: Feed = {
      companyId,
      sinks: new Set(),
      unlisten: null,
      current: null,
      queueCurrent: null,
      first: Promise.resolve(),
      building: false,
      dirty: false,
      timer: null,
      lastBuild: 0,
      fingerprint: '',
    }
    // Build only after LISTEN is in place, so no change can fall between the snapshot and the subscription.
    // If the database refuses the LISTEN (no free connection), screens still get a snapshot now and the
    // full rebuild at every heartbeat, while LISTEN is retried in the background.
    feed.first = this.listen(feed).then((ok) => {
      if (!ok) void this.retryListen(feed)
      return this.build(feed)
    })
    this.feeds.set(companyId, feed)
    if (this.feeds.size === 1) this.startTimers()
    return feed
  }

  private async listen(feed: Feed): Promise<boolean> {
    try {
      const unlisten = await this.app.database.listen(channelOf(feed.companyId), (payload) => this.onNotify(feed, payload))
      if (this.feeds.get(feed.companyId) === feed) feed.unlisten = unlisten
      else await unlisten()
      return true
    } catch (e) {
      this.app.log({ level: 'error', msg: 'ventanilla listen failed', companyId: feed.companyId, error: String(e) })
      return false
    }
  }

  private async retryListen(feed: Feed) {
    for (let delay = 500; this.feeds.get(feed.companyId) === feed; delay = Math.min(delay * 2, 10_000)) {
      await new Promise((r) => setTimeout(r, delay))
      if (this.feeds.get(feed.companyId) !== feed) return
      if (await this.listen(feed)) {
        // Changes made while nobody listened are picked up by one rebuild.
        this.schedule(feed)
        return
      }
    }
  }

  private close(feed: Feed) {
    if (this.feeds.get(feed.companyId) !== feed) return
    this.feeds.delete(feed.companyId)
    if (feed.timer) clearTimeout(feed.timer)
    for (const sink of feed.sinks) sink.end()
    feed.sinks.clear()
    feed.unlisten?.().catch(() => {})
    if (this.feeds.size === 0) this.stopTimers()
  }

  private onNotify(feed: Feed, payload: string) {
    if (payload.startsWith('revoked:')) {
      const tokenId = Number(payload.slice('revoked:'.length))
      for (const sink of [...feed.sinks]) if (!sink.queue && sink.tokenId === tokenId) this.revoke(feed, sink)
      return
    }
    this.schedule(feed)
  }

  private revoke(feed: Feed, sink: Sink) {
    sink.end(REVOKED)
    this.detach(feed.companyId, sink)
  }

  private schedule(feed: Feed) {
    if (feed.building) {
      feed.dirty = true
      return
    }
    if (feed.timer) return
    const wait = feed.lastBuild + this.opts.gapMs - Date.now()
    if (wait <= 0) void this.build(feed)
    else
      feed.timer = setTimeout(() => {
        feed.timer = null
        void this.build(feed)
      }, wait)
  }

  private async build(feed: Feed) {
    feed.building = true
    feed.dirty = false
    try {
      const sinks = [...feed.sinks]
      const staff = sinks.some((s) => s.queue)
      if (staff) {
        const queue = await liveQueue(this.app.database, feed.companyId)
        if (this.feeds.get(feed.companyId) !== feed) return
        if (!queue) return this.disable(feed)
        const json = JSON.stringify(queue)
        const changed = json !== feed.queueCurrent?.json
        if (changed) feed.queueCurrent = frame(json, 'queue')
        this.push(feed, true, feed.queueCurrent!, changed)
      }
      if (staff && !sinks.some((s) => !s.queue)) return
      const snapshot = await buildSnapshot(this.app.database, feed.companyId, this.app.clock())
      if (this.feeds.get(feed.companyId) !== feed) return
      if (!snapshot) return this.disable(feed)
      feed.fingerprint = `${snapshot.companyName}\u0000${snapshot.timezone}\u0000${snapshot.date}`
      const json = JSON.stringify(snapshot)
      const changed = json !== feed.current?.json
      if (changed) feed.current = frame(json)
      this.push(feed, false, feed.current!, changed)
    } catch (e) {
      this.app.log({ level: 'error', msg: 'ventanilla snapshot failed', companyId: feed.companyId, error: String(e) })
    } finally {
      feed.building = false
      feed.lastBuild = Date.now()
      if (feed.dirty) this.schedule(feed)
    }
  }

  /** Module switched off: every stream ends just as if its token were revoked. */
  private disable(feed: Feed) {
    for (const sink of [...feed.sinks]) this.revoke(feed, sink)
  }

  /** Sends a frame to the streams of its kind: all of them when it changed, else only those not yet primed. */
  private push(feed: Feed, queue: boolean, current: Frame, changed: boolean) {
    for (const sink of [...feed.sinks]) {
      if (Boolean(sink.queue) !== queue || (!changed && sink.primed)) continue
      sink.primed = true
      this.send(feed, sink, current.bytes)
    }
  }

  private send(feed: Feed, sink: Sink, bytes: Uint8Array) {
    sink.enqueue(bytes)
    // A client this far behind has stopped reading: dropped rather than buffered for; a reconnect gets a fresh snapshot.
    if (sink.backlog() > this.app.config.sse.maxPendingEvents) {
      sink.end()
      this.detach(feed.companyId, sink)
    }
  }

  private startTimers() {
    this.heartbeat = setInterval(() => void this.beat(), this.opts.heartbeatMs)
    this.poll = setInterval(() => void this.check(), this.opts.pollMs)
    this.heartbeat.unref?.()
    this.poll.unref?.()
  }

  private stopTimers() {
    if (this.heartbeat) clearInterval(this.heartbeat)
    if (this.poll) clearInterval(this.poll)
    this.heartbeat = this.poll = null
  }

  /** Keeps idle connections open through proxies, and repairs anything a lost notification left stale. */
  private async beat() {
    for (const feed of this.feeds.values()) for (const sink of feed.sinks) this.send(feed, sink, HEARTBEAT)
    try {
      const sinks = [...this.feeds.values()].flatMap((f) => [...f.sinks])
      const asked = new Set(sinks.filter((s) => !s.queue).map((s) => s.tokenId))
      const sessions = sinks.flatMap((s) => (s.credential?.session ? [s.credential.session] : []))
      const keys = sinks.flatMap((s) => (s.credential?.key ? [s.credential.key] : []))
      const [live, credentials] = await Promise.all([
        liveTokenIds(this.app.database, [...asked]),
        liveCredentials(this.app.database, sessions, keys, this.app.clock()),
      ])
      const checked = new Set(sinks)
      for (const feed of [...this.feeds.values()]) {
        // Streams that arrived during the query were checked when they opened.
        for (const sink of [...feed.sinks]) {
          if (!checked.has(sink)) continue
          const dead = sink.queue
            ? (sink.credential?.session && !credentials.sessions.has(sink.credential.session)) || (sink.credential?.key && !credentials.keys.has(sink.credential.key))
            : asked.has(sink.tokenId) && !live.has(sink.tokenId)
          if (dead) this.revoke(feed, sink)
        }
        if (this.feeds.get(feed.companyId) === feed) this.schedule(feed)
      }
    } catch (e) {
      this.app.log({ level: 'error', msg: 'ventanilla heartbeat check failed', error: String(e) })
    }
  }

  /** Company rows are changed elsewhere without a notification; the local date turns at midnight. */
  private async check() {
    const ids = [...this.feeds.keys()]
    if (ids.length === 0) return
    try {
      const rows = await this.app.db
        .select({ id: companies.id, name: companies.name, tz: companies.timezone, enabled: companies.ventanillaEnabled, displayName: ventanillaSettings.displayName, ownTz: ventanillaSettings.timezone })
        .from(companies)
        .leftJoin(ventanillaSettings, eq(ventanillaSettings.companyId, companies.id))
        .where(inArray(companies.id, ids))
      const now = this.app.clock()
      for (const r of rows) {
        const feed = this.feeds.get(r.id)
        if (!feed || !feed.current) continue
        const tz = r.ownTz ?? r.tz
        const fingerprint = `${r.displayName ?? r.name}\u0000${tz}\u0000${localDate(now, tz)}`
        if (!r.enabled || fingerprint !== feed.fingerprint) this.schedule(feed)
      }
    } catch (e) {
      this.app.log({ level: 'error', msg: 'ventanilla poll failed', error: String(e) })
    }
  }
}

const hubs = new WeakMap<AppContext, VentanillaHub>()

/** The hub of an app instance (one per process in production; tests reach it to tune intervals and count streams). */
export function ventanillaHub(app: AppContext): VentanillaHub {
  let hub = hubs.get(app)
  if (!hub) {
    hub = new VentanillaHub(app)
    hubs.set(app, hub)
  }
  return hub
}
