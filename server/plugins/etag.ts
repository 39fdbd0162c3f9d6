import { Elysia } from 'elysia'
import { parseExactJson } from '../../db/json'
import { jsonText, wantsMoneyStrings } from '../lib/money'
import { appendVary } from './cors'

const JSON_TYPE = /^application\/(?:[\w.+-]*\+)?json\b/i

/** A strong validator: the digest of the exact bytes sent, so any change to the answer (a balance included) changes it. */
const tagOf = (body: string) => `"${new Bun.CryptoHasher('sha1').update(body).digest('base64url')}"`

function matches(header: string | null, tag: string): boolean {
  if (header === null) return false
  return header.split(',').some((candidate) => {
    const c = candidate.trim()
    return c === '*' || c === tag || c === `W/${tag}`
  })
}

function withSet(headers: HeadersInit | undefined, set: Record<string, unknown>) {
  const out = new Headers(headers)
  for (const [name, value] of Object.entries(set)) if (typeof value === 'string') out.set(name, value)
  return out
}

/**
 * A 304. To a HEAD it carries the 200's body: the framework answers a HEAD by running the GET and measuring the body
 * it gave into `Content-Length` (sending none), and a 304 may state only the 200's length (RFC 9110 §8.6), never 0.
 */
function notModified(headers: HeadersInit, set: Record<string, unknown>, head: { content: BodyInit | null } | undefined) {
  const out = withSet(headers, set)
  out.delete('content-type')
  out.delete('content-length')
  return new Response(head?.content ?? null, { status: 304, headers: out })
}

/** What the framework would send as JSON: a plain object or array, not a stream, a file or a generator. */
function jsonValue(value: unknown): value is object {
  if (value === null || typeof value !== 'object') return false
  if (value instanceof Response || value instanceof Blob || value instanceof ReadableStream || ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return false
  return !(Symbol.asyncIterator in value) && !(Symbol.iterator in value && !Array.isArray(value))
}

/** Request headers that carry a credential: an answer to one of them is personal. */
const CREDENTIALS = ['x-api-key', 'authorization', 'cookie']

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' }

/**
 * An answer other than a GET's 200 asked for with money as strings: written here instead of by the framework,
 * which knows only plain JSON. A JSON body already written (a stored list) is read back exactly and rewritten.
 */
async function moneyAsStrings(responseValue: unknown, set: { status?: number | string; headers: Record<string, unknown> }) {
  const status = typeof set.status === 'number' ? set.status : 200
  if (jsonValue(responseValue)) return new Response(jsonText(responseValue, true), { status, headers: withSet(JSON_HEADERS, set.headers) })
  if (responseValue instanceof Response && JSON_TYPE.test(responseValue.headers.get('content-type') ?? '') && !responseValue.headers.has('etag')) {
    const text = await responseValue.text()
    return new Response(text ? jsonText(parseExactJson(text), true) : text, { status: responseValue.status, headers: withSet(responseValue.headers, set.headers) })
  }
}

/**
 * `ETag` on every 200 JSON answer of a GET or HEAD (whose body the framework measures and drops), and 304 with no
 * body when `If-None-Match` holds it: the answer is serialised once here (instead of by the framework) and its
 * digest compared, so a poller that sends the tag back gets 304 exactly while nothing in the answer changed. Streams, files and downloads pass through untouched.
 * Money is written as the request asked (`Accept: application/json; money=string`, server/lib/money.ts), here for
 * every JSON answer, so the tag is that of the bytes this caller gets.
 */
export const etag = () =>
  new Elysia({ name: 'etag' }).mapResponse({ as: 'global' }, async ({ request, responseValue, set }) => {
    const strings = wantsMoneyStrings(request.headers.get('accept'))
    const head = request.method === 'HEAD'
    if ((request.method !== 'GET' && !head) || (set.status !== undefined && set.status !== 200)) return strings ? moneyAsStrings(responseValue, set) : undefined
    let body: string
    let headers: Headers | undefined
    if (responseValue instanceof Response) {
      if (responseValue.status !== 200 || !JSON_TYPE.test(responseValue.headers.get('content-type') ?? '')) return
      const own = responseValue.headers.get('etag')
      if (own) {
        // Tagged by its route (a large answer streamed as the database writes it): compared, never read here.
        if (!matches(request.headers.get('if-none-match'), own)) return
        if (head) return notModified(responseValue.headers, set.headers, { content: responseValue.body })
        await responseValue.body?.cancel()
        return notModified(responseValue.headers, set.headers, undefined)
      }
      body = await responseValue.text()
      if (strings && body) body = jsonText(parseExactJson(body), true)
      headers = responseValue.headers
    } else if (jsonValue(responseValue)) {
      body = jsonText(responseValue, strings)
    } else return
    const tag = tagOf(body)
    const out = withSet(headers, set.headers)
    out.set('etag', tag)
    // An answer for one credential is nobody else's: only the caller's own cache keeps it, and asks before reuse.
    const personal = CREDENTIALS.some((name) => request.headers.has(name))
    if (personal) out.set('cache-control', 'private, no-cache')
    out.set('vary', appendVary(out.get('vary'), 'Accept', ...(personal ? ['X-Api-Key', 'Authorization', 'Cookie'] : [])))
    if (matches(request.headers.get('if-none-match'), tag)) return notModified(out, {}, head ? { content: body } : undefined)
    if (!out.has('content-type')) out.set('content-type', 'application/json; charset=utf-8')
    return new Response(body, { status: 200, headers: out })
  })
