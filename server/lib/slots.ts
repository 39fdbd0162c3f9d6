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
    let released = false
    return () => {
      if (released) return
      released = true
      const left = (this.held.get(key) ?? 1) - 1
      if (left > 0) this.held.set(key, left)
      else this.held.delete(key)
    }
  }

  count(key: K): number {
    return this.held.get(key) ?? 0
  }
}
