import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { routePolicy } from '../../access/policy'
import { bodyBounds } from '../../plugins/body-limit'
import { errors, Id, IdParams } from '../../lib/models'
import { ClientModel } from './model'
import {
  addAccount,
  attachTag,
  balances,
  createClient,
  createClients,
  createTag,
  deleteClient,
  detachTag,
  findClientTag,
  getClient,
  listClients,
  listTags,
  updateClient,
} from './service'

const Deleted = t.Object({ deleted: t.Literal(true) })
const SCOPE =
  'An employee limited to some clients (client_ids) reads only those: the list leaves the others out and any other id is 404.'
const detail = (summary: string, description: string) => ({ tags: ['Clients'], summary, description })
const tagDetail = (summary: string, description: string) => ({ tags: ['Tags'], summary, description })

export const clientsModule = (app: AppContext) =>
  new Elysia({ prefix: '/api' })
    .use(routePolicy(app))
    .get(
      '/clients',
      async ({ caller, query }) =>
        // Postgres wrote the JSON already (see listClients); it goes out as is.
        new Response(await listClients(app.db, caller, query), {
          headers: { 'content-type': 'application/json; charset=utf-8' },
        }),
      {
        // The one read exempt from the tenant transaction: one statement already confined to the company, on the
        // hottest path, where the transaction's extra round trips cost a measured share of throughput.
        policy: { permission: 'clients.view', tx: 'none' },
        query: ClientModel.listQuery,
        response: { 200: ClientModel.list, ...errors(400) },
        detail: detail(
          'List clients with their accounts and tags',
          [
            `Internal cajas (type 0) and external accounts (type 1), ordered by name (byte order) then id. \`description\` matches any part of the description, ignoring case. \`document\` finds the clients whose document number is exactly that one once normalised (dots, spaces and dashes removed, upper case), whatever the document's type; a value with nothing searchable left is 400. \`count\` is every match over all pages. pageSize defaults to 50, at most 200. Every filter given must hold (they combine with and). ${SCOPE}`,
            'Additions beyond the contract: `search` matches any part of the name or of the description, ignoring case (how a cashier finds a customer by name); `%` and `_` in it are literal, as in `description`. `ids` lists up to 200 client ids and `account_ids` up to 200 account ids (the clients holding them), each as a comma-separated list such as `3,17,42`: what a screen showing operations asks for the names behind the ids on its page. An id of another company or a deleted client matches nothing; a malformed list, an id above 2147483647 or more than 200 ids is 400 `VALIDATION_ERROR`.',
          ].join('\n\n'),
        ),
      },
    )
    .post('/clients', ({ run, body }) => run((tx, caller) => createClient(tx, caller, body)), {
      policy: { permission: 'clients.edit', idempotent: true },
      body: ClientModel.create,
      response: { 201: ClientModel.client, ...errors(409, 422) },
      detail: detail(
        'Create a client, optionally with accounts and tags',
        'Each account starts at balance 0; an account without `name` is named after its currency; a client may have no account (a walk-in customer). An unknown tag id is 422 UNKNOWN_TAG. `document` is stored normalised (see the field); a document (type and number) another live client of the company holds is 409 `DOCUMENT_TAKEN`, decided by a unique index, so of two concurrent creates with one document exactly one succeeds. A deleted client frees its document.',
      ),
    })
    .post('/clients/batch', ({ run, body }) => run(async (tx, caller) => ({ data: await createClients(tx, caller, body.clients) })), {
      policy: { permission: 'clients.edit', idempotent: true },
      // A thousand clients hold more elements than any single write: their own bound (BATCH_MAX_JSON_ELEMENTS).
      parse: [bodyBounds({ maxElements: app.config.batchMaxJsonElements })],
      body: ClientModel.batch,
      response: { 201: ClientModel.batchCreated, ...errors(409, 422) },
      detail: detail(
        'Create up to 1,000 clients at once, all or none',
        [
          'One database transaction; `data` holds the created clients, with their accounts and tags, in the order of `clients`. Each item is the body of `POST /api/clients` and is checked as that route checks it.',
          'When any item is wrong nothing is written and the answer is 422 `BATCH_ITEM_INVALID` with `details: [{ index, code, error, details? }]`, one entry for every failing item (`code` and `details` are those the single create would answer; a document held by a live client or by an earlier item is `DOCUMENT_TAKEN`). A body that fails the schema (more than 1,000 items, a missing name) is 400 `VALIDATION_ERROR`. A document taken by another create committing at the same moment is 409 `DOCUMENT_TAKEN` for the whole batch.',
          'The Idempotency-Key covers the whole batch.',
        ].join('\n\n'),
      ),
    })
    .get('/clients/:id', ({ run, params }) => run((tx, caller) => getClient(tx, caller, params.id)), {
      policy: { permission: 'clients.view' },
      params: IdParams,
      response: { 200: ClientModel.client },
      detail: detail('Get a client', SCOPE),
    })
    .patch('/clients/:id', ({ run, params, body }) => run((tx, caller) => updateClient(tx, caller, params.id, body)), {
      policy: { permission: 'clients.edit', tx: 'write' },
      params: IdParams,
      body: ClientModel.update,
      response: { 200: ClientModel.client, ...errors(409) },
      detail: detail('Update a client', 'Changes name, description, type or document (null removes it). A document another live client holds is 409 `DOCUMENT_TAKEN`.'),
    })
    .delete('/clients/:id', ({ run, params }) => run((tx, caller) => deleteClient(tx, caller, params.id)), {
      policy: { permission: 'clients.edit', tx: 'write' },
      params: IdParams,
      response: { 200: Deleted, ...errors(409) },
      detail: detail(
        'Delete a client (soft)',
        'Refused with 409 BALANCE_NOT_ZERO while any of its accounts has a balance other than zero. Afterwards the client is 404 and leaves every list and the balances.',
      ),
    })
    .post('/clients/:id/accounts', ({ run, params, body }) => run((tx, caller) => addAccount(tx, caller, params.id, body)), {
      policy: { permission: 'clients.edit', idempotent: true },
      params: IdParams,
      body: ClientModel.accountCreate,
      response: { 201: ClientModel.account },
      detail: detail('Open an account for a client', 'Balance starts at 0; without `name` the account is named after its currency.'),
    })
    .post(
      '/clients/:id/tags',
      ({ run, params, body, headers, set }) => run(async (tx, caller) => {
        // With an Idempotency-Key the stored first answer wins, so the no-op shortcut is only for calls without one.
        if (headers['idempotency-key'] === undefined) {
          const existing = await findClientTag(tx, caller, params.id, body.tag_id)
          if (existing) {
            set.status = 200
            return existing
          }
        }
        return attachTag(tx, caller, params.id, body.tag_id)
      }),
      {
        policy: { permission: 'clients.edit', idempotent: true },
        params: IdParams,
        body: ClientModel.tagAttach,
        response: { 200: ClientModel.clientTag, 201: ClientModel.clientTag, ...errors(422) },
        detail: detail(
          'Put a tag on a client',
          '201 with the new client-tag; when the tag is already on the client the call is a no-op answering 200 with the existing client-tag. With an Idempotency-Key the first answer is the one replayed (201 with the client-tag, existing or new). A tag of another company or unknown is 422 UNKNOWN_TAG.',
        ),
      },
    )
    .delete('/clients/:id/tags/:tagId', ({ run, params }) => run((tx, caller) => detachTag(tx, caller, params.id, params.tagId)), {
      policy: { permission: 'clients.edit', tx: 'write' },
      params: t.Object({ id: Id, tagId: Id }),
      response: { 200: Deleted },
      detail: detail('Take a tag off a client', "`tagId` is the tag's id; 404 when the tag is not on the client."),
    })
    .get('/tags', ({ run }) => run(async (tx, caller) => ({ data: await listTags(tx, caller) })), {
      policy: { permission: 'clients.view' },
      response: { 200: t.Object({ data: t.Array(ClientModel.tag) }) },
      detail: tagDetail("List the company's tags", 'Ordered by name then id.'),
    })
    .post('/tags', ({ run, body }) => run((tx, caller) => createTag(tx, caller, body)), {
      policy: { permission: 'clients.edit', idempotent: true },
      body: ClientModel.tagCreate,
      response: { 201: ClientModel.tag },
      detail: tagDetail('Create a tag', '`color` is a hex color #RRGGBB.'),
    })
    .get('/balances', ({ run }) => run((tx, caller) => balances(tx, caller)), {
      policy: { permission: 'clients.view' },
      response: { 200: ClientModel.balances },
      detail: {
        tags: ['Clients'],
        summary: 'Balances by currency',
        description:
          'Per currency, the exact sum of account balances of internal cajas (type 0) and of external accounts (type 1); deleted clients do not count.',
      },
    })
