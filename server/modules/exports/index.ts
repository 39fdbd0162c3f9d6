import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { routePolicy } from '../../access/policy'
import { ErrorBody, IdParams } from '../../lib/models'
import { ExportsModel } from './model'
import { createGrant, revokeGrant, DEFAULT_GRANT_DAYS } from './service'
import { csvStatement, jsonStatement } from './statement'
import { wantsMoneyStrings } from '../../lib/money'

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
  'A client-scoped employee reaches only its clients and a grant only its own client (any other id is 404); an expired or',
  'revoked grant is 401. When both `x-api-key` and a bearer grant are sent, `x-api-key` is used.',
  '',
  '`format=csv` streams RFC 4180 text (CRLF line ends, fields with a comma, quote, CR or LF quoted, quotes doubled; a header row)',
  'with the columns account_id, account_name, currency, transaction_id, operation_id, completed_at, description, amount,',
  'running_balance. Amounts are plain decimals. Text cells (account_name, currency, description) that start with `=`, `+`, `-`, `@`,',
  'tab or CR get a leading `\'` so spreadsheets do not run them as formulas; the JSON form carries the text unchanged.',
  'The CSV is read in batches while it streams, so a change committed meanwhile may show in part.',
].join('\n')

export const exportsModule = (app: AppContext) =>
  new Elysia({ prefix: '/api' })
    .use(routePolicy(app))
    .post(
      '/clients/:id/external-grants',
      // Not replayable by Idempotency-Key: the token is never stored, so a second answer could not repeat it.
      ({ run, params, body }) => run((tx, caller) => createGrant(tx, caller, params.id, app.clock(), body?.expires_in_days ?? DEFAULT_GRANT_DAYS)),
      {
        policy: { permission: 'clients.edit', tx: 'write', status: 201 },
        params: IdParams,
        body: ExportsModel.grantCreate,
        response: { 201: ExportsModel.grant },
        detail: {
          tags,
          summary: 'Grant an external client read access to its statement',
          description:
            'Answers a bearer token (at least 128 random bits, shown only here, stored as a SHA-256 hash) valid for `expires_in_days` days (1–365, default 30).',
        },
      },
    )
    .delete(
      '/clients/:id/external-grants/:grantId',
      ({ run, params }) => run((tx, caller) => revokeGrant(tx, caller, params.id, params.grantId, app.clock())),
      {
        policy: { permission: 'clients.edit', tx: 'write' },
        params: ExportsModel.grantParams,
        response: { 200: ExportsModel.deleted },
        detail: {
          tags,
          summary: 'Revoke an external grant',
          description: 'The token stops working at once (401). An unknown or already revoked grant is 404.',
        },
      },
    )
    .get(
      '/external/clients/:id/statement',
      // A stream: the statement opens its own tenant reads (one snapshot for JSON, one per batch for CSV). Declared
      // async because Elysia tells async handlers by their text, and only awaits those inside its error handling.
      async ({ caller, params, query, request }) =>
        query.format === 'csv'
          ? csvStatement(app, caller, params.id, query.from, query.to)
          : jsonStatement(app, caller, params.id, query.from, query.to, wantsMoneyStrings(request.headers.get('accept'))),
      {
        policy: { permission: 'clients.view', grant: true, tx: 'none' },
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
            401: errorResponse(
              'Missing or invalid key or grant; expired or revoked grant. For a grant that was real, `details` says which: `{ reason: "revoked" | "expired", at }` (`at`: when it was revoked or expired).',
            ),
            403: errorResponse('Employee key without `clients.view`'),
            404: errorResponse('Client missing, deleted, of another company, or not the grant’s client'),
            503: errorResponse('A statement of the export ran past `EXPORT_STATEMENT_TIMEOUT_MS`, or the database could not take it now; with `Retry-After`'),
          },
        },
      },
    )
