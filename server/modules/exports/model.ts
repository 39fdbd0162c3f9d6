import { t } from 'elysia'
import { Id, MoneyOut } from '../../lib/models'

const Num = MoneyOut

export const ExportsModel = {
  grantCreate: t.Object(
    {
      expires_in_days: t.Optional(
        t.Integer({ minimum: 1, maximum: 365, default: 30, description: 'Lifetime of the grant in days, 1–365 (default 30)' }),
      ),
    },
    { additionalProperties: false },
  ),
  grant: t.Object({
    id: t.Integer(),
    token: t.String({ description: 'Bearer token for the statement route; shown only in this answer, stored only as a hash' }),
    expires_at: t.String({ format: 'date-time' }),
  }, { $id: 'AccessGrant' }),
  grantParams: t.Object({ id: Id, grantId: Id }),
  deleted: t.Object({ deleted: t.Literal(true) }),
  statementQuery: t.Object({
    from: t.Optional(
      t.String({
        maxLength: 40,
        description:
          'Inclusive lower bound on `completed_at`: a date `YYYY-MM-DD` (that day 00:00 in the company time zone) or an ISO 8601 date-time with `Z` or an offset. Omitted: from the first transaction.',
      }),
    ),
    to: t.Optional(
      t.String({
        maxLength: 40,
        description:
          'Inclusive upper bound on `completed_at`: a date `YYYY-MM-DD` (the whole of that day in the company time zone) or an ISO 8601 date-time with `Z` or an offset. Omitted: no upper bound, so each closing balance equals the account balance.',
      }),
    ),
    format: t.Optional(t.Union([t.Literal('json'), t.Literal('csv')], { default: 'json', description: '`json` (default) or `csv`' })),
  }),
  statement: t.Object({
    client: t.Object({ id: t.Integer(), name: t.String(), type: t.Integer() }),
    timezone: t.String({ description: 'The company time zone date-only bounds were read in' }),
    from: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'Resolved inclusive start, or null when open' }),
    until: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'Resolved exclusive end, or null when open' }),
    as_of: t.Optional(
      t.String({
        format: 'date-time',
        description: 'Only when read from DATABASE_READ_URL (a standby): the last commit it had replayed, which the statement reflects; also the `As-Of` header',
      }),
    ),
    accounts: t.Array(
      t.Object({
        id: t.Integer(),
        name: t.String(),
        currency_name: t.String(),
        balance: Num('Current balance of the account'),
        opening_balance: Num('Sum of completed amounts before the range'),
        closing_balance: Num('opening_balance plus the amounts in the range; equals balance when `to` is omitted'),
        transactions: t.Array(
          t.Object({
            id: t.Integer(),
            operation_id: t.Integer(),
            completed_at: t.String({ format: 'date-time' }),
            description: t.String({ description: "The transaction's description, or its operation's when it has none" }),
            amount: Num('Signed: a debit is negative, a credit positive'),
            running_balance: Num('Balance of the account right after this transaction'),
          }),
        ),
      }),
    ),
  }),
}

export const CSV_COLUMNS = [
  'account_id',
  'account_name',
  'currency',
  'transaction_id',
  'operation_id',
  'completed_at',
  'description',
  'amount',
  'running_balance',
] as const
