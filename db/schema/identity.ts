import { sql } from 'drizzle-orm'
import { boolean, index, integer, pgTable, serial, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import { deletedAt, timestamps } from './columns'

export const companies = pgTable('companies', {
  id: serial('id').primaryKey(),
  name: text('name').notNull(),
  timezone: text('timezone').notNull().default('America/Argentina/Buenos_Aires'),
  mesasEnabled: boolean('mesas_enabled').notNull().default(false),
  ventanillaEnabled: boolean('ventanilla_enabled').notNull().default(false),
  ...timestamps,
})

export const employees = pgTable(
  'employees',
  {
    id: serial('id').primaryKey(),
    companyId: integer('company_id').notNull().references(() => companies.id),
    email: text('email').notNull(),
    name: text('name').notNull(),
    permissions: text('permissions').array().notNull().default(sql`'{}'::text[]`),
    clientIds: integer('client_ids').array().notNull().default(sql`'{}'::integer[]`),
    ...timestamps,
    deletedAt: deletedAt(),
  },
  (t) => [
    uniqueIndex('employees_company_email_live').on(t.companyId, sql`lower(${t.email})`).where(sql`${t.deletedAt} is null`),
  ],
)

/** A key is `fos_<prefix>_<secret>`; only the prefix (for lookup) and a SHA-256 of the whole key are kept. */
export const apiKeys = pgTable(
  'api_keys',
  {
    id: serial('id').primaryKey(),
    companyId: integer('company_id').notNull().references(() => companies.id),
    employeeId: integer('employee_id').references(() => employees.id),
    name: text('name').notNull(),
    prefix: text('prefix').notNull(),
    keyHash: text('key_hash').notNull(),
    ...timestamps,
    revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [uniqueIndex('api_keys_prefix').on(t.prefix), index('api_keys_company').on(t.companyId)],
)
