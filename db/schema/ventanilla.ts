import { sql } from 'drizzle-orm'
import { boolean, date, index, integer, pgTable, serial, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import { deletedAt, money, timestamps } from './columns'
import { companies, employees } from './identity'

/** One row per company, created on the first PUT; until then the screen uses the defaults. */
export const ventanillaSettings = pgTable(
  'ventanilla_settings',
  {
    id: serial('id').primaryKey(),
    companyId: integer('company_id').notNull().references(() => companies.id),
    displayName: text('display_name'),
    logoUrl: text('logo_url').notNull().default(''),
    showLogo: boolean('show_logo').notNull().default(false),
    /** Null follows the company's time zone. */
    timezone: text('timezone'),
    tickerText: text('ticker_text').notNull().default(''),
    announceSound: boolean('announce_sound').notNull().default(true),
    announceTts: boolean('announce_tts').notNull().default(true),
    /** `full_name` | `first_last_initial` | `ticket` */
    privacyMode: text('privacy_mode').notNull().default('first_last_initial'),
    /** `first`: waiting priority tickets are called before the others; `off`: arrival order only. */
    priorityMode: text('priority_mode').notNull().default('first'),
    /** Rates are replaced as a set, so the time of the last replacement lives here, where deleting a rate cannot lose it. */
    ratesUpdatedAt: timestamp('rates_updated_at', { withTimezone: true, mode: 'date' }),
    /** The employee who last replaced the rates; null when a key did (or nobody yet). */
    ratesUpdatedBy: integer('rates_updated_by').references(() => employees.id),
    /** Whether a dispenser asks the customer's name: `off` | `optional` | `required`. */
    dispenserAsksName: text('dispenser_asks_name').notNull().default('off'),
    ...timestamps,
  },
  (t) => [uniqueIndex('ventanilla_settings_company').on(t.companyId)],
)

export const ventanillaRates = pgTable(
  'ventanilla_rates',
  {
    id: serial('id').primaryKey(),
    companyId: integer('company_id').notNull().references(() => companies.id),
    currency: text('currency').notNull(),
    buy: money('buy').notNull(),
    sell: money('sell').notNull(),
    position: integer('position').notNull().default(0),
    ...timestamps,
  },
  (t) => [uniqueIndex('ventanilla_rates_company_currency').on(t.companyId, t.currency)],
)

export const ventanillaServices = pgTable(
  'ventanilla_services',
  {
    id: serial('id').primaryKey(),
    companyId: integer('company_id').notNull().references(() => companies.id),
    name: text('name').notNull(),
    prefix: text('prefix').notNull(),
    ...timestamps,
    deletedAt: deletedAt(),
  },
  (t) => [
    uniqueIndex('ventanilla_services_company_prefix_live').on(t.companyId, t.prefix).where(sql`${t.deletedAt} is null`),
    index('ventanilla_services_company_updated').on(t.companyId, t.updatedAt),
  ],
)

export const ventanillaTickets = pgTable(
  'ventanilla_tickets',
  {
    id: serial('id').primaryKey(),
    companyId: integer('company_id').notNull().references(() => companies.id),
    serviceId: integer('service_id').notNull().references(() => ventanillaServices.id),
    /** The service that numbered it: a transfer changes `service_id` but the number stays where it was taken (null: never moved before this column). */
    issuedServiceId: integer('issued_service_id').references(() => ventanillaServices.id),
    number: text('number').notNull(),
    seq: integer('seq').notNull(),
    /** The day in the screen's time zone the ticket was taken on; numbering restarts each such day. */
    localDate: date('local_date', { mode: 'string' }).notNull(),
    customerName: text('customer_name'),
    /** `waiting` | `called` | `finished` | `no_show` */
    status: text('status').notNull().default('waiting'),
    desk: text('desk'),
    priority: boolean('priority').notNull().default(false),
    /** The last call; `firstCalledAt` the first one (waiting time ends there), `finishedAt` the end of service. */
    calledAt: timestamp('called_at', { withTimezone: true, mode: 'date' }),
    firstCalledAt: timestamp('first_called_at', { withTimezone: true, mode: 'date' }),
    finishedAt: timestamp('finished_at', { withTimezone: true, mode: 'date' }),
    /** The employee of the last call; null when a key called it. */
    calledBy: integer('called_by').references(() => employees.id),
    /** The dispenser that issued it (null for tickets taken by staff); its per-minute limit counts these. */
    dispenserTokenId: integer('dispenser_token_id'),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('ventanilla_tickets_issuer_day_seq').on(sql`coalesce(${t.issuedServiceId}, ${t.serviceId})`, t.localDate, t.seq),
    index('ventanilla_tickets_waiting').on(t.companyId, t.createdAt, t.id).where(sql`${t.status} = 'waiting'`),
    index('ventanilla_tickets_calls').on(t.companyId, t.calledAt).where(sql`${t.calledAt} is not null`),
    index('ventanilla_tickets_company_updated').on(t.companyId, t.updatedAt),
    index('ventanilla_tickets_dispenser').on(t.dispenserTokenId, t.createdAt).where(sql`${t.dispenserTokenId} is not null`),
  ],
)

/** A kiosk token is `vtk_<prefix>_<secret>`; only the prefix (to find the row) and a SHA-256 of the whole are kept. */
export const ventanillaTokens = pgTable(
  'ventanilla_tokens',
  {
    id: serial('id').primaryKey(),
    companyId: integer('company_id').notNull().references(() => companies.id),
    name: text('name').notNull(),
    prefix: text('prefix').notNull(),
    tokenHash: text('token_hash').notNull(),
    ...timestamps,
    revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [uniqueIndex('ventanilla_tokens_prefix').on(t.prefix), index('ventanilla_tokens_company').on(t.companyId)],
)

/** A ticket dispenser's token, `vdt_<prefix>_<secret>`: kept like kiosk tokens, as prefix and SHA-256 only. */
export const ventanillaDispenserTokens = pgTable(
  'ventanilla_dispenser_tokens',
  {
    id: serial('id').primaryKey(),
    companyId: integer('company_id').notNull().references(() => companies.id),
    name: text('name').notNull(),
    prefix: text('prefix').notNull(),
    tokenHash: text('token_hash').notNull(),
    ...timestamps,
    revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [uniqueIndex('ventanilla_dispenser_tokens_prefix').on(t.prefix), index('ventanilla_dispenser_tokens_company').on(t.companyId)],
)
