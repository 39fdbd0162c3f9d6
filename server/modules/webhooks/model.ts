import { t } from 'elysia'
import { DateTime, Id, pageQuery, Pagination } from '../../lib/models'
import { EVENT_TYPES } from './outbox'

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
  endpoint: t.Object(endpointFields, { $id: 'WebhookEndpoint' }),
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

type Json = Record<string, unknown>
type EventType = (typeof EVENT_TYPES)[number]

/**
 * The resource each event carries as `data.object`: the component schema of the resource as its own GET answers
 * it (attachments without `signed_url`); `satisfies` makes a new event type in the outbox a type error here until
 * it is described.
 */
const EVENT_OBJECTS = {
  'client.created': 'Client',
  'client.updated': 'Client',
  'client.deleted': 'Client',
  'account.created': 'Account',
  'operation.created': 'Operation',
  'operation.approved': 'Operation',
  'operation.reverted': 'Operation',
  'operation.cancelled': 'Operation',
  'attachment.created': 'Attachment',
  'attachment.deleted': 'Attachment',
  'cost_center.created': 'CostCenter',
  'cost_center.updated': 'CostCenter',
  'messaging_tool.created': 'MessagingTool',
  'messaging_tool.updated': 'MessagingTool',
  'messaging_tool.deleted': 'MessagingTool',
  'mesa_line.created': 'MesaLine',
  'mesa_line.deleted': 'MesaLine',
  'ventanilla_ticket.created': 'VentanillaTicket',
  'ventanilla_ticket.called': 'VentanillaTicket',
  'ventanilla_ticket.finished': 'VentanillaTicket',
  'ventanilla_ticket.no_show': 'VentanillaTicket',
  'ventanilla_ticket.transferred': 'VentanillaTicket',
  'till_session.opened': 'TillSession',
  'till_session.closed': 'TillSession',
  'webhook_endpoint.disabled': 'WebhookEndpoint',
  'webhook.test': 'WebhookEndpoint',
} as const satisfies Record<EventType, string>

/** Facts an event adds beside `object`, by the family of its type. */
const EVENT_FACTS: Partial<Record<string, { properties: Json; note: string }>> = {
  attachment: {
    properties: { operation_id: { type: 'integer', description: 'The operation the file belongs to' } },
    note: '`data.operation_id` names the operation the file belongs to.',
  },
  operation: {
    properties: {
      channel: { type: 'string', enum: ['messaging', 'twin'], description: 'Present when a messaging tool run made the operation' },
      requested_by: {
        type: 'object',
        description: 'Who asked for that run, as `draft.requested_by` of `POST /api/messaging/tools/{id}/run` answers it',
      },
    },
    note: 'An operation made by a messaging tool run adds `data.channel` and `data.requested_by`.',
  },
}

const STANDARD_WEBHOOKS_HEADERS = [
  { name: 'webhook-id', description: 'The event id (`evt_…`): the same on every attempt of it, so deduplicate on it' },
  { name: 'webhook-timestamp', description: 'Seconds since the epoch when this attempt was signed; refuse one more than 5 minutes off' },
  {
    name: 'webhook-signature',
    description: '`v1,<base64 HMAC-SHA256 of id.timestamp.body>` with the endpoint\'s secret; two, space-separated, for 24 h after a rotation',
  },
].map((h) => ({ ...h, in: 'header', required: true, schema: { type: 'string' } }))

const pascal = (type: string) =>
  type
    .split(/[._]/)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('')

/**
 * What each event delivers, for the document's `webhooks` (OpenAPI 3.1): one entry per type of the outbox, a POST
 * to the subscriber's URL whose body is the event envelope `{ id, type, created_at, data: { object } }`, each
 * envelope a named schema (`OperationApprovedEvent`, …). See docs/webhooks.md.
 */
export function webhookDocument(): { webhooks: Json; schemas: Json } {
  const webhooks: Json = {}
  const schemas: Json = {}
  for (const type of EVENT_TYPES) {
    const name = `${pascal(type)}Event`
    const facts = EVENT_FACTS[type.split('.')[0]]
    schemas[name] = {
      type: 'object',
      description: `The \`${type}\` event: \`data.object\` is the ${EVENT_OBJECTS[type]} as its GET answered it in the transaction that made the change.${facts ? ` ${facts.note}` : ''}`,
      required: ['id', 'type', 'created_at', 'data'],
      properties: {
        id: { type: 'string', pattern: '^evt_[0-9]+$', description: '`evt_` and a number; the `webhook-id` header' },
        type: { type: 'string', const: type },
        created_at: { type: 'string', format: 'date-time', description: 'When the change committed' },
        data: {
          type: 'object',
          required: ['object'],
          properties: { object: { $ref: `#/components/schemas/${EVENT_OBJECTS[type]}` }, ...facts?.properties },
        },
      },
    }
    webhooks[type] = {
      post: {
        operationId: `webhook_${type.replace('.', '_')}`,
        tags: ['Webhooks'],
        summary: `${type}: a ${EVENT_OBJECTS[type]}`,
        description:
          'Sent signed (Standard Webhooks) to every enabled endpoint subscribed to this type, its family (`' +
          `${type.split('.')[0]}.*` +
          '`) or `*`. Answer 2xx within 15 s; anything else is retried on the schedule, `410` disables the endpoint. At least once: deduplicate on `webhook-id`.',
        security: [],
        parameters: STANDARD_WEBHOOKS_HEADERS,
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: `#/components/schemas/${name}` } } } },
        responses: {
          '200': { description: 'Received (any 2xx will do); slow work belongs after the answer' },
          '410': { description: 'Gone: the endpoint is disabled at once, nothing more is sent to it' },
          default: { description: 'Anything else, or no answer within 15 s: the delivery is retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h (a longer `Retry-After` on 429 or 503 is waited out)' },
        },
      },
    }
  }
  return { webhooks, schemas }
}
