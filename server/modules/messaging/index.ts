import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { auth, requirePermission, type Caller } from '../../access/caller'
import { errors, IdParams } from '../../lib/models'
import { createOnce, write } from '../../lib/write'
import { MessagingModel } from './model'
import { createTool, deleteTool, getToolRow, listTools, toolDto, updateTool } from './service'
import { runTool } from './run'

const detail = (summary: string, description: string) => ({ tags: ['Messaging tools'], summary, description })
const IdempotencyHeaders = t.Object({ 'idempotency-key': t.Optional(t.String()) }, { additionalProperties: true })
const manage = ({ caller }: { caller: Caller }) => requirePermission(caller, 'messaging.manage')

export const messagingModule = (app: AppContext) =>
  new Elysia({ prefix: '/api/messaging' })
    .use(auth(app))
    .post(
      '/tools',
      ({ caller, body, headers, set }) =>
        createOnce(app, caller, { key: headers['idempotency-key'], method: 'POST', path: '/api/messaging/tools', fingerprint: body }, set, (tx) =>
          createTool(tx, caller, body),
        ),
      {
        beforeHandle: manage,
        headers: IdempotencyHeaders,
        body: MessagingModel.create,
        response: { 201: MessagingModel.tool, ...errors(400, 401, 403, 409, 422) },
        detail: detail(
          'Create a messaging tool',
          'Needs `messaging.manage`. `slug` defaults to the normalized name; a slug used by another live tool → 409 `SLUG_TAKEN`. ' +
            '`fixed_config.operationTypeId` missing or of another company → 422 `OPERATION_TYPE_NOT_FOUND`, of another kind → 422 `OPERATION_TYPE_KIND_MISMATCH`; ' +
            'accounts, clients and cost centers named in `fixed_config` must be of the company (422 `UNKNOWN_*`). ' +
            'Each `parameter_schema` key must be a `fixed_config` field of the tool\'s kind, or `date` (type `date`: the operation\'s date, default now), else 400. `created_by` is null for company keys. ' +
            'Money in `fixed_config` (`amount`, `quoteAmount`, `fx`, `transactions[].amount`) is accepted as a number or decimal string and answered as a JSON number.',
        ),
      },
    )
    .get('/tools', async ({ caller }) => ({ data: await listTools(app.db, caller) }), {
      beforeHandle: manage,
      response: { 200: MessagingModel.list, ...errors(401, 403) },
      detail: detail('List messaging tools', 'Needs `messaging.manage`. Disabled tools are included, deleted ones are not.'),
    })
    .get('/tools/:id', async ({ caller, params }) => toolDto(await getToolRow(app.db, caller, params.id)), {
      beforeHandle: manage,
      params: IdParams,
      response: { 200: MessagingModel.tool, ...errors(400, 401, 403, 404) },
      detail: detail('Get a messaging tool', 'Needs `messaging.manage`. 404 when missing, deleted or of another company.'),
    })
    .patch('/tools/:id', ({ caller, params, body }) => write(app, caller, (tx) => updateTool(tx, caller, params.id, body)), {
      beforeHandle: manage,
      params: IdParams,
      body: MessagingModel.update,
      response: { 200: MessagingModel.tool, ...errors(400, 401, 403, 404, 409, 422) },
      detail: detail('Update a messaging tool', 'Needs `messaging.manage`. Same rules as create; the slug changes only when `slug` is sent.'),
    })
    .delete('/tools/:id', ({ caller, params }) => write(app, caller, (tx) => deleteTool(tx, caller, params.id)), {
      beforeHandle: manage,
      params: IdParams,
      response: { 200: MessagingModel.deleted, ...errors(400, 401, 403, 404) },
      detail: detail('Delete a messaging tool (soft)', 'Needs `messaging.manage`. Later reads answer 404 and the slug is free again.'),
    })
    .post(
      '/tools/:id/run',
      ({ caller, params, body, headers, set }) =>
        createOnce(
          app,
          caller,
          { key: headers['idempotency-key'], method: 'POST', path: `/api/messaging/tools/${params.id}/run`, fingerprint: body },
          set,
          (tx) => runTool(tx, caller, params.id, body),
          { channel: body.channel ?? 'messaging' },
        ),
      {
        beforeHandle: ({ caller }) => requirePermission(caller, 'messaging.run', 'messaging.manage'),
        params: IdParams,
        headers: IdempotencyHeaders,
        body: MessagingModel.run,
        response: { 201: MessagingModel.runResult, ...errors(400, 401, 403, 404, 409, 422) },
        detail: detail(
          'Run a messaging tool',
          'Needs `messaging.run` or `messaging.manage`. Merges the fixed config with `parameters` (each checked by its declared type; ' +
            'missing or invalid → 422 `INVALID_PARAMETERS`, `details` naming each field key and label; keys the tool does not declare are ignored, so a bot cannot override fixed settings), creates a pending operation and a draft. ' +
            'Disabled tool → 409 `TOOL_DISABLED`. The audit rows of the operation and its transactions carry `channel` and `channel_detail.requested_by`. ' +
            '`draft.requested_by` is that same resolved requester: `{ contact_id, phone, employee: { id, name } | null, client: { id, name } | null }`.',
        ),
      },
    )
