import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { auth, requirePermission, type Caller } from '../../access/caller'
import { errors, Id, IdParams } from '../../lib/models'
import { createOnce, write } from '../../lib/write'
import { MesaModel } from './model'
import { followLedger } from './feed'
import {
  createLine,
  createMesa,
  deleteLine,
  deleteMesa,
  infer,
  listLines,
  listMesas,
  position,
  readMesa,
  requireMesasEnabled,
  suggestions,
  updateMesa,
} from './service'

const Deleted = t.Object({ deleted: t.Literal(true) })
const LineParams = t.Object({ id: Id, lineId: Id })

const GATE = 'Every mesa route answers 403 `MESAS_DISABLED` while the company\'s mesas module is off (checked right after the key).'
const detail = (summary: string, permission: string, extra = '') => ({
  tags: ['Mesas'],
  summary,
  description: `${GATE} Needs \`${permission}\`.${extra ? ` ${extra}` : ''}`,
})

/** Reads (GET, and infer by either method) need `mesas.view` or `mesas.manage`; every other route writes. */
const INFER_PATH = /^\/api\/mesas\/[^/]+\/infer\/?$/
function requireMesaPermission(caller: Caller, method: string, path: string) {
  if (method === 'GET' || method === 'HEAD' || INFER_PATH.test(path)) requirePermission(caller, 'mesas.view', 'mesas.manage')
  else requirePermission(caller, 'mesas.manage')
}

const INFER_NOTE =
  'Legs are the operation\'s non-commission transactions on the mesa\'s accounts that count (completed; pending too with include_pending_legs). ' +
  'Exactly one local and one quote leg → fallback false; otherwise amounts are net sums per currency and fallback true. ' +
  'No counting leg in one of the two currencies → 422 NO_TRADE_LEGS; missing operation_id → 400; operation missing or of another company → 404.'

export const mesasModule = (app: AppContext) => {
  followLedger(app.events)
  return new Elysia({ prefix: '/api/mesas' })
    .use(auth(app))
    // A derive, not a beforeHandle: the module flag and then the permission answer before body or query validation does,
    // so a caller who may not use the route gets 403 whatever it sent.
    .derive(async ({ caller, request, path }) => {
      await requireMesasEnabled(app.db, caller.companyId)
      requireMesaPermission(caller, request.method, path)
      return {}
    })
    .post(
      '',
      ({ caller, body, headers, set }) => {
        return createOnce(app, caller, { key: headers['idempotency-key'], method: 'POST', path: '/api/mesas', fingerprint: body }, set, (tx) =>
          createMesa(tx, caller, body),
        )
      },
      {
        body: MesaModel.create,
        response: { 201: MesaModel.mesa, ...errors(400, 401, 403, 409, 422) },
        detail: detail(
          'Create a mesa',
          'mesas.manage',
          'Equal currencies → 422 CURRENCIES_MUST_DIFFER; an account unknown or of another company → 422 UNKNOWN_ACCOUNT; not of a type 0 client → 422 ACCOUNT_NOT_INTERNAL; ' +
            'in neither currency → 422 ACCOUNT_CURRENCY_MISMATCH; already in a live mesa → 409 ACCOUNT_IN_OTHER_MESA (enforced by a unique index, so concurrent creates cannot both take it). ' +
            'With blotter_feed_mode auto the feed is applied at once to operations already on the accounts.',
        ),
      },
    )
    .get(
      '',
      async ({ caller }) => {
        return { data: await listMesas(app.db, caller) }
      },
      { response: { 200: t.Object({ data: t.Array(MesaModel.mesa) }), ...errors(401, 403) }, detail: detail('List live mesas', 'mesas.view') },
    )
    .get(
      '/:id',
      ({ caller, params }) => {
        return readMesa(app.db, caller, params.id)
      },
      { params: IdParams, response: { 200: MesaModel.mesa, ...errors(400, 401, 403, 404) }, detail: detail('Get a mesa', 'mesas.view') },
    )
    .patch(
      '/:id',
      ({ caller, params, body }) => {
        return write(app, caller, (tx) => updateMesa(tx, caller, params.id, body))
      },
      {
        params: IdParams,
        body: MesaModel.update,
        response: { 200: MesaModel.mesa, ...errors(400, 401, 403, 404, 409, 422) },
        detail: detail('Update a mesa', 'mesas.manage', 'Currencies can change only while the blotter is empty (else 409 CONFLICT); account_ids replaces the set with the same checks as create.'),
      },
    )
    .delete(
      '/:id',
      ({ caller, params }) => {
        return write(app, caller, (tx) => deleteMesa(tx, caller, params.id))
      },
      {
        params: IdParams,
        response: { 200: Deleted, ...errors(400, 401, 403, 404) },
        detail: detail('Delete a mesa (soft); its accounts become free for other mesas', 'mesas.manage'),
      },
    )
    .get(
      '/:id/infer',
      ({ caller, params, query }) => {
        return infer(app.db, caller, params.id, query.operation_id)
      },
      {
        params: IdParams,
        query: MesaModel.inferQuery,
        response: { 200: MesaModel.inference, ...errors(400, 401, 403, 404, 422) },
        detail: detail('Infer the trade of an operation', 'mesas.view', INFER_NOTE),
      },
    )
    .post(
      '/:id/infer',
      ({ caller, params, query, body }) => {
        return infer(app.db, caller, params.id, body?.operation_id ?? query.operation_id)
      },
      {
        params: IdParams,
        query: MesaModel.inferQuery,
        body: MesaModel.inferBody,
        response: { 200: MesaModel.inference, ...errors(400, 401, 403, 404, 422) },
        detail: detail('Infer the trade of an operation', 'mesas.view', `${INFER_NOTE} operation_id may come in the query or in the body (the body wins). Reads only.`),
      },
    )
    .get(
      '/:id/suggestions',
      async ({ caller, params }) => {
        return { data: await suggestions(app.db, caller, params.id) }
      },
      {
        params: IdParams,
        response: { 200: t.Object({ data: t.Array(MesaModel.suggestion) }), ...errors(400, 401, 403, 404) },
        detail: detail(
          'Operations on the mesa\'s accounts with counting legs and no line yet',
          'mesas.view',
          'match_kind: exact for one clean leg pair; fx_close when fx is within 2% of the average fx of the mesa\'s last 10 lines; otherwise partial. Oldest operation first.',
        ),
      },
    )
    .get(
      '/:id/lines',
      async ({ caller, params }) => {
        return { data: await listLines(app.db, caller, params.id) }
      },
      {
        params: IdParams,
        response: { 200: t.Object({ data: t.Array(MesaModel.line) }), ...errors(400, 401, 403, 404) },
        detail: detail('The blotter, by trade time', 'mesas.view'),
      },
    )
    .post(
      '/:id/lines',
      ({ caller, params, body, headers, set }) => {
        return createOnce(
          app,
          caller,
          { key: headers['idempotency-key'], method: 'POST', path: `/api/mesas/${params.id}/lines`, fingerprint: body },
          set,
          (tx) => createLine(tx, caller, params.id, body, app.clock()),
        )
      },
      {
        params: IdParams,
        body: MesaModel.lineCreate,
        response: { 201: MesaModel.line, ...errors(400, 401, 403, 404, 409, 422) },
        detail: detail(
          'Add a blotter line',
          'mesas.manage',
          '`{ operation_id }` confirms the operation\'s suggestion (source manual, match_kind of the suggestion, traded_at the operation date; 404 for an operation missing or of another company, 422 NO_TRADE_LEGS, 409 CONFLICT when the operation already has a line here). ' +
            '`{ side, local_amount, quote_amount, traded_at? }` fabricates a line linked to no operation (source fabricated; amounts positive; traded_at defaults to now).',
        ),
      },
    )
    .delete(
      '/:id/lines/:lineId',
      ({ caller, params }) => {
        return write(app, caller, (tx) => deleteLine(tx, caller, params.id, params.lineId))
      },
      {
        params: LineParams,
        response: { 200: Deleted, ...errors(400, 401, 403, 404) },
        detail: detail('Remove a blotter line', 'mesas.manage', 'Touches no operation and no balance.'),
      },
    )
    .get(
      '/:id/position',
      ({ caller, params }) => {
        return position(app.db, caller, params.id)
      },
      {
        params: IdParams,
        response: { 200: MesaModel.position, ...errors(400, 401, 403, 404) },
        detail: detail(
          'Open position, average cost and realized P&L',
          'mesas.view',
          'Lines are replayed by traded_at then id. fifo: sells consume the oldest lots; wac: one lot at the weighted average cost. A sell beyond the long position opens a short; a buy covers shorts first. realized_pnl is in the local currency.',
        ),
      },
    )
}
