import { Elysia } from 'elysia'
import type { AppContext } from '../../context'
import { routePolicy } from '../../access/policy'
import { errors, IdParams } from '../../lib/models'
import { CostCenterModel } from './model'
import { createCostCenter, listCostCenters, upsertBudget } from './service'

const detail = (summary: string, description?: string) => ({ tags: ['Cost centers'], summary, ...(description && { description }) })

export const costCentersModule = (app: AppContext) =>
  new Elysia({ prefix: '/api' })
    .use(routePolicy(app))
    .post('/cost-centers', ({ run, body }) => run((tx, caller) => createCostCenter(tx, caller, body)), {
      policy: { permission: 'cost_centers.edit', idempotent: true },
      body: CostCenterModel.create,
      response: { 201: CostCenterModel.costCenter, ...errors(422) },
      detail: detail(
        'Create a cost center',
        '`client_id` unknown → 422 `UNKNOWN_CLIENT`; `default_internal_account_id` unknown → 422 `UNKNOWN_ACCOUNT`, not of a caja → 422 `ACCOUNT_NOT_INTERNAL`.',
      ),
    })
    .post(
      '/cost-centers/:id/budgets',
      ({ run, params, body, set }) => run(async (tx, caller) => {
        const { created, budget } = await upsertBudget(tx, caller, params.id, body)
        // The policy stores the status actually sent, so a replay of an update answers 200 again.
        if (!created) set.status = 200
        return budget
      }),
      {
        policy: { permission: 'cost_centers.edit', idempotent: true },
        params: IdParams,
        body: CostCenterModel.budgetUpsert,
        response: { 200: CostCenterModel.budget, 201: CostCenterModel.budget },
        detail: detail(
          'Create or update a budget',
          '201 when the (currency, year, period, kind) slot is new; 200 when it existed and its amount was replaced.',
        ),
      },
    )
    .get('/cost-centers', ({ run }) => run(async (tx, caller) => ({ data: await listCostCenters(tx, caller) })), {
      policy: { permission: ['cost_centers.view', 'cost_centers.edit'] },
      response: { 200: CostCenterModel.list },
      detail: detail('List cost centers with their budgets'),
    })
