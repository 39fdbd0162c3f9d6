import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { auth, requirePermission } from '../../access/caller'
import { errors, ErrorBody, IdParams } from '../../lib/models'
import { write } from '../../lib/write'
import { ExportsModel } from './model'
import { createGrant, revokeGrant, statementReader, DEFAULT_GRANT_DAYS } from './service'
import { csvStatement, jsonStatement } from './statement'

const tags = ['External-client exports']

/** Plain JSON Schema of a TypeBox model, for a response documented by hand. */
const schemaOf = (model: unknown) => JSON.parse(JSON.stringify(model))
const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: schemaOf(ErrorBody) } } })

const statementDescription = [
  'Every account of the client with its completed transactions whose `completed_at` falls in the range, oldest first,',
  'each with `running_balance`: the account balance right after it. `opening_balance` is the sum of the account’s completed',
  'amounts before the range, `closing_balance` = opening + the amounts in the range; with `to` omitted it equals `balance`.',
  'Date-only bounds are whole days in the company time zone; date-times are instants (both bounds inclusive).',
  '',
  'Authorization: a company or employee API key (`x-api-key`; employee keys need `clients.view` and a client-scoped employee',
  'reaches only its clients), or `Authorization: Bearer <token>` of an external grant, which reaches only its own client',
  '(any other id is 404); an expired or revoked grant is 401. When both headers are sent, `x-api-key` is used.',
  '',
  '`format=csv` streams RFC 4180 text (CRLF line ends, fields with a comma, quote, CR or LF quoted, quotes doubled; a header row)',
  'with the columns account_id, account_name, currency, transaction_id, operation_id, completed_at, description, amount,',
  'running_balance. Amounts are plain decimals. Text cells (account_name, currency, description) that start with `=`, `+`, `-`, `@`,',
  'tab or CR get a leading `\'` so spreadsheets do not run them as formulas; the JSON form carries the text unchanged.',
  'The CSV is read in batches while it streams, so a change committed meanwhile may show in part.',
].join('\n')

export const exportsModule = (app: AppContext) =>
  new Elysia({ prefix: '/api' })
    .use(
      new Elysia()
        .use(auth(app))
        .post(
          '/clients/:id/external-grants',
          // Not replayable by Idempotency-Key: the token is never stored, so a second answer could not repeat it.
          async ({ caller, params, body, set }) => {
            requirePermission(caller, 'clients.edit')
            const grant = await write(app, caller, (tx) =>
              createGrant(tx, caller, params.id, app.clock(), body?.expires_in_days ?? DEFAULT_GRANT_DAYS),
            )
            set.status = 201
            return grant
          },
          {
            params: IdParams,
            body: ExportsModel.grantCreate,
            response: { 201: ExportsModel.grant, ...errors(400, 401, 403, 404) },
            detail: {
              tags,
              summary: 'Grant an external client read access to its statement',
              description:
                'Company key or `clients.edit`. Answers a bearer token (at least 128 random bits, shown only here, stored as a SHA-256 hash) valid for `expires_in_days` days (1–365, default 30).',
            },
          },
        )
        .delete(
          '/clients/:id/external-grants/:grantId',
          async ({ caller, params }) => {
            requirePermission(caller, 'clients.edit')
            return write(app, caller, (tx) => revokeGrant(tx, caller, params.id, params.grantId, app.clock()))
          },
          {
            params: ExportsModel.grantParams,
            response: { 200: ExportsModel.deleted, ...errors(400, 401, 403, 404) },
            detail: {
              tags,
              summary: 'Revoke an external grant',
              description: 'Company key or `clients.edit`. The token stops working at once (401). An unknown or already revoked grant is 404.',
            },
          },
        ),
    )
    .use(
      new Elysia()
        // Credentials first, as everywhere: a request without valid ones is 401 whatever else is wrong with it.
        .derive(async ({ headers }) => ({ reader: await statementReader(app, headers) }))
        .get(
          '/external/clients/:id/statement',
          async ({ reader, params, query }) =>
            query.format === 'csv'
              ? csvStatement(app, reader, params.id, query.from, query.to)
              : jsonStatement(app, reader, params.id, query.from, query.to),
          {
            params: IdParams,
            query: ExportsModel.statementQuery,
            detail: {
              tags,
              summary: 'Statement of an external client: accounts, completed transactions and running balances',
              description: statementDescription,
              security: [{ apiKey: [] }, { bearer: [] }],
              responses: {
                200: {
                  description: 'The statement: JSON by default, CSV with `format=csv`',
                  headers: {
                    'Content-Disposition': {
                      description: 'CSV only: `attachment; filename="statement-<id>.csv"`',
                      schema: { type: 'string' },
                    },
                  },
                  content: {
                    'application/json': { schema: schemaOf(ExportsModel.statement) },
                    'text/csv': { schema: { type: 'string', description: 'RFC 4180, UTF-8, header row first' } },
                  },
                },
                400: errorResponse('Invalid id, `from`, `to` or `format`; `from` after `to`'),
                401: errorResponse('Missing or invalid key or grant; expired or revoked grant'),
                403: errorResponse('Employee key without `clients.view`'),
                404: errorResponse('Client missing, deleted, of another company, or not the grant’s client'),
              },
            },
          },
        ),
    )
