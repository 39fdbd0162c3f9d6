import { t } from 'elysia'
import { DateTime, Money, MoneyOut } from '../../lib/models'

const RefId = t.Integer({ minimum: 1, maximum: 2147483647 })
const Currency = t.String({ minLength: 1, maxLength: 32, description: 'Currency name as used by accounts (`currency_name`), e.g. USD' })
const Kind = t.Union([t.Literal('expense'), t.Literal('income')])

const budget = t.Object({
  id: t.Integer(),
  cost_center_id: t.Integer(),
  currency: t.String(),
  year: t.Integer(),
  period: t.Integer({ description: 'Month, 1–12' }),
  amount: MoneyOut(),
  kind: Kind,
}, { $id: 'Budget' })

const costCenter = t.Object({
  id: t.Integer(),
  company_id: t.Integer(),
  client_id: t.Integer(),
  name: t.String(),
  default_currency: t.String(),
  default_internal_account_id: t.Nullable(t.Integer({ description: 'Caja account used by budget tools that name none; null only while the company has no caja account in `default_currency`' })),
  net_balance_by_default: t.Boolean(),
  created_at: DateTime,
  updated_at: DateTime,
  budgets: t.Array(budget),
}, { $id: 'CostCenter' })

export const CostCenterModel = {
  create: t.Object(
    {
      name: t.String({ minLength: 1, maxLength: 200 }),
      client_id: RefId,
      default_currency: Currency,
      default_internal_account_id: t.Optional(
        t.Nullable(
          t.Integer({
            minimum: 1,
            maximum: 2147483647,
            description:
              'An account of an internal (type 0) client of the company. When omitted: the lowest-id account in `default_currency` of the cost center\'s own client if it is a caja, else of any caja of the company.',
          }),
        ),
      ),
      net_balance_by_default: t.Optional(t.Boolean({ default: false })),
    },
    { additionalProperties: false },
  ),
  budgetUpsert: t.Object(
    {
      currency: Currency,
      year: t.Integer({ minimum: 1900, maximum: 9999 }),
      period: t.Integer({ minimum: 1, maximum: 12, description: 'Month, 1–12' }),
      amount: Money,
      kind: Kind,
    },
    { additionalProperties: false },
  ),
  budget,
  costCenter,
  list: t.Object({ data: t.Array(costCenter) }),
}

export type CostCenterDto = typeof costCenter.static
