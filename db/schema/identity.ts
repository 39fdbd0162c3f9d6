import { sql } from 'drizzle-orm'
import { boolean, index, integer, pgTable, serial, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import { deletedAt, money, timestamps } from './columns'

export const companies = pgTable('companies', {
  id: serial('id').primaryKey(),
  name: text('name').notNull(),
  timezone: text('timezone').notNull().default('America/Argentina/Buenos_Aires'),
  mesasEnabled: boolean('mesas_enabled').notNull().default(false),
  ventanillaEnabled: boolean('ventanilla_enabled').notNull().default(false),
  // The company's own data printed on its receipts (contract §18); null until the owner fills it in.
  legalName: text('legal_name'),
  taxId: text('tax_id'),
  address: text('address'),
  /** The exchange-house registration shown on receipts. */
  license: text('license'),
  /** The point of sale receipts are numbered under (`PPPPP-NNNNNNNN`); each point has its own sequence. */
  receiptPoint: integer('receipt_point').notNull().default(1),
  localCurrency: text('local_currency').notNull().default('ARS'),
  /** The largest till count difference (any currency) a close may have without `tills.supervise`. */
  tillTolerance: money('till_tolerance').notNull().default('0'),
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
    /** Argon2id (Bun.password, PHC string with its own salt); null: the employee cannot sign in. */
    passwordHash: text('password_hash'),
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

/**
 * When a key was last used, kept apart from `api_keys` so that noting a use neither writes an audit row nor
 * changes the key's fingerprint (`api_key_callers.state`). Noted at most once a minute per key and process.
 */
export const apiKeyUses = pgTable('api_key_uses', {
  apiKeyId: integer('api_key_id')
    .primaryKey()
    .references(() => apiKeys.id),
  lastUsedAt: timestamp('last_used_at', { withTimezone: true, mode: 'date' }).notNull(),
})

/**
 * The first-run setup link's token while no company exists: only its SHA-256 is kept, a fresh one at every start,
 * each valid 24 h. Not a tenant table: it exists before any company does.
 */
export const setupTokens = pgTable('setup_tokens', {
  id: serial('id').primaryKey(),
  tokenHash: text('token_hash').notNull().unique(),
  expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
})

/**
 * A signed-in employee (cookie `fos_session`). Only a SHA-256 of the cookie value is kept; a revoked or expired
 * row, or one of a deleted employee, no longer authenticates, whichever process looks it up.
 */
export const employeeSessions = pgTable(
  'employee_sessions',
  {
    id: serial('id').primaryKey(),
    companyId: integer('company_id').notNull().references(() => companies.id),
    employeeId: integer('employee_id').notNull().references(() => employees.id),
    tokenHash: text('token_hash').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
    ...timestamps,
    revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [uniqueIndex('employee_sessions_token').on(t.tokenHash), index('employee_sessions_employee').on(t.employeeId)],
)

/**
 * Sign-in attempts not (yet) known to have succeeded, counted over a sliding window so the throttle holds across
 * processes (server/access/throttle.ts): those of a browser holding a device cookie by that cookie's `device` nonce,
 * the others per company and e-mail (lower case) and client address. Not a tenant table: it is written before
 * anyone is known; `company_id` is the company the attempt named, which exists (attempts naming none are not written).
 */
export const signInFailures = pgTable(
  'sign_in_failures',
  {
    id: serial('id').primaryKey(),
    companyId: integer('company_id').notNull(),
    email: text('email').notNull(),
    address: text('address').notNull(),
    /** The nonce of the device cookie the attempt came with; null for a browser the account never signed in on. */
    device: text('device'),
    failedAt: timestamp('failed_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    index('sign_in_failures_account').on(t.companyId, t.email, t.failedAt),
    index('sign_in_failures_device').on(t.device, t.failedAt).where(sql`${t.device} is not null`),
  ],
)
