import { sql } from 'drizzle-orm'
import { index, integer, pgTable, serial, smallint, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import { companyId, deletedAt, money, timestamps } from './columns'
import { companies } from './identity'

export const clients = pgTable(
  'clients',
  {
    id: serial('id').primaryKey(),
    companyId: integer('company_id').notNull().references(() => companies.id),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    /** 0 = internal caja, 1 = external running account. */
    type: smallint('type').notNull(),
    /** The customer's identity document (contract §19): all three set, or none. */
    documentType: text('document_type'),
    /** Without dots, spaces or dashes, upper case (server/modules/clients/document.ts). */
    documentNumber: text('document_number'),
    /** ISO 3166-1 alpha-2. */
    documentCountry: text('document_country'),
    ...timestamps,
    deletedAt: deletedAt(),
  },
  // Lists order by name in the "C" collation so the order is the same on every server, and these partial indexes
  // (live rows only) hand the page out already sorted.
  (t) => [
    index('clients_company_name').on(t.companyId, sql`${t.name} collate "C"`, t.id).where(sql`${t.deletedAt} is null`),
    // `search` and `description` (a part of the text, ignoring case) find their matches here: trigrams of name and
    // description (pg_trgm) beside the company (btree_gin), so a word reads only this company's matches. Measured with
    // bench/search.ts (50,000 clients of one company among 250,000; figures in bench/README.md): a surname 1,274
    // clients carry in 5.7 ms against 54 without the index, a word 9,930 descriptions carry in 19 against 60. Trigram
    // indexes on name and description alone read every company's matches (a two-letter word: 757 ms). A word of fewer
    // than three letters or digits has no trigram, so the service checks it row by row over the company's rows
    // instead (server/modules/clients/service.ts). New rows wait in the index's pending list, which every search reads
    // through: 4 MB of it (the default limit) made searches ten times slower; 256 kB holds about a hundred rows, and
    // emptying it as it fills costs a 1,000-client insert 18 ms against 15 with the default and 90 without the list.
    index('clients_search')
      .using('gin', t.companyId, t.name.op('gin_trgm_ops'), t.description.op('gin_trgm_ops'))
      .with({ gin_pending_list_limit: 256 })
      .where(sql`${t.deletedAt} is null`),
    index('clients_company_type_name')
      .on(t.companyId, t.type, sql`${t.name} collate "C"`, t.id)
      .where(sql`${t.deletedAt} is null`),
    // The real guard of "one live client per document": concurrent creates cannot both pass a check made first.
    uniqueIndex('clients_company_document_live')
      .on(t.companyId, t.documentType, t.documentNumber)
      .where(sql`${t.deletedAt} is null and ${t.documentNumber} is not null`),
    // `GET /api/clients?document=` finds by number whatever the type.
    index('clients_company_document_number').on(t.companyId, t.documentNumber).where(sql`${t.deletedAt} is null and ${t.documentNumber} is not null`),
  ],
)

export const accounts = pgTable(
  'accounts',
  {
    id: serial('id').primaryKey(),
    companyId: companyId(),
    clientId: integer('client_id').notNull().references(() => clients.id),
    name: text('name').notNull(),
    currencyName: text('currency_name').notNull(),
    balance: money('balance').notNull().default('0'),
    ...timestamps,
  },
  (t) => [index('accounts_client').on(t.clientId), index('accounts_company_currency').on(t.companyId, t.currencyName)],
)

export const tags = pgTable(
  'tags',
  {
    id: serial('id').primaryKey(),
    companyId: companyId(),
    name: text('name').notNull(),
    color: text('color').notNull(),
    ...timestamps,
  },
  (t) => [index('tags_company').on(t.companyId, t.name)],
)

export const clientTags = pgTable(
  'client_tags',
  {
    id: serial('id').primaryKey(),
    companyId: companyId(),
    clientId: integer('client_id').notNull().references(() => clients.id),
    tagId: integer('tag_id').notNull().references(() => tags.id),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('client_tags_pair').on(t.clientId, t.tagId), index('client_tags_tag').on(t.tagId)],
)
