import { sql } from 'drizzle-orm'
import { bigint, index, integer, pgTable, serial, text, timestamp } from 'drizzle-orm/pg-core'
import { companyId, deletedAt } from './columns'
import { operations } from './operations'

/**
 * A file attached to an operation. The bytes live in the blob store under `object_key`; the uploader is kept by
 * email (as the audit trail does) and resolved against the company's current employees when read.
 */
export const operationAttachments = pgTable(
  'operation_attachments',
  {
    id: serial('id').primaryKey(),
    companyId: companyId(),
    operationId: integer('operation_id').notNull().references(() => operations.id),
    objectKey: text('object_key').notNull().unique(),
    fileName: text('file_name').notNull(),
    mimeType: text('mime_type'),
    sizeBytes: bigint('size_bytes', { mode: 'number' }),
    /** Null for a company key. */
    uploadedByEmail: text('uploaded_by_email'),
    uploadedById: integer('uploaded_by_id'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    deletedAt: deletedAt(),
  },
  (t) => [
    index('operation_attachments_operation').on(t.companyId, t.operationId, t.id),
    // The company's storage in use, summed from this index alone at every upload (the quota check).
    index('operation_attachments_storage').on(t.companyId, t.sizeBytes).where(sql`${t.deletedAt} is null`),
  ],
)
