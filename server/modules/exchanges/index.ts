import { Elysia } from 'elysia'
import type { AppContext } from '../../context'
import { routePolicy } from '../../access/policy'
import { ErrorBody, errors, IdParams } from '../../lib/models'
import { ExchangeModel } from './model'
import { receiptPdf } from './pdf'
import { createExchange, getReceipt, listExchanges } from './service'

const tags = ['Exchanges']
const schemaOf = (model: unknown) => JSON.parse(JSON.stringify(model))
const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: schemaOf(ErrorBody) } } })

const CREATE_NOTE = [
  "One operation of the company's operation type of kind `exchange` named exactly \"Compra de divisas\" (`buy`) or \"Venta de divisas\" (`sell`), with `client_id` the customer and transactions on the caja only: for `buy` +amount in the currency and −amount×rate in the local currency; for `sell` −amount and +amount×rate; with a commission, one more transaction of +commission in the local currency, of the company's transaction type with `is_commission` (the lowest id when there are several). amount×rate is computed exactly and rounded half away from zero to 2 decimals; every digit is stored. Status `completed` when the caller holds `operations.approve` (balances move at once), else `pending`. It is an operation like any other: balances, audit trail, `operation.created` (carrying `exchange` and `receipt_number`) and desk feeds.",
  "The rate defaults to the board's `buy` (for `buy`) or `sell` (for `sell`) as published at that moment (`PUT /api/ventanilla/rates`); a `rate` equal to it is `rate_source: \"board\"`, any other is `\"manual\"` and needs `exchanges.rate` (else 403 `FORBIDDEN`).",
  'The customer: `client_id` (a live external client, type 1), or `customer` `{ name, document }`: the live client holding that document (type and number, once normalised) is reused, else a type 1 client without accounts is created (`client.created`); without a document a new client is made each time. Neither: an exchange without a customer. Concurrent exchanges for one new document take turns, so they share one client.',
  'A receipt is issued in the same transaction, numbered `PPPPP-NNNNNNNN` without gaps per company and `receipt_point` (see `GET /api/operations/{id}/receipt`). `warnings: ["CAJA_BELOW_ZERO"]` when the account of the caja that pays out (the local currency on a `buy`, the currency on a `sell`) is below zero once the exchange counts, pending or not: a warning, never a refusal.',
  [
    'Refusals, each with `details` naming the field and nothing written:',
    '400 `VALIDATION_ERROR`: `amount` or `rate` not a number, zero, negative, with more than 6 decimals or ≥ 10^22; a `commission.amount` that is not > 0; both `client_id` and `customer`; a blank customer name; a document whose number is empty once normalised or whose country is not ISO 3166-1 alpha-2; amount×rate below one cent.',
    '403 `FORBIDDEN`: a rate other than the board\'s without `exchanges.rate`; a client-scoped employee whose scope would not see the operation.',
    '409 `INVALID_TICKET_STATUS`: a ticket still waiting (or no-show); 409 `DOCUMENT_TAKEN`: the customer\'s document belongs to a caja; 409 `TILL_CLOSED`: the caja\'s till is closed (it has had till sessions and the last one is closed; `POST /api/cajas/{id}/open` opens it again). While the till is open the exchange joins its session and the day report.',
    '422 `INVALID_PARAMETERS`: an unknown currency, one that is not on the rates board, the local currency itself; `client_id` of a caja; a commission not below what a `buy` pays the customer. 422 `UNKNOWN_CLIENT`: `caja_id` or `client_id` unknown, deleted or of another company. 422 `ACCOUNT_NOT_INTERNAL`: `caja_id` of an external client. 422 `ACCOUNT_CURRENCY_MISMATCH`: the caja has no account in the currency or in the local currency. 422 `UNKNOWN_TICKET`: a ticket unknown or of another company. 422 `OPERATION_TYPE_NOT_FOUND`: no operation type of kind exchange with the side\'s name, or a commission without a commission transaction type. 422 `AMOUNT_OUT_OF_RANGE`: a figure or a balance leaving numeric(28,6).',
  ].join(' '),
].join('\n\n')

const RECEIPT_NOTE = [
  "The receipt of an exchange's operation, as issued: the company's profile and the customer as they were then, the deal and `total` (what the customer receives on a `buy`, local_amount − commission; pays on a `sell`, local_amount + commission). `status` is `void` once the operation is cancelled (its number stays taken); a reverted operation is pending again and its receipt still `issued`. 404 for an operation that is not an exchange, not the caller's, or outside an employee's client scope.",
  '`format=pdf`: the receipt as `application/pdf` sized for an 80 mm roll (width 80 mm, as long as the receipt), in Spanish, with amounts written as in Argentina with every digit (`116.550,00`), "ANULADO" when void; the font is embedded.',
].join('\n\n')

/** The counter's purchases and sales of foreign currency, and their receipts (contract §19). */
export const exchangesModule = (app: AppContext) =>
  new Elysia({ prefix: '/api' })
    .use(routePolicy(app))
    .post('/exchanges', ({ run, body }) => run((tx, caller) => createExchange(tx, caller, body)), {
      policy: { permission: 'operations.create', idempotent: true },
      body: ExchangeModel.create,
      response: { 201: ExchangeModel.created, ...errors(400, 403, 409, 422) },
      detail: { tags, summary: 'Buy or sell foreign currency at the counter, with a receipt', description: CREATE_NOTE },
    })
    .get('/exchanges', ({ run, query }) => run((tx, caller) => listExchanges(tx, caller, query)), {
      policy: { permission: 'operations.view' },
      query: ExchangeModel.listQuery,
      response: { 200: ExchangeModel.page, ...errors(400) },
      detail: {
        tags,
        summary: 'List exchanges, newest first',
        description:
          '`from`/`to` bound when the exchange was made, inclusively; date-only values are days in the company time zone. `client_id` is the customer. An employee limited to clients sees the exchanges whose operation they can see (its customer, or the caja, is one of theirs). `status` is the operation\'s.',
      },
    })
    .get(
      '/operations/:id/receipt',
      async ({ run, params, query }) => {
        const view = await run((tx, caller) => getReceipt(tx, caller, params.id))
        if (query.format !== 'pdf') return view.receipt
        // Drawn after the read's transaction has ended: the connection is not held while the PDF is made.
        return new Response(await receiptPdf(view), {
          headers: { 'content-type': 'application/pdf', 'content-disposition': `inline; filename="boleto-${view.receipt.number}.pdf"` },
        })
      },
      {
        policy: { permission: 'operations.view' },
        params: IdParams,
        query: ExchangeModel.receiptQuery,
        detail: {
          tags,
          summary: "An exchange's receipt, as JSON or PDF",
          description: RECEIPT_NOTE,
          responses: {
            200: {
              description: 'The receipt: JSON by default, PDF with `format=pdf`',
              headers: { 'Content-Disposition': { description: 'PDF only: `inline; filename="boleto-<number>.pdf"`', schema: { type: 'string' } } },
              content: {
                // The component the create's answer registers (a copy here would be a second schema of that name).
                'application/json': { schema: { $ref: '#/components/schemas/Receipt' } },
                'application/pdf': { schema: { type: 'string', format: 'binary', description: 'The receipt for an 80 mm roll printer' } },
              },
            },
            400: errorResponse('Invalid id or `format`'),
            404: errorResponse('Not an exchange, or an operation of another company or outside the client scope'),
          },
        },
      },
    )
