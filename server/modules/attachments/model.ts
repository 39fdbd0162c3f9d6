import { t } from 'elysia'
import { DateTime, Id } from '../../lib/models'
import { LISTENER_HEADER_BYTES } from '../../config'

/** The types an attachment may have (interface 2.1); the upload's part content type must be one of them. */
export const ATTACHMENT_MIME_TYPES = [
  'application/pdf',
  'image/jpeg',
  'image/png',
  'image/gif',
  'image/webp',
  'image/bmp',
  'image/tiff',
  'image/svg+xml',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'application/vnd.ms-excel.sheet.macroEnabled.12',
  'application/vnd.ms-excel',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/msword',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  'application/vnd.ms-powerpoint',
  'text/csv',
  'text/tab-separated-values',
  'text/plain',
  'application/json',
  'application/xml',
  'text/xml',
  'application/zip',
  'application/octet-stream',
] as const

/** Lifetime of every download link, in seconds (interface 8). */
export const LINK_LIFETIME_SECONDS = 3600

const nullable = <T extends Parameters<typeof t.Union>[0][number]>(schema: T) => t.Union([schema, t.Null()])

const Actor = t.Object(
  { id: nullable(t.Integer()), name: nullable(t.String()), email: nullable(t.String()) },
  { description: 'PublicAuditActor: the uploading employee, resolved by email among current employees; all null for a company key.' },
)

export const AttachmentModel = {
  params: t.Object({ id: Id, attachmentId: Id }),
  actor: Actor,
  attachment: t.Object({
    id: t.Integer(),
    file_name: t.String(),
    mime_type: nullable(t.String()),
    size_bytes: nullable(t.Integer()),
    created_at: DateTime,
    uploaded_by: Actor,
    signed_url: nullable(t.String({ format: 'uri', description: `Download link without an API key, valid ${LINK_LIFETIME_SECONDS} s` })),
  }, { $id: 'Attachment' }),
  /** The upload as the document describes it, with the size this deployment takes (MAX_UPLOAD_BYTES). */
  uploadBody: (maxBytes: number) => ({
    required: true,
    description: `One file in the multipart field \`file\`. Its part content type must be one of: ${ATTACHMENT_MIME_TYPES.join(', ')} (else 415 UNSUPPORTED_MEDIA_TYPE); larger than MAX_UPLOAD_BYTES (here ${maxBytes} bytes) is 413 FILE_TOO_LARGE.`,
    content: {
      'multipart/form-data': {
        schema: {
          type: 'object' as const,
          required: ['file'],
          properties: { file: { type: 'string' as const, format: 'binary', maxLength: maxBytes } },
        },
      },
    },
  }),
  fileQuery: t.Object({
    key: t.Optional(t.String({ maxLength: 1024, description: 'Object key' })),
    expires: t.Optional(t.String({ maxLength: 20, description: 'Expiry, Unix seconds' })),
    // A stored file name has no bound of its own; the link carrying it is bounded by the request head.
    name: t.Optional(t.String({ maxLength: LISTENER_HEADER_BYTES, description: 'File name for Content-Disposition' })),
    type: t.Optional(t.String({ maxLength: 255, description: 'Stored content type' })),
    sig: t.Optional(t.String({ maxLength: 128, description: 'HMAC-SHA256 over the other parameters' })),
  }),
}

export type AttachmentDto = typeof AttachmentModel.attachment.static
