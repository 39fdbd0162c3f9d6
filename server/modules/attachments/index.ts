import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { auth, requirePermission } from '../../access/caller'
import { contentDisposition, isDiskStore } from '../../infra/storage'
import { forbidden, notFound } from '../../lib/errors'
import { errors, IdParams } from '../../lib/models'
import { assertOperationVisible } from '../../lib/scope'
import { AttachmentModel } from './model'
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
      response: { 200: t.File({ description: 'The exact bytes, with the stored content type and a Content-Disposition naming the file' }), ...errors(403, 404) },
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
        .use(auth(app))
        .get(
          '/operations/:id/attachments',
          ({ caller, params }) => {
            requirePermission(caller, 'operations.view')
            return listAttachments(app, caller, params.id)
          },
          {
            params: IdParams,
            response: { 200: t.Object({ attachments: t.Array(AttachmentModel.attachment) }), ...errors(400, 401, 403, 404) },
            detail: { tags, summary: 'List the attachments of an operation, each with a fresh download link valid 3600 s' },
          },
        )
        .post(
          '/operations/:id/attachments',
          async ({ caller, params, request, headers, set }) => {
            requirePermission(caller, 'attachments.edit')
            await assertOperationVisible(app.db, caller, params.id)
            const upload = await readUpload(request, app.config.maxUploadBytes)
            return uploadAttachment(app, caller, params.id, upload, headers['idempotency-key'], set)
          },
          {
            params: IdParams,
            parse: 'none',
            response: { 201: AttachmentModel.attachment, ...errors(400, 401, 403, 404, 409, 413, 415) },
            detail: {
              tags,
              summary: 'Attach a file to an operation (multipart field `file`)',
              description:
                'Idempotency-Key: the same key with the same file bytes, name and type within 24 h answers the first upload again.',
              requestBody: AttachmentModel.uploadBody,
            },
          },
        )
        .delete(
          '/operations/:id/attachments/:attachmentId',
          ({ caller, params }) => {
            requirePermission(caller, 'attachments.edit')
            return deleteAttachment(app, caller, params.id, params.attachmentId)
          },
          {
            params: AttachmentModel.params,
            response: { 200: t.Object({ deleted: t.Literal(true) }), ...errors(400, 401, 403, 404) },
            detail: { tags, summary: 'Delete an attachment and its stored file' },
          },
        ),
    )
