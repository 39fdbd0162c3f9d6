import type { SQL } from 'drizzle-orm'
import type { Db, Tx } from '../../db/client'
import { transaction, type TransactionConfig } from '../../db/driver'

/**
 * What a feature announces from inside its transaction. The object is named, not copied: a listener that needs
 * the record reads it in the same transaction, so it sees exactly what will commit.
 */
export interface DomainEvent {
  type: string
  companyId: number
  object: { kind: string; id: number }
  /** Facts the record itself does not hold (the run that made an operation, the desk that called a ticket). */
  data?: Record<string, unknown>
  /**
   * The object as its own GET returns it at this point of the transaction, for listeners that keep a copy (the
   * event outbox), rendered in code: for objects simpler to render there, or already rendered (a create answers what
   * it inserted); a listener can record many such events in one statement.
   */
  render?: () => Promise<unknown>
  /**
   * The same as a jsonb SQL expression of the object's id, evaluated inside the listener's own statement, so
   * recording the event costs no round trip of its own. A function of the id, defined once (not per event), so a
   * listener can keep the text of its statement for each one.
   */
  renderSql?: (id: SQL) => SQL
  /**
   * More facts for `data`, as a jsonb SQL expression (null for none) of the object's id, evaluated in the same
   * statement as the object; a function of the id, defined once, so that one statement can evaluate it for many
   * events.
   */
  facts?: (id: SQL) => SQL
}

/** Hears the events it subscribed to among those announced together, in the order they were announced. */
export type Listener = (tx: Tx, events: DomainEvent[]) => Promise<void>

/**
 * In-transaction publish/subscribe between features: the announcing feature does not know who listens, and
 * every listener runs inside the announcer's transaction, so its effects commit or roll back with the change.
 * Events announced together (a batch create) reach each listener as one list, so it can handle them set-based.
 */
export class DomainEvents {
  readonly #listeners: { prefix: string; exact: boolean; fn: Listener }[] = []

  /** `pattern` is an event type (`operation.approved`), a family (`operation.*`) or `*`. */
  on(pattern: string, fn: Listener): this {
    const exact = !pattern.endsWith('*')
    this.#listeners.push({ prefix: exact ? pattern : pattern.slice(0, -1), exact, fn })
    return this
  }

  /**
   * Listeners run side by side: their first statements go out together on the transaction's connection, which runs
   * them in the order sent, so independent listeners cost one round trip between them, not one each.
   */
  async dispatch(tx: Tx, events: DomainEvent[]): Promise<void> {
    const runs: Promise<void>[] = []
    for (const l of this.#listeners) {
      const heard = events.filter((e) => (l.exact ? e.type === l.prefix : e.type.startsWith(l.prefix)))
      if (heard.length) runs.push(l.fn(tx, heard))
    }
    // Every listener finishes before the first failure is thrown, so none is still sending when the transaction ends.
    const failed = (await Promise.allSettled(runs)).find((r) => r.status === 'rejected')
    if (failed) throw failed.reason
  }
}

const buses = new WeakMap<Tx, { events: DomainEvents; committed: (() => void)[] }>()

/**
 * A transaction on `db` in which `announce` reaches `events`' listeners (whoever opens a tenant transaction opens
 * it through here). What listeners asked for with `afterCommit` runs once it has committed.
 */
export async function eventTransaction<T>(db: Db, events: DomainEvents, fn: (tx: Tx) => Promise<T>, config?: TransactionConfig): Promise<T> {
  const committed: (() => void)[] = []
  const result = await transaction(
    db,
    (tx) => {
      buses.set(tx, { events, committed })
      return fn(tx)
    },
    config,
  )
  for (const then of committed) then()
  return result
}

/**
 * Runs `then` once `tx` has committed, never if it rolls back: for effects outside the database (waking a worker)
 * that must not run ahead of the change they follow. The same function asked for twice runs once.
 */
export function afterCommit(tx: Tx, then: () => void) {
  const bound = buses.get(tx)
  if (!bound) throw new Error('afterCommit on a transaction that was not opened as a tenant transaction')
  if (!bound.committed.includes(then)) bound.committed.push(then)
}

/** Tells every listener, inside `tx`, what just happened; they have run when this resolves. */
export const announce = (tx: Tx, event: DomainEvent): Promise<void> => announceAll(tx, [event])

/** Several events at once, in this order (the records of one batch): each listener hears them in one call. */
export async function announceAll(tx: Tx, events: DomainEvent[]): Promise<void> {
  if (events.length === 0) return
  const bound = buses.get(tx)
  if (!bound) throw new Error(`${events[0].type} announced on a transaction that was not opened as a tenant transaction`)
  await bound.events.dispatch(tx, events)
}
