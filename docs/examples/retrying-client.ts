/**
 * A client that keeps going under load, typed from the service's own OpenAPI document:
 *
 *   npx openapi-typescript https://fos.example/openapi.json -o api.d.ts
 *
 * One openapi-fetch middleware does three things for every call:
 * - on 429 RATE_LIMITED or 503 SERVICE_UNAVAILABLE it waits the `Retry-After` seconds and sends the very same
 *   request again, so a write carries the same `Idempotency-Key` and can never be applied twice;
 * - it gives every creating POST an `Idempotency-Key` when the caller did not;
 * - it keeps each GET answer that has an `ETag` and asks with `If-None-Match` next time, so an unchanged answer
 *   costs a bodiless 304 and is served from what it kept.
 * Then one generator per pagination shape of the API walks a whole list.
 */
import createClient, { type Middleware } from 'openapi-fetch'
import type { components, paths } from './api'

type Operation = components['schemas']['Operation']

export interface RetryOptions {
  /** Attempts per request, the first included. */
  maxAttempts?: number
  /** How to wait; a test can make it count instead. */
  sleep?: (ms: number) => Promise<void>
}

/** Seconds, or an HTTP date, as `Retry-After` carries them; one second when absent or unreadable. */
function retryAfterMs(header: string | null): number {
  if (header === null) return 1000
  if (/^\d+$/.test(header)) return Number(header) * 1000
  const at = Date.parse(header)
  return Number.isNaN(at) ? 1000 : Math.max(0, at - Date.now())
}

export function resilient(opts: RetryOptions = {}): Middleware {
  const maxAttempts = opts.maxAttempts ?? 5
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)))
  // A copy of each request as first sent (body included), to send again; by the middleware's request id.
  const sent = new Map<string, Request>()
  const kept = new Map<string, { etag: string; body: string; headers: Headers }>()
  return {
    onRequest({ request, id }) {
      const headers = new Headers(request.headers)
      if (request.method === 'POST' && !headers.has('Idempotency-Key')) headers.set('Idempotency-Key', crypto.randomUUID())
      const known = request.method === 'GET' ? kept.get(request.url) : undefined
      if (known) headers.set('If-None-Match', known.etag)
      const ready = new Request(request, { headers })
      sent.set(id, ready.clone())
      return ready
    },
    async onResponse({ request, response, id, options }) {
      let answer = response
      const original = sent.get(id)
      sent.delete(id)
      for (let attempt = 1; original && (answer.status === 429 || answer.status === 503) && attempt < maxAttempts; attempt++) {
        await answer.body?.cancel()
        await sleep(retryAfterMs(answer.headers.get('retry-after')))
        answer = await options.fetch(original.clone())
      }
      if (request.method !== 'GET') return answer
      const known = kept.get(request.url)
      if (answer.status === 304 && known) return new Response(known.body, { status: 200, headers: known.headers })
      const etag = answer.headers.get('etag')
      if (answer.status === 200 && etag) kept.set(request.url, { etag, body: await answer.clone().text(), headers: new Headers(answer.headers) })
      return answer
    },
  }
}

export function fosClient(baseUrl: string, apiKey: string, fetch: (request: Request) => Promise<Response> = globalThis.fetch, retry?: RetryOptions) {
  const api = createClient<paths>({ baseUrl, headers: { 'x-api-key': apiKey }, fetch })
  api.use(resilient(retry))
  return api
}

export type FosClient = ReturnType<typeof fosClient>

const failure = (what: string, error: { code: string; error: string } | undefined) => new Error(`${what}: ${error?.code} ${error?.error}`)

/** Shape 1, `{ data, pagination: { page, pageSize, total, totalPages } }`: page after page up to totalPages. */
export async function* allOperations(api: FosClient, status?: 'pending' | 'completed' | 'cancelled'): AsyncGenerator<Operation> {
  for (let page = 1; ; page++) {
    const { data, error } = await api.GET('/api/operations', { params: { query: { page, pageSize: 200, ...(status && { status }) } } })
    if (!data) throw failure('operations', error)
    yield* data.data
    if (page >= data.pagination.totalPages) return
  }
}

/** Shape 2, the clients list's `{ data, count }`: pages until `count` clients have come. */
export async function* allClients(api: FosClient, pageSize = 200) {
  let seen = 0
  for (let page = 1; ; page++) {
    const { data, error } = await api.GET('/api/clients', { params: { query: { page, pageSize } } })
    if (!data) throw failure('clients', error)
    yield* data.data
    seen += data.data.length
    if (seen >= data.count || data.data.length === 0) return
  }
}

/**
 * Shape 3, the event feed's `{ data, next_cursor }`: always pass the cursor back; an empty page means caught up for
 * now. Keep the last cursor to resume later: every event comes exactly once.
 */
export async function* eventsSince(api: FosClient, after?: string) {
  let cursor = after
  for (;;) {
    const { data, error } = await api.GET('/api/events', { params: { query: { limit: 500, ...(cursor && { after: cursor }) } } })
    if (!data) throw failure('events', error)
    if (data.data.length === 0) return cursor
    yield* data.data
    cursor = data.next_cursor
  }
}
