import { index, integer, pgTable, serial, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import { companyId } from './columns'
import { clients } from './clients'

/**
 * A bearer credential an external client uses to read its own statement. Only the lookup prefix and a
 * SHA-256 of the whole token are kept; the token itself is shown once, when the grant is made.
 */
export const externalGrants = pgTable(
  'external_grants',
  {
    id: serial('id').primaryKey(),
    companyId: companyId(),
    clientId: integer('client_id').notNull().references(() => clients.id),
    prefix: text('prefix').notNull(),
    tokenHash: text('token_hash').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
    revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
    createdBy: integer('created_by'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('external_grants_prefix').on(t.prefix), index('external_grants_client').on(t.companyId, t.clientId)],
)
