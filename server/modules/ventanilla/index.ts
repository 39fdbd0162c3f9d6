import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { authenticateKey, requirePermission, type Caller } from '../../access/caller'
import { ErrorBody, errors, IdempotencyHeaders, IdParams } from '../../lib/models'
import { notFound } from '../../lib/errors'
import { createOnce, write } from '../../lib/write'
import { RETRY, ventanillaHub, type Sink, type VentanillaHub } from './hub'
import { VentanillaModel as M } from './model'
import {
  buildSnapshot,
  callNext,
  createService,
  createTicket,
  createToken,
  deleteService,
  finishTicket,
  getSettings,
  listServices,
  listTokens,
  noShowTicket,
  publish,
  putRates,
  putSettings,
  recallTicket,
  requireEnabled,
  resolveToken,
  revokeToken,
  updateService,
} from './service'

const Deleted = t.Object({ deleted: t.Literal(true) })
const TAG = 'Ventanilla'
const manage = (summary: string, description?: string) => ({
  tags: [TAG],
  summary,
  description: [description, 'Needs `ventanilla.manage` (a company key has it). Module off → 403 `VENTANILLA_DISABLED`.'].filter(Boolean).join(' '),
})
const calling = (summary: string, description?: string) => ({
  tags: [TAG],
  summary,
  description: [description, 'Needs `ventanilla.call` (a company key has it). Module off → 403 `VENTANILLA_DISABLED`.'].filter(Boolean).join(' '),
})

const CALL_PATHS = /^\/api\/ventanilla\/(tickets|calls)(\/|$)/

/** Routes for staff: module flag first, then the permission the path needs, all before the body is read. */
/**
 * Who may call a staff route: key, module flag and the permission the path needs, decided once per request. The
 * parse stage asks first, before a body is read (a body-less route asks in derive); later stages reuse the answer.
 */
function staffGate(app: AppContext) {
  const decided = new WeakMap<Request, Promise<Caller>>()
  return (request: Request) => {
    let caller = decided.get(request)
    if (!caller) {
      caller = (async () => {
        const who = await authenticateKey(app.db, request.headers.get('x-api-key'))
        await requireEnabled(app.db, who.companyId)
        requirePermission(who, CALL_PATHS.test(new URL(request.url).pathname) ? 'ventanilla.call' : 'ventanilla.manage')
        return who
      })()
      decided.set(request, caller)
    }
    return caller
  }
}

const staff = (app: AppContext, decide = staffGate(app)) =>
  new Elysia({ prefix: '/api/ventanilla' })
    .onParse(async ({ request }) => {
      await decide(request)
    })
    .derive(async ({ request }) => ({ caller: await decide(request) }))
    .get('/settings', ({ caller }) => getSettings(app.db, caller), {
      response: { 200: M.settings, ...errors(401, 403) },
      detail: manage('Screen settings', 'Defaults until first saved: no display name, no logo, the company time zone, sound and speech on, `first_last_initial`.'),
    })
    .put('/settings', ({ caller, body }) => write(app, caller, (tx) => putSettings(tx, caller, body, app.clock())), {
      body: M.settingsPut,
      response: { 200: M.settings, ...errors(400, 401, 403) },
      detail: manage('Replace the screen settings'),
    })
    .put('/rates', ({ caller, body }) => write(app, caller, (tx) => putRates(tx, caller, body, app.clock())), {
      body: M.ratesPut,
      response: { 200: M.rates, ...errors(400, 401, 403) },
      detail: manage('Replace the rates board', 'The list replaces the board in its order; `mid` = (buy + sell) / 2, computed exactly.'),
    })
    .get('/services', async ({ caller }) => ({ data: await listServices(app.db, caller) }), {
      response: { 200: t.Object({ data: t.Array(M.service) }), ...errors(401, 403) },
      detail: manage('List services'),
    })
    .post(
      '/services',
      ({ caller, body, headers, set }) =>
        createOnce(app, caller, { key: headers['idempotency-key'], method: 'POST', path: '/api/ventanilla/services', fingerprint: body }, set, (tx) =>
          createService(tx, caller, body, app.clock()),
        ),
      {
        body: M.serviceCreate,
        headers: IdempotencyHeaders,
        response: { 201: M.service, ...errors(400, 401, 403, 409) },
        detail: manage('Create a service', 'A live service with the same prefix → 409 `PREFIX_TAKEN`.'),
      },
    )
    .patch('/services/:id', ({ caller, params, body }) => write(app, caller, (tx) => updateService(tx, caller, params.id, body, app.clock())), {
      params: IdParams,
      body: M.serviceUpdate,
      response: { 200: M.service, ...errors(400, 401, 403, 404, 409) },
      detail: manage('Update a service'),
    })
    .delete('/services/:id', ({ caller, params }) => write(app, caller, (tx) => deleteService(tx, caller, params.id, app.clock())), {
      params: IdParams,
      response: { 200: Deleted, ...errors(400, 401, 403, 404) },
      detail: manage('Delete a service (soft)', 'Its waiting tickets are no longer called.'),
    })
    .post(
      '/tokens',
      // Not replayable by Idempotency-Key: only the token's digest is stored, so a second answer could not repeat it.
      async ({ caller, body, set }) => {
        const issued = await write(app, caller, (tx) => createToken(tx, caller, body.name, app.config.publicBaseUrl, app.clock()))
        set.status = 201
        return issued
      },
      {
        body: M.tokenCreate,
        response: { 201: M.issuedToken, ...errors(400, 401, 403) },
        detail: manage('Issue a kiosk token', 'The token (at least 128 random bits) is shown only in this answer; only its digest is stored.'),
      },
    )
    .get('/tokens', async ({ caller }) => ({ data: await listTokens(app.db, caller) }), {
      response: { 200: t.Object({ data: t.Array(M.token) }), ...errors(401, 403) },
      detail: manage('List live kiosk tokens (without their values)'),
    })
    .delete('/tokens/:id', ({ caller, params }) => write(app, caller, (tx) => revokeToken(tx, caller, params.id, app.clock())), {
      params: IdParams,
      response: { 200: Deleted, ...errors(400, 401, 403, 404) },
      detail: manage('Revoke a kiosk token', 'Its public snapshot answers 404 and its open streams get `event: revoked` and end.'),
    })
    .post(
      '/tickets',
      ({ caller, body, headers, set }) =>
        createOnce(app, caller, { key: headers['idempotency-key'], method: 'POST', path: '/api/ventanilla/tickets', fingerprint: body }, set, (tx) =>
          createTicket(tx, caller, body, app.clock()),
        ),
      {
        body: M.ticketCreate,
        headers: IdempotencyHeaders,
        response: { 201: M.ticket, ...errors(400, 401, 403, 409, 422) },
        detail: calling(
          'Take a ticket',
          'Numbered `<prefix>-001`, `-002`, … per service, restarting each day in the screen time zone. Unknown or deleted service → 422 `UNKNOWN_SERVICE`.',
        ),
      },
    )
    .post(
      '/calls',
      ({ caller, body, headers, set }) =>
        createOnce(app, caller, { key: headers['idempotency-key'], method: 'POST', path: '/api/ventanilla/calls', fingerprint: body }, set, (tx) =>
          callNext(app.database, tx, caller, body, app.clock()),
        ),
      {
        body: M.callCreate,
        headers: IdempotencyHeaders,
        response: { 201: M.ticket, ...errors(400, 401, 403, 409, 422) },
        detail: calling(
          'Call the next ticket',
          'Calls the oldest waiting ticket (of `service_id` when given) to `desk` and answers it with status `called`. Nobody waiting → 409 `QUEUE_EMPTY`.',
        ),
      },
    )
    .post('/tickets/:id/call', ({ caller, params, body }) => write(app, caller, (tx) => recallTicket(tx, caller, params.id, body.desk, app.clock())), {
      params: IdParams,
      body: M.recall,
      response: { 200: M.ticket, ...errors(400, 401, 403, 404, 409) },
      detail: calling('Call a ticket (again)', 'Works on waiting, called and no-show tickets; a finished ticket → 409 `INVALID_TICKET_STATUS`.'),
    })
    .post('/tickets/:id/finish', ({ caller, params }) => write(app, caller, (tx) => finishTicket(tx, caller, params.id, app.clock())), {
      params: IdParams,
      response: { 200: M.ticket, ...errors(400, 401, 403, 404, 409) },
      detail: calling('Finish a called ticket', 'A ticket that is not `called` → 409 `INVALID_TICKET_STATUS`.'),
    })
    .post('/tickets/:id/no-show', ({ caller, params }) => write(app, caller, (tx) => noShowTicket(tx, caller, params.id, app.clock())), {
      params: IdParams,
      response: { 200: M.ticket, ...errors(400, 401, 403, 404, 409) },
      detail: calling('Mark a ticket as no-show', 'From `waiting` or `called`; otherwise 409 `INVALID_TICKET_STATUS`.'),
    })

/** How long a screen refused for too many open streams should wait; its EventSource retries on its own anyway. */
const STREAM_RETRY_AFTER_S = 10

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
}

/**
 * A Bun "direct" stream: each write goes straight to the socket, without a per-connection queue and pump,
 * which is what lets one process feed thousands of screens in a few milliseconds. The stream only ever waits
 * on the hub's first snapshot, and that wait is raced against the request's abort signal; a disconnect
 * (abort or cancel, whichever Bun reports first) removes the stream from the hub at once.
 */
function eventStream(hub: VentanillaHub, companyId: number, tokenId: number, signal: AbortSignal, release: () => void): Response {
  let sink: Sink | undefined
  signal.addEventListener('abort', release, { once: true })
  const source = {
    type: 'direct',
    pull(controller: ReadableStreamDirectController) {
      return new Promise<void>((done) => {
        let ended = false
        let waiting = 0
        const s: Sink = {
          tokenId,
          primed: false,
          enqueue(bytes) {
            if (ended) return
            try {
              const written = controller.write(bytes)
              controller.flush()
              if (written instanceof Promise) {
                waiting++
                written.then(() => waiting--, () => s.end())
              }
            } catch {
              s.end()
            }
          },
          backlog: () => waiting,
          end(final) {
            if (ended) return
            ended = true
            try {
              if (final) controller.write(final)
              controller.close()
            } catch {
              // Already gone on the client's side: nothing left to tell it.
            }
            hub.detach(companyId, s)
            release()
            done()
          },
        }
        sink = s
        s.enqueue(RETRY)
        if (signal.aborted) return s.end()
        signal.addEventListener('abort', () => s.end(), { once: true })
        void hub.attach(companyId, s, signal)
      })
    },
    cancel() {
      sink?.end()
      release()
    },
  }
  // The DOM typings know no direct sources; Bun's own constructor accepts them.
  const body = new ReadableStream(source as unknown as UnderlyingDefaultSource<Uint8Array>)
  return new Response(body, { headers: SSE_HEADERS })
}

const TokenParams = t.Object({ token: t.String({ description: 'Kiosk token (opaque)' }) })
const publicDetail = (summary: string, description: string) => ({ tags: [TAG], summary, description, security: [] })

/** No authentication: the unguessable token is the credential. Anything wrong with it is a plain 404. */
const publicRoutes = (app: AppContext) => {
  const hub = ventanillaHub(app)
  app.events.on('company.updated', (tx, event) => publish(tx, event.companyId)) // a rename or module switch reaches open screens at commit
  return new Elysia({ prefix: '/api/public/ventanilla' })
    .get(
      '/:token',
      async ({ params, set }) => {
        const target = await resolveToken(app.db, params.token)
        const snapshot = target && (await buildSnapshot(app.database, target.companyId, app.clock()))
        if (!snapshot) throw notFound('Screen')
        set.headers['cache-control'] = 'no-store'
        return snapshot
      },
      {
        params: TokenParams,
        response: { 200: M.snapshot, 404: ErrorBody },
        detail: publicDetail(
          'Waiting-room snapshot',
          'No authentication. 404 for an unknown or revoked token or when the module is off. Customer names are masked by `privacyMode` on the server.',
        ),
      },
    )
    .get(
      '/:token/events',
      async ({ params, request, server }) => {
        const target = await resolveToken(app.db, params.token)
        if (!target) throw notFound('Screen')
        const release = hub.claim(target.tokenId, server?.requestIP(request)?.address)
        if (!release)
          return new Response(JSON.stringify({ error: 'Too many open streams for this screen token or address', code: 'RATE_LIMITED' }), {
            status: 429,
            headers: { 'content-type': 'application/json; charset=utf-8', 'retry-after': String(STREAM_RETRY_AFTER_S) },
          })
        // The stream's own comments keep it alive; the listener's idle timeout is for silent connections.
        server?.timeout(request, 0)
        return eventStream(hub, target.companyId, target.tokenId, request.signal, release)
      },
      {
        params: TokenParams,
        detail: {
          ...publicDetail(
            'Waiting-room snapshot stream (server-sent events)',
            [
              '`text/event-stream`. A `retry:` hint, then `event: snapshot` (data: the snapshot JSON, with an `id:`) at once and after every change',
              'that alters it, from any server process on the database; a `:` comment at least every 20 s; `event: revoked` and the end of the',
              'stream when the token is revoked or the module switched off. A reconnect (with or without `Last-Event-ID`) gets the current snapshot at once.',
              'At most `SSE_MAX_STREAMS_PER_TOKEN` (default 20) open streams per token and `SSE_MAX_STREAMS_PER_ADDRESS` (default 50) per client address, per server process: one more answers 429 `RATE_LIMITED` with `Retry-After`.',
              'A client that stops reading is dropped once `SSE_MAX_PENDING_EVENTS` (default 32) writes wait for its socket, instead of being buffered for.',
            ].join(' '),
          ),
          responses: {
            200: { description: 'Event stream', content: { 'text/event-stream': { schema: { type: 'string' } } } },
            404: { description: 'Unknown or revoked token, or module off', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
            429: { description: 'Too many open streams for this token or address', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
          },
        },
      },
    )
}

export const ventanillaModule = (app: AppContext) => new Elysia().use(publicRoutes(app)).use(staff(app))
