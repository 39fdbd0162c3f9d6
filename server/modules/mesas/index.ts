import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { routePolicy } from '../../access/policy'
import { errors, Id, IdParams } from '../../lib/models'
import { MesaModel } from './model'
import { followLedger } from './feed'
import { createLine, createMesa, deleteLine, deleteMesa, infer, listLines, listMesas, position, readMesa, suggestions, updateMesa } from './service'

const Deleted = t.Object({ deleted: t.Literal(true) })
const LineParams = t.Object({ id: Id, lineId: Id })

const detail = (summary: string, description?: string) => ({ tags: ['Mesas'], summary, ...(description && { description }) })

const INFER_NOTE =
  'Legs are the operation\'s non-commission transactions on the mesa\'s accounts that count (completed; pending too with include_pending_legs). ' +
  'Exactly one local and one quote leg → fallback false; otherwise amounts are net sums per currency and fallback true. ' +
  'No counting leg in one of the two currencies → 422 NO_TRADE_LEGS; missing operation_id → 400; operation missing or of another company → 404.'

export const mesasModule = (app: AppContext) => {
  followLedger(app.events)
  return new Elysia({ prefix: '/api/mesas' })
    .use(routePolicy(app))
    .post('', ({ run, body }) => run((tx, caller) => createMesa(tx, caller, body)), {
      policy: { module: 'mesas', permission: 'mesas.manage', idempotent: true },
      body: MesaModel.create,
      response: { 201: MesaModel.mesa, ...errors(422) },
      detail: detail(
        'Create a mesa',
        'Equal currencies → 422 CURRENCIES_MUST_DIFFER; an account unknown or of another company → 422 UNKNOWN_ACCOUNT; not of a type 0 client → 422 ACCOUNT_NOT_INTERNAL; ' +
          'in neither currency → 422 ACCOUNT_CURRENCY_MISMATCH; already in a live mesa → 409 ACCOUNT_IN_OTHER_MESA (enforced by a unique index, so concurrent creates cannot both take it). ' +
          'With blotter_feed_mode auto the feed is applied at once to operations already on the accounts.',
      ),
    })
    .get('', ({ run }) => run(async (tx, caller) => ({ data: await listMesas(tx, caller) })), {
      policy: { module: 'mesas', permission: ['mesas.view', 'mesas.manage'] },
      response: { 200: t.Object({ data: t.Array(MesaModel.mesa) }) },
      detail: detail('List live mesas'),
    })
    .get('/:id', ({ run, params }) => run((tx, caller) => readMesa(tx, caller, params.id)), {
      policy: { module: 'mesas', permission: ['mesas.view', 'mesas.manage'] },
      params: IdParams,
      response: { 200: MesaModel.mesa },
      detail: detail('Get a mesa'),
    })
    .patch('/:id', ({ run, params, body }) => run((tx, caller) => updateMesa(tx, caller, params.id, body)), {
      policy: { module: 'mesas', permission: 'mesas.manage', tx: 'write' },
      params: IdParams,
      body: MesaModel.update,
      response: { 200: MesaModel.mesa, ...errors(409, 422) },
      detail: detail(
        'Update a mesa',
        'Currencies can change only while the blotter is empty (else 409 CONFLICT); account_ids replaces the set with the same checks as create.',
      ),
    })
    .delete('/:id', ({ run, params }) => run((tx, caller) => deleteMesa(tx, caller, params.id)), {
      policy: { module: 'mesas', permission: 'mesas.manage', tx: 'write' },
      params: IdParams,
      response: { 200: Deleted },
      detail: detail('Delete a mesa (soft); its accounts become free for other mesas'),
    })
    .get('/:id/infer', ({ run, params, query }) => run((tx, caller) => infer(tx, caller, params.id, query.operation_id)), {
      policy: { module: 'mesas', permission: ['mesas.view', 'mesas.manage'] },
      params: IdParams,
      query: MesaModel.inferGetQuery,
      response: { 200: MesaModel.inference, ...errors(422) },
      detail: detail('Infer the trade of an operation', INFER_NOTE),
    })
    // A POST that only reads: the permission of the reads.
    .post('/:id/infer', ({ run, params, query, body }) => run((tx, caller) => infer(tx, caller, params.id, body?.operation_id ?? query.operation_id)), {
      policy: { module: 'mesas', permission: ['mesas.view', 'mesas.manage'] },
      params: IdParams,
      query: MesaModel.inferQuery,
      body: MesaModel.inferBody,
      response: { 200: MesaModel.inference, ...errors(422) },
      detail: detail('Infer the trade of an operation', `${INFER_NOTE} operation_id may come in the query or in the body (the body wins). Reads only.`),
    })
    .get('/:id/suggestions', ({ run, params }) => run(async (tx, caller) => ({ data: await suggestions(tx, caller, params.id) })), {
      policy: { module: 'mesas', permission: ['mesas.view', 'mesas.manage'] },
      params: IdParams,
      response: { 200: t.Object({ data: t.Array(MesaModel.suggestion) }) },
      detail: detail(
        'Operations on the mesa\'s accounts with counting legs and no line yet',
        'match_kind: exact for one clean leg pair; fx_close when fx is within 2% of the average fx of the mesa\'s last 10 lines; otherwise partial. Oldest operation first.',
      ),
    })
    .get('/:id/lines', ({ run, params }) => run(async (tx, caller) => ({ data: await listLines(tx, caller, params.id) })), {
      policy: { module: 'mesas', permission: ['mesas.view', 'mesas.manage'] },
      params: IdParams,
      response: { 200: t.Object({ data: t.Array(MesaModel.line) }) },
      detail: detail('The blotter, by trade time'),
    })
    .post('/:id/lines', ({ run, params, body }) => run((tx, caller) => createLine(tx, caller, params.id, body, app.clock())), {
      policy: { module: 'mesas', permission: 'mesas.manage', idempotent: true },
      params: IdParams,
      body: MesaModel.lineCreate,
      response: { 201: MesaModel.line, ...errors(422) },
      detail: detail(
        'Add a blotter line',
        '`{ operation_id }` confirms the operation\'s suggestion (source manual, match_kind of the suggestion, traded_at the operation date; 404 for an operation missing or of another company, 422 NO_TRADE_LEGS, 409 CONFLICT when the operation already has a line here). ' +
          '`{ side, local_amount, quote_amount, traded_at? }` fabricates a line linked to no operation (source fabricated; amounts positive; traded_at defaults to now).',
      ),
    })
    .delete('/:id/lines/:lineId', ({ run, params }) => run((tx, caller) => deleteLine(tx, caller, params.id, params.lineId)), {
      policy: { module: 'mesas', permission: 'mesas.manage', tx: 'write' },
      params: LineParams,
      response: { 200: Deleted },
      detail: detail('Remove a blotter line', 'Touches no operation and no balance.'),
    })
    .get('/:id/position', ({ run, params }) => run((tx, caller) => position(tx, caller, params.id)), {
      policy: { module: 'mesas', permission: ['mesas.view', 'mesas.manage'] },
      params: IdParams,
      response: { 200: MesaModel.position },
      detail: detail(
        'Open position, average cost and realized P&L',
        'Lines are replayed by traded_at then id. fifo: sells consume the oldest lots; wac: one lot at the weighted average cost. A sell beyond the long position opens a short; a buy covers shorts first. realized_pnl is in the local currency.',
      ),
    })
}
