import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { routePolicy } from '../../access/policy'
import { bodyBounds } from '../../plugins/body-limit'
import { errors, IdParams } from '../../lib/models'
import { OperationModel } from './model'
import {
  approveOperation,
  cancelOperation,
  createOperation,
  createOperations,
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
  'One database transaction that locks the operation, then the till rows of the cajas it moves, then the accounts it moves in ascending id order; concurrent calls on one operation serialise, so of two simultaneous calls exactly one succeeds.'
const TILL_NOTE =
  'While a caja that has had till sessions is closed (`POST /api/cajas/{id}/close`), nothing moves its accounts: 409 `TILL_CLOSED` (`details` name the caja), until it is opened again; a caja never opened is not restricted. While it is open the change joins its till session (the day report).'

export const operationsModule = (app: AppContext) =>
  new Elysia({ prefix: '/api' })
    .use(routePolicy(app))
    .get(
      '/operation-types',
      ({ run }) => run(async (tx, caller) => ({ data: await listOperationTypes(tx, caller) })),
      {
        policy: { permission: ['operations.view', 'operations.create'] },
        response: { 200: t.Object({ data: t.Array(OperationModel.operationType) }) },
        detail: { tags: ['Operation types'], summary: 'List operation types' },
      },
    )
    .post(
      '/operation-types',
      ({ run, body }) => run((tx, caller) => createOperationType(tx, caller, body)),
      {
        policy: { permission: 'operations.create', idempotent: true },
        body: OperationModel.operationTypeCreate,
        response: { 201: OperationModel.operationType, ...errors(400) },
        detail: { tags: ['Operation types'], summary: 'Create an operation type' },
      },
    )
    .get(
      '/transaction-types',
      ({ run }) => run(async (tx, caller) => ({ data: await listTransactionTypes(tx, caller) })),
      {
        policy: { permission: ['operations.view', 'operations.create'] },
        response: { 200: t.Object({ data: t.Array(OperationModel.transactionType) }) },
        detail: { tags: ['Transaction types'], summary: 'List transaction types' },
      },
    )
    .post(
      '/transaction-types',
      ({ run, body }) => run((tx, caller) => createTransactionType(tx, caller, body)),
      {
        policy: { permission: 'operations.create', idempotent: true },
        body: OperationModel.transactionTypeCreate,
        response: { 201: OperationModel.transactionType, ...errors(400) },
        detail: {
          tags: ['Transaction types'],
          summary: 'Create a transaction type',
          description: '`is_commission` (default false) is copied onto every transaction of this type.',
        },
      },
    )
    .post(
      '/operations',
      ({ run, body }) => run((tx, caller) => createOperation(tx, caller, body)),
      {
        policy: { permission: 'operations.create', idempotent: true },
        body: OperationModel.create,
        response: { 201: OperationModel.operation, ...errors(400, 409, 422) },
        detail: {
          tags: ['Operations'],
          summary: 'Create an operation with its transactions',
          description: [
            'One database transaction. `status` (default `pending`) is every transaction\'s first status; `completed` moves the balances at once.',
            MONEY_NOTE,
            'A transaction\'s `currency` is its account\'s; `is_commission` comes from its transaction type.',
            'References of another company or unknown: 422 `OPERATION_TYPE_NOT_FOUND`, `UNKNOWN_ACCOUNT`, `UNKNOWN_CLIENT`, `UNKNOWN_TRANSACTION_TYPE`, `UNKNOWN_COST_CENTER`.',
            'A client-scoped employee may only create an operation they can see afterwards (its `client_id`, or an account it moves, belongs to one of their clients); otherwise 403 `FORBIDDEN`.',
            TILL_NOTE,
          ].join('\n\n'),
        },
      },
    )
    .post(
      '/operations/batch',
      ({ run, body }) => run(async (tx, caller) => ({ data: await createOperations(tx, caller, body.operations) })),
      {
        policy: { permission: 'operations.create', idempotent: true },
        // A thousand operations hold more elements than any single write: their own bound (BATCH_MAX_JSON_ELEMENTS).
        parse: [bodyBounds({ maxElements: app.config.batchMaxJsonElements })],
        body: OperationModel.batch,
        response: { 201: OperationModel.batchCreated, ...errors(400, 422) },
        detail: {
          tags: ['Operations'],
          summary: 'Create up to 1,000 operations at once, all or none',
          description: [
            'One database transaction; `data` holds the created operations in the order of `operations`. Each item is the body of `POST /api/operations` and is checked exactly as that route checks it (references, amounts, client scope); operations created `completed` move the balances, and the audit trail records the same rows as for single creates.',
            'When any item is wrong nothing is written and the answer is 422 `BATCH_ITEM_INVALID` with `details: [{ index, code, error, details? }]`, one entry for every failing item (`code` and `details` are those the single create would answer for it; an item moving a closed caja has `code: "TILL_CLOSED"`). A body that fails the schema (more than 1,000 items, a missing field) is 400 `VALIDATION_ERROR`.',
            'The Idempotency-Key covers the whole batch.',
            MONEY_NOTE,
          ].join('\n\n'),
        },
      },
    )
    .get(
      '/operations',
      ({ run, query }) => run((tx, caller) => listOperations(tx, caller, query, app.store)),
      {
        policy: { permission: 'operations.view' },
        query: OperationModel.listQuery,
        response: { 200: OperationModel.page, ...errors(400) },
        detail: {
          tags: ['Operations'],
          summary: 'List operations, newest `date` first',
          description: `\`client_id\` keeps operations whose client is that one or that move one of its accounts. \`from\`/\`to\` bound \`date\` inclusively; date-only values are days in the company time zone. ${SCOPE_NOTE}`,
        },
      },
    )
    .get(
      '/operations/:id',
      ({ run, params }) => run((tx, caller) => getOperation(tx, caller, params.id, app.store)),
      {
        policy: { permission: 'operations.view' },
        params: IdParams,
        response: { 200: OperationModel.operation },
        detail: { tags: ['Operations'], summary: 'Get an operation with its transactions and attachments', description: SCOPE_NOTE },
      },
    )
    .post(
      '/operations/:id/approve',
      ({ run, params }) => run((tx, caller) => approveOperation(tx, caller, params.id)),
      {
        policy: { permission: 'operations.approve', tx: 'write' },
        params: IdParams,
        response: { 200: OperationModel.approved, ...errors(409) },
        detail: {
          tags: ['Operations'],
          summary: 'Approve: every transaction pending → completed',
          description: `Adds each amount to its account's balance. Not all transactions pending → 409 \`NOT_ALL_PENDING\`. ${TRANSITION_NOTE} ${TILL_NOTE} ${SCOPE_NOTE}`,
        },
      },
    )
    .post(
      '/operations/:id/revert',
      ({ run, params }) => run((tx, caller) => revertOperation(tx, caller, params.id)),
      {
        policy: { permission: 'operations.approve', tx: 'write' },
        params: IdParams,
        response: { 200: OperationModel.reverted, ...errors(409) },
        detail: {
          tags: ['Operations'],
          summary: 'Revert: every transaction completed → pending',
          description: `Takes each amount back out of its account's balance. Not all transactions completed → 409 \`NOT_ALL_COMPLETED\`. ${TRANSITION_NOTE} ${TILL_NOTE} ${SCOPE_NOTE}`,
        },
      },
    )
    .post(
      '/operations/:id/cancel',
      ({ run, params }) => run((tx, caller) => cancelOperation(tx, caller, params.id)),
      {
        policy: { permission: 'operations.approve', tx: 'write' },
        params: IdParams,
        response: { 200: OperationModel.cancelled, ...errors(409) },
        detail: {
          tags: ['Operations'],
          summary: 'Cancel: every transaction not yet cancelled → cancelled',
          description: `Completed transactions leave the balances. All already cancelled → 409 \`ALREADY_CANCELLED\`. ${TRANSITION_NOTE} ${TILL_NOTE} ${SCOPE_NOTE}`,
        },
      },
    )
