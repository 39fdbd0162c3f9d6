import { Elysia } from 'elysia'
import { randomUUID } from 'node:crypto'

const started = new WeakMap<Request, { id: string; at: number }>()
const SAFE_ID = /^[A-Za-z0-9._-]{1,64}$/

export const requestId = (request: Request) => started.get(request)?.id

/**
 * One structured JSON line per request, and `X-Request-Id` on every answer (the caller's own id when it is
 * well-formed). The route pattern is logged, never the concrete path or query: kiosk tokens and signed-link
 * signatures travel there.
 */
export const requestLog = (log: (entry: Record<string, unknown>) => void) =>
  new Elysia({ name: 'request-log' })
    .onRequest(({ request, set }) => {
      const given = request.headers.get('x-request-id')
      const id = given && SAFE_ID.test(given) ? given : randomUUID()
      started.set(request, { id, at: performance.now() })
      set.headers['x-request-id'] = id
    })
    .onAfterResponse({ as: 'global' }, ({ request, route, set, responseValue }) => {
      const s = started.get(request)
      log({
        level: 'info',
        msg: 'request',
        id: s?.id,
        method: request.method,
        route: route || 'unmatched',
        status: responseValue instanceof Response ? responseValue.status : typeof set.status === 'number' ? set.status : 200,
        ms: s ? Math.round((performance.now() - s.at) * 10) / 10 : undefined,
      })
    })
