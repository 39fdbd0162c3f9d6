import { Elysia } from 'elysia'
import type { AppContext } from '../../context'
import { routePolicy } from '../../access/policy'
import { errors } from '../../lib/models'
import { AuditModel } from './model'
import { listAuditLogs } from './service'
import { listDigests, verifyChain } from './chain'
import { signingKey } from './signing-key'
import { asOf, exportTx } from '../exports/limits'

const CANONICAL = [
  'The chain: every audit row of the company gets, within seconds of its commit, a place `seq` (1, 2, 3, … without gaps, in the order rows became visible, i.e. commit order),',
  '`prev_hash` (the hash of the place before; 64 zeros before seq 1) and `hash` = hex SHA-256 over the UTF-8 bytes of `prev_hash` immediately followed by the row\'s canonical JSON.',
  'The canonical JSON is the object `{ id, entity, entity_id, action, raw_action, actor_email, channel, channel_detail, timestamp, before, after }` of the row as stored',
  '(`timestamp` as `YYYY-MM-DDTHH:MM:SS.ffffffZ` in UTC; `before`, `after`, `channel_detail` the stored snapshots, null when absent) written the way Postgres writes jsonb:',
  'keys ordered shorter first, then bytewise; `", "` between members and `": "` after keys; numbers exactly as stored. SECURITY.md shows how to recompute it.',
].join(' ')

export const auditModule = (app: AppContext) =>
  new Elysia({ prefix: '/api' })
    .use(routePolicy(app))
    .get(
      '/audit-logs',
      // One snapshot, so the total agrees with the page; row-level security confines it to the company as well.
      ({ run, query }) => run((tx, caller) => listAuditLogs(tx, caller, query)),
      {
        policy: { permission: 'audit.view', tx: 'snapshot' },
        query: AuditModel.query,
        response: { 200: AuditModel.page, ...errors(400) },
        detail: {
          tags: ['Audit'],
          summary: 'Read the audit trail of the company',
          description: [
            'Every insert, update and delete of every company table, written by the database in the same transaction, newest first',
            '(`timestamp` descending, then `id` descending). The company of the changed row decides who sees it, never the actor.',
            'pageSize defaults to 50, at most 100. An employee key needs `audit.view`; a company key sees the whole company.',
            'An employee limited to some clients sees only rows of operations and transactions visible under that limit; any other',
            '`table` gives that employee an empty page. `actor` names the current employee with the recorded email (id and name',
            'null when there is none, all fields null for a company-key write). `channel_detail` is `{}` when the row has no channel.',
            '`seq` and `hash` place the row in the company\'s tamper-evident chain (null for the few seconds before it is sealed).',
          ].join(' '),
        },
      },
    )
    .get(
      '/audit-logs/verify',
      // On the export pool, so DATABASE_READ_URL (a standby) takes this long read off the primary.
      ({ caller, query }) =>
        exportTx(app, caller, 'snapshot', async (tx) => {
          const at = await asOf(tx)
          return { ...(await verifyChain(tx, caller.companyId, query.from_seq, query.to_seq)), as_of: at }
        }),
      {
        policy: { permission: 'audit.view', unscoped: true, tx: 'none' },
        query: AuditModel.verifyQuery,
        response: { 200: AuditModel.verifyResult, ...errors(400) },
        detail: {
          tags: ['Audit'],
          summary: 'Recompute the audit chain and name the first break',
          description: [
            'Recomputes every hash of the range `[from_seq, to_seq]` (default: the whole chain; `to_seq` past the head stops at the head) from the rows as',
            'stored, in one snapshot and one statement. A row changed behind the service\'s back is a `hash_mismatch` at its place; a row removed (or moved to another company) is a',
            '`gap` at its place; a row inserted (or a row whose link was rewritten) is a `prev_mismatch` at the first place that no longer links to the one',
            'before it. Only the first break is named; the rest of the range is still counted in `rows`. Rows not yet sealed are not part of the chain.',
            'The chain alone cannot show rows cut off after the last place, nor a history rewritten whole from some place on with every hash recomputed:',
            'the daily digests, kept by the company outside the service, are what prove those. `from_seq` after `to_seq` → 400.',
            CANONICAL,
          ].join(' '),
        },
      },
    )
    .get(
      '/audit-logs/digests',
      ({ run, query }) => run((tx, caller) => listDigests(tx, caller.companyId, signingKey(app.config).privateKey, query.page, query.pageSize)),
      {
        policy: { permission: 'audit.view', unscoped: true, tx: 'snapshot' },
        query: AuditModel.digestQuery,
        response: { 200: AuditModel.digests, ...errors(400) },
        detail: {
          tags: ['Audit'],
          summary: 'Signed daily digests of the audit chain',
          description: [
            'One digest per finished company day (days end at midnight in the company\'s time zone), newest first: `seq` and `hash` of the chain head as it',
            'stood at the end of that day (the last row sealed before midnight). Digests start on the day of the company\'s first sealed row and then',
            'follow every day without a gap; a day without new rows repeats the head of the day before. They are made by the service within about a',
            'minute after midnight and never change. `signature` is the base64 Ed25519 signature, with the key of GET /api/audit-logs/digest-key, over the',
            'UTF-8 bytes of `company_id.date.seq.hash` (e.g. `12.2026-11-22.4821.9f86d0…`). Keep them outside the service: a later',
            '`GET /api/audit-logs/verify?to_seq={seq}` whose `head.hash` equals the kept `hash`, with `verified: true` over the whole chain, proves the',
            'history up to that day was not rewritten since. pageSize defaults to 50, at most 100.',
          ].join(' '),
        },
      },
    )
    .get('/audit-logs/digest-key', () => ({ alg: 'Ed25519' as const, public_key: signingKey(app.config).publicPem }), {
      policy: { permission: 'audit.view' },
      response: { 200: AuditModel.digestKey },
      detail: {
        tags: ['Audit'],
        summary: 'The public key that signs the audit digests',
        description:
          'Ed25519 public key as SPKI PEM: `crypto.verify(null, Buffer.from(`${company_id}.${date}.${seq}.${hash}`), public_key, Buffer.from(signature, "base64"))` in Node.js. It stays the same across restarts (AUDIT_SIGNING_KEY, or the key generated once under DATA_DIR).',
      },
    })
