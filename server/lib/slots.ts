/**
 * Counted slots per key (an address, a company): `take` succeeds synchronously while fewer than `limit` are
 * held, so a burst cannot overshoot; its release may be called any number of times and frees the slot once.
 */
export class Slots<K = string> {
  private held = new Map<K, number>()

  constructor(private readonly limit: () => number) {}

  take(key: K): (() => void) | null {
    const n = this.held.get(key) ?? 0
    if (n >= this.limit()) return null
    this.held.set(key, n + 1)
    return this.releaser(key)
  }

  count(key: K): number {
    return this.held.get(key) ?? 0
  }

  private releaser(key: K) {
    let released = false
    return () => {
      if (released) return
      released = true
      const left = (this.held.get(key) ?? 1) - 1
      if (left > 0) this.held.set(key, left)
      else this.held.delete(key)
    }
  }
}

/** The most of a key's `limit` slots one share may hold: half, as the database pool's admission gives a company. */
export const shareOf = (limit: number) => Math.max(1, Math.ceil(limit / 2))

/**
 * Slots per key shared out among those who take them: at most `limit` per key, and at most half of them (`shareOf`)
 * for any one share of it (a company, or every caller the service does not know yet), so one share filling its half
 * leaves the rest of the key's slots to the others, as `Admission` does for the pool (server/lib/admission.ts).
 */
export class SharedSlots<K = string, S = string> {
  private readonly all: Slots<K>
  private readonly shares: Slots<string>

  constructor(private readonly limit: () => number) {
    this.all = new Slots<K>(limit)
    this.shares = new Slots<string>(() => shareOf(limit()))
  }

  take(key: K, share: S): (() => void) | null {
    const own = this.shares.take(JSON.stringify([key, share]))
    if (!own) return null
    const slot = this.all.take(key)
    if (!slot) {
      own()
      return null
    }
    return () => {
      own()
      slot()
    }
  }

  count(key: K): number {
    return this.all.count(key)
  }
}
