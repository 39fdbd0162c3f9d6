import { doublePrecision, pgTable, text, timestamp } from 'drizzle-orm/pg-core'

/**
 * One token bucket per credential or client address, shared by every server process on this database. Processes
 * lease tokens from it in slices (db/sql/rate-limit.sql), so most requests never touch this table. A bucket idle
 * for a minute is full again, the same as no row, so old rows can go at any time.
 */
export const rateLimitBuckets = pgTable('rate_limit_buckets', {
  bucket: text('bucket').primaryKey(),
  tokens: doublePrecision('tokens').notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
})
