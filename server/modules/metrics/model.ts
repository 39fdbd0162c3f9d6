import { t } from 'elysia'
import { MoneyOut } from '../../lib/models'

const Num = MoneyOut

export const MetricsModel = {
  home: t.Object({
    date: t.String({ format: 'date', description: "Today in the company's time zone (YYYY-MM-DD)" }),
    dayPnl: t.Array(
      t.Object({
        mesa_id: t.Integer(),
        currency: t.String({ description: "The mesa's local currency" }),
        realized: Num("Realized P&L of the mesa's blotter lines traded today (local day), by the mesa's costing method"),
      }),
    ),
    commissions: t.Array(
      t.Object({
        currency: t.String(),
        amount: Num('Signed sum of the completed commission transactions completed today'),
      }),
    ),
    costCenters: t.Array(
      t.Object({
        cost_center_id: t.Integer(),
        name: t.String(),
        currency: t.String(),
        budget: Num("The cost center's `expense` budget for the current month in this currency (0 when none)"),
        spent: Num(
          'Expenses of the cost center’s operations completed this month in this currency: net caja (type 0) outflow, or, with no caja leg, net credit to external accounts',
        ),
      }),
    ),
  }),
}
