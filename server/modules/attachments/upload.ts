import { ApiError, invalid } from '../../lib/errors'
import { ATTACHMENT_MIME_TYPES } from './model'
import type { Upload } from './service'

/** Room for multipart boundaries and part headers around the file itself. */
const MULTIPART_ALLOWANCE = 64 * 1024
const MAX_FILE_NAME = 255
const ALLOWED = new Set<string>(ATTACHMENT_MIME_TYPES.map((m) => m.toLowerCase()))
const CANONICAL = new Map<string, string>(ATTACHMENT_MIME_TYPES.map((m) => [m.toLowerCase(), m]))

const tooLarge = (max: number) => new ApiError(413, 'FILE_TOO_LARGE', `The file is larger than the limit of ${max} bytes`)
const missingFile = (message: string) => invalid(message, [{ field: 'file', message }])

/** Errors the stream once more than `limit` bytes went through, so an unbounded body is never read whole. */
function capped(limit: number, onOver: () => void) {
  let seen = 0
  return new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      seen += chunk.byteLength
      if (seen > limit) {
        onOver()
        controller.error(new Error('body over limit'))
        return
      }
      controller.enqueue(chunk)
    },
  })
}

/** The part's own media type without parameters; a part that names none is plain bytes. */
function mediaType(raw: string): string {
  const base = raw.split(';')[0].trim().toLowerCase()
  return base === '' ? 'application/octet-stream' : base
}

/**
 * Reads the multipart field `file` of an upload. A body declared or found larger than the limit (plus room
 * for the multipart framing) is refused before it is read; the file is held once, as the parsed part.
 */
export async function readUpload(request: Request, maxBytes: number): Promise<Upload> {
  const contentType = request.headers.get('content-type') ?? ''
  if (!/^multipart\/form-data\s*;.*boundary=/i.test(contentType))
    throw missingFile('Send the file as multipart/form-data in a field named file')
  const limit = maxBytes + MULTIPART_ALLOWANCE
  const declared = request.headers.get('content-length')
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > limit) throw tooLarge(maxBytes)

  let over = false
  let form: FormData
  try {
    const body = declared === null && request.body ? request.body.pipeThrough(capped(limit, () => (over = true))) : request.body
    form = await new Response(body, { headers: { 'content-type': contentType } }).formData()
  } catch {
    if (over) throw tooLarge(maxBytes)
    throw missingFile('Malformed multipart body')
  }

  const parts = form.getAll('file')
  if (parts.length === 0) throw missingFile('The multipart field file is required')
  if (parts.length > 1) throw missingFile('Send exactly one file per upload')
  const part = parts[0]
  if (typeof part === 'string') throw missingFile('The field file must be a file part (with a filename)')
  if (part.size > maxBytes) throw tooLarge(maxBytes)

  const type = mediaType(part.type)
  if (!ALLOWED.has(type))
    throw new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', `Files of type ${type} are not accepted`, {
      accepted: ATTACHMENT_MIME_TYPES,
    })

  const fileName = part.name.replace(/[\u0000-\u001f\u007f]/g, '').trim() || 'file'
  if (fileName.length > MAX_FILE_NAME) throw invalid(`The file name is longer than ${MAX_FILE_NAME} characters`, [{ field: 'file', message: 'file name too long' }])
  return { file: part, fileName, mimeType: CANONICAL.get(type)! }
}
