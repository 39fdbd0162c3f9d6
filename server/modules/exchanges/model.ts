import { t } from 'elysia'
import { DateTime, Id, Money, MoneyOut, Pagination, pageQuery } from '../../lib/models'
import { DocumentModel } from '../clients/document'
import { OperationModel } from '../operations/model'

const Side = t.Union([t.Literal('buy'), t.Literal('sell')], {
  description: '`buy`: the house buys the foreign currency (the customer hands it in); `sell`: the house sells it',
})
const DateInput = (description: string) => t.Union([t.String({ format: 'date-time', maxLength: 40 }), t.String({ format: 'date', maxLength: 10 })], { description })

const create = t.Object(
  {
    side: Side,
    currency: t.String({ minLength: 1, maxLength: 50, description: 'A currency of the rates board other than the company\'s local currency (any case)' }),
    amount: t.Union([...Money.anyOf], { description: 'Foreign amount, > 0, at most 6 decimals: a JSON number or a decimal string' }),
    rate: t.Optional(
      t.Union([...Money.anyOf], {
        description:
          "Local currency per unit, > 0, at most 6 decimals. Default: the board's `buy` rate for `buy`, `sell` for `sell`, as published at that moment. Another rate needs `exchanges.rate`.",
      }),
    ),
    caja_id: t.Integer({ minimum: 1, maximum: 2147483647, description: 'The caja (type 0 client) with accounts in `currency` and in the local currency' }),
    client_id: t.Optional(t.Nullable(t.Integer({ minimum: 1, maximum: 2147483647, description: 'The customer, an external client (type 1); or give `customer`' }))),
    customer: t.Optional(
      t.Nullable(
        t.Object(
          {
            name: t.String({ minLength: 1, maxLength: 200 }),
            document: t.Optional(t.Nullable(DocumentModel.input)),
          },
          {
            additionalProperties: false,
            description:
              'A walk-in customer: the live client holding this document is reused (its own name kept), else a type 1 client without accounts is created. Without a document a new client is created each time.',
          },
        ),
      ),
    ),
    ticket_id: t.Optional(t.Nullable(t.Integer({ minimum: 1, maximum: 2147483647, description: 'The waiting-room ticket served: called or finished' }))),
    commission: t.Optional(
      t.Nullable(
        t.Object(
          { amount: t.Union([...Money.anyOf], { description: 'Local currency, > 0; rounded half away from zero to 2 decimals' }) },
          { additionalProperties: false, description: 'Charged to the customer: one more transaction of +amount in the local currency on the caja' },
        ),
      ),
    ),
    description: t.Optional(t.String({ maxLength: 2000, description: 'Default: the deal in words, e.g. "Compra de 100 USD a 1.165,50"' })),
  },
  { additionalProperties: false },
)

const nullableText = t.Nullable(t.String())

const receipt = t.Object(
  {
    number: OperationModel.receiptNumber,
    point: t.Integer({ description: 'The point of sale (receipt_point of the company when issued)' }),
    issued_at: DateTime,
    status: t.Union([t.Literal('issued'), t.Literal('void')], { description: '`void` once the operation is cancelled; its number stays taken' }),
    company: t.Object(
      { legal_name: nullableText, tax_id: nullableText, address: nullableText, license: nullableText },
      { description: "The company's profile as it was when the receipt was issued" },
    ),
    customer: t.Object(
      { name: nullableText, document: t.Nullable(DocumentModel.output) },
      { description: 'The customer as the client record was when the receipt was issued (both null without a customer)' },
    ),
    side: Side,
    currency: t.String(),
    amount: MoneyOut('Foreign amount'),
    rate: MoneyOut('Rate'),
    local_amount: MoneyOut('amount × rate, local currency, rounded half away from zero to 2 decimals'),
    commission: MoneyOut('Commission in the local currency (0 without one)'),
    total: MoneyOut('What the customer receives on a `buy` (local_amount − commission) or pays on a `sell` (local_amount + commission)'),
  },
  { $id: 'Receipt' },
)

const listItem = t.Object(
  {
    operation_id: t.Integer(),
    status: t.Union([t.Literal('pending'), t.Literal('completed'), t.Literal('cancelled'), t.Literal('mixed')], { description: "The operation's status" }),
    ...OperationModel.exchange.properties,
    client_id: t.Nullable(t.Integer({ description: 'The customer' })),
    caja_id: t.Integer(),
    receipt_number: OperationModel.receiptNumber,
    created_at: DateTime,
    created_by: t.Nullable(t.Integer({ description: 'The employee who made it; null for a company key' })),
  },
  { $id: 'ExchangeListItem' },
)

export const ExchangeModel = {
  create,
  created: t.Object({
    operation: OperationModel.operation,
    exchange: OperationModel.exchange,
    receipt,
    warnings: t.Optional(
      t.Array(t.Literal('CAJA_BELOW_ZERO'), {
        description: 'Present only when not empty. `CAJA_BELOW_ZERO`: the account of the caja that pays out would be below zero once the exchange counts (pending or not)',
      }),
    ),
  }),
  receipt,
  receiptQuery: t.Object({
    format: t.Optional(t.Union([t.Literal('json'), t.Literal('pdf')], { description: '`pdf`: the printable receipt as application/pdf; default JSON' })),
  }),
  listQuery: t.Object(
    {
      ...pageQuery(200),
      from: t.Optional(DateInput('Made at or after; a date `YYYY-MM-DD` is that day 00:00 in the company time zone')),
      to: t.Optional(DateInput('Made at or before; a date `YYYY-MM-DD` means the whole of that day in the company time zone')),
      caja_id: t.Optional(Id),
      ticket_id: t.Optional(Id),
      client_id: t.Optional(Id),
    },
    { additionalProperties: false },
  ),
  page: t.Object({ data: t.Array(listItem), pagination: Pagination }),
}

export type CreateExchangeInput = typeof create.static
export type ReceiptDto = typeof receipt.static
export type ExchangeListItem = typeof listItem.static
