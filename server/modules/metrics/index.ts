import { Elysia } from 'elysia'
import type { AppContext } from '../../context'
import { routePolicy } from '../../access/policy'
import { MetricsModel } from './model'
import { homeMetrics } from './service'

const description = [
  "Today's home cards, where today is the calendar day of the service clock in the company time zone (`date`);",
  'day and month bounds are that zone’s local midnights, so DST days last 23 or 25 hours.',
  '',
  '- `dayPnl`: one item per live mesa, in its local currency: the realized P&L (by its costing method) of the blotter lines',
  '  traded today, i.e. the change of the position’s `realized_pnl` over the day. Empty when the mesas module is off.',
  '- `commissions`: per currency, the signed sum of `amount` of completed transactions flagged `is_commission` whose',
  '  `completed_at` is today.',
  '- `costCenters`: per cost center and currency (every currency with an `expense` budget or spending this month, and always',
  '  the default currency): `budget` = the `expense` budget of the current local month (`year`, `period` = month);',
  '  `spent` = the expenses of operations whose `cost_center_id` is the cost center, over their transactions in that currency',
  '  completed (`completed_at`) within the current local month. An operation\'s expense is what left the company: the net',
  '  outflow of its cajas (type 0 accounts) when it moves any (a payment from a caja counts once, a caja-to-caja transfer 0),',
  '  else the net credit to external (type 1) accounts, i.e. an expense advanced by an external payer; incomes count 0.',
  '',
  'A company key needs no metrics-password cookie. Figures are company-wide.',
].join('\n')

export const metricsModule = (app: AppContext) =>
  new Elysia({ prefix: '/api' })
    .use(routePolicy(app))
    .get('/metrics/home', ({ run }) => run((tx, caller) => homeMetrics(app.database, tx, caller, app.clock())), {
      policy: { permission: 'metrics.view', tx: 'snapshot' },
      response: { 200: MetricsModel.home },
      detail: { tags: ['Home metrics'], summary: 'Day P&L per mesa, commissions and cost-center budgets for today', description },
    })
