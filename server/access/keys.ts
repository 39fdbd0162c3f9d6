import { t } from 'elysia'
import { apiKeys } from '../../db/schema'
import type { Tx } from '../../db/client'
import { DateTime } from '../lib/models'
import { newCredential } from '../lib/secrets'
import { KEY_KIND } from './caller'

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

/** Issues a key for a company (employeeId null) or an employee; the secret is returned once and kept only as a hash. */
export async function issueKey(tx: Tx, companyId: number, employeeId: number | null, name: string) {
  const cred = newCredential(KEY_KIND)
  const [row] = await tx
    .insert(apiKeys)
    .values({ companyId, employeeId, name, prefix: cred.prefix, keyHash: cred.hash })
    .returning()
  return { id: row.id, name: row.name, key: cred.value, prefix: cred.prefix, created_at: row.createdAt.toISOString() }
}
