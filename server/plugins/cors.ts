import { Elysia } from 'elysia'

/** What a browser page may send and read across origins: our credentials and conditional reads, and the budget. */
const ALLOW_HEADERS = 'Content-Type, X-Api-Key, Authorization, Idempotency-Key, If-None-Match, Accept'
const EXPOSE_HEADERS =
  'ETag, Retry-After, RateLimit, RateLimit-Policy, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, X-Request-Id, Content-Disposition'
const ALLOW_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE'

/**
 * Cross-origin calls from browser pages, off unless CORS_ORIGINS names origins: a preflight (OPTIONS with
 * Access-Control-Request-Method) from one of them is answered 204 with what it may send, and every answer to one of
 * them carries Access-Control-Allow-Origin with that origin alone (never `*`, so a page elsewhere cannot read an
 * answer its visitor's credential earned). Cookies are never offered across origins: the session cookie is
 * SameSite=Strict for the counter apps served here; other origins authenticate with `x-api-key`.
 */
export function cors(origins: string[]) {
  const allowed = new Set(origins)
  const plugin = new Elysia({ name: 'cors' })
  if (allowed.size === 0) return plugin
  return plugin.onRequest(({ request, set }) => {
    const origin = request.headers.get('origin')
    // Whether an answer carries the grant depends on the Origin asked from: caches must keep them apart.
    set.headers.vary = appendVary(set.headers.vary, 'Origin')
    const known = origin !== null && allowed.has(origin)
    if (request.method === 'OPTIONS' && request.headers.has('access-control-request-method')) {
      if (!known) return new Response(null, { status: 403, headers: { vary: 'Origin' } })
      return new Response(null, {
        status: 204,
        headers: {
          'access-control-allow-origin': origin,
          'access-control-allow-methods': ALLOW_METHODS,
          'access-control-allow-headers': ALLOW_HEADERS,
          'access-control-max-age': '600',
          vary: 'Origin',
        },
      })
    }
    // Set before anything answers, so errors and early refusals (401, 429) carry it too: a page must read those.
    if (known) {
      set.headers['access-control-allow-origin'] = origin
      set.headers['access-control-expose-headers'] = EXPOSE_HEADERS
    }
  })
}

/** A Vary value with `name` added once. */
export function appendVary(current: unknown, ...names: string[]): string {
  const have = typeof current === 'string' && current ? current.split(',').map((v) => v.trim()) : []
  for (const name of names) if (!have.some((h) => h.toLowerCase() === name.toLowerCase())) have.push(name)
  return have.join(', ')
}
