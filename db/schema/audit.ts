import { sql } from 'drizzle-orm'
import { bigint, bigserial, date, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'

/**
 * Written only by the `audit_capture` trigger (db/sql/audit.sql); the application never inserts here. The seal
 * columns (`seq`, `prev_hash`, `hash`, `sealed_at`) are null at insert and set once, after commit, by the chain
 * sealer (server/modules/audit/chain.ts); the `audit_logs_guard` trigger refuses every other change.
 */
export const auditLogs = pgTable(
  'audit_logs',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    companyId: integer('company_id'),
    entity: text('entity').notNull(),
    entityId: integer('entity_id').notNull(),
    action: text('action').notNull(),
    rawAction: text('raw_action').notNull(),
    actorEmail: text('actor_email'),
    channel: text('channel'),
    channelDetail: jsonb('channel_detail'),
    before: jsonb('before'),
    after: jsonb('after'),
    changes: jsonb('changes').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    /** Place in the company's chain: 1, 2, 3, … in the order rows were sealed (commit order). */
    seq: bigint('seq', { mode: 'number' }),
    prevHash: text('prev_hash'),
    hash: text('hash'),
    /** The database clock when the row was sealed, under the company's chain lock: grows with `seq`. */
    sealedAt: timestamp('sealed_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    index('audit_company_time').on(t.companyId, t.createdAt, t.id),
    index('audit_company_entity_action_time').on(t.companyId, t.entity, t.action, t.createdAt, t.id),
    index('audit_company_actor_time').on(t.companyId, t.actorEmail, t.createdAt),
    index('audit_entity_row').on(t.entity, t.entityId),
    // Partial, so an insert (the hot path) touches only the small index of rows waiting to be sealed.
    uniqueIndex('audit_company_seq').on(t.companyId, t.seq).where(sql`seq is not null`),
    index('audit_unsealed').on(t.companyId, t.id).where(sql`seq is null and company_id is not null`),
  ],
)

/**
 * One row per finished company day: the chain head as it stood at the end of that day in the company's time
 * zone. Made by the chain worker; signed when served.
 */
export const auditDigests = pgTable(
  'audit_digests',
  {
    companyId: integer('company_id').notNull(),
    date: date('date', { mode: 'string' }).notNull(),
    seq: bigint('seq', { mode: 'number' }).notNull(),
    hash: text('hash').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.companyId, t.date] })],
)
