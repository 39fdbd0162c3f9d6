import { ApiError } from './errors'
import type { UnavailableCause } from '../infra/telemetry'

/** Seconds a caller refused for overload is told to wait. */
export const OVERLOAD_RETRY_AFTER_S = 1

/** A 503 SERVICE_UNAVAILABLE with Retry-After; its cause is counted (fos_unavailable_total), never shown. */
export class Overloaded extends ApiError {
  constructor(readonly cause503: UnavailableCause) {
    super(503, 'SERVICE_UNAVAILABLE', 'The service is busy; retry shortly', undefined, { 'retry-after': String(OVERLOAD_RETRY_AFTER_S) })
  }
}

export const overloaded = (cause: UnavailableCause) => new Overloaded(cause)

interface Waiter {
  company: number
  admit: () => void
}

/**
 * Admission to the database pool for tenant transactions: at most `capacity` open at once (the pool's size),
 * and at most half of them for any one company, so one tenant's burst of long reads leaves room for the others.
 * A request that finds no room waits in line (first come, first served among those eligible) for at most
 * `waitMs`, then is refused 503 with Retry-After instead of piling up behind the pool.
 *
 * Written here rather than with p-limit or p-queue: both bound one pool's concurrency, but neither caps one key's
 * share of it while letting the others past it in line (a per-company cap over one shared limit), and neither
 * takes a waiter out of the line at a deadline; a queue per company under a shared limit would still need this
 * scheduling between them. p-limit serves where one bound is all there is (server/access/passwords.ts).
 */
export class Admission {
  private open = 0
  private perCompany = new Map<number, number>()
  private line: Waiter[] = []
  private readonly companyCap: number

  constructor(
    private readonly capacity: number,
    private readonly waitMs: number,
    /** Told how long each admitted transaction waited, in seconds (0 when there was room at once). */
    private readonly waited?: (seconds: number) => void,
  ) {
    this.companyCap = Math.max(1, Math.ceil(capacity / 2))
  }

  private fits(company: number) {
    return this.open < this.capacity && (this.perCompany.get(company) ?? 0) < this.companyCap
  }

  private take(company: number): () => void {
    this.open++
    this.perCompany.set(company, (this.perCompany.get(company) ?? 0) + 1)
    let released = false
    return () => {
      if (released) return
      released = true
      this.open--
      const left = (this.perCompany.get(company) ?? 1) - 1
      if (left > 0) this.perCompany.set(company, left)
      else this.perCompany.delete(company)
      this.next()
    }
  }

  private next() {
    for (let i = this.line.findIndex((w) => this.fits(w.company)); i !== -1; i = this.line.findIndex((w) => this.fits(w.company))) {
      const [w] = this.line.splice(i, 1)
      w.admit()
    }
  }

  /** Resolves with the release of a slot, or rejects 503 SERVICE_UNAVAILABLE after `waitMs` in line. */
  enter(company: number): Promise<() => void> {
    // Whoever waits in line does not fit (each release admits every waiter that does), so room now is room for this one.
    if (this.fits(company)) {
      this.waited?.(0)
      return Promise.resolve(this.take(company))
    }
    const since = performance.now()
    return new Promise((admitted, refused) => {
      const waiter: Waiter = {
        company,
        admit: () => {
          clearTimeout(timer)
          this.waited?.((performance.now() - since) / 1000)
          admitted(this.take(company))
        },
      }
      const timer = setTimeout(() => {
        const i = this.line.indexOf(waiter)
        if (i !== -1) this.line.splice(i, 1)
        refused(overloaded('db_pool_queue'))
      }, this.waitMs)
      this.line.push(waiter)
    })
  }

  get waiting() {
    return this.line.length
  }

  /** Transactions holding a connection now. */
  get inUse() {
    return this.open
  }

  /** Connections the line admits at once (the pool's size). */
  get size() {
    return this.capacity
  }
}
