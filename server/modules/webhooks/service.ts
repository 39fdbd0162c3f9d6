import { and, count, desc, eq, isNull, sql } from 'drizzle-orm'
import { webhookAttempts, webhookEndpoints } from '../../../db/schema'
import { rowsOf, type Executor, type Tx } from '../../../db/client'
import type { Caller } from '../../access/caller'
import type { WebhookConfig } from '../../config'
import { announce } from '../../lib/events'
import { invalid, notFound, unprocessable } from '../../lib/errors'
import { pgArray } from '../../lib/arrays'
import { iso, pagination } from '../../lib/models'
import { refusal } from './address'
import { EVENT_TYPES, eventId, eventNumber, patternsOf } from './outbox'

export { EVENT_TYPES } from './outbox'
import { newEndpointSecret, sealSecret } from './secrets'


const KNOWN_FILTERS = new Set(['*', ...EVENT_TYPES, ...EVENT_TYPES.map((t) => `${t.split('.')[0]}.*`)])

/** How long a rotated-out secret keeps signing beside the new one. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000

type EndpointRow = typeof webhookEndpoints.$inferSelect

export const endpointDto = (r: EndpointRow) => ({
  id: r.id,
  url: r.url,
  event_types: r.eventTypes,
  description: r.description,
  enabled: r.enabled,
  disabled_reason: r.disabledReason,
  created_at: r.createdAt.toISOString(),
  updated_at: r.updatedAt.toISOString(),
})

export interface EndpointInput {
  url: string
  event_types?: string[]
  description?: string
  enabled?: boolean
}

function checkFilters(types: string[] | undefined): string[] | undefined {
  if (types === undefined) return undefined
  const unknown = types.map((t, i) => ({ t, i })).filter(({ t }) => !KNOWN_FILTERS.has(t))
  if (unknown.length)
    throw invalid(
      'Unknown event types',
      unknown.map(({ t, i }) => ({ field: `event_types[${i}]`, message: `unknown event type "${t}"` })),
    )
  return [...new Set(types)]
}

async function checkUrl(url: string, rules: WebhookConfig) {
  const why = await refusal(url, rules)
  if (why) throw unprocessable('WEBHOOK_URL_NOT_ALLOWED', `This URL may not receive webhooks: ${why}`, [{ field: 'url', message: why }])
}

async function liveEndpoint(db: Executor, companyId: number, id: number): Promise<EndpointRow> {
  const [row] = await db
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.companyId, companyId), isNull(webhookEndpoints.deletedAt)))
  if (!row) throw notFound('Webhook endpoint')
  return row
}

export async function createEndpoint(tx: Tx, caller: Caller, signingSecret: string, rules: WebhookConfig, input: EndpointInput) {
  const eventTypes = checkFilters(input.event_types) ?? ['*']
  await checkUrl(input.url, rules)
  const secret = newEndpointSecret()
  const [row] = await tx
    .insert(webhookEndpoints)
    .values({
      companyId: caller.companyId,
      url: input.url,
      eventTypes,
      description: input.description ?? '',
      enabled: input.enabled ?? true,
      secretCiphertext: sealSecret(signingSecret, secret),
    })
    .returning()
  return { ...endpointDto(row), secret }
}

export async function listEndpoints(db: Executor, caller: Caller) {
  const rows = await db
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.companyId, caller.companyId), isNull(webhookEndpoints.deletedAt)))
    .orderBy(webhookEndpoints.id)
  return { data: rows.map(endpointDto) }
}

export const getEndpoint = async (db: Executor, caller: Caller, id: number) => endpointDto(await liveEndpoint(db, caller.companyId, id))

export async function updateEndpoint(tx: Tx, caller: Caller, rules: WebhookConfig, id: number, input: Partial<EndpointInput>) {
  const current = await liveEndpoint(tx, caller.companyId, id)
  const eventTypes = checkFilters(input.event_types)
  if (input.url !== undefined && input.url !== current.url) await checkUrl(input.url, rules)
  // Enabling again starts a fresh record: the failures that disabled it no longer count towards the next disable.
  const reenabled = input.enabled === true && !current.enabled
  const [row] = await tx
    .update(webhookEndpoints)
    .set({
      ...(input.url !== undefined && { url: input.url }),
      ...(eventTypes !== undefined && { eventTypes }),
      ...(input.description !== undefined && { description: input.description }),
      ...(input.enabled !== undefined && { enabled: input.enabled }),
      ...(reenabled && { disabledReason: null, failingSince: null }),
      updatedAt: sql`now()`,
    })
    .where(eq(webhookEndpoints.id, current.id))
    .returning()
  return endpointDto(row)
}

export async function deleteEndpoint(tx: Tx, caller: Caller, id: number) {
  const current = await liveEndpoint(tx, caller.companyId, id)
  await tx.update(webhookEndpoints).set({ deletedAt: sql`now()`, enabled: false, updatedAt: sql`now()` }).where(eq(webhookEndpoints.id, current.id))
  return { deleted: true as const }
}

/** A new secret; the current one keeps signing beside it for 24 h, so receivers can switch without losing a delivery. */
export async function rotateSecret(tx: Tx, caller: Caller, signingSecret: string, id: number) {
  const current = await liveEndpoint(tx, caller.companyId, id)
  const secret = newEndpointSecret()
  await tx
    .update(webhookEndpoints)
    .set({
      secretCiphertext: sealSecret(signingSecret, secret),
      previousSecretCiphertext: current.secretCiphertext,
      previousSecretExpiresAt: sql`now() + make_interval(secs => ${ROTATION_OVERLAP_MS / 1000})`,
      updatedAt: sql`now()`,
    })
    .where(eq(webhookEndpoints.id, current.id))
  return { secret }
}

/** A `webhook.test` event, queued for this endpoint only (when it is enabled). */
export async function sendTest(tx: Tx, caller: Caller, id: number) {
  const endpoint = endpointDto(await liveEndpoint(tx, caller.companyId, id))
  await announce(tx, {
    type: 'webhook.test',
    companyId: caller.companyId,
    object: { kind: 'webhook_endpoint', id },
    render: async () => endpoint,
  })
  return { queued: endpoint.enabled }
}

/**
 * Queues `event` again for one endpoint, or for every enabled endpoint that subscribes to its type. A delivery
 * already queued is reopened (its attempt count starts over) rather than duplicated, so an endpoint still never
 * has two attempts of one event in flight.
 */
export async function resendEvent(tx: Tx, caller: Caller, rawId: string, endpointId?: number) {
  const n = eventNumber(rawId)
  const [event] =
    n === null
      ? []
      : rowsOf<{ id: number; type: string; object_kind: string; object_id: number }>(
          await tx.execute(sql`select id, type, object_kind, object_id from events where id = ${n} and company_id = ${caller.companyId}`),
        )
  if (!event) throw notFound('Event')
  if (endpointId !== undefined) await liveEndpoint(tx, caller.companyId, endpointId)
  // A named endpoint gets it even while disabled (it was just found live); otherwise every endpoint that takes it.
  const targets =
    endpointId !== undefined
      ? sql`(values (${endpointId}::int)) as w(id)`
      : sql`webhook_targets(${caller.companyId}, ${pgArray(patternsOf(event.type), 'text')}) as w(id)`
  const queued = rowsOf<{ endpoint_id: number }>(
    await tx.execute(sql`insert into webhook_deliveries (company_id, endpoint_id, event_id, object_key)
      select ${caller.companyId}, w.id, ${event.id}, ${`${event.object_kind}:${event.object_id}`} from ${targets}
      on conflict (endpoint_id, event_id) do update
        set status = 'pending', attempts = 0, next_attempt_at = now(), generation = webhook_deliveries.generation + 1, updated_at = now()
      returning endpoint_id`),
  )
  return { event_id: eventId(event.id), endpoint_ids: queued.map((q) => q.endpoint_id).sort((a, b) => a - b) }
}

export async function listAttempts(db: Executor, caller: Caller, id: number, q: { page?: number; pageSize?: number }) {
  const endpoint = await liveEndpoint(db, caller.companyId, id)
  const page = q.page ?? 1
  const pageSize = q.pageSize ?? 50
  const a = webhookAttempts
  const where = and(eq(a.endpointId, endpoint.id), eq(a.companyId, caller.companyId))
  const [[{ total }], rows] = await Promise.all([
    db.select({ total: count() }).from(a).where(where),
    db.select().from(a).where(where).orderBy(desc(a.id)).limit(pageSize).offset((page - 1) * pageSize),
  ])
  return {
    data: rows.map((r) => ({
      id: r.id,
      event_id: eventId(r.eventId),
      attempt: r.attempt,
      status: r.status as 'succeeded' | 'failed' | 'pending',
      response_status: r.responseStatus,
      response_ms: r.responseMs,
      error: r.error,
      created_at: r.createdAt.toISOString(),
      next_attempt_at: iso(r.nextAttemptAt),
    })),
    pagination: pagination(page, pageSize, total),
  }
}
