import { t } from 'elysia'
import { DateTime, MoneyOut, NonNegativeMoney, Pagination, pageQuery } from '../../lib/models'
import { ExchangeDetailModel } from '../operations/model'

const Currency = t.String({ minLength: 1, maxLength: 50, description: "A currency of the caja's accounts (any case)" })

const denomination = t.Object(
  {
    value: NonNegativeMoney('Face value of the bill or coin'),
    count: t.Integer({ minimum: 0, maximum: 10_000_000, description: 'How many were counted' }),
  },
  { additionalProperties: false },
)

const countInput = t.Object(
  {
    currency: Currency,
    amount: NonNegativeMoney('What was counted in this currency'),
    denominations: t.Optional(
      t.Array(denomination, {
        maxItems: 50,
        description:
          'Optional: the count by bill and coin; when given, value × count summed must equal `amount` (else 400 `VALIDATION_ERROR`). Kept with the session and printed on the report.',
      }),
    ),
  },
  { additionalProperties: false },
)

const counted = t.Array(countInput, {
  maxItems: 100,
  description: "One entry per currency of the caja's accounts, each currency once; a missing one is 400 `VALIDATION_ERROR`",
})

const countRow = t.Object({
  currency: t.String(),
  expected: MoneyOut("The caja's balance in this currency at that moment"),
  counted: MoneyOut('What was counted'),
  difference: MoneyOut('counted − expected: booked at once as an "Ajuste de caja" operation when not zero'),
  denominations: t.Optional(t.Array(t.Object({ value: MoneyOut('Face value'), count: t.Integer() }), { description: 'The count by bill and coin, when one was given' })),
})

const summaryRow = t.Object({
  currency: t.String(),
  bought: MoneyOut("Foreign amount of the session's completed purchases (exchanges `buy`) in this currency; 0 in the local currency's row"),
  sold: MoneyOut("Foreign amount of the session's completed sales (exchanges `sell`) in this currency; 0 in the local currency's row"),
  operations: t.Integer({ description: 'Completed operations of the session moving this currency of the caja, adjustments excluded' }),
  commissions: MoneyOut("Commissions of the session's completed operations, in the local currency's row; 0 elsewhere"),
})

const session = t.Object(
  {
    id: t.Integer(),
    caja_id: t.Integer(),
    caja_name: t.String(),
    status: t.Union([t.Literal('open'), t.Literal('closed')]),
    opened_at: DateTime,
    opened_by: t.Nullable(t.Integer({ description: 'The employee who opened it; null for a company key' })),
    opened_by_name: t.Nullable(t.String()),
    opening: t.Array(countRow),
    opening_adjustment_operation_id: t.Nullable(t.Integer({ description: 'The "Ajuste de caja" operation booking the opening differences; null without any' })),
    closed_at: t.Nullable(DateTime),
    closed_by: t.Nullable(t.Integer({ description: 'The employee who closed it; null for a company key or while open' })),
    closed_by_name: t.Nullable(t.String()),
    closing: t.Nullable(t.Array(countRow)),
    closing_adjustment_operation_id: t.Nullable(t.Integer({ description: 'The "Ajuste de caja" operation booking the closing differences; null without any' })),
    summary: t.Array(summaryRow, {
      description:
        'One row per currency of the caja, over the completed operations of the session (those that became completed while it was open and still were at its close). Frozen at the close; while open, as of now.',
    }),
    note: t.Nullable(t.String()),
  },
  { $id: 'TillSession' },
)

const changed = t.Composite([
  session,
  t.Object({
    adjustment_operation_id: t.Nullable(t.Integer({ description: 'The "Ajuste de caja" operation this open or close booked; null when every count matched' })),
  }),
])

const caja = t.Object(
  {
    id: t.Integer(),
    name: t.String(),
    accounts: t.Array(t.Object({ id: t.Integer(), currency: t.String(), balance: MoneyOut() })),
    till: t.Union([t.Literal('never_opened'), t.Literal('open'), t.Literal('closed')], {
      description: '`never_opened`: no session yet, not restricted; `closed`: nothing moves its accounts until it is opened again',
    }),
    // The session's fields without its component name: the generator folds a nullable named schema into one with null.
    session: t.Nullable(t.Object({ ...session.properties }), { description: 'The open session (TillSession), or the last one when closed; null when never opened' }),
  },
  { $id: 'Caja' },
)

const movement = t.Object({ currency: t.String(), amount: MoneyOut() })

const reportOperation = t.Object({
  operation_id: t.Integer(),
  receipt_number: t.Nullable(t.String({ description: 'PPPPP-NNNNNNNN for an exchange; null otherwise' })),
  at: DateTime,
  type: t.String({ description: 'The operation type' }),
  description: t.String(),
  client: t.Nullable(t.Object({ id: t.Integer(), name: t.String() })),
  created_by: t.Nullable(t.Integer()),
  created_by_name: t.Nullable(t.String()),
  events: t.Array(t.Object({ event: t.Union([t.Literal('created'), t.Literal('approved'), t.Literal('reverted'), t.Literal('cancelled')]), at: DateTime })),
  status: t.Union([t.Literal('pending'), t.Literal('completed'), t.Literal('cancelled')], { description: 'As the session left it' }),
  exchange: t.Nullable(ExchangeDetailModel),
  movements: t.Array(movement, { description: "What the operation's changes during the session moved on the caja, per currency" }),
})

const report = t.Object(
  {
    session,
    company: t.Object({
      name: t.String(),
      legal_name: t.Nullable(t.String()),
      tax_id: t.Nullable(t.String()),
      address: t.Nullable(t.String()),
      license: t.Nullable(t.String()),
      local_currency: t.String(),
      timezone: t.String(),
    }),
    opening: t.Array(countRow),
    operations: t.Array(reportOperation, { description: 'Every operation the session saw move the caja, in the order it first did; adjustments are under `differences`' }),
    summary: t.Array(summaryRow),
    movements: t.Array(movement, { description: 'Net of `operations` per currency: the opening count plus this is what the close expected' }),
    closing: t.Nullable(t.Array(countRow)),
    differences: t.Array(
      t.Object({
        moment: t.Union([t.Literal('opening'), t.Literal('closing')]),
        currency: t.String(),
        expected: MoneyOut(),
        counted: MoneyOut(),
        difference: MoneyOut(),
        adjustment_operation_id: t.Integer(),
      }),
      { description: 'Every non-zero difference, with the "Ajuste de caja" operation that booked it' },
    ),
    generated_at: DateTime,
  },
  { $id: 'TillReport' },
)

const DateInput = (description: string) => t.Union([t.String({ format: 'date-time', maxLength: 40 }), t.String({ format: 'date', maxLength: 10 })], { description })

export const TillModel = {
  open: t.Object({ counted }, { additionalProperties: false }),
  close: t.Object({ counted, note: t.Optional(t.Nullable(t.String({ maxLength: 2000, description: "The closer's note, printed on the report" }))) }, { additionalProperties: false }),
  session,
  changed,
  caja,
  cajas: t.Object({ data: t.Array(caja) }),
  page: t.Object({ data: t.Array(session), pagination: Pagination }),
  listQuery: t.Object({
    ...pageQuery(),
    from: t.Optional(DateInput('Sessions opened at or after; a date is that day 00:00 in the company time zone')),
    to: t.Optional(DateInput('Sessions opened at or before; a date is that whole day in the company time zone')),
  }),
  reportQuery: t.Object({
    format: t.Optional(t.Union([t.Literal('json'), t.Literal('csv'), t.Literal('pdf')], { description: 'Default JSON; `csv` es-AR (`;`, decimal comma, UTF-8 with BOM); `pdf` landscape A4' })),
  }),
  report,
}

export type TillSessionDto = typeof session.static
export type TillReport = typeof report.static
export type CountInput = typeof countInput.static
export type CajaDto = typeof caja.static
