import { sql } from 'drizzle-orm'
import { boolean, index, integer, jsonb, pgTable, serial, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import { companyId, deletedAt, timestamps } from './columns'
import { employees } from './identity'
import { operations, operationTypes } from './operations'

export const messagingTools = pgTable(
  'messaging_tools',
  {
    id: serial('id').primaryKey(),
    companyId: companyId(),
    name: text('name').notNull(),
    slug: text('slug').notNull(),
    description: text('description').notNull().default(''),
    enabled: boolean('enabled').notNull().default(true),
    companyOperationTypeId: integer('company_operation_type_id').notNull().references(() => operationTypes.id),
    /** Legacy column kept for the dashboard: the up_down mode, `standard` for every other kind. */
    mode: text('mode').notNull().default('standard'),
    fixedConfig: jsonb('fixed_config').notNull(),
    parameterSchema: jsonb('parameter_schema').notNull(),
    createdBy: integer('created_by').references(() => employees.id),
    ...timestamps,
    deletedAt: deletedAt(),
  },
  (t) => [
    // The database, not a read-then-write check, decides which of two concurrent creates gets the slug.
    uniqueIndex('messaging_tools_company_slug_live').on(t.companyId, t.slug).where(sql`${t.deletedAt} is null`),
  ],
)

/**
 * One row per tool run. The audit trigger (db/sql/audit.sql) reads `channel` and `channel_detail` by
 * `operation_id`, so later changes to the operation keep the channel of their origin: keep these names.
 */
export const messagingDrafts = pgTable(
  'messaging_drafts',
  {
    id: serial('id').primaryKey(),
    companyId: companyId(),
    toolId: integer('tool_id').notNull().references(() => messagingTools.id),
    operationId: integer('operation_id').notNull().references(() => operations.id),
    /** messaging | twin */
    channel: text('channel').notNull(),
    requestedBy: jsonb('requested_by').notNull(),
    channelDetail: jsonb('channel_detail').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [index('messaging_drafts_operation').on(t.operationId), index('messaging_drafts_tool').on(t.toolId)],
)
