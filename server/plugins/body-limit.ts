import { Elysia } from 'elysia'
import type { ErrorCode } from '../lib/errors'
import { JsonDepthScanner } from '../lib/json-depth'
import { parseExactNumbers } from '../lib/money'

export interface BodyLimits {
  /** Bound on every JSON body. */
  maxBytes: number
  /**
   * Bound on a multipart body, which only a route taking files reads; that route refuses a file over
   * MAX_UPLOAD_BYTES itself with FILE_TOO_LARGE, so this is the backstop for its framing and for every other route.
   */
  maxMultipartBytes: number
  /** Deepest nesting of arrays and objects a JSON body may have. */
  maxDepth: number
  /** Most array items and object members a JSON body may hold, all levels together (a route may declare more). */
  maxElements: number
  /** Time from the request's arrival by which its body must have arrived whole. */
  timeoutMs: number
  /**
   * Bound on the request head (request line and headers). The listener must be started with a larger bound of its
   * own (`--max-http-header-size`), else it answers first, with a bare 431.
   */
  maxHeadBytes: number
}

/** The size of a request's head as it came over the wire, near enough: request line, each `name: value` and CRLFs. */
function headBytes(request: Request): number {
  let n = request.method.length + request.url.length + 12
  for (const [name, value] of request.headers) n += name.length + value.length + 4
  return n
}

const reply = (status: number, code: ErrorCode, error: string, extra: { details?: unknown; headers?: Record<string, string> } = {}) =>
  new Response(JSON.stringify(extra.details === undefined ? { error, code } : { error, code, details: extra.details }), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...extra.headers },
  })

/**
 * The most a multipart body may hold: twice the file limit and a megabyte of framing, far above what the upload
 * route accepts (it answers FILE_TOO_LARGE itself past MAX_UPLOAD_BYTES and its framing allowance).
 */
export const multipartBound = (maxUploadBytes: number) => 2 * maxUploadBytes + 1024 * 1024

/** Why a body was cut off; whatever the reader's caller made of the failure, this is the answer. */
class BodyRefused extends Error {
  constructor(readonly answer: () => Response) {
    super('request body refused')
  }
}

const refusals = new WeakMap<Request, BodyRefused>()
/** Each JSON body's text, as read once (see `bodyLimit`), for `sentJson`. */
const jsonTexts = new WeakMap<Request, () => Promise<string>>()

/**
 * A JSON body as it was sent, parsed afresh from the bytes read once: the value the route saw is the framework's
 * normalization of it to the route's schema, which keeps no trace of a field sent with the wrong type.
 * Undefined when the request had no JSON body.
 */
export async function sentJson(request: Request): Promise<unknown> {
  const text = jsonTexts.get(request)
  return text && parseExactNumbers(await text())
}
/** Requests whose route takes files: only their multipart body may be read. */
const fileRoutes = new WeakSet<Request>()

/**
 * Called by a route that takes files before it reads its body: a multipart body is read nowhere else, so no other
 * route's parser (the framework picks one from the Content-Type) ever spends time on one.
 */
export const takesFiles = (request: Request) => void fileRoutes.add(request)

/** The two kinds of body the service reads; anything else is refused before it is read. */
type BodyKind = 'json' | 'multipart'

/** How a JSON body's bytes become text: the `charset` its Content-Type names (UTF-8 when it names none). */
type Charset = 'utf-8' | 'iso-8859-1'

/**
 * The charsets a JSON body may declare, by their registered names and aliases (RFC 8259 JSON is UTF-8; ISO-8859-1 is
 * still what some older clients send). Anything else is refused 415 rather than decoded as something it is not.
 */
const CHARSETS: Record<string, Charset> = {
  'utf-8': 'utf-8',
  utf8: 'utf-8',
  'us-ascii': 'utf-8',
  'iso-8859-1': 'iso-8859-1',
  'iso_8859-1': 'iso-8859-1',
  latin1: 'iso-8859-1',
  l1: 'iso-8859-1',
  'iso-ir-100': 'iso-8859-1',
  cp819: 'iso-8859-1',
  ibm819: 'iso-8859-1',
}

/** The charset a JSON Content-Type declares: UTF-8 without one, null for one the service does not decode. */
export function charsetOf(contentType: string): Charset | null {
  const param = contentType
    .split(';')
    .slice(1)
    .map((p) => p.trim())
    .find((p) => /^charset\s*=/i.test(p))
  if (param === undefined) return 'utf-8'
  const name = param.slice(param.indexOf('=') + 1).trim().replace(/^"(.*)"$/, '$1').toLowerCase()
  return CHARSETS[name] ?? null
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * Bytes of a JSON body as text, in its charset. ISO-8859-1 maps each byte to the code point of the same number (not
 * the WHATWG decoder's `latin1`, which is windows-1252 and moves 0x80–0x9F); UTF-8 must be valid, since a replaced
 * byte would be stored as U+FFFD.
 */
function decode(bytes: Uint8Array, charset: Charset): string {
  if (charset === 'iso-8859-1') return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1')
  return strictUtf8.decode(bytes)
}

/**
 * Which kind of body a Content-Type announces. Exact, because the framework picks its parser from a few characters
 * of the header (`multipart/xxjson` reads as JSON): anything that is not plainly JSON or a form upload, a header sent
 * twice (joined with a comma) or missing, is `null`.
 */
export function bodyKind(contentType: string | null): BodyKind | null {
  if (contentType === null) return null
  if (/^application\/json(;[^,]*)?$/.test(contentType)) return 'json'
  if (/^multipart\/form-data(;[^,]*)?$/i.test(contentType)) return 'multipart'
  return null
}

const unsupported = () =>
  reply(415, 'UNSUPPORTED_MEDIA_TYPE', 'Send the body as application/json (multipart/form-data only where a route takes a file)', {
    headers: { connection: 'close' },
  })

const unsupportedCharset = () =>
  reply(415, 'UNSUPPORTED_MEDIA_TYPE', 'Send JSON as UTF-8 (charset=utf-8, or no charset) or ISO-8859-1 (charset=iso-8859-1)', {
    headers: { connection: 'close' },
  })

/** Bounds a route declares for its own body, tighter or looser than the service's (`bodyBounds`). */
export interface RouteBodyBounds {
  maxBytes?: number
  maxElements?: number
}

const routeBounds = new WeakMap<Request, RouteBodyBounds>()

/**
 * A parse hook declaring the route's own bounds on its JSON body, set before the body is read: a sign-in needs a few
 * hundred bytes (`{ parse: [bodyBounds({ maxBytes: 4096 })] }`), a batch of a thousand records more elements than any
 * single write. A declared Content-Length over the route's byte bound is refused at once.
 */
export const bodyBounds =
  (bounds: RouteBodyBounds) =>
  ({ request }: { request: Request }) => {
    routeBounds.set(request, bounds)
    const declared = request.headers.get('content-length')
    if (bounds.maxBytes !== undefined && declared !== null && Number(declared) > bounds.maxBytes) {
      const refusal = new BodyRefused(() => tooLarge(bounds.maxBytes!))
      refusals.set(request, refusal)
      throw refusal
    }
  }
/** Requests whose body is still partly unread; their connection is closed after the answer instead of drained. */
const unread = new WeakSet<Request>()

const refusedBy = (request: Request, error: unknown): BodyRefused | undefined =>
  refusals.get(request) ??
  (error instanceof BodyRefused ? error : (error as { cause?: unknown })?.cause instanceof BodyRefused ? ((error as { cause: BodyRefused }).cause) : undefined)

const TIMED_OUT = Symbol('timed out')

const tooLarge = (max: number) => reply(413, 'PAYLOAD_TOO_LARGE', `Request body larger than ${max} bytes`)

/**
 * The request's own body, passed through as it arrives: a multipart body is refused at its first read unless its
 * route takes files; each read races the deadline, bytes are counted against their kind's size bound (the route's
 * own, once it declared one), JSON is scanned for nesting depth and element count, and the first limit broken cancels
 * the source and records the refusal on the request, so nothing past that point is read or parsed.
 */
function guarded(request: Request, source: ReadableStream<Uint8Array>, deadline: number, limits: BodyLimits, kind: BodyKind) {
  const reader = source.getReader()
  const multipart = kind === 'multipart'
  const scanner = multipart ? undefined : new JsonDepthScanner(limits.maxDepth)
  let total = 0
  const refuse = async (refusal: BodyRefused, controller: ReadableStreamDefaultController<Uint8Array>) => {
    refusals.set(request, refusal)
    unread.add(request)
    controller.error(refusal)
    await reader.cancel().catch(() => {})
  }
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (multipart && !fileRoutes.has(request)) return refuse(new BodyRefused(unsupported), controller)
      let timer: ReturnType<typeof setTimeout> | undefined
      const timeout = new Promise<typeof TIMED_OUT>((done) => (timer = setTimeout(() => done(TIMED_OUT), Math.max(0, deadline - Date.now()))))
      let next: Awaited<ReturnType<typeof reader.read>> | typeof TIMED_OUT
      try {
        next = await Promise.race([reader.read(), timeout])
      } finally {
        clearTimeout(timer)
      }
      if (next === TIMED_OUT)
        return refuse(
          new BodyRefused(() =>
            reply(408, 'REQUEST_TIMEOUT', `The request body did not arrive within ${limits.timeoutMs / 1000} s`, { headers: { connection: 'close' } }),
          ),
          controller,
        )
      if (next.done) {
        unread.delete(request)
        return controller.close()
      }
      const chunk = next.value
      total += chunk.byteLength
      const own = routeBounds.get(request)
      const maxBytes = multipart ? limits.maxMultipartBytes : (own?.maxBytes ?? limits.maxBytes)
      if (total > maxBytes) return refuse(new BodyRefused(() => tooLarge(maxBytes)), controller)
      const maxElements = own?.maxElements ?? limits.maxElements
      if (scanner && !scanner.push(chunk, maxElements)) {
        if (scanner.broke === 'elements')
          return refuse(
            new BodyRefused(() =>
              reply(413, 'PAYLOAD_TOO_LARGE', `JSON body holds more than ${maxElements} elements (array items and object members)`, {
                details: [{ field: 'body', message: `more than ${maxElements} elements` }],
              }),
            ),
            controller,
          )
        const message = `nested deeper than ${limits.maxDepth} levels`
        return refuse(
          new BodyRefused(() => reply(400, 'VALIDATION_ERROR', `JSON body ${message}`, { details: [{ field: 'body', message }] })),
          controller,
        )
      }
      controller.enqueue(chunk)
    },
    cancel(reason) {
      return reader.cancel(reason)
    },
    // Pulled only when read: asking whether a request has a body (the framework does, before its gate) reads nothing.
  }, { highWaterMark: 0 })
}

async function readAll(stream: ReadableStream<Uint8Array> | null): Promise<Uint8Array<ArrayBuffer>> {
  if (!stream) return new Uint8Array(0)
  return new Uint8Array(await new Response(stream).arrayBuffer())
}

/**
 * Bounds every request head (431) and body before anything parses it, whatever its Content-Type. A body that is
 * neither JSON nor a form upload (see `bodyKind`) is refused 415 at once, unread, on every route: the service parses
 * nothing else, and the framework would otherwise pick a parser from a few characters of the header. A declared
 * Content-Length over its kind's bound is refused at once too; otherwise the body is read through `guarded` (size,
 * JSON nesting depth and elements, arrival deadline; a multipart body only by a route that `takesFiles`; a JSON
 * body's charset honoured when it is UTF-8 or ISO-8859-1 and refused 415 before it is read otherwise), installed on
 * the request itself so the framework's parsers and the handlers that read the body stay unchanged. Nothing here reads a body:
 * the route policy decides who may call before the parser asks for it. Registered before the errors plugin, so its
 * answers win over whatever error the interrupted parser reported.
 */
export function bodyLimit(limits: BodyLimits) {
  return new Elysia({ name: 'body-limit' })
    // A caller refused before its body was read (401, 403, 415, 429…) would otherwise keep its socket busy while the
    // listener drains a body that may trickle for as long as the sender likes.
    .wrap(((fetch: (...args: unknown[]) => Response | Promise<Response>, request: Request) =>
      (...args: unknown[]) => {
        const close = (response: Response) => {
          if (unread.has(request) && !response.headers.has('connection')) response.headers.set('connection', 'close')
          return response
        }
        const out = fetch(...args)
        return out instanceof Promise ? out.then(close) : close(out)
      }) as never)
    .onRequest(({ request }) => {
      if (headBytes(request) > limits.maxHeadBytes)
        return reply(431, 'HEADERS_TOO_LARGE', `The URL and headers of a request may hold at most ${limits.maxHeadBytes} bytes`, {
          headers: { connection: 'close' },
        })
      // The listener gives a request without a body (none sent, or Content-Length: 0) a null body.
      if (!request.body) return
      // Nothing reads the body of a GET: its connection is closed after the answer rather than drained.
      if (request.method === 'GET' || request.method === 'HEAD') return void unread.add(request)
      const arrived = Date.now()
      const contentType = request.headers.get('content-type')
      const kind = bodyKind(contentType)
      if (kind === null) return unsupported()
      const charset = kind === 'json' ? charsetOf(contentType!) : 'utf-8'
      if (charset === null) return unsupportedCharset()
      const max = kind === 'multipart' ? limits.maxMultipartBytes : limits.maxBytes
      const declared = request.headers.get('content-length')
      if (declared !== null && Number(declared) > max) return tooLarge(max)
      const source = request.body
      unread.add(request)
      let stream: ReadableStream<Uint8Array> | undefined
      const body = () => (stream ??= guarded(request, source, arrived + limits.timeoutMs, limits, kind))
      // Read once and kept: a request answered again from the start (server/access/policy.ts) reads it a second time.
      let read: Promise<Uint8Array<ArrayBuffer>> | undefined
      const bytes = () => (read ??= readAll(body()))
      const text = async () => {
        const raw = await bytes()
        try {
          return decode(raw, charset)
        } catch {
          const refusal = new BodyRefused(() =>
            reply(400, 'VALIDATION_ERROR', 'The JSON body is not valid UTF-8', { details: [{ field: 'body', message: 'not valid UTF-8' }] }),
          )
          refusals.set(request, refusal)
          throw refusal
        }
      }
      if (kind === 'json') jsonTexts.set(request, text)
      Object.defineProperty(request, 'body', { get: body, configurable: true })
      Object.assign(request, {
        arrayBuffer: async () => (await bytes()).buffer,
        bytes,
        text,
        blob: async () => new Blob([await bytes()], { type: contentType ?? '' }),
        json: async () => parseExactNumbers(await text()),
        formData: async () => new Response(await bytes(), { headers: { 'content-type': contentType ?? '' } }).formData(),
      })
    })
    .onError({ as: 'global' }, ({ request, error }) => refusedBy(request, error)?.answer())
    .onAfterHandle({ as: 'global' }, ({ request }) => refusals.get(request)?.answer())
}
