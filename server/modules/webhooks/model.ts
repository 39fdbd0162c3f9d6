import { t } from 'elysia'
import { DateTime, Id, pageQuery, Pagination } from '../../lib/models'

const Url = t.String({
  minLength: 1,
  maxLength: 2000,
  description:
    '`https://` only (also `http://` with `WEBHOOK_ALLOW_HTTP=true`). A host that is or resolves to a loopback, private, link-local, CGNAT or cloud-metadata address is refused with 422 `WEBHOOK_URL_NOT_ALLOWED` (unless `WEBHOOK_ALLOW_PRIVATE=true`); the same check runs again before every attempt, and redirects are never followed.',
})
const EventTypes = t.Array(t.String({ minLength: 1, maxLength: 100 }), {
  minItems: 1,
  maxItems: 100,
  description: '`*` (every type), a family such as `operation.*`, or exact types such as `operation.approved`. Default `["*"]`.',
})

const endpointFields = {
  id: t.Integer(),
  url: t.String(),
  event_types: t.Array(t.String()),
  description: t.String(),
  enabled: t.Boolean(),
  disabled_reason: t.Union([t.String(), t.Null()], { description: 'Why the service disabled it (410 Gone, or failing for `WEBHOOK_DISABLE_AFTER_HOURS`); null otherwise' }),
  created_at: DateTime,
  updated_at: DateTime,
}

const Secret = t.String({ description: 'Standard Webhooks signing secret: `whsec_` + base64 of 32 bytes. Shown only here: store it.' })

const Event = t.Object(
  {
    id: t.String({ description: '`evt_` and a number' }),
    type: t.String(),
    created_at: DateTime,
    data: t.Object(
      {
        object: t.Any({ description: 'The resource as its own GET returned it in the transaction that made the change (attachments without `signed_url`)' }),
        channel: t.Optional(t.String({ description: '`messaging` or `twin`: the operation was made by a messaging tool run' })),
        requested_by: t.Optional(t.Any({ description: 'The `requested_by` of that run' })),
      },
      { additionalProperties: true },
    ),
  },
  { title: 'Event' },
)

export const WebhookModel = {
  event: Event,
  eventParams: t.Object({ id: t.String({ maxLength: 40, description: 'Event id, `evt_…`' }) }),
  eventPage: t.Object({
    data: t.Array(Event),
    next_cursor: t.String({ description: 'Pass as `after` to get the events that follow; never null' }),
  }),
  eventQuery: t.Object({
    after: t.Optional(t.String({ minLength: 1, maxLength: 200, description: 'An event id (`evt_…`) or a `next_cursor`; omitted: from the oldest kept event' })),
    limit: t.Optional(t.Integer({ minimum: 1, maximum: 500, default: 100 })),
    type: t.Optional(t.String({ maxLength: 2000, description: 'Comma list of exact event types' })),
  }),
  resend: t.Object(
    { endpoint_id: t.Optional(t.Integer({ minimum: 1, maximum: 2147483647, description: 'Only this endpoint (even one that does not subscribe to the type); omitted: every enabled endpoint subscribed to it' })) },
    { additionalProperties: false },
  ),
  resent: t.Object({ event_id: t.String(), endpoint_ids: t.Array(t.Integer()) }),
  create: t.Object(
    { url: Url, event_types: t.Optional(EventTypes), description: t.Optional(t.String({ maxLength: 500 })), enabled: t.Optional(t.Boolean()) },
    { additionalProperties: false },
  ),
  update: t.Object(
    {
      url: t.Optional(Url),
      event_types: t.Optional(EventTypes),
      description: t.Optional(t.String({ maxLength: 500 })),
      enabled: t.Optional(t.Boolean({ description: 'true again after a disable clears `disabled_reason`; deliveries still queued resume' })),
    },
    { additionalProperties: false },
  ),
  endpoint: t.Object(endpointFields, { title: 'WebhookEndpoint' }),
  created: t.Object({ ...endpointFields, secret: Secret }, { title: 'WebhookEndpointWithSecret' }),
  list: t.Object({ data: t.Array(t.Object(endpointFields)) }),
  deleted: t.Object({ deleted: t.Literal(true) }),
  rotated: t.Object({ secret: Secret }),
  tested: t.Object({ queued: t.Boolean({ description: 'false when the endpoint is disabled: nothing is sent' }) }),
  params: t.Object({ id: Id }),
  attemptQuery: t.Object(pageQuery()),
  attempts: t.Object({
    data: t.Array(
      t.Object({
        id: t.Integer(),
        event_id: t.String(),
        attempt: t.Integer({ description: '1 for the first attempt of a delivery' }),
        status: t.Union([t.Literal('succeeded'), t.Literal('failed'), t.Literal('pending')], { description: '`pending`: in flight' }),
        response_status: t.Union([t.Integer(), t.Null()]),
        response_ms: t.Union([t.Integer(), t.Null()]),
        error: t.Union([t.String(), t.Null()]),
        created_at: DateTime,
        next_attempt_at: t.Union([DateTime, t.Null()], { description: 'When the next attempt of this delivery is due after this failure; null when none' }),
      }),
    ),
    pagination: Pagination,
  }),
}
