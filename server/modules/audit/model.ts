import { t } from 'elysia'
import { DateTime, pageQuery, Pagination } from '../../lib/models'

/** A date, or a date-time with or without its offset; the calendar and the clock are checked by `parseBound`. */
const BOUND_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2}([Tt][0-9]{2}:[0-9]{2}(:[0-9]{2}([.][0-9]{1,9})?)?([Zz]|[+-][0-9]{2}:[0-9]{2})?)?$'

const bound = (which: 'from' | 'to') =>
  t.String({
    maxLength: 40,
    pattern: BOUND_PATTERN,
    examples: which === 'from' ? ['2026-11-01', '2026-11-01T03:00:00Z'] : ['2026-11-30', '2026-12-01T02:59:59.999Z'],
    description:
      which === 'from'
        ? 'Lower bound, inclusive: an ISO 8601 date-time (UTC when it has no offset), or a date YYYY-MM-DD meaning that day 00:00 Argentina time (UTC−03:00).'
        : 'Upper bound, inclusive: an ISO 8601 date-time (the whole millisecond it names is included; UTC when it has no offset), or a date YYYY-MM-DD meaning that day up to 23:59:59.999 Argentina time (UTC−03:00).',
  })

// Unions of literals, not t.UnionEnum: in a query Elysia fills an absent UnionEnum with its first value.
const action = (description?: string) =>
  t.Union([t.Literal('create'), t.Literal('update'), t.Literal('cancel'), t.Literal('revert'), t.Literal('delete')], { description })
const channel = (description?: string) =>
  t.Union([t.Literal('messaging'), t.Literal('twin'), t.Literal('cli'), t.Literal('setup'), t.Literal('dispenser'), t.Literal('dashboard')], { description })

const actor = t.Object(
  {
    id: t.Union([t.Integer(), t.Null()], { description: 'Null when the email matches no current employee of the company' }),
    name: t.Union([t.String(), t.Null()]),
    email: t.Union([t.String(), t.Null()], { description: 'As recorded by the audit trail; null for company-key writes' }),
  },
  { description: 'PublicAuditActor: all fields null for a change made with a company key.' },
)

const snapshot = t.Record(t.String(), t.Any(), {
  description:
    'Row snapshot with the column names of the table; `{}` before a create and after a hard delete. Timestamps are ISO 8601 UTC with `Z` (microseconds kept). Key hashes and secrets are never recorded.',
})

const entry = t.Object({
  id: t.Integer(),
  entity: t.String({ description: 'Plural table name' }),
  entity_id: t.Integer(),
  action: action(),
  raw_action: t.Union([t.Literal('INSERT'), t.Literal('UPDATE'), t.Literal('DELETE')]),
  actor,
  channel: t.Union([t.String(), t.Null()], { description: '`messaging` or `twin` for rows of operations made by a tool run (and their transactions); `cli` for changes made with the operator CLI (`bun run admin`), `setup` for the first-run setup, `dispenser` for tickets taken at a dispenser; else null' }),
  channel_detail: t.Record(t.String(), t.Any(), {
    description: '`{ requested_by: { contact_id, phone, employee { id, name }, client { id, name } } }` for tool-run rows; `{ dispenser: { id, name } }` for a dispenser\'s; `{}` otherwise.',
  }),
  timestamp: DateTime,
  before: snapshot,
  after: snapshot,
  changes: t.Array(t.Object({ field: t.String(), before: t.Any(), after: t.Any() })),
  seq: t.Union([t.Integer({ minimum: 1 }), t.Null()], {
    description: "Place in the company's audit chain (1, 2, 3, … in commit order); null until sealed, within seconds of the commit.",
  }),
  hash: t.Union([t.String({ pattern: '^[0-9a-f]{64}$' }), t.Null()], {
    description: 'Hex SHA-256 over the previous place\'s hash and this row\'s canonical JSON (see GET /api/audit-logs/verify); null until sealed.',
  }),
}, { $id: 'AuditEntry' })

const Hex64 = t.String({ pattern: '^[0-9a-f]{64}$' })
const seqParam = (which: string) =>
  t.Optional(t.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: `${which} place of the range, inclusive` }))

const verifyResult = t.Object({
  as_of: t.String({ format: 'date-time', description: 'When the chain was read as of: read from a standby (DATABASE_READ_URL), the last commit it had replayed' }),
  verified: t.Boolean({ description: 'true when every row of the range recomputes and links to the one before' }),
  rows: t.Integer({ description: 'Sealed rows found in the range' }),
  first_seq: t.Union([t.Integer(), t.Null()], { description: 'First place found in the range; null when it holds none' }),
  last_seq: t.Union([t.Integer(), t.Null()], { description: 'Last place found in the range; null when it holds none' }),
  head: t.Object(
    { seq: t.Integer(), hash: t.String() },
    {
      description:
        'Place and stored hash of the last row of the range (with the default range: the chain head). With no row in the range: the chain head, `{ seq: 0, hash: 64 zeros }` for an empty chain.',
    },
  ),
  broken: t.Union(
    [
      t.Object({
        seq: t.Integer(),
        reason: t.Union([t.Literal('hash_mismatch'), t.Literal('gap'), t.Literal('prev_mismatch')]),
      }),
      t.Null(),
    ],
    {
      description:
        'The first break: `gap` (no row holds this place: removed, or moved), `prev_mismatch` (the row does not link to the hash of the row before: a row inserted or rewritten before it), `hash_mismatch` (the row\'s content no longer gives its hash: changed).',
    },
  ),
})

const digest = t.Object({
  date: t.String({ format: 'date', description: "The company day (the company's time zone)" }),
  seq: t.Integer({ description: 'The chain head at the end of that day' }),
  hash: Hex64,
  signature: t.String({ description: 'base64 Ed25519 signature over the UTF-8 bytes of `company_id.date.seq.hash`' }),
})

export const AuditModel = {
  query: t.Object({
    table: t.Optional(
      t.String({
        maxLength: 64,
        description:
          'Table name (`operations`, `transactions`, `accounts`, `clients`, `mesas`, …) or its singular alias (`operation`, `transaction`, …); case-insensitive. Unknown → 400 VALIDATION_ERROR. Default: every audited table of the company.',
      }),
    ),
    from: t.Optional(bound('from')),
    to: t.Optional(bound('to')),
    employee_id: t.Optional(
      t.Integer({
        minimum: 1,
        maximum: 2147483647,
        description: "An employee of the company (deleted ones too); rows changed under that employee's email. An unknown id gives an empty page.",
      }),
    ),
    action: t.Optional(action('Mapped action')),
    channel: t.Optional(
      channel(
        'Only rows made through a messaging tool run (`messaging`) or its twin (`twin`), the operator CLI (`cli`) or the first-run setup (`setup`). `dashboard` is accepted because the interface names it as a channel value, but no row carries it (changes made through the API have a null channel), so it gives an empty page. Rows without a channel cannot be selected by this filter; any other value is 400.',
      ),
    ),
    ...pageQuery(100),
  }),
  entry,
  page: t.Object({ data: t.Array(entry), pagination: Pagination }),
  verifyQuery: t.Object({ from_seq: seqParam('First'), to_seq: seqParam('Last') }),
  verifyResult,
  digestQuery: t.Object({ ...pageQuery(100) }),
  digests: t.Object({ data: t.Array(digest), pagination: Pagination }),
  digestKey: t.Object({
    alg: t.Literal('Ed25519'),
    public_key: t.String({ description: 'SPKI PEM of the key that signs the digests' }),
  }),
}
