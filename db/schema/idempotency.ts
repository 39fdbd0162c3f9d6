import { integer, jsonb, pgTable, primaryKey, smallint, text, timestamp } from 'drizzle-orm/pg-core'

/**
 * One row per (company, principal, key): claimed inside the write's own transaction, so a replay sees exactly what
 * committed. The principal is whoever made the request (an employee's id, 0 for the company's own keys), so a key is
 * only ever replayed to the one who chose it (server/lib/write.ts, `idempotencyScope`).
 */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    companyId: integer('company_id').notNull(),
    principal: integer('principal').notNull().default(0),
    key: text('key').notNull(),
    requestHash: text('request_hash').notNull(),
    status: smallint('status').notNull(),
    response: jsonb('response').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.companyId, t.principal, t.key] })],
)
