import { sql } from 'drizzle-orm'
import { index, integer, pgTable, primaryKey, serial, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import { companyId, money, timestamps } from './columns'
import { clients } from './clients'
import { operations } from './operations'
import { ventanillaTickets } from './ventanilla'

/**
 * A purchase or sale of foreign currency at the counter (contract §19): what the operation it made was, in the
 * counter's terms. The operation holds the money (its transactions on the caja); this row holds the deal.
 */
export const exchanges = pgTable(
  'exchanges',
  {
    id: serial('id').primaryKey(),
    companyId: companyId(),
    operationId: integer('operation_id').notNull().references(() => operations.id),
    /** `buy`: the house buys the foreign currency; `sell`: it sells it. */
    side: text('side').notNull(),
    currency: text('currency').notNull(),
    amount: money('amount').notNull(),
    rate: money('rate').notNull(),
    /** `board`: the rate published at that moment; `manual`: another one, typed by someone holding `exchanges.rate`. */
    rateSource: text('rate_source').notNull(),
    /** The company's local currency when the exchange was made. */
    localCurrency: text('local_currency').notNull(),
    /** amount × rate, rounded half away from zero to cents. */
    localAmount: money('local_amount').notNull(),
    commission: money('commission').notNull().default('0'),
    cajaId: integer('caja_id')
      .notNull()
      .references(() => clients.id),
    /** The customer; null for an exchange made without one. */
    clientId: integer('client_id').references(() => clients.id),
    ticketId: integer('ticket_id').references(() => ventanillaTickets.id),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('exchanges_operation').on(t.operationId),
    index('exchanges_company_created').on(t.companyId, t.createdAt, t.id),
    index('exchanges_company_caja').on(t.companyId, t.cajaId, t.createdAt),
    index('exchanges_company_client').on(t.companyId, t.clientId).where(sql`${t.clientId} is not null`),
    index('exchanges_ticket').on(t.ticketId).where(sql`${t.ticketId} is not null`),
  ],
)

/**
 * The receipt (boleto) handed to the customer: numbered without gaps per company and point of sale, and frozen as
 * issued (the company's and the customer's data as they were then). Never deleted: a cancelled operation voids it and
 * its number stays taken.
 */
export const receipts = pgTable(
  'receipts',
  {
    id: serial('id').primaryKey(),
    companyId: companyId(),
    operationId: integer('operation_id')
      .notNull()
      .references(() => operations.id),
    point: integer('point').notNull(),
    seq: integer('seq').notNull(),
    issuedAt: timestamp('issued_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    legalName: text('legal_name'),
    taxId: text('tax_id'),
    address: text('address'),
    license: text('license'),
    customerName: text('customer_name'),
    documentType: text('document_type'),
    documentNumber: text('document_number'),
    documentCountry: text('document_country'),
    ...timestamps,
  },
  (t) => [uniqueIndex('receipts_number').on(t.companyId, t.point, t.seq), uniqueIndex('receipts_operation').on(t.operationId)],
)

/**
 * The last receipt number given per company and point. Numbers come from this row, bumped by the exchange's own
 * transaction (docs/architecture.md, "Receipt numbers"): a rolled-back exchange takes its bump back with it, which a
 * Postgres sequence would not, so the numbers have no gaps.
 */
export const receiptCounters = pgTable(
  'receipt_counters',
  {
    companyId: companyId(),
    point: integer('point').notNull(),
    lastSeq: integer('last_seq').notNull(),
  },
  (t) => [primaryKey({ columns: [t.companyId, t.point] })],
)
