import { Elysia, t } from 'elysia'
import type { Tx } from '../../../db/client'
import type { AppContext } from '../../context'
import { afterCommit } from '../../lib/events'
import { routePolicy } from '../../access/policy'
import { errors } from '../../lib/models'
import { notFound } from '../../lib/errors'
import { claimKey, idempotencyScope, keepAnswer, requestFingerprint } from '../../lib/write'
import { WebhookModel } from './model'
import { getEvent, listEvents, record } from './outbox'
import { openSecret, sealSecret } from './secrets'
import {
  createEndpoint,
  deleteEndpoint,
  EVENT_TYPES,
  getEndpoint,
  listAttempts,
  listEndpoints,
  resendEvent,
  rotateSecret,
  sendTest,
  updateEndpoint,
} from './service'
import { DeliveryWorker } from './worker'

export { DeliveryWorker } from './worker'

const workers = new WeakMap<AppContext, DeliveryWorker>()

/** The delivery worker of this app (one per process); main.ts starts it, and stops it on SIGTERM. */
export function deliveryWorker(app: AppContext): DeliveryWorker {
  let w = workers.get(app)
  if (!w) workers.set(app, (w = new DeliveryWorker(app)))
  return w
}

const wakers = new WeakMap<AppContext, () => void>()

/** Wakes this process's worker once `tx` has committed: what it queued is claimable from then on. */
function wakeAfterCommit(app: AppContext, tx: Tx) {
  let wake = wakers.get(app)
  if (!wake) wakers.set(app, (wake = () => workers.get(app)?.wake()))
  afterCommit(tx, wake)
}

const manage = { permission: 'webhooks.manage', unscoped: true } as const
const tags = { events: ['Events'], endpoints: ['Webhook endpoints'] }

const FEED_NOTE = [
  'Oldest first. A consumer that starts without `after` and always passes the `next_cursor` it was given sees every event exactly once, even while many writers commit concurrently: an event never appears behind a cursor already handed out.',
  'How: event ids are taken when the event is written, not when its transaction commits, so ids are not a safe cursor. Each read first gives feed positions to the events committed since the last read (one reader of a company at a time), and pages by position: an event whose transaction commits late gets a later position, never one behind a cursor already handed out. The order is therefore commit order, and events of one object are in the order they happened.',
  'With `type` only those types are listed; the cursor still moves past the others. An empty page answers the cursor it was given. Events are kept 30 days.',
].join('\n\n')

const DELIVERY_NOTE = [
  'Delivery follows Standard Webhooks: `POST` of the event as JSON with `webhook-id` (the event id), `webhook-timestamp` (unix seconds of the attempt) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of id.timestamp.body>`, two space-separated signatures while a rotated-out secret is still live).',
  'A 2xx within 15 s is success. Otherwise retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h; a `Retry-After` on 429/503 is waited out when longer than the scheduled wait; redirects are not followed; 410 disables the endpoint at once; an endpoint whose every attempt failed for `WEBHOOK_DISABLE_AFTER_HOURS` (120) is disabled with a `webhook_endpoint.disabled` event to the others.',
  "At least once: an attempt cut short by a crash is made again after the process's lease on it runs out (twice the attempt timeout). Each endpoint receives the events of one object in commit order (a later event waits while an earlier one is still being retried), and never has two attempts of one event in flight, however many server processes share the database.",
].join('\n\n')

export const webhooksModule = (app: AppContext) => {
  app.events.on('*', async (tx, events) => {
    if ((await record(tx, events)) > 0) wakeAfterCommit(app, tx)
  })
  const cfg = app.config.webhooks
  return new Elysia({ prefix: '/api' })
    .use(routePolicy(app))
    .get('/events', ({ run, query }) => run((tx, caller) => listEvents(tx, caller.companyId, query)), {
      // A write transaction: the read gives positions to newly committed events before paging.
      policy: { ...manage, tx: 'write' },
      query: WebhookModel.eventQuery,
      response: { 200: WebhookModel.eventPage, ...errors(400) },
      detail: {
        tags: tags.events,
        summary: 'Page through the events of the company',
        description: `${FEED_NOTE}\n\nTypes: ${EVENT_TYPES.map((t) => `\`${t}\``).join(', ')}.`,
      },
    })
    .get(
      '/events/:id',
      ({ run, params }) => run(async (tx, caller) => {
        const event = await getEvent(tx, caller.companyId, params.id)
        if (!event) throw notFound('Event')
        return event
      }),
      {
        policy: manage,
        params: WebhookModel.eventParams,
        response: { 200: WebhookModel.event, ...errors(404) },
        detail: { tags: tags.events, summary: 'Get one event', description: 'An id that is not `evt_<number>`, or of another company: 404 `NOT_FOUND`.' },
      },
    )
    .post(
      '/events/:id/resend',
      ({ run, params, body }) => run(async (tx, caller) => {
        const resent = await resendEvent(tx, caller, params.id, body?.endpoint_id)
        if (resent.endpoint_ids.length) wakeAfterCommit(app, tx)
        return resent
      }),
      {
        policy: { ...manage, tx: 'write', status: 202 },
        params: WebhookModel.eventParams,
        body: t.Optional(WebhookModel.resend),
        response: { 202: WebhookModel.resent, ...errors(400, 404) },
        detail: {
          tags: tags.events,
          summary: 'Deliver an event again',
          description:
            'Queues the event for `endpoint_id`, or for every enabled endpoint subscribed to its type. A delivery of it already queued for an endpoint is reopened with a fresh retry schedule instead of doubled. Deliveries to a disabled endpoint wait until it is enabled. Unknown event or endpoint: 404.',
        },
      },
    )
    .post(
      '/webhook-endpoints',
      ({ run, body, request, path, set }) => run(async (tx, caller) => {
        // Claimed here rather than by the policy: the stored answer must hold the secret sealed, never in clear.
        const key = request.headers.get('idempotency-key')
        if (key !== null) {
          const prior = await claimKey(app, tx, idempotencyScope(caller), key, requestFingerprint('POST', path, body), 201)
          if (prior) {
            const stored = prior.body as { secret: string }
            set.status = prior.status
            return { ...stored, secret: openSecret(app.config.signingSecret, stored.secret) } as typeof WebhookModel.created.static
          }
        }
        const created = await createEndpoint(tx, caller, app.config.signingSecret, cfg, body)
        if (key !== null) await keepAnswer(tx, idempotencyScope(caller), key, { ...created, secret: sealSecret(app.config.signingSecret, created.secret) })
        set.status = 201
        return created
      }),
      {
        policy: { ...manage, tx: 'write', status: 201 },
        body: WebhookModel.create,
        headers: t.Object(
          { 'idempotency-key': t.Optional(t.String({ minLength: 1, maxLength: 255, description: 'Replays the first answer of the same request within 24 h' })) },
          { additionalProperties: true },
        ),
        response: { 201: WebhookModel.created, ...errors(400, 409, 422) },
        detail: {
          tags: tags.endpoints,
          summary: 'Subscribe a URL to events',
          description: [
            'Answers the signing `secret` once (and again only to a replay of the same `Idempotency-Key`, which is stored encrypted). Secrets are kept encrypted with the server signing secret and never appear in the audit trail or logs.',
            'Accepts `Idempotency-Key` (1–255 characters): the same key and body within 24 h answer the first response again; a different body is 409 `IDEMPOTENCY_KEY_REUSED`.',
            DELIVERY_NOTE,
          ].join('\n\n'),
        },
      },
    )
    .get('/webhook-endpoints', ({ run }) => run((tx, caller) => listEndpoints(tx, caller)), {
      policy: manage,
      response: { 200: WebhookModel.list },
      detail: { tags: tags.endpoints, summary: 'List webhook endpoints (without secrets)' },
    })
    .get('/webhook-endpoints/:id', ({ run, params }) => run((tx, caller) => getEndpoint(tx, caller, params.id)), {
      policy: manage,
      params: WebhookModel.params,
      response: { 200: WebhookModel.endpoint },
      detail: { tags: tags.endpoints, summary: 'Get a webhook endpoint (without its secret)' },
    })
    .patch(
      '/webhook-endpoints/:id',
      ({ run, params, body }) => run(async (tx, caller) => {
        const updated = await updateEndpoint(tx, caller, cfg, params.id, body)
        // Deliveries held while it was disabled go out as soon as it is enabled again.
        if (updated.enabled) wakeAfterCommit(app, tx)
        return updated
      }),
      {
        policy: { ...manage, tx: 'write' },
        params: WebhookModel.params,
        body: WebhookModel.update,
        response: { 200: WebhookModel.endpoint, ...errors(422) },
        detail: { tags: tags.endpoints, summary: 'Change a webhook endpoint', description: 'Events recorded while an endpoint is disabled are not queued for it: catch up with `GET /api/events`.' },
      },
    )
    .delete('/webhook-endpoints/:id', ({ run, params }) => run((tx, caller) => deleteEndpoint(tx, caller, params.id)), {
      policy: { ...manage, tx: 'write' },
      params: WebhookModel.params,
      response: { 200: WebhookModel.deleted },
      detail: { tags: tags.endpoints, summary: 'Delete a webhook endpoint (soft)', description: 'Nothing more is sent to it; later reads answer 404.' },
    })
    .post('/webhook-endpoints/:id/rotate-secret', ({ run, params }) => run((tx, caller) => rotateSecret(tx, caller, app.config.signingSecret, params.id)), {
      policy: { ...manage, tx: 'write', status: 200 },
      params: WebhookModel.params,
      response: { 200: WebhookModel.rotated },
      detail: {
        tags: tags.endpoints,
        summary: 'Rotate the signing secret',
        description: 'The new secret signs from now on; the one it replaces also signs (a second signature in `webhook-signature`) for 24 h, so a receiver can switch over without losing a delivery.',
      },
    })
    .post('/webhook-endpoints/:id/test', ({ run, params }) => run((tx, caller) => sendTest(tx, caller, params.id)), {
      policy: { ...manage, tx: 'write', status: 202 },
      params: WebhookModel.params,
      response: { 202: WebhookModel.tested },
      detail: { tags: tags.endpoints, summary: 'Send a test ping', description: 'Records a `webhook.test` event (its object is the endpoint) queued for this endpoint only.' },
    })
    .get('/webhook-endpoints/:id/attempts', ({ run, params, query }) => run((tx, caller) => listAttempts(tx, caller, params.id, query)), {
      policy: manage,
      params: WebhookModel.params,
      query: WebhookModel.attemptQuery,
      response: { 200: WebhookModel.attempts, ...errors(400) },
      detail: { tags: tags.endpoints, summary: 'The attempt log of an endpoint, newest first', description: DELIVERY_NOTE },
    })
}
