import { sql } from 'drizzle-orm'
import { bigint, bigserial, date, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'

/**
 * Written only by the `audit_capture` trigger (db/sql/audit.sql); the application never inserts here, and the
 * `audit_logs_guard` trigger refuses every change: a row's place in the chain is kept beside it, in `audit_seals`.
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
  },
  (t) => [
    index('audit_company_time').on(t.companyId, t.createdAt, t.id),
    index('audit_company_entity_action_time').on(t.companyId, t.entity, t.action, t.createdAt, t.id),
    index('audit_company_actor_time').on(t.companyId, t.actorEmail, t.createdAt),
    index('audit_entity_row').on(t.entity, t.entityId),
  ],
)

/**
 * Audit rows waiting for their place: one entry per row with a company, added by a trigger on every insert into
 * `audit_logs`, removed by the sealer in the transaction that seals the row. Entries appear at the row's commit.
 */
export const auditPending = pgTable(
  'audit_pending',
  {
    companyId: integer('company_id').notNull(),
    auditId: bigint('audit_id', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.companyId, t.auditId] })],
)

/**
 * Each audit row's place in its company's chain, written once by the chain sealer (server/modules/audit/chain.ts)
 * and never changed: sealing inserts a narrow row here instead of rewriting the audit row and all its indexes.
 */
export const auditSeals = pgTable(
  'audit_seals',
  {
    auditId: bigint('audit_id', { mode: 'number' }).primaryKey(),
    companyId: integer('company_id').notNull(),
    /** Place in the company's chain: 1, 2, 3, … in the order rows were sealed (commit order). */
    seq: bigint('seq', { mode: 'number' }).notNull(),
    prevHash: text('prev_hash').notNull(),
    hash: text('hash').notNull(),
    /** The database clock when the row was sealed, under the company's chain lock: grows with `seq`. */
    sealedAt: timestamp('sealed_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [uniqueIndex('audit_seals_company_seq').on(t.companyId, t.seq)],
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
