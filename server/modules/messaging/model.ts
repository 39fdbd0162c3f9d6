import { t, type Static, type TSchema } from 'elysia'
import { DateTime, Money, MoneyOut } from '../../lib/models'
import { OperationModel } from '../operations/model'

const RefId = t.Integer({ minimum: 1, maximum: 2147483647 })
/** Unset fields may also be sent as null, as dashboard forms do. */
const opt = <T extends Parameters<typeof t.Nullable>[0]>(schema: T) => t.Optional(t.Nullable(schema))
const Currency = t.String({ minLength: 1, maxLength: 32 })
const Description = t.String({ maxLength: 2000 })
const OperationTypeId = t.Optional(
  t.Integer({
    minimum: 1,
    maximum: 2147483647,
    description:
      'Operation type of the caller\'s company whose kind matches `toolKind`. Missing or of another company → 422 `OPERATION_TYPE_NOT_FOUND`; other kind → 422 `OPERATION_TYPE_KIND_MISMATCH`.',
  }),
)

/** The tool kinds' settings, with money as requests take it (`Money`) or as answers write it (`MoneyOut`). */
function fixedConfigOf<M extends TSchema>(money: M, suffix: string) {
  const UpDownConfig = t.Object(
    {
      toolKind: t.Literal('up_down'),
      operationTypeId: OperationTypeId,
      mode: opt(
        t.Union([t.Literal('standard'), t.Literal('internal_transfer'), t.Literal('third_party')], {
          description:
            '`standard` (default): the client account (`destinationAccountId`, or the account of `clientId` in `currency`) goes up (+amount) or down (−amount) by `direction`, and the optional caja `sourceAccountId` moves the same way. `internal_transfer`: caja `sourceAccountId` −amount → caja `destinationAccountId` +amount. `third_party`: any account `sourceAccountId` −amount → `destinationAccountId` +amount.',
        }),
      ),
      direction: opt(t.Union([t.Literal('up'), t.Literal('down')], { description: 'Default `up`; used by `standard` mode' })),
      sourceAccountId: opt(RefId),
      destinationAccountId: opt(RefId),
      clientId: opt(RefId),
      currency: opt(Currency),
      amount: opt(money),
      description: opt(Description),
    },
    { additionalProperties: false, title: `UpDownToolConfig${suffix}` },
  )

  const ExchangeConfig = t.Object(
    {
      toolKind: t.Literal('exchange'),
      operationTypeId: OperationTypeId,
      localAccountId: opt(RefId),
      quoteAccountId: opt(RefId),
      side: opt(
        t.Union([t.Literal('buy'), t.Literal('sell')], {
          description: 'Default `buy`: the quote currency comes in (+quoteAmount) and local goes out (−quoteAmount×fx); `sell` the reverse',
        }),
      ),
      quoteAmount: opt(money),
      fx: opt(money),
    },
    { additionalProperties: false, title: `ExchangeToolConfig${suffix}` },
  )

  const BudgetConfig = t.Object(
    {
      toolKind: t.Literal('budget'),
      operationTypeId: OperationTypeId,
      costCenterId: opt(RefId),
      direction: opt(t.Union([t.Literal('expense'), t.Literal('income')], { description: 'Default `expense`' })),
      paymentSourceMode: opt(
        t.Union([t.Literal('internal'), t.Literal('external')], {
          description:
            'Default `internal`: the caja `internalAccountId` (else the cost center\'s default caja) is debited for an expense, credited for an income. `external`: the account of the type 1 client `payerClientId` in `currency` is credited for an expense (no caja is debited), debited for an income.',
        }),
      ),
      internalAccountId: opt(RefId),
      payerClientId: opt(RefId),
      amount: opt(money),
      currency: opt(t.String({ minLength: 1, maxLength: 32, description: 'Default: the caja account\'s currency (internal) or the cost center\'s `default_currency` (external)' })),
      description: opt(Description),
    },
    { additionalProperties: false, title: `BudgetToolConfig${suffix}` },
  )

  const OtherConfig = t.Object(
    {
      toolKind: t.Literal('other'),
      operationTypeId: OperationTypeId,
      description: opt(Description),
      transactions: opt(
        t.Array(
          t.Object(
            { accountId: RefId, amount: money, transactionTypeId: opt(RefId), description: opt(Description) },
            { additionalProperties: false },
          ),
          { maxItems: 100, description: 'The operation\'s transactions as given (signed amounts)' },
        ),
      ),
    },
    { additionalProperties: false, title: `OtherToolConfig${suffix}` },
  )

  return t.Union([UpDownConfig, ExchangeConfig, BudgetConfig, OtherConfig], {
    description: 'Settings bound on the server, discriminated by `toolKind`; the bot never sees them.',
  })
}

export const FixedConfig = fixedConfigOf(Money, '')
const FixedConfigOut = fixedConfigOf(MoneyOut(), 'Answer')

export const PARAMETER_TYPES = ['string', 'number', 'amount', 'account', 'client', 'cost_center', 'currency', 'date', 'side'] as const
export type ParameterType = (typeof PARAMETER_TYPES)[number]

const Parameter = t.Object(
  {
    key: t.String({ minLength: 1, maxLength: 64, description: 'Name of the `fixed_config` field this parameter fills, e.g. `amount`; or `date` (type `date`), the operation\'s date' }),
    label: t.Optional(t.String({ maxLength: 200, description: 'What the bot shows the person; defaults to the key' })),
    type: t.Union(PARAMETER_TYPES.map((p) => t.Literal(p))),
    required: t.Optional(t.Boolean({ default: true, description: 'Default true' })),
  },
  { additionalProperties: false },
)

export const ParameterSchema = t.Object(
  { parameters: t.Array(Parameter, { maxItems: 50 }) },
  { additionalProperties: false, description: 'Fields the bot asks for; a parameter\'s value overrides the fixed value of its key' },
)

const StoredParameter = t.Object({ key: t.String(), label: t.String(), type: t.String(), required: t.Boolean() })

const Mode = t.Union([t.Literal('standard'), t.Literal('internal_transfer'), t.Literal('third_party')])

const tool = t.Object({
  id: t.Integer(),
  company_id: t.Integer(),
  name: t.String(),
  slug: t.String(),
  description: t.String(),
  enabled: t.Boolean(),
  company_operation_type_id: t.Integer(),
  mode: Mode,
  fixed_config: FixedConfigOut,
  parameter_schema: t.Object({ parameters: t.Array(StoredParameter) }),
  created_by: t.Nullable(t.Integer()),
  created_at: DateTime,
  updated_at: DateTime,
  deleted_at: t.Nullable(DateTime),
}, { $id: 'MessagingTool' })

const Name = t.String({ minLength: 1, maxLength: 100 })
const Slug = t.String({
  minLength: 1,
  maxLength: 100,
  description: 'Normalized: lower case, accents stripped, runs of characters outside a-z0-9 become `-`, trimmed. Unique among the company\'s live tools (409 `SLUG_TAKEN`).',
})

const RequestedBy = t.Object(
  {
    contact_id: t.Integer({ minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER, description: 'The messaging contact who asked' }),
    phone: t.String({ maxLength: 50 }),
    employee_id: opt(RefId),
    client_id: opt(RefId),
  },
  { additionalProperties: false },
)

const Named = t.Nullable(t.Object({ id: t.Integer(), name: t.String() }))
const RequestedByOut = t.Object({ contact_id: t.Nullable(t.Integer()), phone: t.Nullable(t.String()), employee: Named, client: Named })

export const MessagingModel = {
  create: t.Object(
    {
      name: Name,
      fixed_config: FixedConfig,
      slug: t.Optional(Slug),
      enabled: t.Optional(t.Boolean({ default: true })),
      description: t.Optional(Description),
      parameter_schema: t.Optional(ParameterSchema),
    },
    { additionalProperties: false },
  ),
  update: t.Object(
    {
      name: t.Optional(Name),
      fixed_config: t.Optional(FixedConfig),
      slug: t.Optional(Slug),
      enabled: t.Optional(t.Boolean()),
      description: t.Optional(Description),
      parameter_schema: t.Optional(ParameterSchema),
    },
    { additionalProperties: false },
  ),
  tool,
  list: t.Object({ data: t.Array(tool) }),
  run: t.Object(
    {
      parameters: t.Optional(t.Record(t.String(), t.Any(), { description: 'Values of the tool\'s parameters by key', default: {} })),
      requested_by: RequestedBy,
      channel: t.Optional(t.Union([t.Literal('messaging'), t.Literal('twin')], { default: 'messaging' })),
    },
    { additionalProperties: false },
  ),
  runResult: t.Object({
    operation: OperationModel.operation,
    draft: t.Object({ id: t.Integer(), tool_id: t.Integer(), channel: t.String(), requested_by: RequestedByOut }),
  }),
  deleted: t.Object({ deleted: t.Literal(true) }),
}

export type FixedConfigInput = Static<typeof FixedConfig>
export type ParameterSchemaInput = Static<typeof ParameterSchema>
export type ToolDto = Static<typeof tool>
export type RunInput = {
  parameters?: Record<string, unknown>
  requested_by?: Static<typeof RequestedBy> | null
  channel?: 'messaging' | 'twin'
}
export type RunResult = Static<typeof MessagingModel.runResult>
export type RequestedByDto = Static<typeof RequestedByOut>
