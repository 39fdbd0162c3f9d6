import { t } from 'elysia'
import { sql } from 'drizzle-orm'
import { apiKeys } from '../../db/schema'
import { rowsOf, type Tx } from '../../db/client'
import { ApiError } from '../lib/errors'
import { DateTime } from '../lib/models'
import { newCredential } from '../lib/secrets'
import { KEY_KIND } from './caller'

/** Any constant: the first key of the advisory lock under which a company's keys are counted and issued. */
const ISSUE_LOCK = 727_417

/** The request and answer of issuing a key, the same for a company key and an employee key. */
export const KeyModel = {
  create: t.Object({ name: t.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false }),
  issued: t.Object({
    id: t.Integer(),
    name: t.String(),
    key: t.String({ description: 'The secret key; shown only in this response' }),
    prefix: t.String(),
    created_at: DateTime,
  }),
  listed: t.Object({
    id: t.Integer(),
    name: t.String(),
    prefix: t.String(),
    employee_id: t.Union([t.Integer(), t.Null()], { description: 'Null for a company key' }),
    created_at: DateTime,
    last_used_at: t.Union([DateTime, t.Null()], { description: 'Last authenticated request, to within a minute; null if never' }),
  }),
}

/**
 * Issues a key for a company (employeeId null) or an employee; the secret is returned once and kept only as a hash.
 * With `maxLive` (MAX_API_KEYS_PER_COMPANY; 0 for none) the company may hold at most that many live keys (not
 * revoked, not of a deleted employee): one more is 409 API_KEY_LIMIT_REACHED. Keys are counted and issued under a
 * per-company lock, so concurrent issues cannot pass the total together. The operator CLI issues without a total.
 */
export async function issueKey(tx: Tx, companyId: number, employeeId: number | null, name: string, maxLive = 0) {
  if (maxLive > 0) {
    await tx.execute(sql`select pg_advisory_xact_lock(${ISSUE_LOCK}, ${companyId})`)
    const [{ live }] = rowsOf<{ live: number }>(
      await tx.execute(sql`select count(*)::int as live from api_keys k left join employees e on e.id = k.employee_id
                            where k.company_id = ${companyId} and k.revoked_at is null and e.deleted_at is null`),
    )
    if (Number(live) >= maxLive)
      throw new ApiError(
        409,
        'API_KEY_LIMIT_REACHED',
        `The company already holds ${maxLive} live API keys, the most it may (MAX_API_KEYS_PER_COMPANY); revoke one it no longer uses first`,
      )
  }
  const cred = newCredential(KEY_KIND)
  const [row] = await tx
    .insert(apiKeys)
    .values({ companyId, employeeId, name, prefix: cred.prefix, keyHash: cred.hash })
    .returning()
  return { id: row.id, name: row.name, key: cred.value, prefix: cred.prefix, created_at: row.createdAt.toISOString() }
}
