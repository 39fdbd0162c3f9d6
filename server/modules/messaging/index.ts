import { Elysia } from 'elysia'
import type { AppContext } from '../../context'
import { routePolicy } from '../../access/policy'
import { errors, IdParams } from '../../lib/models'
import { MessagingModel } from './model'
import { createTool, deleteTool, getToolRow, listTools, toolDto, updateTool } from './service'
import { runTool } from './run'

const detail = (summary: string, description: string) => ({ tags: ['Messaging tools'], summary, description })

export const messagingModule = (app: AppContext) =>
  new Elysia({ prefix: '/api/messaging' })
    .use(routePolicy(app))
    .post('/tools', ({ run, body }) => run((tx, caller) => createTool(tx, caller, body)), {
      policy: { permission: 'messaging.manage', idempotent: true },
      body: MessagingModel.create,
      response: { 201: MessagingModel.tool, ...errors(409, 422) },
      detail: detail(
        'Create a messaging tool',
        '`slug` defaults to the normalized name; a slug used by another live tool → 409 `SLUG_TAKEN`. ' +
          '`fixed_config.operationTypeId` missing or of another company → 422 `OPERATION_TYPE_NOT_FOUND`, of another kind → 422 `OPERATION_TYPE_KIND_MISMATCH`; ' +
          'accounts, clients and cost centers named in `fixed_config` must be of the company (422 `UNKNOWN_*`). ' +
          'Each `parameter_schema` key must be a `fixed_config` field of the tool\'s kind, or `date` (type `date`: the operation\'s date, default now), else 400. `created_by` is null for company keys. ' +
          'Money in `fixed_config` (`amount`, `quoteAmount`, `fx`, `transactions[].amount`) is accepted as a number or decimal string and answered as a JSON number.',
      ),
    })
    .get('/tools', ({ run }) => run(async (tx, caller) => ({ data: await listTools(tx, caller) })), {
      policy: { permission: 'messaging.manage' },
      response: { 200: MessagingModel.list },
      detail: detail('List messaging tools', 'Disabled tools are included, deleted ones are not.'),
    })
    .get('/tools/:id', ({ run, params }) => run(async (tx, caller) => toolDto(await getToolRow(tx, caller, params.id))), {
      policy: { permission: 'messaging.manage' },
      params: IdParams,
      response: { 200: MessagingModel.tool },
      detail: detail('Get a messaging tool', '404 when missing, deleted or of another company.'),
    })
    .patch('/tools/:id', ({ run, params, body }) => run((tx, caller) => updateTool(tx, caller, params.id, body)), {
      policy: { permission: 'messaging.manage', tx: 'write' },
      params: IdParams,
      body: MessagingModel.update,
      response: { 200: MessagingModel.tool, ...errors(409, 422) },
      detail: detail('Update a messaging tool', 'Same rules as create; the slug changes only when `slug` is sent.'),
    })
    .delete('/tools/:id', ({ run, params }) => run((tx, caller) => deleteTool(tx, caller, params.id)), {
      policy: { permission: 'messaging.manage', tx: 'write' },
      params: IdParams,
      response: { 200: MessagingModel.deleted },
      detail: detail('Delete a messaging tool (soft)', 'Later reads answer 404 and the slug is free again.'),
    })
    .post('/tools/:id/run', ({ run, params, body }) => run((tx, caller) => runTool(tx, caller, params.id, body)), {
      policy: { permission: ['messaging.run', 'messaging.manage'], idempotent: true },
      params: IdParams,
      body: MessagingModel.run,
      response: { 201: MessagingModel.runResult, ...errors(409, 422) },
      detail: detail(
        'Run a messaging tool',
        'Merges the fixed config with `parameters` (each checked by its declared type; ' +
          'missing or invalid → 422 `INVALID_PARAMETERS`, `details` naming each field key and label; keys the tool does not declare are ignored, so a bot cannot override fixed settings), creates a pending operation and a draft. ' +
          'Disabled tool → 409 `TOOL_DISABLED`. The audit rows of the operation and its transactions carry `channel` and `channel_detail.requested_by`. ' +
          '`draft.requested_by` is that same resolved requester: `{ contact_id, phone, employee: { id, name } | null, client: { id, name } | null }`.',
      ),
    })
