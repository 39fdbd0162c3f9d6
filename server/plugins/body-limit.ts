import { Elysia } from 'elysia'
import type { ErrorCode } from '../lib/errors'

/** Raised by a bounded body reader once the body passes the limit; answered 413 whatever wrapped it. */
class PayloadTooLarge extends Error {}

const CODE: ErrorCode = 'PAYLOAD_TOO_LARGE'

const tooLarge = (max: number) =>
  new Response(JSON.stringify({ error: `Request body larger than ${max} bytes`, code: CODE }), {
    status: 413,
    headers: { 'content-type': 'application/json; charset=utf-8' },
  })

async function readAtMost(request: Request, max: number): Promise<Uint8Array> {
  const stream = request.body
  if (!stream) return new Uint8Array(0)
  const reader = stream.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > max) {
      await reader.cancel()
      throw new PayloadTooLarge()
    }
    chunks.push(value)
  }
  const bytes = new Uint8Array(total)
  let at = 0
  for (const c of chunks) {
    bytes.set(c, at)
    at += c.byteLength
  }
  return bytes
}

/**
 * Caps every non-multipart request body (JSON above all) at `max` bytes, before anything parses it:
 * a declared Content-Length over the cap is refused at once; a body without one (chunked) is counted as it
 * is read, through readers installed on the request itself so the parsers and handlers that read it stay
 * unchanged. Uploads are multipart and keep their own MAX_UPLOAD_BYTES limit. Registered before the errors
 * plugin, so its 413 wins over the 400 the body parser would report.
 */
export function bodyLimit(max: number) {
  return new Elysia({ name: 'body-limit' })
    .onRequest(({ request }) => {
      if (request.method === 'GET' || request.method === 'HEAD') return
      if (/^multipart\//i.test(request.headers.get('content-type') ?? '')) return
      const declared = request.headers.get('content-length')
      if (declared !== null) {
        if (Number(declared) > max) return tooLarge(max)
        return
      }
      const text = async () => new TextDecoder().decode(await readAtMost(request, max))
      Object.assign(request, {
        arrayBuffer: async () => (await readAtMost(request, max)).buffer,
        bytes: () => readAtMost(request, max),
        text,
        json: async () => JSON.parse(await text()),
      })
    })
    .onError({ as: 'global' }, ({ error }) => {
      if (error instanceof PayloadTooLarge || (error as { cause?: unknown })?.cause instanceof PayloadTooLarge) return tooLarge(max)
    })
}
