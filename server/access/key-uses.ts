import { sql } from 'drizzle-orm'
import type { AppContext } from '../context'

/** A key's use is noted at most this often per process; `last_used_at` is meant to within a minute. */
const NOTE_EVERY_MS = 60_000
/** Keys whose last note this process remembers; beyond it the oldest is forgotten and may be noted again early. */
const REMEMBERED = 10_000

const noted = new WeakMap<AppContext, Map<number, number>>()

/**
 * Notes that a key was used (`api_key_uses`, read by `GET /api/api-keys`), off the request's path: the request does
 * not wait for it, and a failure only leaves the time older. A row of its own per key, so that noting neither writes
 * an audit row nor changes the key's fingerprint that remembered callers are confirmed against.
 */
export function noteKeyUse(app: AppContext, keyId: number) {
  if (!keyId) return
  let seen = noted.get(app)
  if (!seen) noted.set(app, (seen = new Map()))
  const now = app.clock().getTime()
  const last = seen.get(keyId)
  if (last !== undefined && now - last < NOTE_EVERY_MS) return
  seen.delete(keyId)
  seen.set(keyId, now)
  if (seen.size > REMEMBERED) seen.delete(seen.keys().next().value!)
  const at = new Date(now).toISOString()
  app.db
    .execute(
      sql`insert into api_key_uses (api_key_id, last_used_at) values (${keyId}, ${at}::timestamptz)
          on conflict (api_key_id) do update set last_used_at = greatest(api_key_uses.last_used_at, excluded.last_used_at)`,
    )
    .catch(() => seen.delete(keyId))
}
