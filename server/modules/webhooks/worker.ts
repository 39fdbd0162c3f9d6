import { sql } from 'drizzle-orm'
import { Webhook } from 'standardwebhooks'
import { rowsOf } from '../../../db/client'
import type { AppContext } from '../../context'
import { announce, bindEvents } from '../../lib/events'
import { refusal } from './address'
import { eventId, pruneEvents } from './outbox'
import { openSecret } from './secrets'
import { endpointDto } from './service'
import { webhookEndpoints } from '../../../db/schema'
import { and, eq } from 'drizzle-orm'

/** How often a worker looks for due deliveries it was not woken for (retries, other processes' events). */
const POLL_MS = 200
/** Outcomes of attempts are written together, at most this long after the first of them. */
const RECORD_EVERY_MS = 5
const PRUNE_EVERY_MS = 10 * 60 * 1000
/** A Retry-After beyond this is taken as this. */
const MAX_RETRY_AFTER_S = 24 * 60 * 60

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
 */
export class DeliveryWorker {
  readonly #app: AppContext
  #timer: ReturnType<typeof setInterval> | undefined
  #running = false
  #stopped = true
  #claiming = false
  #again = false
  #lastPrune = 0
  readonly #inflight = new Set<Promise<void>>()
  #outcomes: { c: Claimed; out: Outcome; done: () => void }[] = []
  #recording: ReturnType<typeof setTimeout> | undefined

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

  start(): this {
    if (!this.#stopped) return this
    this.#stopped = false
    this.#timer = setInterval(() => this.wake(), POLL_MS)
    this.wake()
    return this
  }

  /** Stops claiming and waits for the attempts in flight (each bounded by the attempt timeout). */
  async stop(): Promise<void> {
    this.#stopped = true
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = undefined
    while (this.#claiming || this.#inflight.size) await Promise.allSettled([...this.#inflight, Bun.sleep(5)])
  }

  /** Looks for due deliveries now (an event was just recorded, or the poll came round). */
  wake(): void {
    if (this.#stopped) return
    if (this.#claiming) {
      this.#again = true
      return
    }
    this.#claiming = true
    void this.#claimLoop().finally(() => {
      this.#claiming = false
    })
  }

  async #claimLoop() {
    try {
      do {
        this.#again = false
        const free = this.#config.concurrency - this.#inflight.size
        if (free <= 0 || this.#stopped) return
        const claimed = await this.#claim(free)
        for (const c of claimed) {
          const p = this.#attempt(c)
          this.#inflight.add(p)
          void p.finally(() => {
            this.#inflight.delete(p)
            this.wake()
          })
        }
        if (claimed.length === free) this.#again = true
      } while (this.#again && !this.#stopped)
      if (Date.now() - this.#lastPrune > PRUNE_EVERY_MS) {
        this.#lastPrune = Date.now()
        await pruneEvents(this.#app.db)
      }
    } catch (e) {
      if (!this.#stopped) this.#app.log({ level: 'error', msg: 'webhook claim failed', error: String(e) })
    }
  }

  async #claim(free: number): Promise<Claimed[]> {
    const { perEndpoint } = this.#config
    return rowsOf<Claimed>(
      await this.#app.db.execute(sql`with due as (
          select d.id from webhook_endpoints e
          cross join lateral (
            select d.id from webhook_deliveries d
            where d.endpoint_id = e.id and d.status = 'pending' and d.next_attempt_at <= now()
              and (d.locked_until is null or d.locked_until < now())
              and d.event_id = (select min(p.event_id) from webhook_deliveries p
                where p.endpoint_id = d.endpoint_id and p.object_key = d.object_key and p.status = 'pending')
            order by d.next_attempt_at, d.event_id
            limit greatest(0, ${perEndpoint}::int - (select count(*) from webhook_deliveries x
              where x.endpoint_id = e.id and x.status = 'pending' and x.locked_until is not null and x.locked_until >= now()))
            for update of d skip locked
          ) d
          where e.enabled and e.deleted_at is null
          limit ${free}
        ), claimed as (
          update webhook_deliveries w
          set locked_until = now() + make_interval(secs => ${this.#leaseSeconds}), attempts = w.attempts + 1, updated_at = now()
          from due where w.id = due.id
          returning w.id, w.attempts, w.generation, w.company_id, w.endpoint_id, w.event_id
        ), interrupted as (
          update webhook_attempts a set status = 'failed', error = 'interrupted: the sending process stopped'
          from claimed c where a.delivery_id = c.id and a.status = 'pending'
        ), logged as (
          insert into webhook_attempts (company_id, delivery_id, endpoint_id, event_id, attempt)
          select company_id, id, endpoint_id, event_id, attempts from claimed
          returning id, delivery_id
        )
        select c.*, l.id as attempt_id, ev.type, ev.data,
          to_char(ev.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at,
          e.url, e.secret_ciphertext, e.previous_secret_ciphertext, e.previous_secret_expires_at > now() as previous_live, e.failing_since
        from claimed c join logged l on l.delivery_id = c.id join events ev on ev.id = c.event_id
          join webhook_endpoints e on e.id = c.endpoint_id`),
    )
  }

  async #send(c: Claimed): Promise<Outcome> {
    const why = await refusal(c.url, this.#config)
    if (why) return { ok: false, status: null, ms: null, error: why }
    const id = eventId(c.event_id)
    const data = typeof c.data === 'string' ? JSON.parse(c.data) : c.data
    const body = JSON.stringify({ id, type: c.type, created_at: c.created_at, data })
    const now = new Date()
    const secrets = [c.secret_ciphertext, ...(c.previous_live && c.previous_secret_ciphertext ? [c.previous_secret_ciphertext] : [])]
    const signature = secrets.map((s) => new Webhook(openSecret(this.#app.config.signingSecret, s)).sign(id, now, body)).join(' ')
    const started = performance.now()
    try {
      const res = await fetch(c.url, {
        method: 'POST',
        redirect: 'manual',
        signal: AbortSignal.timeout(this.#config.timeoutMs),
        headers: {
          'content-type': 'application/json',
          'user-agent': 'fos-webhooks/1',
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
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

  /** One attempt: sent now, its outcome written with the others that finish about the same time. */
  async #attempt(c: Claimed) {
    const out = await this.#send(c)
    await new Promise<void>((done) => {
      this.#outcomes.push({ c, out, done })
      this.#recording ??= setTimeout(() => void this.#record(), RECORD_EVERY_MS)
    })
    if (out.gone) return this.#disable(c.endpoint_id, 'the endpoint answered 410 Gone').catch((e) => this.#app.log({ level: 'error', msg: 'webhook endpoint not disabled', error: String(e) }))
    const since = c.failing_since === null ? null : new Date(c.failing_since)
    if (!out.ok && since && Date.now() - since.getTime() >= this.#config.disableAfterHours * 3600_000)
      return this.#disable(c.endpoint_id, `every attempt failed for ${this.#config.disableAfterHours} hours (since ${since.toISOString()})`).catch((e) =>
        this.#app.log({ level: 'error', msg: 'webhook endpoint not disabled', error: String(e) }),
      )
  }

  /**
   * Writes a batch of outcomes in one statement: each attempt's result, its delivery's next state (done, failed
   * for good, or due again after the schedule's wait or the receiver's Retry-After), and each endpoint's failing
   * streak. A delivery reopened by a resend while its attempt was in flight (another generation) stays open.
   * Should the write fail, the leases run out and the attempts are made again: at least once.
   */
  async #record() {
    const batch = this.#outcomes
    this.#outcomes = []
    this.#recording = undefined
    const schedule = this.#config.retrySchedule
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
    try {
      await this.#app.db.execute(sql`with o as (
          select * from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as o(attempt_id bigint, delivery_id bigint,
            endpoint_id int, generation int, ok boolean, delivery_status text, code int, ms int, error text, retry_in int, n int)
        ), attempts as (
          update webhook_attempts a set status = case when o.ok then 'succeeded' else 'failed' end, response_status = o.code,
            response_ms = o.ms, error = o.error, next_attempt_at = now() + make_interval(secs => o.retry_in)
          from o where a.id = o.attempt_id
        ), deliveries as (
          update webhook_deliveries d set locked_until = null, updated_at = now(),
            status = case when d.generation = o.generation then o.delivery_status else 'pending' end,
            next_attempt_at = case when d.generation = o.generation then coalesce(now() + make_interval(secs => o.retry_in), d.next_attempt_at) else now() end
          from o where d.id = o.delivery_id
        ), latest as (
          select distinct on (endpoint_id) endpoint_id, ok from o order by endpoint_id, n desc
        )
        update webhook_endpoints e set failing_since = case when latest.ok then null else now() end
        from latest where e.id = latest.endpoint_id and (latest.ok = (e.failing_since is not null))`)
    } catch (e) {
      this.#app.log({ level: 'error', msg: 'webhook outcomes not recorded', error: String(e), attempts: rows.length })
    } finally {
      for (const b of batch) b.done()
    }
  }

  /** Disables an endpoint and tells the others (`webhook_endpoint.disabled`), in one transaction. */
  async #disable(endpointId: number, reason: string) {
    await this.#app.db.transaction(async (tx) => {
      bindEvents(tx, this.#app.events)
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
