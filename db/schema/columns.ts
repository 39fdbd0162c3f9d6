import { integer, numeric, timestamp } from 'drizzle-orm/pg-core'

export const timestamps = {
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
}

export const deletedAt = () => timestamp('deleted_at', { withTimezone: true, mode: 'date' })

/** Every tenant-owned row carries its company: the audit trigger and row-level security key on it. */
export const companyId = () => integer('company_id').notNull()

/** Money: exact decimal, six places. Values arrive and leave as strings; never JavaScript numbers. */
export const money = (name: string) => numeric(name, { precision: 28, scale: 6 })
