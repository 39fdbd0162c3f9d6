import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { auth, requirePermission } from '../../access/caller'
import { errors, IdParams } from '../../lib/models'
import { createOnce, write } from '../../lib/write'
import { OperationModel } from './model'
import {
  approveOperation,
  cancelOperation,
  createOperation,
  createOperationType,
  createTransactionType,
  getOperation,
  listOperations,
  listOperationTypes,
  listTransactionTypes,
  revertOperation,
} from './service'

const SCOPE_NOTE =
  'An employee limited to clients sees an operation only when its client, or an account one of its transactions moves, is one of theirs; any other operation answers 404.'
const MONEY_NOTE =
  '`amount` is a JSON number or a decimal string, signed (negative debits the account, positive credits it) and non-zero; it is stored exactly with 6 decimal places, extra places rounded half away from zero (1.0000005 → 1.000001, -1.0000005 → -1.000001); an amount that rounds to 0 is a 400. Balances move by exact decimal arithmetic in the database.'
const TRANSITION_NOTE =
  'One database transaction that locks the operation, then the accounts it moves in ascending id order; concurrent calls on one operation serialise, so of two simultaneous calls exactly one succeeds. Needs `operations.approve`.'

export const operationsModule = (app: AppContext) =>
  new Elysia({ prefix: '/api' })
    .use(auth(app))
    .get(
      '/operation-types',
      async ({ caller }) => {
        requirePermission(caller, 'operations.view', 'operations.create')
        return { data: await listOperationTypes(app.db, caller) }
      },
      {
        response: { 200: t.Object({ data: t.Array(OperationModel.operationType) }), ...errors(401, 403) },
        detail: { tags: ['Operation types'], summary: 'List operation types', description: 'Needs `operations.view` or `operations.create`.' },
      },
    )
    .post(
      '/operation-types',
      ({ caller, body, headers, set }) => {
        requirePermission(caller, 'operations.create')
        return createOnce(app, caller, { key: headers['idempotency-key'], method: 'POST', path: '/api/operation-types', fingerprint: body }, set, (tx) =>
          createOperationType(tx, caller, body),
        )
      },
      {
        body: OperationModel.operationTypeCreate,
        response: { 201: OperationModel.operationType, ...errors(400, 401, 403, 409) },
        detail: { tags: ['Operation types'], summary: 'Create an operation type', description: 'Needs `operations.create`. Accepts `Idempotency-Key`.' },
      },
    )
    .get(
      '/transaction-types',
      async ({ caller }) => {
        requirePermission(caller, 'operations.view', 'operations.create')
        return { data: await listTransactionTypes(app.db, caller) }
      },
      {
        response: { 200: t.Object({ data: t.Array(OperationModel.transactionType) }), ...errors(401, 403) },
        detail: { tags: ['Transaction types'], summary: 'List transaction types', description: 'Needs `operations.view` or `operations.create`.' },
      },
    )
    .post(
      '/transaction-types',
      ({ caller, body, headers, set }) => {
        requirePermission(caller, 'operations.create')
        return createOnce(app, caller, { key: headers['idempotency-key'], method: 'POST', path: '/api/transaction-types', fingerprint: body }, set, (tx) =>
          createTransactionType(tx, caller, body),
        )
      },
      {
        body: OperationModel.transactionTypeCreate,
        response: { 201: OperationModel.transactionType, ...errors(400, 401, 403, 409) },
        detail: {
          tags: ['Transaction types'],
          summary: 'Create a transaction type',
          description: 'Needs `operations.create`. `is_commission` (default false) is copied onto every transaction of this type. Accepts `Idempotency-Key`.',
        },
      },
    )
    .post(
      '/operations',
      ({ caller, body, headers, set }) => {
        requirePermission(caller, 'operations.create')
        return createOnce(app, caller, { key: headers['idempotency-key'], method: 'POST', path: '/api/operations', fingerprint: body }, set, (tx) =>
          createOperation(tx, caller, body),
        )
      },
      {
        body: OperationModel.create,
        response: { 201: OperationModel.operation, ...errors(400, 401, 403, 409, 422) },
        detail: {
          tags: ['Operations'],
          summary: 'Create an operation with its transactions',
          description: [
            'Needs `operations.create`. One database transaction. `status` (default `pending`) is every transaction\'s first status; `completed` moves the balances at once.',
            MONEY_NOTE,
            'A transaction\'s `currency` is its account\'s; `is_commission` comes from its transaction type.',
            'References of another company or unknown: 422 `OPERATION_TYPE_NOT_FOUND`, `UNKNOWN_ACCOUNT`, `UNKNOWN_CLIENT`, `UNKNOWN_TRANSACTION_TYPE`, `UNKNOWN_COST_CENTER`.',
            'A client-scoped employee may only create an operation they can see afterwards (its `client_id`, or an account it moves, belongs to one of their clients); otherwise 403 `FORBIDDEN`.',
            'Accepts `Idempotency-Key`: the same key and body within 24 h answer the first response again; a different body answers 409 `IDEMPOTENCY_KEY_REUSED`.',
          ].join('\n\n'),
        },
      },
    )
    .get(
      '/operations',
      ({ caller, query }) => {
        requirePermission(caller, 'operations.view')
        return listOperations(app.db, caller, query, app.store)
      },
      {
        query: OperationModel.listQuery,
        response: { 200: OperationModel.page, ...errors(400, 401, 403) },
        detail: {
          tags: ['Operations'],
          summary: 'List operations, newest `date` first',
          description: `Needs \`operations.view\`. \`client_id\` keeps operations whose client is that one or that move one of its accounts. \`from\`/\`to\` bound \`date\` inclusively; date-only values are days in the company time zone. ${SCOPE_NOTE}`,
        },
      },
    )
    .get(
      '/operations/:id',
      ({ caller, params }) => {
        requirePermission(caller, 'operations.view')
        return getOperation(app.db, caller, params.id, app.store)
      },
      {
        params: IdParams,
        response: { 200: OperationModel.operation, ...errors(400, 401, 403, 404) },
        detail: { tags: ['Operations'], summary: 'Get an operation with its transactions and attachments', description: `Needs \`operations.view\`. ${SCOPE_NOTE}` },
      },
    )
    .post(
      '/operations/:id/approve',
      ({ caller, params }) => {
        requirePermission(caller, 'operations.approve')
        return write(app, caller, (tx) => approveOperation(tx, caller, params.id))
      },
      {
        params: IdParams,
        response: { 200: OperationModel.approved, ...errors(400, 401, 403, 404, 409) },
        detail: {
          tags: ['Operations'],
          summary: 'Approve: every transaction pending → completed',
          description: `Adds each amount to its account's balance. Not all transactions pending → 409 \`NOT_ALL_PENDING\`. ${TRANSITION_NOTE} ${SCOPE_NOTE}`,
        },
      },
    )
    .post(
      '/operations/:id/revert',
      ({ caller, params }) => {
        requirePermission(caller, 'operations.approve')
        return write(app, caller, (tx) => revertOperation(tx, caller, params.id))
      },
      {
        params: IdParams,
        response: { 200: OperationModel.reverted, ...errors(400, 401, 403, 404, 409) },
        detail: {
          tags: ['Operations'],
          summary: 'Revert: every transaction completed → pending',
          description: `Takes each amount back out of its account's balance. Not all transactions completed → 409 \`NOT_ALL_COMPLETED\`. ${TRANSITION_NOTE} ${SCOPE_NOTE}`,
        },
      },
    )
    .post(
      '/operations/:id/cancel',
      ({ caller, params }) => {
        requirePermission(caller, 'operations.approve')
        return write(app, caller, (tx) => cancelOperation(tx, caller, params.id))
      },
      {
        params: IdParams,
        response: { 200: OperationModel.cancelled, ...errors(400, 401, 403, 404, 409) },
        detail: {
          tags: ['Operations'],
          summary: 'Cancel: every transaction not yet cancelled → cancelled',
          description: `Completed transactions leave the balances. All already cancelled → 409 \`ALREADY_CANCELLED\`. ${TRANSITION_NOTE} ${SCOPE_NOTE}`,
        },
      },
    )
