import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { routePolicy } from '../../access/policy'
import { contentDisposition, isDiskStore } from '../../infra/storage'
import { forbidden, notFound } from '../../lib/errors'
import { errors, IdempotencyHeaders, IdParams } from '../../lib/models'
import { assertOperationVisible } from '../../lib/scope'
import { tenantTx } from '../../lib/write'
import { ATTACHMENT_MIME_TYPES, AttachmentModel } from './model'
import { deleteAttachment, listAttachments, uploadAttachment } from './service'
import { readUpload } from './upload'

const tags = ['Attachments']

/**
 * Downloads behind the disk store's signed links. They carry no API key: the HMAC over key, expiry, name
 * and type is the credential, so anything altered or expired is 403.
 */
const downloads = (app: AppContext) =>
  new Elysia().get(
    '/files',
    async ({ query }) => {
      const store = app.store
      if (!isDiskStore(store)) throw notFound('File')
      const claims = store.verify(query)
      if (!claims) throw forbidden('This download link is invalid or has expired')
      const file = Bun.file(store.pathOf(claims.key))
      if (!(await file.exists())) throw notFound('File')
      return new Response(file, {
        headers: {
          'content-type': claims.contentType,
          'content-disposition': contentDisposition(claims.fileName),
          'x-content-type-options': 'nosniff',
          'content-security-policy': "default-src 'none'; sandbox",
          'cache-control': 'private, no-store',
        },
      })
    },
    {
      query: AttachmentModel.fileQuery,
      response: {
        200: t.File({
          description: 'The exact bytes, with the stored content type and a Content-Disposition naming the file',
          'x-media-types': ATTACHMENT_MIME_TYPES,
        }),
        ...errors(403, 404),
      },
      detail: {
        tags,
        security: [],
        summary: 'Download an attachment through a signed link (embedded disk store)',
        description: 'Links come from `signed_url`; they need no API key and stop working after 3600 s (403 FORBIDDEN), as does any altered link.',
      },
    },
  )

export const attachmentsModule = (app: AppContext) =>
  new Elysia()
    .use(downloads(app))
    .group('/api', (api) =>
      api
        .use(routePolicy(app))
        .get('/operations/:id/attachments', ({ run, params }) => run((tx, caller) => listAttachments(tx, app.store, caller, params.id)), {
          policy: { permission: 'operations.view' },
          params: IdParams,
          response: { 200: t.Object({ attachments: t.Array(AttachmentModel.attachment) }) },
          detail: { tags, summary: 'List the attachments of an operation, each with a fresh download link valid 3600 s' },
        })
        .post(
          '/operations/:id/attachments',
          async ({ caller, params, request, headers, set }) => {
            // 404 before the upload is read; the write that records it checks again.
            await tenantTx(app, caller, 'read', (tx) => assertOperationVisible(tx, caller, params.id))
            const upload = await readUpload(request, app.config.maxUploadBytes)
            return uploadAttachment(app, caller, params.id, upload, headers['idempotency-key'], set, app.config.storageQuotaBytesPerCompany)
          },
          {
            // A streamed multipart body: its fingerprint is known only once read, so the upload claims its own key.
            policy: { permission: 'attachments.edit', tx: 'none' },
            params: IdParams,
            parse: 'none',
            headers: IdempotencyHeaders,
            response: { 201: AttachmentModel.attachment, ...errors(409, 413, 415) },
            detail: {
              tags,
              summary: 'Attach a file to an operation (multipart field `file`)',
              description: [
                'Accepts `Idempotency-Key` (1–255 characters): the same key with the same file bytes, name and type within 24 h answers the first upload again; different bytes under the same key are 409 `IDEMPOTENCY_KEY_REUSED`.',
                'A company keeps at most `STORAGE_QUOTA_BYTES_PER_COMPANY` bytes of attachments (default 10 GiB): a file that would pass it is 413 `QUOTA_EXCEEDED`, with `details: { used_bytes, file_bytes, quota_bytes }`, and nothing is stored. Deleted attachments give their bytes back.',
              ].join(' '),
              requestBody: AttachmentModel.uploadBody(app.config.maxUploadBytes),
            },
          },
        )
        .delete(
          '/operations/:id/attachments/:attachmentId',
          ({ caller, params }) => deleteAttachment(app, caller, params.id, params.attachmentId),
          {
            // The stored object goes only after the row's delete commits, so this route runs its own write.
            policy: { permission: 'attachments.edit', tx: 'none' },
            params: AttachmentModel.params,
            response: { 200: t.Object({ deleted: t.Literal(true) }) },
            detail: { tags, summary: 'Delete an attachment and its stored file' },
          },
        ),
    )
