import { bigserial, index, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core'

/** Written only by the `audit.capture` trigger (db/sql/audit.sql); the application never inserts here. */
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
