import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { routePolicy } from '../../access/policy'
import type { Caller } from '../../access/caller'
import { isSession } from '../../access/sessions'
import { clientAddress } from '../../access/address'
import { appPage, APPS_DIST } from '../../lib/app-pages'
import { ErrorBody, errors, IdempotencyHeaders, IdParams, JSON_BODY, onlyFields } from '../../lib/models'
import { invalid, notFound } from '../../lib/errors'
import { claimOnce, idempotencyScope, tenantTx } from '../../lib/write'
import { RETRY, ventanillaHub, type Sink, type VentanillaHub } from './hub'
import { VentanillaModel as M } from './model'
import {
  buildSnapshot,
  callNext,
  companyToday,
  createDispenserToken,
  createService,
  createTicket,
  createToken,
  deleteService,
  dispenserView,
  dispenseTicket,
  DISPENSER_PER_MINUTE,
  finishTicket,
  getRates,
  getSettings,
  listDispenserTokens,
  listServices,
  listTokens,
  noShowTicket,
  patchSettings,
  publish,
  putRates,
  putSettings,
  recallTicket,
  renameTicket,
  resolveDispenser,
  resolveToken,
  revokeDispenserToken,
  revokeToken,
  staffQueue,
  stats,
  statsCsv,
  transferTicket,
  updateService,
} from './service'

const Deleted = t.Object({ deleted: t.Literal(true) })
const TAG = 'Ventanilla'
const doc = (summary: string, description?: string) => ({ tags: [TAG], summary, ...(description && { description }) })

const MANAGE = { module: 'ventanilla', permission: 'ventanilla.manage' } as const
const CALL = { module: 'ventanilla', permission: 'ventanilla.call' } as const

/** Routes for staff: a company key, an employee key or a signed-in employee with the route's permission. */
const staff = (app: AppContext) => {
  const hub = ventanillaHub(app)
  return new Elysia({ prefix: '/api/ventanilla' })
    .use(routePolicy(app))
    .get('/settings', ({ run }) => run((tx, caller) => getSettings(tx, caller)), {
      policy: MANAGE,
      response: { 200: M.settings },
      detail: doc('Screen settings', 'Defaults until first saved: no display name, no logo, the company time zone, sound and speech on, `first_last_initial`, priority `first`.'),
    })
    .put('/settings', ({ run, body }) => run((tx, caller) => putSettings(tx, caller, body, app.clock())), {
      policy: { ...MANAGE, tx: 'write' },
      body: M.settingsPut,
      transform: onlyFields(M.settingsPut),
      response: { 200: M.settings, ...errors(400) },
      detail: doc(
        'Replace the screen settings',
        'An omitted `priorityMode` is `first`, `dispenserAsksName` `off`, `displayName` null. `logoUrl` must be empty, https or a path on this service; an unknown time zone → 400.',
      ),
    })
    .patch('/settings', ({ run, body }) => run((tx, caller) => patchSettings(tx, caller, body, app.clock())), {
      policy: { ...MANAGE, tx: 'write' },
      body: M.settingsPatch,
      transform: onlyFields(M.settingsPatch),
      response: { 200: M.settings, ...errors(400) },
      detail: doc('Change some screen settings', 'Any subset of the settings\' fields; the answer is the whole settings. An unknown field → 400 `VALIDATION_ERROR`, and nothing changes.'),
    })
    // The counter reads the board too: its exchanges start from these rates (contract §19).
    .get('/rates', ({ run }) => run((tx, caller) => getRates(tx, caller)), {
      policy: { module: 'ventanilla', permission: ['ventanilla.manage', 'ventanilla.call'] },
      response: { 200: M.ratesRead },
      detail: doc(
        'The rates board',
        'In board order, with when it was last replaced and by whom (`updated_by`: the employee\'s name, null for a key). The counter console (`ventanilla.call`) prefills its exchanges from it.',
      ),
    })
    .put('/rates', ({ run, body }) => run((tx, caller) => putRates(tx, caller, body, app.clock())), {
      policy: { ...MANAGE, tx: 'write' },
      body: M.ratesPut,
      response: { 200: M.rates, ...errors(400) },
      detail: doc(
        'Replace the rates board',
        'The list replaces the board in its order; `mid` = (buy + sell) / 2, computed exactly. Decimals are written with a dot: `"1234,5"` → 400 `VALIDATION_ERROR` naming the field; nothing changes.',
      ),
    })
    .get('/services', ({ run }) => run(async (tx, caller) => ({ data: await listServices(tx, caller) })), {
      policy: MANAGE,
      response: { 200: t.Object({ data: t.Array(M.service) }) },
      detail: doc('List services'),
    })
    .post('/services', ({ run, body }) => run((tx, caller) => createService(tx, caller, body, app.clock())), {
      policy: { ...MANAGE, idempotent: true },
      body: M.serviceCreate,
      response: { 201: M.service, ...errors(400, 409) },
      detail: doc('Create a service', 'A live service with the same prefix → 409 `PREFIX_TAKEN`.'),
    })
    .patch('/services/:id', ({ run, params, body }) => run((tx, caller) => updateService(tx, caller, params.id, body, app.clock())), {
      policy: { ...MANAGE, tx: 'write' },
      params: IdParams,
      body: M.serviceUpdate,
      response: { 200: M.service, ...errors(400, 404, 409) },
      detail: doc('Update a service'),
    })
    .delete('/services/:id', ({ run, params }) => run((tx, caller) => deleteService(tx, caller, params.id, app.clock())), {
      policy: { ...MANAGE, tx: 'write' },
      params: IdParams,
      response: { 200: Deleted, ...errors(400, 404) },
      detail: doc('Delete a service (soft)', 'Its waiting tickets are no longer called.'),
    })
    // Token issuing is not replayable by Idempotency-Key: only the token's digest is stored, so a second answer could not repeat it.
    .post('/tokens', ({ run, body }) => run((tx, caller) => createToken(tx, caller, body.name, app.config.publicBaseUrl, app.clock())), {
      policy: { ...MANAGE, tx: 'write', status: 201 },
      body: M.tokenCreate,
      response: { 201: M.issuedToken, ...errors(400) },
      detail: doc('Issue a kiosk token', 'The token (at least 128 random bits) is shown only in this answer; only its digest is stored.'),
    })
    .get('/tokens', ({ run }) => run(async (tx, caller) => ({ data: await listTokens(tx, caller) })), {
      policy: MANAGE,
      response: { 200: t.Object({ data: t.Array(M.token) }) },
      detail: doc('List live kiosk tokens (without their values)'),
    })
    .delete('/tokens/:id', ({ run, params }) => run((tx, caller) => revokeToken(tx, caller, params.id, app.clock())), {
      policy: { ...MANAGE, tx: 'write' },
      params: IdParams,
      response: { 200: Deleted, ...errors(400, 404) },
      detail: doc('Revoke a kiosk token', 'Its public snapshot answers 404 and its open streams get `event: revoked` and end.'),
    })
    .post('/dispenser-tokens', ({ run, body }) => run((tx, caller) => createDispenserToken(tx, caller, body.name, app.config.publicBaseUrl, app.clock())), {
      policy: { ...MANAGE, tx: 'write', status: 201 },
      body: M.tokenCreate,
      response: { 201: M.issuedDispenserToken, ...errors(400) },
      detail: doc(
        'Issue a dispenser token',
        'For a ticket dispenser (`dispenser_url`, `/dispenser/{token}`). The token is shown only in this answer; only its digest is stored, so it is not replayable by Idempotency-Key.',
      ),
    })
    .get('/dispenser-tokens', ({ run }) => run(async (tx, caller) => ({ data: await listDispenserTokens(tx, caller) })), {
      policy: MANAGE,
      response: { 200: t.Object({ data: t.Array(M.token) }) },
      detail: doc('List live dispenser tokens (without their values)'),
    })
    .delete('/dispenser-tokens/:id', ({ run, params }) => run((tx, caller) => revokeDispenserToken(tx, caller, params.id, app.clock())), {
      policy: { ...MANAGE, tx: 'write' },
      params: IdParams,
      response: { 200: Deleted, ...errors(400, 404) },
      detail: doc('Revoke a dispenser token', 'Its dispenser page and ticket route answer 404 from then on.'),
    })
    .get(
      '/stats',
      ({ run, query }) => run(async (tx, caller) => {
        const today = query.from && query.to ? '' : await companyToday(tx, caller, app.clock())
        const from = query.from ?? today
        const to = query.to ?? today
        if (from > to) throw invalid('`from` is after `to`', [{ field: 'from', message: 'must not be after to' }])
        const data = await stats(app.database, tx, caller, from, to)
        if (query.format !== 'csv') return { data }
        return new Response(statsCsv(data), {
          headers: { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename="ventanilla-${from}_${to}.csv"` },
        })
      }),
      {
        policy: { ...MANAGE, tx: 'snapshot' },
        query: M.statsQuery,
        detail: {
          ...doc(
            'Waiting-room statistics per day and service',
            [
              'One row per day (company time zone, the day the tickets were taken) and service that issued or served tickets. Wait = first call − taken; service time = finish − last call (finished tickets only); whole seconds.',
              'A transferred ticket counts where each thing happened: `issued` and its wait under the service it was taken for, `served` or `no_show` and its service time under the service that had it last.',
              '`from`/`to` default to today; `from` after `to` → 400.',
              '`format=csv`: the same rows as a CSV an es-AR spreadsheet opens as it is: UTF-8 with a byte order mark, `;` between fields (RFC 4180 quoting), Spanish headings in the JSON order',
              '(`Fecha;N.º de servicio;Servicio;Emitidos;Atendidos;No se presentaron;Espera promedio (s);Espera p90 (s);Atención promedio (s)`), dates `dd/mm/aaaa`, decimal commas, empty cells for nulls;',
              'a service name starting with `=`, `+`, `-`, `@` gets a leading `\'`.',
            ].join(' '),
          ),
          responses: {
            200: {
              description: 'The rows: JSON by default, CSV with `format=csv`',
              content: {
                'application/json': { schema: JSON.parse(JSON.stringify(M.stats)) },
                'text/csv': { schema: { type: 'string', description: 'es-AR: UTF-8 with a byte order mark, `;`-separated (RFC 4180 quoting), Spanish header row first, decimal commas' } },
              },
            },
            400: { description: 'Invalid `from`, `to` or `format`; `from` after `to`', content: { 'application/json': { schema: JSON.parse(JSON.stringify(ErrorBody)) } } },
          },
        },
      },
    )
    .post('/tickets', ({ run, body }) => run((tx, caller) => createTicket(tx, caller, body, app.clock())), {
      policy: { ...CALL, idempotent: true },
      body: M.ticketCreate,
      response: { 201: M.ticket, ...errors(400, 409, 422) },
      detail: doc(
        'Take a ticket',
        'Numbered `<prefix>-001`, `-002`, … per service, restarting each day in the screen time zone. Unknown or deleted service → 422 `UNKNOWN_SERVICE`.',
      ),
    })
    .post('/calls', ({ run, body }) => run((tx, caller) => callNext(app.database, tx, caller, body, app.clock())), {
      policy: { ...CALL, idempotent: true },
      body: M.callCreate,
      response: { 201: M.ticket, ...errors(400, 409, 422) },
      detail: doc(
        'Call the next ticket',
        'Calls the next waiting ticket (of `service_id` when given) to `desk` and answers it with status `called`: with `priorityMode` `first` priority tickets first, each group oldest first. Nobody waiting → 409 `QUEUE_EMPTY`.',
      ),
    })
    .post('/tickets/:id/call', ({ run, params, body }) => run((tx, caller) => recallTicket(tx, caller, params.id, body.desk, app.clock())), {
      policy: { ...CALL, tx: 'write' },
      params: IdParams,
      body: M.recall,
      response: { 200: M.ticket, ...errors(400, 404, 409) },
      detail: doc('Call a ticket (again)', 'Works on waiting, called and no-show tickets; a finished ticket → 409 `INVALID_TICKET_STATUS`.'),
    })
    .post('/tickets/:id/finish', ({ run, params }) => run((tx, caller) => finishTicket(tx, caller, params.id, app.clock())), {
      policy: { ...CALL, tx: 'write' },
      params: IdParams,
      response: { 200: M.ticket, ...errors(400, 404, 409) },
      detail: doc('Finish a called ticket', 'A ticket that is not `called` → 409 `INVALID_TICKET_STATUS`.'),
    })
    .post('/tickets/:id/no-show', ({ run, params }) => run((tx, caller) => noShowTicket(tx, caller, params.id, app.clock())), {
      policy: { ...CALL, tx: 'write' },
      params: IdParams,
      response: { 200: M.ticket, ...errors(400, 404, 409) },
      detail: doc('Mark a ticket as no-show', 'From `waiting` or `called`; otherwise 409 `INVALID_TICKET_STATUS`.'),
    })
    .patch('/tickets/:id', ({ run, params, body }) => run((tx, caller) => renameTicket(tx, caller, params.id, body.customer_name, app.clock())), {
      policy: { ...CALL, tx: 'write' },
      params: IdParams,
      body: M.ticketUpdate,
      transform: onlyFields(M.ticketUpdate),
      response: { 200: M.ticket, ...errors(400, 404, 409) },
      detail: doc('Set the customer\'s name of a ticket', 'While `waiting` or `called`; a finished or no-show ticket → 409 `TICKET_CLOSED`.'),
    })
    .post('/tickets/:id/transfer', ({ run, params, body }) => run((tx, caller) => transferTicket(tx, caller, params.id, body.service_id, app.clock())), {
      policy: { ...CALL, tx: 'write' },
      params: IdParams,
      body: M.transfer,
      response: { 200: M.ticket, ...errors(400, 404, 409) },
      detail: doc(
        'Transfer a ticket to another service',
        'The ticket waits in the other service with the same number and the same place in line (`created_at`). A finished or no-show ticket → 409 `TICKET_CLOSED`; an unknown, deleted or other company\'s service → 404 `NOT_FOUND`.',
      ),
    })
    .get('/queue', ({ run }) => run((tx, caller) => staffQueue(app.database, caller.companyId, tx)), {
      policy: CALL,
      response: { 200: M.queue },
      detail: doc(
        'The waiting queue of every service',
        'Waiting tickets in the order they will be called, with full customer names (staff only), and `serving`: per desk, the ticket it called last that is not finished or no-show, with the employee who called it (null for a key).',
      ),
    })
    .get(
      '/events',
      ({ caller, request, server }) => {
        const release = hub.claimStaff(caller.companyId, clientAddress(request, server, app.config.trustProxy) ?? undefined)
        if (!release) return tooManyStreams('Too many open streams from this address')
        // The stream's own comments keep it alive; the listener's idle timeout is for silent connections.
        server?.timeout(request, 0)
        return eventStream(hub, caller.companyId, 0, request.signal, release, { credential: isSession(caller) ? { session: caller.session.id } : { key: caller.keyId } })
      },
      {
        policy: { ...CALL, tx: 'none' },
        detail: {
          ...doc(
            'The waiting queue as server-sent events',
            [
              '`text/event-stream` of `event: queue` with the body of `GET /api/ventanilla/queue`, at once and within 2 s of every change made through any server process; a `:` comment at least every 20 s; `event: revoked` and the end when the module is switched off or, within a heartbeat (15 s), once the session or key it was opened with is signed out, revoked or expired. Authenticated by key or session cookie.',
              'These streams count towards `SSE_MAX_STREAMS_PER_ADDRESS` (default 50) per client address (the forwarded one with `TRUST_PROXY`) and server process with the screens\' ones, one company holding at most half of an address\'s: one more answers 429 `RATE_LIMITED` with `Retry-After`.',
            ].join(' '),
          ),
          responses: { 200: { description: 'Event stream', content: { 'text/event-stream': { schema: { type: 'string' } } } } },
        },
      },
    )
}

/** How long a screen refused for too many open streams should wait; its EventSource retries on its own anyway. */
const STREAM_RETRY_AFTER_S = 10

const tooManyStreams = (error: string) =>
  new Response(JSON.stringify({ error, code: 'RATE_LIMITED' }), {
    status: 429,
    headers: { 'content-type': 'application/json; charset=utf-8', 'retry-after': String(STREAM_RETRY_AFTER_S) },
  })

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
function eventStream(
  hub: VentanillaHub,
  companyId: number,
  tokenId: number,
  signal: AbortSignal,
  release: () => void,
  staff?: { credential: Sink['credential'] },
): Response {
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
          queue: Boolean(staff),
          credential: staff?.credential,
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
  // A rename or module switch reaches open screens at commit.
  app.events.on('company.updated', async (tx, events) => {
    for (const companyId of new Set(events.map((e) => e.companyId))) await publish(tx, companyId)
  })
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
        const release = hub.claim(target.tokenId, target.companyId, clientAddress(request, server, app.config.trustProxy) ?? undefined)
        if (!release) return tooManyStreams('Too many open streams for this screen token or address')
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
              'At most `SSE_MAX_STREAMS_PER_TOKEN` (default 20) open streams per token and `SSE_MAX_STREAMS_PER_ADDRESS` (default 50) per client address (the forwarded one with `TRUST_PROXY`), one company holding at most half of an address\'s, per server process: one more answers 429 `RATE_LIMITED` with `Retry-After`.',
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

/** A company as the public routes act for it: no key, no employee, so the audit trail names nobody. */
const publicCaller = (companyId: number): Caller => ({ companyId, keyId: 0, employee: null, modules: { mesas: false, ventanilla: true } })

const DispenserParams = t.Object({ token: t.String({ description: 'Dispenser token (opaque)' }) })

/** The ticket dispenser's API: its token is the credential; anything wrong with it is a plain 404. */
const dispenserRoutes = (app: AppContext) => {
  // Checked once per request; the ticket route asks in its parse stage, so an unknown dispenser is answered
  // before its body is read.
  const checked = new WeakMap<Request, Promise<{ tokenId: number; companyId: number; name: string }>>()
  const dispenserOf = (request: Request, token: string) => {
    let target = checked.get(request)
    if (!target) {
      target = resolveDispenser(app.db, token).then((found) => {
        if (!found) throw notFound('Dispenser')
        return found
      })
      checked.set(request, target)
    }
    return target
  }
  return new Elysia({ prefix: '/api/public/ventanilla' })
    .get(
      '/:token/services',
      async ({ params, request, set }) => {
        const target = await dispenserOf(request, params.token)
        set.headers['cache-control'] = 'no-store'
        return dispenserView(app.db, target.companyId)
      },
      {
        params: DispenserParams,
        response: { 200: M.dispenser, 404: ErrorBody },
        detail: publicDetail('What a dispenser offers', 'No authentication. The services to take a ticket for and whether a priority ticket is offered. 404 for an unknown or revoked dispenser token or when the module is off.'),
      },
    )
    .post(
      '/:token/tickets',
      async ({ params, request, body, headers, path, set }) => {
        const target = await dispenserOf(request, params.token)
        return claimOnce(
          app,
          idempotencyScope(publicCaller(target.companyId)),
          // The audit trail names the dispenser, as the actor a person would recognise.
          (fn) =>
            tenantTx(app, publicCaller(target.companyId), 'write', fn, {
              channel: 'dispenser',
              channelDetail: { dispenser: { id: target.tokenId, name: target.name } },
            }),
          { key: headers['idempotency-key'], method: 'POST', path, fingerprint: body },
          set,
          (tx) => dispenseTicket(tx, target, body, app.clock()),
        )
      },
      {
        params: DispenserParams,
        headers: IdempotencyHeaders,
        parse: async ({ request, params }) => {
          await dispenserOf(request, params.token)
        },
        body: M.dispenserTicketCreate,
        response: { 201: M.dispensedTicket, 400: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody, 429: ErrorBody },
        detail: {
          ...publicDetail(
            'Take a ticket at a dispenser',
            `No authentication: the dispenser token is the credential, checked before the body is read. Accepts \`Idempotency-Key\` (a tablet retrying a touch gets the same number, not a second one; the same key with another body → 409 \`IDEMPOTENCY_KEY_REUSED\`). 404 for an unknown or revoked token or when the module is off; unknown service → 422 \`UNKNOWN_SERVICE\`. More than ${DISPENSER_PER_MINUTE} tickets within a minute from one dispenser (all server processes together) → 429 \`RATE_LIMITED\` with \`Retry-After\`, and nothing is issued.`,
          ),
          [JSON_BODY]: M.dispenserTicketCreate,
        },
      },
    )
}

/**
 * The screen apps' pages: `GET /kiosk/{token}` the waiting-room kiosk, `GET /staff` the counter console, `GET /manage` the
 * manager app and
 * `GET /dispenser/{token}` the ticket dispenser. A token that is not live (unknown, revoked, module off) answers 404,
 * with the app itself as the body, so a person in front of the screen reads its own "disabled" message.
 */
export const appPages = (app: AppContext, dist = APPS_DIST) => {
  // When the check itself fails (database away) the page is served: the app keeps its last state while offline.
  const status = (check: Promise<unknown>) => check.then((live) => (live ? 200 : 404), () => 200)
  return new Elysia()
    .get('/kiosk/:token', async ({ params }) => appPage(dist, 'index.html', await status(resolveToken(app.db, params.token))), {
      detail: { hide: true },
    })
    .get('/staff', () => appPage(dist, 'staff.html'), { detail: { hide: true } })
    // The manager app routes its sections in the browser (/manage/cotizaciones, …); a reload of any of them gets the app.
    .get('/manage', () => appPage(dist, 'manage.html'), { detail: { hide: true } })
    .get('/manage/*', () => appPage(dist, 'manage.html'), { detail: { hide: true } })
    .get('/dispenser/:token', async ({ params }) => appPage(dist, 'dispenser.html', await status(resolveDispenser(app.db, params.token))), {
      detail: { hide: true },
    })
}

export const ventanillaModule = (app: AppContext) =>
  new Elysia().use(publicRoutes(app)).use(dispenserRoutes(app)).use(staff(app)).use(appPages(app))
