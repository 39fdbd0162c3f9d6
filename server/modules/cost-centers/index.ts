import { Elysia, t } from 'elysia'
import { and, eq } from 'drizzle-orm'
import { idempotencyKeys } from '../../../db/schema'
import type { AppContext } from '../../context'
import { auth, requirePermission } from '../../access/caller'
import { errors, IdParams } from '../../lib/models'
import { createOnce } from '../../lib/write'
import { CostCenterModel } from './model'
import { createCostCenter, listCostCenters, upsertBudget } from './service'

const detail = (summary: string, description?: string) => ({ tags: ['Cost centers'], summary, ...(description && { description }) })
const IdempotencyHeaders = t.Object({ 'idempotency-key': t.Optional(t.String()) }, { additionalProperties: true })

export const costCentersModule = (app: AppContext) =>
  new Elysia({ prefix: '/api' })
    .use(auth(app))
    .post(
      '/cost-centers',
      ({ caller, body, headers, set }) =>
        createOnce(app, caller, { key: headers['idempotency-key'], method: 'POST', path: '/api/cost-centers', fingerprint: body }, set, (tx) =>
          createCostCenter(tx, caller, body),
        ),
      {
        beforeHandle: ({ caller }) => requirePermission(caller, 'cost_centers.edit'),
        headers: IdempotencyHeaders,
        body: CostCenterModel.create,
        response: { 201: CostCenterModel.costCenter, ...errors(400, 401, 403, 409, 422) },
        detail: detail(
          'Create a cost center',
          'Needs `cost_centers.edit`. `client_id` unknown → 422 `UNKNOWN_CLIENT`; `default_internal_account_id` unknown → 422 `UNKNOWN_ACCOUNT`, not of a caja → 422 `ACCOUNT_NOT_INTERNAL`.',
        ),
      },
    )
    .post(
      '/cost-centers/:id/budgets',
      async ({ caller, params, body, headers, set }) => {
        const key = headers['idempotency-key']
        let created: boolean | undefined
        const budget = await createOnce(
          app,
          caller,
          { key, method: 'POST', path: `/api/cost-centers/${params.id}/budgets`, fingerprint: body },
          set,
          async (tx) => {
            const result = await upsertBudget(tx, caller, params.id, body)
            created = result.created
            // A replay must answer with the first status: an update was 200, not the 201 the claim recorded.
            if (!created && key !== undefined)
              await tx
                .update(idempotencyKeys)
                .set({ status: 200 })
                .where(and(eq(idempotencyKeys.companyId, caller.companyId), eq(idempotencyKeys.key, key)))
            return result.budget
          },
        )
        if (created !== undefined) set.status = created ? 201 : 200
        return budget
      },
      {
        beforeHandle: ({ caller }) => requirePermission(caller, 'cost_centers.edit'),
        params: IdParams,
        headers: IdempotencyHeaders,
        body: CostCenterModel.budgetUpsert,
        response: { 200: CostCenterModel.budget, 201: CostCenterModel.budget, ...errors(400, 401, 403, 404, 409) },
        detail: detail(
          'Create or update a budget',
          'Needs `cost_centers.edit`. 201 when the (currency, year, period, kind) slot is new; 200 when it existed and its amount was replaced.',
        ),
      },
    )
    .get('/cost-centers', async ({ caller }) => ({ data: await listCostCenters(app.db, caller) }), {
      beforeHandle: ({ caller }) => requirePermission(caller, 'cost_centers.view', 'cost_centers.edit'),
      response: { 200: CostCenterModel.list, ...errors(401, 403) },
      detail: detail('List cost centers with their budgets', 'Needs `cost_centers.view` (or `cost_centers.edit`).'),
    })
