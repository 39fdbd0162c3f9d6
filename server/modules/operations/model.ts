import { t } from 'elysia'
import { DateTime, Id, Money, Pagination, pageQuery, MoneyOut } from '../../lib/models'
import { AttachmentModel } from '../attachments/model'

const RefId = t.Integer({ minimum: 1, maximum: 2147483647 })
const Kind = t.Union([t.Literal('up_down'), t.Literal('other'), t.Literal('exchange'), t.Literal('budget')])
const TxStatus = t.Union([t.Literal('pending'), t.Literal('completed'), t.Literal('cancelled')])
const opStatus = (description?: string) =>
  t.Union([t.Literal('pending'), t.Literal('completed'), t.Literal('cancelled'), t.Literal('mixed')], { description })
const DateInput = t.Union([t.String({ format: 'date-time', maxLength: 40 }), t.String({ format: 'date', maxLength: 10 })], {
  description: 'ISO 8601 date-time, or a date `YYYY-MM-DD` meaning that day 00:00 in the company time zone',
})

const operationType = t.Object({
  id: t.Integer(),
  company_id: t.Integer(),
  name: t.String(),
  kind: Kind,
  created_at: DateTime,
  updated_at: DateTime,
}, { $id: 'OperationType' })

const transactionType = t.Object({
  id: t.Integer(),
  company_id: t.Integer(),
  name: t.String(),
  is_commission: t.Boolean(),
  created_at: DateTime,
  updated_at: DateTime,
}, { $id: 'TransactionType' })

const transaction = t.Object({
  id: t.Integer(),
  operation_id: t.Integer(),
  account_id: t.Integer(),
  currency: t.String(),
  amount: MoneyOut('Signed: negative debits the account, positive credits it'),
  status: TxStatus,
  transaction_type_id: t.Nullable(t.Integer()),
  is_commission: t.Boolean(),
  description: t.String(),
  created_at: DateTime,
  updated_at: DateTime,
}, { $id: 'Transaction' })


/** What an operation made by `POST /api/exchanges` was, in the counter's terms (contract §19). */
export const ExchangeDetailModel = t.Object(
  {
    side: t.Union([t.Literal('buy'), t.Literal('sell')], { description: '`buy`: the house bought the foreign currency (the customer handed it in); `sell`: it sold it' }),
    currency: t.String({ description: 'The foreign currency' }),
    amount: MoneyOut('Foreign amount'),
    rate: MoneyOut('Local currency per unit of the foreign one'),
    rate_source: t.Union([t.Literal('board'), t.Literal('manual')], { description: '`board`: the rate published on the rates board at that moment; `manual`: another one' }),
    local_amount: MoneyOut('amount × rate in the local currency, rounded half away from zero to 2 decimals'),
    commission: MoneyOut('Commission charged to the customer in the local currency (0 without one)'),
    ticket_id: t.Nullable(t.Integer({ description: 'The waiting-room ticket served' })),
  },
  { $id: 'ExchangeDetail' },
)

const receiptNumber = t.String({ pattern: '^[0-9]{5}-[0-9]{8,}$', description: 'The receipt number `PPPPP-NNNNNNNN` (point and sequence, zero-padded)' })

const operation = t.Object({
  id: t.Integer(),
  company_id: t.Integer(),
  operation_type_id: t.Integer(),
  client_id: t.Nullable(t.Integer()),
  cost_center_id: t.Nullable(t.Integer()),
  description: t.String(),
  date: DateTime,
  status: opStatus('Derived: all pending → pending, all completed → completed, all cancelled → cancelled, else mixed'),
  created_by: t.Nullable(t.Integer()),
  created_at: DateTime,
  updated_at: DateTime,
  transactions: t.Array(transaction),
  attachments: t.Array(AttachmentModel.attachment),
  exchange: t.Optional(ExchangeDetailModel),
  receipt_number: t.Optional(t.String({ ...receiptNumber, description: 'Only on an exchange: its receipt number `PPPPP-NNNNNNNN`' })),
}, { $id: 'Operation' })

const create = t.Object(
  {
    operation_type_id: RefId,
    description: t.Optional(t.String({ maxLength: 2000 })),
    client_id: t.Optional(t.Nullable(RefId)),
    cost_center_id: t.Optional(t.Nullable(RefId)),
    date: t.Optional(DateInput),
    status: t.Optional(
      t.Union([t.Literal('pending'), t.Literal('completed')], {
        description: "First status of every transaction (default pending); completed moves balances at once",
      }),
    ),
    transactions: t.Array(
      t.Object(
        {
          account_id: RefId,
          amount: Money,
          transaction_type_id: t.Optional(t.Nullable(RefId)),
          description: t.Optional(t.String({ maxLength: 2000 })),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 500 },
    ),
  },
  { additionalProperties: false },
)

export const OperationModel = {
  exchange: ExchangeDetailModel,
  receiptNumber,
  operationTypeCreate: t.Object(
    { name: t.String({ minLength: 1, maxLength: 200 }), kind: Kind },
    { additionalProperties: false },
  ),
  operationType,
  transactionTypeCreate: t.Object(
    { name: t.String({ minLength: 1, maxLength: 200 }), is_commission: t.Optional(t.Boolean({ default: false })) },
    { additionalProperties: false },
  ),
  transactionType,
  create,
  batch: t.Object({ operations: t.Array(create, { minItems: 1, maxItems: 1000 }) }, { additionalProperties: false }),
  batchCreated: t.Object({ data: t.Array(operation) }),
  transaction,
  operation,
  listQuery: t.Object(
    {
      ...pageQuery(200),
      status: t.Optional(opStatus('Derived operation status')),
      client_id: t.Optional(Id),
      from: t.Optional(DateInput),
      to: t.Optional(
        t.Union([t.String({ format: 'date-time', maxLength: 40 }), t.String({ format: 'date', maxLength: 10 })], {
          description: 'Inclusive upper bound on `date`; a date `YYYY-MM-DD` means the whole of that day in the company time zone',
        }),
      ),
    },
    { additionalProperties: false },
  ),
  page: t.Object({ data: t.Array(operation), pagination: Pagination }),
  approved: t.Object({ operation_id: t.Integer(), message: t.String(), approved_transactions: t.Integer() }),
  reverted: t.Object({ operation_id: t.Integer(), message: t.String(), reverted_transactions: t.Integer() }),
  cancelled: t.Object({ operation_id: t.Integer(), message: t.String(), cancelled_transactions: t.Integer() }),
}

export type CreateOperationInput = typeof create.static
export type OperationDto = typeof OperationModel.operation.static
