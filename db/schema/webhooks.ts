import { sql } from 'drizzle-orm'
import { bigint, bigserial, boolean, index, integer, jsonb, pgSequence, pgTable, serial, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { companyId, deletedAt, timestamps } from './columns'

/** Feed positions, handed out to committed events by the sealing step of `GET /api/events`. */
export const eventsFeedSeq = pgSequence('events_feed_seq')

/**
 * The outbox: one row per thing that happened, written by the transaction that made it happen. `id` is taken at
 * insert, so ids do not follow commit order; `seq` is given only once the event has committed, by one sealer per
 * company at a time, so an event that commits late gets a later position and never lands behind a cursor already
 * handed out (server/modules/webhooks/outbox.ts).
 */
export const events = pgTable(
  'events',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    companyId: companyId(),
    type: text('type').notNull(),
    objectKind: text('object_kind').notNull(),
    objectId: integer('object_id').notNull(),
    /** The event's `data`: `{ object, ...facts }`, the object as its own GET returned it in that transaction. */
    data: jsonb('data').notNull(),
    seq: bigint('seq', { mode: 'number' }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('events_company_feed').on(t.companyId, t.seq),
    index('events_unsealed').on(t.companyId, t.id).where(sql`${t.seq} is null`),
    index('events_created').on(t.createdAt),
  ],
)

export const webhookEndpoints = pgTable(
  'webhook_endpoints',
  {
    id: serial('id').primaryKey(),
    companyId: companyId(),
    url: text('url').notNull(),
    /** `["*"]`, exact types (`operation.approved`) or families (`operation.*`). */
    eventTypes: text('event_types').array().notNull(),
    description: text('description').notNull().default(''),
    enabled: boolean('enabled').notNull().default(true),
    disabledReason: text('disabled_reason'),
    /** AES-256-GCM under a key derived from SIGNING_SECRET; db/sql/audit.sql keeps both out of audit snapshots. */
    secretCiphertext: text('secret_ciphertext').notNull(),
    previousSecretCiphertext: text('previous_secret_ciphertext'),
    previousSecretExpiresAt: timestamp('previous_secret_expires_at', { withTimezone: true, mode: 'date' }),
    /** Start of the current run of failed attempts; null after a success. */
    failingSince: timestamp('failing_since', { withTimezone: true, mode: 'date' }),
    ...timestamps,
    deletedAt: deletedAt(),
  },
  (t) => [index('webhook_endpoints_company').on(t.companyId)],
)

/** The delivery queue: one row per endpoint and event, claimed by one worker at a time through `locked_until`. */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    companyId: companyId(),
    endpointId: integer('endpoint_id').notNull(),
    eventId: bigint('event_id', { mode: 'number' }).notNull(),
    /** `kind:id` of the event's object: one object's events go to an endpoint in event id order. */
    objectKey: text('object_key').notNull(),
    /** pending | succeeded | failed */
    status: text('status').notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    /** Lease of the worker sending it; past it, the attempt is taken as lost (a crash) and made again. */
    lockedUntil: timestamp('locked_until', { withTimezone: true, mode: 'date' }),
    /**
     * The worker holding the lease: a worker that lost its database connection mid-claim does not know what it
     * claimed, and gives back its own leases that it is not sending instead of leaving them to run out.
     */
    lockedBy: uuid('locked_by'),
    /** Bumped by a resend, so an attempt already in flight does not close the delivery the resend reopened. */
    generation: integer('generation').notNull().default(0),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('webhook_deliveries_endpoint_event').on(t.endpointId, t.eventId),
    // The claim walks this in order and stops at its limit: its cost does not grow with the backlog.
    index('webhook_deliveries_due').on(t.endpointId, t.nextAttemptAt, t.eventId).where(sql`${t.status} = 'pending'`),
    // Is an earlier event of the same object still pending for the endpoint? One probe.
    index('webhook_deliveries_object').on(t.endpointId, t.objectKey, t.eventId).where(sql`${t.status} = 'pending'`),
    // Attempts in flight per endpoint, counted before each claim.
    index('webhook_deliveries_leased').on(t.endpointId).where(sql`${t.status} = 'pending' and ${t.lockedUntil} is not null`),
  ],
)

export const webhookAttempts = pgTable(
  'webhook_attempts',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    companyId: companyId(),
    deliveryId: bigint('delivery_id', { mode: 'number' }).notNull(),
    endpointId: integer('endpoint_id').notNull(),
    eventId: bigint('event_id', { mode: 'number' }).notNull(),
    attempt: integer('attempt').notNull(),
    /** pending (in flight) | succeeded | failed */
    status: text('status').notNull().default('pending'),
    responseStatus: integer('response_status'),
    responseMs: integer('response_ms'),
    error: text('error'),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true, mode: 'date' }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [index('webhook_attempts_endpoint').on(t.endpointId, t.id), index('webhook_attempts_delivery').on(t.deliveryId)],
)
