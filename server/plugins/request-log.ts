import { Elysia } from 'elysia'
import { randomUUID } from 'node:crypto'

interface Seen {
  id: string
  at: number
  route?: string
}

const started = new WeakMap<Request, Seen>()
const SAFE_ID = /^[A-Za-z0-9._-]{1,64}$/

export const requestId = (request: Request) => started.get(request)?.id

type Fetch = (...args: unknown[]) => Response | Promise<Response>

/**
 * One structured JSON line per request, and `X-Request-Id` on every answer (the caller's own id when it is
 * well-formed). The status logged is read off the Response that leaves the app, whichever hook produced it
 * (a refusal before routing, an error answer, a handler's own status), so the log and the answer never disagree.
 * The route pattern is logged, never the concrete path or query: kiosk tokens and signed-link signatures travel there.
 */
export const requestLog = (
  log: (entry: Record<string, unknown>) => void,
  /** Told of every answer too, with the same route, status and time (the metrics' request histogram). */
  observe?: (route: string, method: string, status: number, seconds: number) => void,
) => {
  const noteRoute = ({ request, route }: { request: Request; route?: string }) => {
    const s = started.get(request)
    if (s && route && !s.route) s.route = route
  }
  const write = (request: Request, response: Response) => {
    const s = started.get(request)
    const ms = s ? performance.now() - s.at : undefined
    const route = s?.route ?? 'unmatched'
    log({ level: 'info', msg: 'request', id: s?.id, method: request.method, route, status: response.status, ms: ms === undefined ? undefined : Math.round(ms * 10) / 10 })
    if (observe && ms !== undefined) observe(route, request.method, response.status, ms / 1000)
    return response
  }
  return new Elysia({ name: 'request-log' })
    .wrap(((fetch: Fetch, request: Request) =>
      (...args: unknown[]) => {
        const out = fetch(...args)
        return out instanceof Promise ? out.then((response) => write(request, response)) : write(request, out)
      }) as never)
    .onRequest(({ request, set }) => {
      const given = request.headers.get('x-request-id')
      const id = given && SAFE_ID.test(given) ? given : randomUUID()
      started.set(request, { id, at: performance.now() })
      set.headers['x-request-id'] = id
    })
    .onTransform({ as: 'global' }, noteRoute)
    .onError({ as: 'global' }, (c) => void noteRoute(c))
    .onAfterResponse({ as: 'global' }, noteRoute)
}
