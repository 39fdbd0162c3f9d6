import type { SQL } from 'drizzle-orm'
import type { Db, Tx } from '../../db/client'

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
   * event outbox). A jsonb SQL expression is evaluated inside the listener's own statement, so recording the
   * event costs one round trip; a function is for objects that are simpler to render in code.
   */
  render?: SQL | (() => Promise<unknown>)
  /** More facts for `data`, as a jsonb SQL expression (null for none) evaluated in the same statement as `render`. */
  facts?: SQL
}

export type Listener = (tx: Tx, event: DomainEvent) => Promise<void>

/**
 * In-transaction publish/subscribe between features: the announcing feature does not know who listens, and
 * every listener runs inside the announcer's transaction, so its effects commit or roll back with the change.
 */
export class DomainEvents {
  readonly #listeners: { prefix: string; exact: boolean; fn: Listener }[] = []

  /** `pattern` is an event type (`operation.approved`), a family (`operation.*`) or `*`. */
  on(pattern: string, fn: Listener): this {
    const exact = !pattern.endsWith('*')
    this.#listeners.push({ prefix: exact ? pattern : pattern.slice(0, -1), exact, fn })
    return this
  }

  async dispatch(tx: Tx, event: DomainEvent): Promise<void> {
    for (const l of this.#listeners) {
      if (l.exact ? event.type === l.prefix : event.type.startsWith(l.prefix)) await l.fn(tx, event)
    }
  }
}

const buses = new WeakMap<Tx, { events: DomainEvents; committed: (() => void)[] }>()

/**
 * A transaction on `db` in which `announce` reaches `events`' listeners (whoever opens a tenant transaction opens
 * it through here). What listeners asked for with `afterCommit` runs once it has committed.
 */
export async function eventTransaction<T>(db: Db, events: DomainEvents, fn: (tx: Tx) => Promise<T>, config?: Parameters<Db['transaction']>[1]): Promise<T> {
  const committed: (() => void)[] = []
  const result = await db.transaction((tx) => {
    buses.set(tx, { events, committed })
    return fn(tx)
  }, config)
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
export async function announce(tx: Tx, event: DomainEvent): Promise<void> {
  const bound = buses.get(tx)
  if (!bound) throw new Error(`${event.type} announced on a transaction that was not opened as a tenant transaction`)
  await bound.events.dispatch(tx, event)
}
