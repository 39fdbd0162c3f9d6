import { ApiError, invalid } from '../../lib/errors'
import { takesFiles } from '../../plugins/body-limit'
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
 * The Content-Type header of each part named `field`, in order (null when a part sends none). Bun's
 * multipart parser types a file part by its file name's extension and drops the part's own header, while
 * the contract types an upload by that header, so the part headers are read from the raw body here.
 */
function declaredPartTypes(body: Buffer, boundary: string, field: string): (string | null)[] {
  const opening = Buffer.from(`--${boundary}`)
  const delimiter = Buffer.from(`\r\n--${boundary}`)
  const types: (string | null)[] = []
  let at = body.indexOf(opening)
  let next = at === -1 ? -1 : at + opening.length
  while (next !== -1) {
    if (body[next] === 0x2d && body[next + 1] === 0x2d) break
    const headersEnd = body.indexOf('\r\n\r\n', next)
    if (headersEnd === -1) break
    const headers = body.toString('utf8', next, headersEnd)
    const disposition = /^content-disposition:(.*)$/im.exec(headers)?.[1] ?? ''
    const name = /;\s*name\s*=\s*(?:"([^"]*)"|([^;\s]+))/i.exec(disposition)
    if (name && (name[1] ?? name[2]) === field) types.push(/^content-type:(.*)$/im.exec(headers)?.[1].trim() ?? null)
    at = body.indexOf(delimiter, headersEnd + 4)
    next = at === -1 ? -1 : at + delimiter.length
  }
  return types
}

/**
 * Reads the multipart field `file` of an upload. A body declared or found larger than the limit (plus room
 * for the multipart framing) is refused before it is read; the body is read once into memory, then parsed.
 */
export async function readUpload(request: Request, maxBytes: number): Promise<Upload> {
  takesFiles(request)
  const contentType = request.headers.get('content-type') ?? ''
  if (!/^multipart\/form-data\s*;.*boundary=/i.test(contentType))
    throw missingFile('Send the file as multipart/form-data in a field named file')
  const limit = maxBytes + MULTIPART_ALLOWANCE
  const declared = request.headers.get('content-length')
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > limit) throw tooLarge(maxBytes)

  const boundary = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType)
  let over = false
  let form: FormData
  let declaredType: string | null | undefined
  try {
    const body = declared === null && request.body ? request.body.pipeThrough(capped(limit, () => (over = true))) : request.body
    const raw = Buffer.from(await new Response(body).arrayBuffer())
    form = await new Response(raw, { headers: { 'content-type': contentType } }).formData()
    declaredType = boundary ? declaredPartTypes(raw, boundary[1] ?? boundary[2], 'file')[0] : undefined
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

  const type = mediaType(declaredType === undefined ? part.type : (declaredType ?? ''))
  if (!ALLOWED.has(type))
    throw new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', `Files of type ${type} are not accepted`, {
      accepted: ATTACHMENT_MIME_TYPES,
    })

  const fileName = part.name.replace(/[\u0000-\u001f\u007f]/g, '').trim() || 'file'
  if (fileName.length > MAX_FILE_NAME) throw invalid(`The file name is longer than ${MAX_FILE_NAME} characters`, [{ field: 'file', message: 'file name too long' }])
  return { file: part, fileName, mimeType: CANONICAL.get(type)! }
}
