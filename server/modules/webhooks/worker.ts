import { sql } from 'drizzle-orm'
import { isConnectionLost, rowsOf } from '../../../db/client'
import { parseExactJson } from '../../../db/json'
import type { AppContext } from '../../context'
import { announce, eventTransaction } from '../../lib/events'
import { sendTarget } from './address'
import { eventId, pruneEvents } from './outbox'
import { signerOf } from './secrets'
import { endpointDto } from './service'
import { webhookEndpoints } from '../../../db/schema'
import { and, eq } from 'drizzle-orm'

/** A Retry-After beyond this is taken as this. */
const MAX_RETRY_AFTER_S = 24 * 60 * 60
const PRUNE_EVERY_MS = 10 * 60 * 1000
/** Where a worker that may be leaving due deliveries behind (its process is at capacity) wakes the other processes. */
const CHANNEL = 'fos_webhooks'
/** First key of the advisory lock claims take turns under; any constant, the same in every process. */
const CLAIM_LOCK = 727_416
/** A worker at capacity tells the others at most this often. */
const PASS_ON_MS = 50
/**
 * How long a statement waits for the attempts still in flight when more are in flight than finished: a statement
 * costs about the same for one row as for thirty, so the stragglers of a batch ride with it instead of taking a
 * statement of their own (which would split the worker into two half-size batches taking turns).
 */
const GATHER_MS = 5
/**
 * While deliveries keep coming, a statement starts no sooner than this after the previous one started, unless a full
 * batch of attempts has finished meanwhile: under a steady stream of writes the worker otherwise runs a statement
 * for every three or four deliveries, and its database work, which takes the same cores as the writes, falls with
 * the batch. A worker idle for this long goes at once, so the wait adds at most this much to a delivery.
 */
const BATCH_MS = 100
/**
 * After a statement failed because the database went away (a failover), the next one waits this long, growing with
 * the outage up to RECONNECT_MAX_MS: the outcomes it carries are recorded, and the leases it gives back, within a
 * second of writes resuming.
 */
const RECONNECT_MIN_MS = 100
const RECONNECT_MAX_MS = 1000

interface Claimed {
  id: number
  attempts: number
  generation: number
  company_id: number
  endpoint_id: number
  event_id: number
  attempt_id: number
  type: string
  data: unknown
  created_at: string
  url: string
  secret_ciphertext: string
  previous_secret_ciphertext: string | null
  previous_live: boolean | null
  failing_since: Date | string | null
}

interface Outcome {
  ok: boolean
  status: number | null
  ms: number | null
  error: string | null
  /** Seconds the receiver asked us to wait (429/503 Retry-After). */
  retryAfter?: number
  /** The receiver said the endpoint is gone for good (410). */
  gone?: boolean
}

interface Finished {
  c: Claimed
  out: Outcome
}

/**
 * Ids as one array parameter: the updates then find their rows through the primary key, where a join on the
 * recordset (estimated at 100 rows whatever its size) would read the whole table.
 */
const ids = (values: number[]) => `{${values.join(',')}}`

function retryAfterSeconds(header: string | null, now: number): number | undefined {
  if (!header) return undefined
  if (/^\d+$/.test(header.trim())) return Math.min(Number(header.trim()), MAX_RETRY_AFTER_S)
  const at = Date.parse(header)
  return Number.isNaN(at) ? undefined : Math.min(Math.max(0, Math.ceil((at - now) / 1000)), MAX_RETRY_AFTER_S)
}

/**
 * Sends the queued deliveries of every company. Every server process runs one; they share the queue through
 * Postgres: a claim takes due deliveries `FOR UPDATE SKIP LOCKED` and leases them (`locked_until`), so a delivery
 * is in flight in one process at a time, and a lease that runs out (the process died mid-attempt) makes it due
 * again: at least once. A delivery waits while an earlier event of the same object is still pending for the same
 * endpoint, so each endpoint sees one object's events in commit order. At most `concurrency` attempts run in a
 * process and `perEndpoint` per endpoint across all processes, so a slow endpoint holds a few slots, never all.
 *
 * One statement at a time does all of the worker's writing: it records the outcomes of the attempts finished
 * since the last one and claims as many due deliveries as there are free slots, so under load each statement
 * carries a batch both ways, and when idle a delivery costs two (its claim, its outcome). The worker runs one
 * when woken: after the commit of a change that queued deliveries in this process, when an attempt finishes, when
 * a retry it scheduled falls due, when another process at capacity asks (LISTEN, and once more each time LISTEN is
 * back after a lost connection), and on a slow poll for the rest.
 *
 * Losing the database (a failover) loses nothing and holds nothing up for long: the outcomes a failed statement
 * carried are kept and recorded by the next one, which is tried again within a second of writes resuming; and since
 * a claim whose answer was lost may still have committed, the next statement gives back every lease this worker
 * holds for a delivery it is not sending (`locked_by`), instead of leaving those deliveries, and the endpoint's
 * in-flight allowance they count against, until the leases run out.
 */
export class DeliveryWorker {
  readonly #app: AppContext
  /** Tells this worker's own notifications from the others'. */
  readonly #self = crypto.randomUUID()
  #poll: ReturnType<typeof setInterval> | undefined
  #retry: ReturnType<typeof setTimeout> | undefined
  #retryAt = 0
  #stopped = true
  /** A statement is running (or about to); wakes meanwhile set `#again`. */
  #busy = false
  #again = false
  #sending = 0
  #finished: Finished[] = []
  /** Called when the last attempt in flight finishes, by a gathering statement. */
  #idle: (() => void) | undefined
  /** When the last statement started, and what ends the wait for the next one early (a full batch, a stop). */
  #lastExchange = -Infinity
  #paced: (() => void) | undefined
  /** Work that follows outcomes or the poll (disabling an endpoint, pruning, telling others): stop waits for it. */
  readonly #follow = new Set<Promise<unknown>>()
  #unlisten: Promise<(() => Promise<void>) | undefined> | undefined
  #passedOn = 0
  #lastPrune = 0
  /** Deliveries this worker claimed and has not yet recorded the outcome of: its leases that are real. */
  readonly #inFlight = new Set<number>()
  /** A statement failed with the connection: a claim may have committed unseen, so its leases are to be given back. */
  #unsure = false
  /** Since when statements fail with the connection, and when the next one may go. */
  #lostSince: number | null = null
  #holdUntil = 0
  #hold: ReturnType<typeof setTimeout> | undefined

  constructor(app: AppContext) {
    this.#app = app
  }

  get #config() {
    return this.#app.config.webhooks
  }

  /** Lease of a claimed attempt: past the attempt timeout with room to record the outcome. */
  get #leaseSeconds() {
    return Math.ceil((2 * this.#config.timeoutMs) / 1000)
  }

  /** An embedded database belongs to one process: nobody else to wake or be woken by. */
  get #shared() {
    return this.#app.database.kind === 'postgres'
  }

  start(): this {
    if (!this.#stopped) return this
    this.#stopped = false
    this.#poll = setInterval(() => {
      this.wake()
      if (Date.now() - this.#lastPrune > PRUNE_EVERY_MS) {
        this.#lastPrune = Date.now()
        this.#track(pruneEvents(this.#app.db), 'events not pruned')
      }
    }, this.#config.pollMs)
    if (this.#shared)
      this.#unlisten = this.#app.database
        .listen(
          CHANNEL,
          (from) => {
            if (from !== this.#self) this.wake()
          },
          () => this.wake(),
        )
        .catch((e) => {
          this.#app.log({ level: 'warn', msg: 'webhook worker not listening; it polls', error: String(e) })
          return undefined
        })
    this.wake()
    return this
  }

  /**
   * Stops claiming, waits for the attempts in flight (each bounded by the attempt timeout) and records them. Outcomes
   * the database still refuses an attempt timeout after the last attempt ended are given up: their leases run out
   * and the attempts are made again (at least once).
   */
  async stop(): Promise<void> {
    this.#stopped = true
    this.#paced?.()
    clearInterval(this.#poll)
    clearTimeout(this.#retry)
    clearTimeout(this.#hold)
    this.#poll = this.#retry = this.#hold = undefined
    this.#retryAt = 0
    const unlisten = await this.#unlisten
    this.#unlisten = undefined
    await unlisten?.().catch(() => {})
    let giveUpAt = Infinity
    while (this.#busy || this.#sending || this.#finished.length || this.#follow.size) {
      if (this.#sending) giveUpAt = Infinity
      else if (giveUpAt === Infinity) giveUpAt = Date.now() + this.#config.timeoutMs
      if (!this.#busy && this.#finished.length) {
        if (Date.now() >= giveUpAt) {
          this.#app.log({ level: 'warn', msg: 'webhook outcomes not recorded at stop; the attempts will be made again', attempts: this.#finished.length })
          this.#finished.length = 0
          continue
        }
        if (Date.now() >= this.#holdUntil) this.#run()
      }
      await Promise.allSettled([...this.#follow, Bun.sleep(5)])
    }
  }

  /** Looks for due deliveries now (or, while the database is away, when the next try is due). */
  wake(): void {
    if (this.#stopped) return
    if (this.#busy) this.#again = true
    else if (Date.now() < this.#holdUntil) this.#hold ??= setTimeout(() => ((this.#hold = undefined), this.wake()), this.#holdUntil - Date.now())
    else if (this.#free > 0 || this.#finished.length) this.#run()
    else this.#passOn()
  }

  get #free() {
    return this.#stopped ? 0 : this.#config.concurrency - this.#sending
  }

  #run() {
    this.#busy = true
    void this.#loop()
  }

  async #loop() {
    try {
      for (;;) {
        const early = this.#lastExchange + BATCH_MS - performance.now()
        if (early > 0 && !this.#stopped && this.#finished.length < this.#fullBatch) await this.#pace(early)
        if (this.#sending > this.#finished.length) await this.#gather()
        this.#again = false
        const batch = this.#finished.splice(0)
        const free = this.#free
        if (batch.length || free > 0 || this.#unsure) {
          let claimed: Claimed[]
          try {
            claimed = await this.#exchange(batch, free)
          } catch (e) {
            this.#failed(e, batch)
            return
          }
          this.#reconnected()
          for (const c of claimed) this.#launch(c)
          if (free > 0 && claimed.length === free) this.#passOn()
        } else this.#passOn()
        // No await between this check and the end of `#busy`: an attempt finishing now finds the loop gone and starts one.
        if (!this.#again && !this.#finished.length) return
      }
    } finally {
      this.#busy = false
    }
  }

  /**
   * A statement failed. Lost with the connection, it may or may not have committed: its outcomes go back in line (the
   * next statement records each only if no other claim of its delivery came since) and the next statement gives back
   * this worker's leases of deliveries it is not sending, after a pause that grows while the database stays away.
   * Refused by the database itself, nothing of it committed: its leases run out and the attempts are made again.
   */
  #failed(error: unknown, batch: Finished[]) {
    if (!isConnectionLost(error)) {
      if (!this.#stopped) this.#app.log({ level: 'error', msg: batch.length ? 'webhook outcomes not recorded' : 'webhook claim failed', error: String(error), attempts: batch.length })
      for (const { c } of batch) this.#inFlight.delete(c.id)
      return
    }
    this.#finished.unshift(...batch)
    this.#unsure = true
    const now = Date.now()
    if (this.#lostSince === null) {
      this.#lostSince = now
      this.#app.log({ level: 'warn', msg: 'webhook worker lost the database; outcomes kept until it is back', error: String(error), attempts: this.#finished.length })
    }
    this.#holdUntil = now + Math.min(RECONNECT_MAX_MS, Math.max(RECONNECT_MIN_MS, now - this.#lostSince))
    clearTimeout(this.#hold)
    this.#hold = setTimeout(() => ((this.#hold = undefined), this.wake()), this.#holdUntil - now)
  }

  #reconnected() {
    if (this.#lostSince === null) return
    this.#app.log({ level: 'info', msg: 'webhook worker has the database again', after_ms: Date.now() - this.#lostSince })
    this.#lostSince = null
    this.#holdUntil = 0
  }

  #launch(c: Claimed) {
    this.#inFlight.add(c.id)
    this.#sending++
    void this.#send(c)
      .catch((e): Outcome => ({ ok: false, status: null, ms: null, error: `not sent: ${e instanceof Error ? e.message : String(e)}` }))
      .then((out) => {
        this.#sending--
        this.#finished.push({ c, out })
        if (!this.#sending) this.#idle?.()
        if (this.#finished.length >= this.#fullBatch) this.#paced?.()
        if (this.#busy) this.#again = true
        else this.wake()
      })
  }

  /** As many finished attempts as one endpoint can have in flight: a batch not worth waiting to grow. */
  get #fullBatch() {
    return Math.min(this.#config.concurrency, this.#config.perEndpoint)
  }

  /** `ms`, or until a full batch has finished or the worker stops. */
  #pace(ms: number) {
    return new Promise<void>((done) => {
      const timer = setTimeout(finish, ms)
      const self = this
      function finish() {
        clearTimeout(timer)
        self.#paced = undefined
        done()
      }
      this.#paced = finish
    })
  }

  /** Until no attempt is in flight, GATHER_MS at most. */
  #gather() {
    return new Promise<void>((done) => {
      const timer = setTimeout(finish, GATHER_MS)
      const self = this
      function finish() {
        clearTimeout(timer)
        self.#idle = undefined
        done()
      }
      this.#idle = finish
    })
  }

  /** This process may be leaving due deliveries to others: wake them (at most every PASS_ON_MS). */
  #passOn() {
    if (this.#stopped || !this.#shared || Date.now() - this.#passedOn < PASS_ON_MS) return
    this.#passedOn = Date.now()
    this.#track(this.#app.db.execute(sql`select pg_notify(${CHANNEL}, ${this.#self})`), 'webhook workers not told')
  }

  #track(work: Promise<unknown>, failure: string) {
    const p = work.catch((e) => this.#app.log({ level: 'error', msg: failure, error: String(e) })).finally(() => this.#follow.delete(p))
    this.#follow.add(p)
  }

  /** A retry this worker scheduled falls due then: wake for it (the poll covers any it replaces). */
  #wakeAt(at: number) {
    if (this.#stopped || (this.#retryAt && this.#retryAt <= at)) return
    clearTimeout(this.#retry)
    this.#retryAt = at
    this.#retry = setTimeout(() => {
      this.#retryAt = 0
      this.wake()
    }, at - Date.now())
  }

  async #send(c: Claimed): Promise<Outcome> {
    const target = await sendTarget(c.url, this.#config)
    if ('refused' in target) return { ok: false, status: null, ms: null, error: target.refused }
    const id = eventId(c.event_id)
    const data = typeof c.data === 'string' ? parseExactJson(c.data) : c.data
    const body = JSON.stringify({ id, type: c.type, created_at: c.created_at, data })
    const now = new Date()
    const timestamp = String(Math.floor(now.getTime() / 1000))
    const secrets = [c.secret_ciphertext, ...(c.previous_live && c.previous_secret_ciphertext ? [c.previous_secret_ciphertext] : [])]
    const signature = secrets.map((s) => signerOf(this.#app.config.signingSecret, s).sign(id, now, body)).join(' ')
    const started = performance.now()
    try {
      const res = await fetch(target.url, {
        method: 'POST',
        redirect: 'manual',
        signal: AbortSignal.timeout(this.#config.timeoutMs),
        tls: target.tls,
        headers: {
          ...target.headers,
          'content-type': 'application/json',
          'user-agent': 'fos-webhooks/1',
          'webhook-id': id,
          'webhook-timestamp': timestamp,
          'webhook-signature': signature,
        },
        body,
      })
      // The body is never read: only the status counts, and a huge reply must not cost memory.
      await res.body?.cancel().catch(() => {})
      const ms = Math.round(performance.now() - started)
      if (res.status >= 200 && res.status < 300) return { ok: true, status: res.status, ms, error: null }
      return {
        ok: false,
        status: res.status,
        ms,
        error: res.status >= 300 && res.status < 400 ? 'redirect not followed' : `HTTP ${res.status}`,
        retryAfter: res.status === 429 || res.status === 503 ? retryAfterSeconds(res.headers.get('retry-after'), Date.now()) : undefined,
        gone: res.status === 410,
      }
    } catch (e) {
      const ms = Math.round(performance.now() - started)
      const timedOut = e instanceof Error && (e.name === 'TimeoutError' || e.name === 'AbortError')
      return { ok: false, status: null, ms, error: timedOut ? `timeout after ${this.#config.timeoutMs / 1000} s` : `connection failed: ${e instanceof Error ? e.message : String(e)}` }
    }
  }

  /**
   * One statement: records `batch` (each attempt's result, its delivery's next state: done, failed for good, or due
   * again after the schedule's wait or the receiver's Retry-After; each endpoint's failing streak) and claims up to
   * `free` due deliveries. A delivery reopened by a resend while its attempt was in flight (another generation)
   * stays open; an outcome whose delivery is no longer leased to this worker (recorded already by a statement whose
   * answer was lost, or claimed again after the lease ran out while the database was away) is left as it is. The claim sees the statement's own snapshot, so it counts the leases this batch gives
   * back as given back, and a delivery this batch closes as no longer holding back the next event of its object.
   * After a statement lost with the connection, this one also gives back the leases this worker holds on deliveries
   * it is not sending (taken by a claim whose answer never came), with their unsent attempts, for the next to claim.
   */
  async #exchange(batch: Finished[], free: number): Promise<Claimed[]> {
    this.#lastExchange = performance.now()
    const { perEndpoint, retrySchedule: schedule } = this.#config
    const unsure = this.#unsure
    // Leases of this worker that no attempt of its stands behind: given back (and their attempts, never made, undone).
    const release = unsure
      ? sql` released as (
        update webhook_deliveries d set locked_until = null, locked_by = null, attempts = d.attempts - 1, updated_at = now()
        where d.locked_by = ${this.#self}::uuid and d.status = 'pending' and d.locked_until is not null
          and not (d.id = any(${ids([...this.#inFlight])}::bigint[]))
        returning d.id, d.attempts + 1 as attempt
      ), unsent as (
        delete from webhook_attempts a using released r where a.delivery_id = r.id and a.attempt = r.attempt and a.status = 'pending'
      ),`
      : sql``
    const rows = batch.map(({ c, out }, n) => {
      const retryIn = out.ok || out.gone ? null : c.attempts <= schedule.length ? Math.max(schedule[c.attempts - 1], out.retryAfter ?? 0) : null
      return {
        attempt_id: c.attempt_id,
        delivery_id: c.id,
        endpoint_id: c.endpoint_id,
        generation: c.generation,
        ok: out.ok,
        delivery_status: out.ok ? 'succeeded' : retryIn === null ? 'failed' : 'pending',
        code: out.status,
        ms: out.ms,
        error: out.error,
        retry_in: retryIn,
        n,
      }
    })
    const statement = sql`with o as (
        select * from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as o(attempt_id bigint, delivery_id bigint,
          endpoint_id int, generation int, ok boolean, delivery_status text, code int, ms int, error text, retry_in int, n int)
      ),${release} attempts as (
        update webhook_attempts a set status = case when o.ok then 'succeeded' else 'failed' end, response_status = o.code,
          response_ms = o.ms, error = o.error, next_attempt_at = now() + make_interval(secs => o.retry_in)
        from o where a.id = any(${ids(rows.map((r) => r.attempt_id))}::bigint[]) and a.id = o.attempt_id
      ), deliveries as (
        update webhook_deliveries d set locked_until = null, locked_by = null, updated_at = now(),
          status = case when d.generation = o.generation then o.delivery_status else 'pending' end,
          next_attempt_at = case when d.generation = o.generation then coalesce(now() + make_interval(secs => o.retry_in), d.next_attempt_at) else now() end
        from o where d.id = any(${ids(rows.map((r) => r.delivery_id))}::bigint[]) and d.id = o.delivery_id
          and d.locked_by = ${this.#self}::uuid
      ), latest as (
        select distinct on (endpoint_id) endpoint_id, ok from o order by endpoint_id, n desc
      ), streaks as (
        update webhook_endpoints e set failing_since = case when latest.ok then null else now() end
        from latest where e.id = latest.endpoint_id and (latest.ok = (e.failing_since is not null))
      ), due as (
        select d.id, d.relapsed from webhook_endpoints e
        cross join lateral (
          select d.id, d.locked_until is not null as relapsed from webhook_deliveries d
          where d.endpoint_id = e.id and d.status = 'pending' and d.next_attempt_at <= now()
            and (d.locked_until is null or d.locked_until < now())
            and not exists (select from o where o.delivery_id = d.id)
            and d.event_id = (select min(p.event_id) from webhook_deliveries p
              where p.endpoint_id = d.endpoint_id and p.object_key = d.object_key and p.status = 'pending'
                and not exists (select from o where o.delivery_id = p.id and o.generation = p.generation and o.delivery_status <> 'pending'))
          order by d.next_attempt_at, d.event_id
          limit greatest(0, ${perEndpoint}::int - (select count(*) from webhook_deliveries x
            where x.endpoint_id = e.id and x.status = 'pending' and x.locked_until is not null and x.locked_until >= now()
              and not exists (select from o where o.delivery_id = x.id)))
          for update of d skip locked
        ) d
        where e.enabled and e.deleted_at is null
        limit ${free}
      ), claimed as (
        update webhook_deliveries w
        set locked_until = now() + make_interval(secs => ${this.#leaseSeconds}), locked_by = ${this.#self}::uuid, attempts = w.attempts + 1, updated_at = now()
        from due where w.id = due.id
        returning w.id, w.attempts, w.generation, w.company_id, w.endpoint_id, w.event_id, due.relapsed
      ), interrupted as (
        update webhook_attempts a set status = 'failed', error = 'interrupted: the sending process stopped'
        from claimed c where c.relapsed and a.delivery_id = c.id and a.status = 'pending'
      ), logged as (
        insert into webhook_attempts (company_id, delivery_id, endpoint_id, event_id, attempt)
        select company_id, id, endpoint_id, event_id, attempts from claimed
        returning id, delivery_id
      )
      select c.id, c.attempts, c.generation, c.company_id, c.endpoint_id, c.event_id, l.id as attempt_id, ev.type, ev.data,
        to_char(ev.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at,
        e.url, e.secret_ciphertext, e.previous_secret_ciphertext, e.previous_secret_expires_at > now() as previous_live, e.failing_since
      from claimed c join logged l on l.delivery_id = c.id join events ev on ev.id = c.event_id
        join webhook_endpoints e on e.id = c.endpoint_id`
    const claimed = rowsOf<Claimed>(
      this.#shared
        ? await this.#app.db.transaction(async (tx) => {
            // Claims of all processes take turns: each statement's snapshot, taken once the lock is held, counts
            // every lease the previous holder committed, so an endpoint never has more than perEndpoint in flight.
            await tx.execute(sql`select pg_advisory_xact_lock(${CLAIM_LOCK}, 0)`)
            return tx.execute(statement)
          })
        : await this.#app.db.execute(statement),
    )
    for (const { c } of batch) this.#inFlight.delete(c.id)
    if (unsure) {
      this.#unsure = false
      // What was given back is claimable from the next statement's snapshot on.
      this.#again = true
    }
    const retries = rows.filter((r) => r.retry_in !== null).map((r) => r.retry_in!)
    if (retries.length) this.#wakeAt(Date.now() + Math.min(...retries) * 1000)
    for (const { c, out } of batch) {
      const since = c.failing_since === null ? null : new Date(c.failing_since)
      const reason = out.gone
        ? 'the endpoint answered 410 Gone'
        : !out.ok && since && Date.now() - since.getTime() >= this.#config.disableAfterHours * 3600_000
          ? `every attempt failed for ${this.#config.disableAfterHours} hours (since ${since.toISOString()})`
          : null
      if (reason) this.#track(this.#disable(c.endpoint_id, reason), 'webhook endpoint not disabled')
    }
    return claimed
  }

  /** Disables an endpoint and tells the others (`webhook_endpoint.disabled`), in one transaction. */
  async #disable(endpointId: number, reason: string) {
    await eventTransaction(this.#app.db, this.#app.events, async (tx) => {
      const [row] = await tx
        .update(webhookEndpoints)
        .set({ enabled: false, disabledReason: reason, updatedAt: sql`now()` })
        .where(and(eq(webhookEndpoints.id, endpointId), eq(webhookEndpoints.enabled, true)))
        .returning()
      if (!row) return
      const dto = endpointDto(row)
      await announce(tx, { type: 'webhook_endpoint.disabled', companyId: row.companyId, object: { kind: 'webhook_endpoint', id: row.id }, render: async () => dto })
    })
    this.#app.log({ level: 'warn', msg: 'webhook endpoint disabled', endpoint_id: endpointId, reason })
  }
}
