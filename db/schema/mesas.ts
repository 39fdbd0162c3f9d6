import { sql } from 'drizzle-orm'
import { boolean, index, integer, numeric, pgTable, serial, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import { companyId, deletedAt, money, timestamps } from './columns'
import { accounts } from './clients'
import { operations } from './operations'

export const mesas = pgTable(
  'mesas',
  {
    id: serial('id').primaryKey(),
    companyId: companyId(),
    name: text('name').notNull(),
    localCurrency: text('local_currency').notNull(),
    quoteCurrency: text('quote_currency').notNull(),
    /** fifo | wac */
    costingMethod: text('costing_method').notNull(),
    /** quote | local: which currency coming in is called a buy. */
    quoteDirection: text('quote_direction').notNull().default('quote'),
    /** manual | auto */
    blotterFeedMode: text('blotter_feed_mode').notNull().default('manual'),
    includePendingLegs: boolean('include_pending_legs').notNull().default(false),
    createdBy: integer('created_by'),
    ...timestamps,
    deletedAt: deletedAt(),
  },
  (t) => [
    index('mesas_company_live').on(t.companyId, t.id).where(sql`${t.deletedAt} is null`),
    // The ledger asks on every operation change whether any auto-fed mesa exists; this keeps that answer one index probe.
    index('mesas_company_auto').on(t.companyId).where(sql`${t.deletedAt} is null and ${t.blotterFeedMode} = 'auto'`),
  ],
)

/**
 * Membership of an account in a mesa. Deleting the mesa (or dropping the account from it) stamps `released_at`
 * instead of removing the row, and the partial unique index lets the database itself refuse a second live
 * membership, so two concurrent creates cannot both take one account.
 */
export const mesaAccounts = pgTable(
  'mesa_accounts',
  {
    id: serial('id').primaryKey(),
    companyId: companyId(),
    mesaId: integer('mesa_id').notNull().references(() => mesas.id),
    accountId: integer('account_id').notNull().references(() => accounts.id),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    releasedAt: timestamp('released_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    uniqueIndex('mesa_accounts_live_account').on(t.accountId).where(sql`${t.releasedAt} is null`),
    index('mesa_accounts_mesa').on(t.mesaId),
  ],
)

/** A blotter line; amounts are positive, the side says which way the quote currency moved. */
export const mesaLines = pgTable(
  'mesa_lines',
  {
    id: serial('id').primaryKey(),
    companyId: companyId(),
    mesaId: integer('mesa_id').notNull().references(() => mesas.id),
    operationId: integer('operation_id').references(() => operations.id),
    /** buy | sell, in the words of the mesa's quote_direction */
    side: text('side').notNull(),
    localAmount: money('local_amount').notNull(),
    quoteAmount: money('quote_amount').notNull(),
    /** local per quote unit; more places than money so |local|/|quote| survives the round trip. */
    fx: numeric('fx', { precision: 40, scale: 12 }).notNull(),
    /** manual | auto | fabricated */
    source: text('source').notNull(),
    /** exact | fx_close | partial, null for fabricated lines */
    matchKind: text('match_kind'),
    tradedAt: timestamp('traded_at', { withTimezone: true, mode: 'date' }).notNull(),
    createdBy: integer('created_by'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('mesa_lines_operation').on(t.mesaId, t.operationId).where(sql`${t.operationId} is not null`),
    index('mesa_lines_mesa_traded').on(t.mesaId, t.tradedAt, t.id),
    index('mesa_lines_operation_id').on(t.operationId),
  ],
)
