import { and, eq, sql } from 'drizzle-orm'
import { idempotencyKeys } from '../../db/schema'
import type { Db, Tx } from '../../db/client'
import type { Caller } from '../access/caller'
import type { AppContext } from '../context'
import { conflict, invalid } from './errors'
import { sha256 } from './secrets'

export interface WriteOptions {
  /** `messaging` or `twin` when a bot tool run makes the change; the audit trail records it. */
  channel?: string
  channelDetail?: unknown
}

/**
 * The role a tenant transaction acts as (db/sql/rls.sql): neither owner nor superuser, so the row-level
 * policies confine every statement of the transaction to `app.company_id`, even one that forgets its filter.
 */
export const TENANT_ROLE = 'fos_app'

/**
 * Every change runs here: one database transaction that first tells the audit trigger who is acting.
 * A company key has no email, so its audit actor stays null.
 * `set_config('role', …, true)` is `SET LOCAL ROLE`, sent in the same round trip; it ends with the transaction.
 */
export async function write<T>(app: AppContext, caller: Caller, fn: (tx: Tx) => Promise<T>, opts: WriteOptions = {}) {
  return app.db.transaction(async (tx) => {
    await tx.execute(sql`select
      set_config('app.actor_email', ${caller.employee?.email ?? ''}, true),
      set_config('app.channel', ${opts.channel ?? ''}, true),
      set_config('app.channel_detail', ${opts.channelDetail ? JSON.stringify(opts.channelDetail) : ''}, true),
      set_config('app.company_id', ${String(caller.companyId)}, true),
      set_config('role', ${TENANT_ROLE}, true)`)
    return fn(tx)
  })
}

/**
 * A read-only, repeatable-read snapshot of one company (figures that must agree with each other),
 * confined by the same policies as a write.
 */
export async function readSnapshot<T>(db: Db, companyId: number, fn: (tx: Tx) => Promise<T>) {
  return db.transaction(
    async (tx) => {
      await tx.execute(sql`select set_config('app.company_id', ${String(companyId)}, true), set_config('role', ${TENANT_ROLE}, true)`)
      return fn(tx)
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  )
}

const RETENTION_MS = 24 * 60 * 60 * 1000

export interface IdempotentRequest {
  key: string | undefined
  method: string
  path: string
  /** What makes two requests "the same": the JSON body, or a digest of a multipart upload. */
  fingerprint: unknown
}

/** Rolls back the replaying transaction while carrying the stored answer out of it. */
class Replay extends Error {
  constructor(readonly status: number, readonly body: unknown) {
    super('replay')
  }
}

/**
 * A creating POST. With an `Idempotency-Key`, the key is claimed in the same transaction as the write,
 * so a concurrent duplicate waits on the claim and then replays what committed; a failed first attempt
 * leaves no claim behind.
 */
export async function createOnce<T>(
  app: AppContext,
  caller: Caller,
  req: IdempotentRequest,
  set: { status?: number | string },
  fn: (tx: Tx) => Promise<T>,
  opts: WriteOptions & { status?: number } = {},
): Promise<T> {
  return claimOnce(app, caller.companyId, (body) => write(app, caller, body, opts), req, set, fn, opts.status ?? 201)
}

/** Claims of creates made outside any company (superadmin company creation); no company has id 0. */
export const PLATFORM_SCOPE = 0

/** createOnce for a caller that opens its own transaction; `scope` is the company the key belongs to. */
export async function claimOnce<T>(
  app: AppContext,
  scope: number,
  run: (body: (tx: Tx) => Promise<T>) => Promise<T>,
  req: IdempotentRequest,
  set: { status?: number | string },
  fn: (tx: Tx) => Promise<T>,
  status = 201,
): Promise<T> {
  if (req.key === undefined) {
    const body = await run(fn)
    set.status = status
    return body
  }
  if (req.key.length < 1 || req.key.length > 255) throw invalid('Idempotency-Key must be 1 to 255 characters')
  const hash = sha256(`${req.method} ${req.path}\n${JSON.stringify(req.fingerprint ?? null)}`)
  try {
    const body = await run(
      async (tx) => {
        const claimed = await tx
          .insert(idempotencyKeys)
          .values({ companyId: scope, key: req.key!, requestHash: hash, status, response: {} })
          .onConflictDoNothing()
          .returning({ key: idempotencyKeys.key })
        if (claimed.length === 0) {
          const [prior] = await tx
            .select()
            .from(idempotencyKeys)
            .where(and(eq(idempotencyKeys.companyId, scope), eq(idempotencyKeys.key, req.key!)))
            .for('update')
          if (app.clock().getTime() - prior.createdAt.getTime() < RETENTION_MS) {
            if (prior.requestHash !== hash)
              throw conflict('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with a different request')
            throw new Replay(prior.status, prior.response)
          }
          await tx
            .update(idempotencyKeys)
            .set({ requestHash: hash, status, response: {}, createdAt: app.clock() })
            .where(and(eq(idempotencyKeys.companyId, scope), eq(idempotencyKeys.key, req.key!)))
        }
        const result = await fn(tx)
        await tx
          .update(idempotencyKeys)
          .set({ response: JSON.parse(JSON.stringify(result ?? null)) })
          .where(and(eq(idempotencyKeys.companyId, scope), eq(idempotencyKeys.key, req.key!)))
        return result
      },
    )
    set.status = status
    return body
  } catch (e) {
    if (e instanceof Replay) {
      set.status = e.status
      return e.body as T
    }
    throw e
  }
}
