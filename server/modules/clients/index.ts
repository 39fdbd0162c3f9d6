import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { auth, requirePermission } from '../../access/caller'
import { errors, Id, IdParams } from '../../lib/models'
import { createOnce, write } from '../../lib/write'
import { ClientModel } from './model'
import {
  addAccount,
  attachTag,
  balances,
  createClient,
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
const READ = 'Needs `clients.view` for an employee key.'
const EDIT = 'Needs `clients.edit` for an employee key.'
const SCOPE =
  'Clients are company records: an employee limited to some clients (client_ids) still reads every client; the limit applies to operations.'
const detail = (summary: string, description: string) => ({ tags: ['Clients'], summary, description })
const tagDetail = (summary: string, description: string) => ({ tags: ['Tags'], summary, description })

export const clientsModule = (app: AppContext) =>
  new Elysia({ prefix: '/api' })
    .use(auth(app))
    .get(
      '/clients',
      async ({ caller, query }) => {
        requirePermission(caller, 'clients.view')
        // Postgres wrote the JSON already (see listClients); it goes out as is.
        return new Response(await listClients(app.database, app.db, caller, query), {
          headers: { 'content-type': 'application/json; charset=utf-8' },
        })
      },
      {
        query: ClientModel.listQuery,
        response: { 200: ClientModel.list, ...errors(400, 401, 403) },
        detail: detail(
          'List clients with their accounts and tags',
          `Internal cajas (type 0) and external accounts (type 1), ordered by name (byte order) then id. \`description\` matches any part of the description, ignoring case. \`count\` is every match over all pages. pageSize defaults to 50, at most 200. ${READ} ${SCOPE}`,
        ),
      },
    )
    .post(
      '/clients',
      ({ caller, body, headers, set }) => {
        requirePermission(caller, 'clients.edit')
        return createOnce(app, caller, { key: headers['idempotency-key'], method: 'POST', path: '/api/clients', fingerprint: body }, set, (tx) =>
          createClient(tx, caller, body),
        )
      },
      {
        body: ClientModel.create,
        response: { 201: ClientModel.client, ...errors(400, 401, 403, 409, 422) },
        detail: detail(
          'Create a client, optionally with accounts and tags',
          `Each account starts at balance 0; an account without \`name\` is named after its currency. An unknown tag id is 422 UNKNOWN_TAG. ${EDIT}`,
        ),
      },
    )
    .get(
      '/clients/:id',
      ({ caller, params }) => {
        requirePermission(caller, 'clients.view')
        return getClient(app.db, caller, params.id)
      },
      {
        params: IdParams,
        response: { 200: ClientModel.client, ...errors(400, 401, 403, 404) },
        detail: detail('Get a client', `${READ} ${SCOPE}`),
      },
    )
    .patch(
      '/clients/:id',
      ({ caller, params, body }) => {
        requirePermission(caller, 'clients.edit')
        return write(app, caller, (tx) => updateClient(tx, caller, params.id, body))
      },
      {
        params: IdParams,
        body: ClientModel.update,
        response: { 200: ClientModel.client, ...errors(400, 401, 403, 404) },
        detail: detail('Update a client', `Changes name, description or type. ${EDIT}`),
      },
    )
    .delete(
      '/clients/:id',
      ({ caller, params }) => {
        requirePermission(caller, 'clients.edit')
        return write(app, caller, (tx) => deleteClient(tx, caller, params.id))
      },
      {
        params: IdParams,
        response: { 200: Deleted, ...errors(400, 401, 403, 404, 409) },
        detail: detail(
          'Delete a client (soft)',
          `Refused with 409 BALANCE_NOT_ZERO while any of its accounts has a balance other than zero. Afterwards the client is 404 and leaves every list and the balances. ${EDIT}`,
        ),
      },
    )
    .post(
      '/clients/:id/accounts',
      ({ caller, params, body, headers, set }) => {
        requirePermission(caller, 'clients.edit')
        const path = `/api/clients/${params.id}/accounts`
        return createOnce(app, caller, { key: headers['idempotency-key'], method: 'POST', path, fingerprint: body }, set, (tx) =>
          addAccount(tx, caller, params.id, body),
        )
      },
      {
        params: IdParams,
        body: ClientModel.accountCreate,
        response: { 201: ClientModel.account, ...errors(400, 401, 403, 404, 409) },
        detail: detail('Open an account for a client', `Balance starts at 0; without \`name\` the account is named after its currency. ${EDIT}`),
      },
    )
    .post(
      '/clients/:id/tags',
      async ({ caller, params, body, headers, set }) => {
        requirePermission(caller, 'clients.edit')
        const key = headers['idempotency-key']
        // With an Idempotency-Key the stored first answer wins, so the key is consulted before the no-op shortcut.
        if (key === undefined) {
          const existing = await findClientTag(app.db, caller, params.id, body.tag_id)
          if (existing) return existing
        }
        const path = `/api/clients/${params.id}/tags`
        return createOnce(app, caller, { key, method: 'POST', path, fingerprint: body }, set, (tx) =>
          attachTag(tx, caller, params.id, body.tag_id),
        )
      },
      {
        params: IdParams,
        body: ClientModel.tagAttach,
        response: { 200: ClientModel.clientTag, 201: ClientModel.clientTag, ...errors(400, 401, 403, 404, 409, 422) },
        detail: detail(
          'Put a tag on a client',
          `201 with the new client-tag; when the tag is already on the client the call is a no-op answering 200 with the existing client-tag. With an Idempotency-Key the first answer is the one replayed (201 with the client-tag, existing or new); the same key with another body is 409 IDEMPOTENCY_KEY_REUSED. A tag of another company or unknown is 422 UNKNOWN_TAG. ${EDIT}`,
        ),
      },
    )
    .delete(
      '/clients/:id/tags/:tagId',
      ({ caller, params }) => {
        requirePermission(caller, 'clients.edit')
        return write(app, caller, (tx) => detachTag(tx, caller, params.id, params.tagId))
      },
      {
        params: t.Object({ id: Id, tagId: Id }),
        response: { 200: Deleted, ...errors(400, 401, 403, 404) },
        detail: detail('Take a tag off a client', `\`tagId\` is the tag's id; 404 when the tag is not on the client. ${EDIT}`),
      },
    )
    .get(
      '/tags',
      async ({ caller }) => {
        requirePermission(caller, 'clients.view')
        return { data: await listTags(app.db, caller) }
      },
      {
        response: { 200: t.Object({ data: t.Array(ClientModel.tag) }), ...errors(401, 403) },
        detail: tagDetail("List the company's tags", `Ordered by name then id. ${READ}`),
      },
    )
    .post(
      '/tags',
      ({ caller, body, headers, set }) => {
        requirePermission(caller, 'clients.edit')
        return createOnce(app, caller, { key: headers['idempotency-key'], method: 'POST', path: '/api/tags', fingerprint: body }, set, (tx) =>
          createTag(tx, caller, body),
        )
      },
      {
        body: ClientModel.tagCreate,
        response: { 201: ClientModel.tag, ...errors(400, 401, 403, 409) },
        detail: tagDetail('Create a tag', `\`color\` is a hex color #RRGGBB. ${EDIT}`),
      },
    )
    .get(
      '/balances',
      ({ caller }) => {
        requirePermission(caller, 'clients.view')
        return balances(app.db, caller)
      },
      {
        response: { 200: ClientModel.balances, ...errors(401, 403) },
        detail: {
          tags: ['Clients'],
          summary: 'Balances by currency',
          description: `Per currency, the exact sum of account balances of internal cajas (type 0) and of external accounts (type 1); deleted clients do not count. ${READ}`,
        },
      },
    )
