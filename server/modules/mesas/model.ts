import { t } from 'elysia'
import { DateTime, Id, Money, MoneyOut } from '../../lib/models'

const Currency = t.String({ minLength: 1, maxLength: 32, pattern: '\\S', description: 'Currency code, e.g. ARS or USD (compared without regard to case)' })
const CostingMethod = t.Union([t.Literal('fifo'), t.Literal('wac')], { description: 'fifo: sells consume the oldest lots; wac: weighted average cost' })
const QuoteDirection = t.Union([t.Literal('quote'), t.Literal('local')], {
  description: 'quote: the quote currency coming into the mesa accounts is a buy ("Compra"); local flips the words',
})
const FeedMode = t.Union([t.Literal('manual'), t.Literal('auto')], {
  description: 'auto: exact and fx_close suggestions become blotter lines by themselves while their legs count',
})
const AccountIds = t.Array(t.Integer({ minimum: 1, maximum: 2147483647 }), {
  minItems: 1,
  maxItems: 500,
  uniqueItems: true,
  description: 'Accounts of internal (type 0) clients, in the local or quote currency, free of other live mesas',
})
const OperationId = t.Integer({ minimum: 1, maximum: 2147483647 })
const Side = t.Union([t.Literal('buy'), t.Literal('sell')])
const MatchKind = t.Union([t.Literal('exact'), t.Literal('fx_close'), t.Literal('partial')])
const PendingLegs = t.Boolean({ description: 'When true, pending legs count too (suggestions, auto feed, inference); default false' })

const Suggestion = t.Object({
  side: Side,
  localAmount: MoneyOut(),
  quoteAmount: MoneyOut(),
  fx: MoneyOut('|localAmount| / |quoteAmount|'),
  fallback: t.Boolean({ description: 'false for exactly one local and one quote leg; true when legs were netted per currency' }),
})

export const MesaModel = {
  create: t.Object(
    {
      name: t.String({ minLength: 1, maxLength: 200 }),
      local_currency: Currency,
      quote_currency: Currency,
      costing_method: CostingMethod,
      account_ids: AccountIds,
      quote_direction: t.Optional(QuoteDirection),
      blotter_feed_mode: t.Optional(FeedMode),
      include_pending_legs: t.Optional(PendingLegs),
    },
    { additionalProperties: false },
  ),
  update: t.Object(
    {
      name: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
      local_currency: t.Optional(Currency),
      quote_currency: t.Optional(Currency),
      costing_method: t.Optional(CostingMethod),
      account_ids: t.Optional(AccountIds),
      quote_direction: t.Optional(QuoteDirection),
      blotter_feed_mode: t.Optional(FeedMode),
      include_pending_legs: t.Optional(PendingLegs),
    },
    { additionalProperties: false, description: 'account_ids replaces the set; currencies can change only while the blotter is empty' },
  ),
  mesa: t.Object({
    id: t.Integer(),
    company_id: t.Integer(),
    name: t.String(),
    local_currency: t.String(),
    quote_currency: t.String(),
    costing_method: CostingMethod,
    account_ids: t.Array(t.Integer()),
    quote_direction: QuoteDirection,
    blotter_feed_mode: FeedMode,
    include_pending_legs: t.Boolean(),
    created_by: t.Nullable(t.Integer()),
    created_at: DateTime,
    updated_at: DateTime,
    deleted_at: t.Nullable(DateTime),
  }, { $id: 'Mesa' }),
  inferQuery: t.Object({ operation_id: t.Optional(Id) }),
  /** The GET has no body to carry the operation: the query must name it (missing: 400 VALIDATION_ERROR). */
  inferGetQuery: t.Object({ operation_id: Id }),
  inferBody: t.Optional(t.Object({ operation_id: t.Optional(OperationId) }, { additionalProperties: false })),
  inference: t.Object({
    operationId: t.Integer(),
    suggestion: Suggestion,
    legs: t.Array(
      t.Object({ id: t.Integer(), account_id: t.Integer(), currency: t.String(), amount: MoneyOut(), status: t.String() }),
      { description: "The operation's non-commission transactions on the mesa's accounts that count" },
    ),
  }),
  lineCreate: t.Union(
    [
      t.Object({ operation_id: OperationId }, { additionalProperties: false, description: 'Confirm the suggestion for an operation' }),
      t.Object(
        {
          side: Side,
          local_amount: Money,
          quote_amount: Money,
          traded_at: t.Optional(DateTime),
        },
        { additionalProperties: false, description: 'A fabricated line, linked to no operation; amounts are positive' },
      ),
    ],
  ),
  line: t.Object({
    id: t.Integer(),
    mesa_id: t.Integer(),
    operation_id: t.Nullable(t.Integer()),
    side: Side,
    local_amount: MoneyOut(),
    quote_amount: MoneyOut(),
    fx: MoneyOut(),
    source: t.Union([t.Literal('manual'), t.Literal('auto'), t.Literal('fabricated')]),
    match_kind: t.Nullable(MatchKind),
    traded_at: DateTime,
    created_by: t.Nullable(t.Integer()),
    created_at: DateTime,
  }, { $id: 'MesaLine' }),
  suggestion: t.Object({ operation_id: t.Integer(), match_kind: MatchKind, suggestion: Suggestion }),
  position: t.Object({
    costing_method: CostingMethod,
    quote_position: MoneyOut('Open quote quantity; negative while short'),
    average_cost: t.Nullable(MoneyOut('Local per quote unit of the open position; null when flat')),
    realized_pnl: MoneyOut('In the local currency'),
    lots: t.Array(
      t.Object({
        line_id: t.Nullable(t.Integer({ description: 'Line that opened the lot; null for the merged wac lot' })),
        quantity: MoneyOut('Negative for a short lot'),
        price: MoneyOut(),
        cost: MoneyOut('Local cost basis (paid for a long lot, received for a short one)'),
      }),
    ),
  }),
}
