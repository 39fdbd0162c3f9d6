import { and, asc, eq, isNull, sql } from 'drizzle-orm'
import { employees, operationAttachments } from '../../../db/schema'
import type { AppContext } from '../../context'
import type { Caller } from '../../access/caller'
import type { Executor, Tx } from '../../../db/client'
import { newObjectKey, type BlobStore } from '../../infra/storage'
import { ApiError, notFound } from '../../lib/errors'
import { announce } from '../../lib/events'
import { createOnce, tenantTx, write } from '../../lib/write'
import { assertOperationVisible } from '../../lib/scope'
import { pgArray } from '../../lib/arrays'
import { LINK_LIFETIME_SECONDS, type AttachmentDto } from './model'

export type { AttachmentDto } from './model'

/** A file that passed the upload checks (size, type, name), still only in memory. */
export interface Upload {
  file: Blob
  fileName: string
  mimeType: string
}

interface AttachmentRow {
  id: number
  operationId: number
  objectKey: string
  fileName: string
  mimeType: string | null
  sizeBytes: number | null
  createdAt: Date
  uploadedByEmail: string | null
  actorId: number | null
  actorName: string | null
}

/** The attachment as listed, without its download link: what events carry. */
const recordOf = (row: AttachmentRow) => ({
  id: row.id,
  file_name: row.fileName,
  mime_type: row.mimeType,
  size_bytes: row.sizeBytes,
  created_at: row.createdAt.toISOString(),
  uploaded_by: {
    id: row.actorId,
    name: row.actorName,
    email: row.uploadedByEmail,
  },
})

async function attachmentDto(store: BlobStore, row: AttachmentRow): Promise<AttachmentDto> {
  const contentType = row.mimeType ?? 'application/octet-stream'
  return {
    ...recordOf(row),
    signed_url: await store.signedUrl(row.objectKey, { fileName: row.fileName, contentType, expiresInSeconds: LINK_LIFETIME_SECONDS }),
  }
}

/** Attachment events name the operation in `data.operation_id`: the attachment record itself does not. */
const announceAttachment = (tx: Tx, caller: Caller, type: string, operationId: number, row: AttachmentRow) =>
  announce(tx, {
    type,
    companyId: caller.companyId,
    object: { kind: 'attachment', id: row.id },
    data: { operation_id: operationId },
    render: async () => recordOf(row),
  })

/**
 * Live attachments of the given operations with their uploader resolved by email against the company's
 * current employees. Callers must already have checked that the operations are visible to them.
 */
async function attachmentRows(db: Executor, companyId: number, operationIds: number[]): Promise<AttachmentRow[]> {
  if (operationIds.length === 0) return []
  const a = operationAttachments
  return db
    .select({
      id: a.id,
      operationId: a.operationId,
      objectKey: a.objectKey,
      fileName: a.fileName,
      mimeType: a.mimeType,
      sizeBytes: a.sizeBytes,
      createdAt: a.createdAt,
      uploadedByEmail: a.uploadedByEmail,
      actorId: employees.id,
      actorName: employees.name,
    })
    .from(a)
    .leftJoin(
      employees,
      and(
        eq(employees.companyId, a.companyId),
        sql`lower(${employees.email}) = lower(${a.uploadedByEmail})`,
        isNull(employees.deletedAt),
      ),
    )
    .where(and(eq(a.companyId, companyId), sql`${a.operationId} = any(${pgArray(operationIds, 'int')})`, isNull(a.deletedAt)))
    .orderBy(asc(a.id))
}

export async function listAttachmentDtos(db: Executor, store: BlobStore, companyId: number, operationId: number): Promise<AttachmentDto[]> {
  const rows = await attachmentRows(db, companyId, [operationId])
  return Promise.all(rows.map((r) => attachmentDto(store, r)))
}

export async function attachmentDtosByOperation(
  db: Executor,
  store: BlobStore,
  companyId: number,
  operationIds: number[],
): Promise<Map<number, AttachmentDto[]>> {
  const rows = await attachmentRows(db, companyId, operationIds)
  const byOperation = new Map<number, AttachmentDto[]>(operationIds.map((id) => [id, []]))
  for (const row of rows) byOperation.get(row.operationId)!.push(await attachmentDto(store, row))
  return byOperation
}

export async function listAttachments(db: Executor, store: BlobStore, caller: Caller, operationId: number) {
  await assertOperationVisible(db, caller, operationId)
  return { attachments: await listAttachmentDtos(db, store, caller.companyId, operationId) }
}

async function sha256Of(file: Blob): Promise<string> {
  const hasher = new Bun.CryptoHasher('sha256')
  for await (const chunk of file.stream()) hasher.update(chunk)
  return hasher.digest('hex')
}

/** Any constant: the first key of the advisory lock a company's uploads take turns under to count its storage. */
const STORAGE_LOCK = 727_418

/** Bytes of the company's live attachments (the partial index `operation_attachments_storage` alone serves it). */
async function storageInUse(tx: Executor, companyId: number): Promise<number> {
  const [row] = await tx
    .select({ used: sql<string>`coalesce(sum(${operationAttachments.sizeBytes}), 0)` })
    .from(operationAttachments)
    .where(and(eq(operationAttachments.companyId, companyId), isNull(operationAttachments.deletedAt)))
  return Number(row.used)
}

function checkQuota(used: number, size: number, quota: number) {
  if (used + size > quota)
    throw new ApiError(
      413,
      'QUOTA_EXCEEDED',
      `This file (${size} bytes) would take the company's attachments to ${used + size} bytes, past its storage quota of ${quota} bytes (STORAGE_QUOTA_BYTES_PER_COMPANY); delete attachments it no longer needs first`,
      { used_bytes: used, file_bytes: size, quota_bytes: quota },
    )
}

/**
 * Stores the object first, then records it in one transaction; when the transaction fails (or an
 * Idempotency-Key replays an earlier upload) the object just stored is removed, so a row never lacks its
 * object and no object outlives a failed upload.
 *
 * The company's storage quota (`quota` bytes, 0 for none) is checked twice: before the bytes are stored, so a
 * company at its quota writes nothing (skipped when an Idempotency-Key may replay an upload already counted), and in
 * the transaction that records the file, under a per-company lock, so uploads racing each other are counted one
 * after the other and never pass the quota together.
 */
export async function uploadAttachment(
  app: AppContext,
  caller: Caller,
  operationId: number,
  upload: Upload,
  idempotencyKey: string | undefined,
  set: { status?: number | string },
  quota: number,
): Promise<AttachmentDto> {
  const size = upload.file.size
  if (quota > 0 && idempotencyKey === undefined) checkQuota(await tenantTx(app, caller, 'read', (tx) => storageInUse(tx, caller.companyId)), size, quota)
  const fingerprint =
    idempotencyKey === undefined ? null : { sha256: await sha256Of(upload.file), name: upload.fileName, type: upload.mimeType }
  const objectKey = newObjectKey(caller.companyId)
  await app.store.put(objectKey, upload.file, { fileName: upload.fileName, contentType: upload.mimeType })
  let recorded = false
  const discard = () =>
    app.store.delete(objectKey).catch((e) =>
      app.log({ level: 'error', msg: 'orphan attachment object not removed', key: objectKey, error: String(e) }),
    )
  try {
    const dto = await createOnce(
      app,
      caller,
      { key: idempotencyKey, method: 'POST', path: `/api/operations/${operationId}/attachments`, fingerprint },
      set,
      async (tx) => {
        await assertOperationVisible(tx, caller, operationId)
        if (quota > 0) {
          await tx.execute(sql`select pg_advisory_xact_lock(${STORAGE_LOCK}, ${caller.companyId})`)
          checkQuota(await storageInUse(tx, caller.companyId), size, quota)
        }
        const [row] = await tx
          .insert(operationAttachments)
          .values({
            companyId: caller.companyId,
            operationId,
            objectKey,
            fileName: upload.fileName,
            mimeType: upload.mimeType,
            sizeBytes: size,
            uploadedByEmail: caller.employee?.email ?? null,
            uploadedById: caller.employee?.id ?? null,
          })
          .returning()
        recorded = true
        const full = { ...row, actorId: caller.employee?.id ?? null, actorName: caller.employee?.name ?? null }
        await announceAttachment(tx, caller, 'attachment.created', operationId, full)
        return attachmentDto(app.store, full)
      },
    )
    if (!recorded) await discard()
    return dto
  } catch (e) {
    await discard()
    throw e
  }
}

/** The row goes in a transaction; the object after it commits, so a failed delete never leaves a row without bytes. */
export async function deleteAttachment(app: AppContext, caller: Caller, operationId: number, attachmentId: number) {
  const objectKey = await write(app, caller, async (tx) => {
    await assertOperationVisible(tx, caller, operationId)
    const a = operationAttachments
    const last = (await attachmentRows(tx, caller.companyId, [operationId])).find((r) => r.id === attachmentId)
    const [row] = await tx
      .update(a)
      .set({ deletedAt: new Date() })
      .where(and(eq(a.id, attachmentId), eq(a.companyId, caller.companyId), eq(a.operationId, operationId), isNull(a.deletedAt)))
      .returning({ objectKey: a.objectKey })
    if (!row || !last) throw notFound('Attachment')
    await announceAttachment(tx, caller, 'attachment.deleted', operationId, last)
    return row.objectKey
  })
  try {
    await app.store.delete(objectKey)
  } catch (e) {
    app.log({ level: 'error', msg: 'deleted attachment object not removed', key: objectKey, error: String(e) })
  }
  return { deleted: true as const }
}
