import { boolean, index, integer, pgTable, serial, text, timestamp } from 'drizzle-orm/pg-core'
import { companyId, money, timestamps } from './columns'
import { accounts, clients } from './clients'
import { costCenters } from './cost-centers'

export const operationTypes = pgTable(
  'operation_types',
  {
    id: serial('id').primaryKey(),
    companyId: companyId(),
    name: text('name').notNull(),
    /** up_down | other | exchange | budget */
    kind: text('kind').notNull(),
    ...timestamps,
  },
  (t) => [index('operation_types_company').on(t.companyId)],
)

export const transactionTypes = pgTable(
  'transaction_types',
  {
    id: serial('id').primaryKey(),
    companyId: companyId(),
    name: text('name').notNull(),
    isCommission: boolean('is_commission').notNull().default(false),
    ...timestamps,
  },
  (t) => [index('transaction_types_company').on(t.companyId)],
)

export const operations = pgTable(
  'operations',
  {
    id: serial('id').primaryKey(),
    companyId: companyId(),
    operationTypeId: integer('operation_type_id').notNull().references(() => operationTypes.id),
    clientId: integer('client_id').references(() => clients.id),
    costCenterId: integer('cost_center_id').references(() => costCenters.id),
    description: text('description').notNull().default(''),
    date: timestamp('date', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    /** Derived from the transactions (pending | completed | cancelled | mixed); kept in step in the same database transaction. */
    status: text('status').notNull(),
    createdBy: integer('created_by'),
    ...timestamps,
  },
  (t) => [
    index('operations_company_date').on(t.companyId, t.date, t.id),
    index('operations_company_status').on(t.companyId, t.status, t.date),
    index('operations_company_client').on(t.companyId, t.clientId),
  ],
)

export const transactions = pgTable(
  'transactions',
  {
    id: serial('id').primaryKey(),
    companyId: companyId(),
    operationId: integer('operation_id').notNull().references(() => operations.id),
    accountId: integer('account_id').notNull().references(() => accounts.id),
    currency: text('currency').notNull(),
    amount: money('amount').notNull(),
    /** pending | completed | cancelled */
    status: text('status').notNull(),
    transactionTypeId: integer('transaction_type_id').references(() => transactionTypes.id),
    isCommission: boolean('is_commission').notNull().default(false),
    description: text('description').notNull().default(''),
    /** When the transaction last became completed; null while it is not completed. Day metrics key on it. */
    completedAt: timestamp('completed_at', { withTimezone: true, mode: 'date' }),
    ...timestamps,
  },
  (t) => [
    index('transactions_operation').on(t.operationId),
    index('transactions_account').on(t.accountId, t.completedAt),
    index('transactions_company_completed').on(t.companyId, t.completedAt),
  ],
)
