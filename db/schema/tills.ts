import { sql } from 'drizzle-orm'
import { boolean, index, integer, jsonb, pgTable, serial, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import { companyId, timestamps } from './columns'
import { clients } from './clients'
import { operations } from './operations'

/**
 * A caja's till day (contract §20): opened with a count per currency, closed with another. Counts are kept as the
 * answer shows them, `[{ currency, expected, counted, difference }]` with amounts as decimal strings; the summary is
 * frozen at the close. Who opened and closed it: the employee's id, null for a company key (as `created_by`).
 */
export const tillSessions = pgTable(
  'till_sessions',
  {
    id: serial('id').primaryKey(),
    companyId: companyId(),
    cajaId: integer('caja_id')
      .notNull()
      .references(() => clients.id),
    /** `open` or `closed`. */
    status: text('status').notNull(),
    openedAt: timestamp('opened_at', { withTimezone: true, mode: 'date' }).notNull(),
    openedBy: integer('opened_by'),
    opening: jsonb('opening').notNull(),
    openingAdjustmentOperationId: integer('opening_adjustment_operation_id').references(() => operations.id),
    closedAt: timestamp('closed_at', { withTimezone: true, mode: 'date' }),
    closedBy: integer('closed_by'),
    closing: jsonb('closing'),
    closingAdjustmentOperationId: integer('closing_adjustment_operation_id').references(() => operations.id),
    summary: jsonb('summary'),
    note: text('note'),
    ...timestamps,
  },
  (t) => [
    index('till_sessions_caja_opened').on(t.companyId, t.cajaId, t.openedAt, t.id),
    // What the till lock already guarantees, kept by the database too: one open session per caja.
    uniqueIndex('till_sessions_one_open').on(t.cajaId).where(sql`${t.status} = 'open'`),
  ],
)

/**
 * The till state of each caja, one row per type-0 client from its creation (db/sql/tills.sql): the row every ledger
 * write moving the caja's accounts locks `for share` and reads in that same step, and that an open or a close locks
 * `for update` (docs/architecture.md, "Till sessions"). `session_id` null: never opened, not restricted.
 */
export const tillStates = pgTable('till_states', {
  cajaId: integer('caja_id')
    .primaryKey()
    .references(() => clients.id),
  companyId: companyId(),
  sessionId: integer('session_id').references(() => tillSessions.id),
  open: boolean('open').notNull().default(false),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
})

/**
 * What happened to the caja's accounts while a session was open, written by the ledger write itself under the till
 * lock: an operation created (`moved`: completed, so its legs counted at once), approved, reverted or cancelled
 * (`moved`: the cancellation took completed legs out of the balances). The day report and the summary are read from
 * here, so an operation belongs to the session its change committed in, whatever its own timestamps say.
 */
export const tillMovements = pgTable(
  'till_movements',
  {
    id: serial('id').primaryKey(),
    companyId: companyId(),
    sessionId: integer('session_id')
      .notNull()
      .references(() => tillSessions.id),
    operationId: integer('operation_id')
      .notNull()
      .references(() => operations.id),
    /** `created`, `approved`, `reverted` or `cancelled`. */
    event: text('event').notNull(),
    moved: boolean('moved').notNull(),
    recordedAt: timestamp('recorded_at', { withTimezone: true, mode: 'date' }).notNull().default(sql`clock_timestamp()`),
  },
  (t) => [index('till_movements_session').on(t.sessionId, t.operationId)],
)
