import { boolean, check, index, integer, pgTable, serial, smallint, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { sql } from 'drizzle-orm'
import { companyId, money, timestamps } from './columns'
import { accounts, clients } from './clients'

export const costCenters = pgTable(
  'cost_centers',
  {
    id: serial('id').primaryKey(),
    companyId: companyId(),
    clientId: integer('client_id').notNull().references(() => clients.id),
    name: text('name').notNull(),
    defaultCurrency: text('default_currency').notNull(),
    /** The caja a budget tool debits when it names none; null only while the company has no caja in the currency. */
    defaultInternalAccountId: integer('default_internal_account_id').references(() => accounts.id),
    netBalanceByDefault: boolean('net_balance_by_default').notNull().default(false),
    ...timestamps,
  },
  (t) => [index('cost_centers_company').on(t.companyId, t.id)],
)

export const costCenterBudgets = pgTable(
  'cost_center_budgets',
  {
    id: serial('id').primaryKey(),
    companyId: companyId(),
    costCenterId: integer('cost_center_id').notNull().references(() => costCenters.id),
    currency: text('currency').notNull(),
    year: integer('year').notNull(),
    period: smallint('period').notNull(),
    amount: money('amount').notNull(),
    /** expense | income */
    kind: text('kind').notNull(),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('cost_center_budgets_slot').on(t.costCenterId, t.currency, t.year, t.period, t.kind),
    check('cost_center_budgets_period', sql`${t.period} between 1 and 12`),
  ],
)
