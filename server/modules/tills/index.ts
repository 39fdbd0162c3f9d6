import { Elysia } from 'elysia'
import type { AppContext } from '../../context'
import { routePolicy } from '../../access/policy'
import { ErrorBody, errors, IdParams } from '../../lib/models'
import { TillModel } from './model'
import { reportPdf } from './pdf'
import { reportCsv } from './report'
import { closeTill, getTillSession, listCajas, listTillSessions, openTill, tillReport } from './service'

const tags = ['Till sessions']
/**
 * A model as plain JSON Schema for an answer documented by hand, without component names: the generator writes a
 * named schema its own way on the routes it validates, and the document holds one text per name.
 */
const schemaOf = (model: unknown) => JSON.parse(JSON.stringify(model, (key, value) => (key === '$id' ? undefined : value)))
const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: schemaOf(ErrorBody) } } })
const READ = { permission: ['tills.operate', 'operations.view'] } as const

const COUNT_NOTE =
  "`counted`: one entry per currency of the caja's accounts (any case; each once; a currency the caja has no account in, a repeated one or a missing one → 400 `VALIDATION_ERROR` with `details`), `amount` ≥ 0, optionally with `denominations` (bills and coins, adding up to `amount`). `expected` is the caja's balance in that currency at that moment (every write that committed before is in it; one committing at the same moment either comes before or waits for this to end); `difference` = counted − expected. A non-zero difference is booked at once as one completed operation of type \"Ajuste de caja\" (kind `other`; 422 `OPERATION_TYPE_NOT_FOUND` when the company has none) on the caja's accounts, so the balances equal what was counted; `adjustment_operation_id` names it (null without a difference). 404 for an id that is not a live caja (type 0 client) of the company, or one outside an employee's client scope."

const OPEN_NOTE = [
  'Opens the till: from its commit every exchange and operation moving the caja joins this session (its report). Already open → 409 `TILL_OPEN` (of two opens at once, one is 201 and the other 409).',
  COUNT_NOTE,
  'Audited (`till_sessions`, with the employee), and announced as `till_session.opened`.',
].join('\n\n')

const CLOSE_NOTE = [
  "Closes the open till. Not open (never opened, or already closed) → 409 `TILL_NOT_OPEN` (of two closes at once, one is 200 and the other 409). A difference whose absolute value is above the company's `till_tolerance` (GET /api/company) in any currency needs `tills.supervise`: else 403 `FORBIDDEN` with `details: [{ currency, expected, counted, difference, tolerance, over_tolerance }]` for every currency that differs, and nothing is written.",
  COUNT_NOTE,
  "`summary`, one row per currency of the caja, covers the session's completed operations (those its changes left completed, adjustments excluded): `bought`/`sold` the foreign amounts of its purchases and sales, `operations` how many moved that currency of the caja, `commissions` (local currency row only). From the commit on, while the caja stays closed, any exchange, new operation, approve, revert or cancel moving its accounts is refused with 409 `TILL_CLOSED`; one committing at the same moment either lands in this session (its summary and report) or is refused, never in between.",
  'Audited (`till_sessions`, with the employee), and announced as `till_session.closed`.',
].join('\n\n')

const REPORT_NOTE = [
  "The day report of a session: the opening count, every operation the session saw move the caja (in the order it first did, with its receipt number, what changed it in the session — created, approved, reverted, cancelled —, its status as the session left it, and what it moved on the caja per currency), the summary, the net movement per currency (the opening count plus it is the closing `expected`), the closing count, and every difference with the \"Ajuste de caja\" operation that booked it. A closed session's report is what its close left, whatever happens to its operations later; an open one's is as of now.",
  '`format=csv`: the same for a spreadsheet set to Spanish (es-AR): `text/csv; charset=utf-8` starting with a byte order mark, `;` between fields, decimal comma without thousands marks (`-116550,00`), dates `dd/mm/aaaa hh:mm` in the company time zone, Spanish headings, one block per part separated by an empty line. `format=pdf`: a landscape A4 PDF in Spanish, one column per currency of the caja, with a line for the supervisor to sign.',
].join('\n\n')

/** A caja's till day: open and close with a count, the sessions and their reports (contract §20). */
export const tillsModule = (app: AppContext) =>
  new Elysia({ prefix: '/api' })
    .use(routePolicy(app))
    .get('/cajas', ({ run }) => run((tx, caller) => listCajas(tx, caller)), {
      policy: { permission: ['tills.operate', 'operations.view', 'operations.create'] },
      response: { 200: TillModel.cajas },
      detail: {
        tags,
        summary: 'List the cajas with their till state',
        description:
          "Every live caja (type 0 client) of the company, by name, with its accounts and balances, `till` (`never_opened`, `open` or `closed`) and `session`: the open session, or the last one when closed. An employee limited to clients sees only the cajas among them. The counter's console reads it to know whether its caja is open.",
      },
    })
    .post('/cajas/:id/open', ({ run, params, body }) => run((tx, caller) => openTill(tx, caller, params.id, body)), {
      policy: { permission: 'tills.operate', idempotent: true },
      params: IdParams,
      body: TillModel.open,
      response: { 201: TillModel.changed, ...errors(400, 409, 422) },
      detail: { tags, summary: "Open a caja's till with a count per currency", description: OPEN_NOTE },
    })
    .post('/cajas/:id/close', ({ run, params, body }) => run((tx, caller) => closeTill(tx, caller, params.id, body)), {
      policy: { permission: 'tills.operate', idempotent: true, status: 200 },
      params: IdParams,
      body: TillModel.close,
      response: { 200: TillModel.changed, ...errors(400, 409, 422) },
      detail: { tags, summary: "Close a caja's till with a count per currency", description: CLOSE_NOTE },
    })
    .get('/cajas/:id/sessions', ({ run, params, query }) => run((tx, caller) => listTillSessions(tx, caller, params.id, query)), {
      policy: READ,
      params: IdParams,
      query: TillModel.listQuery,
      response: { 200: TillModel.page, ...errors(400) },
      detail: {
        tags,
        summary: "A caja's till sessions, newest first",
        description: '`from`/`to` bound `opened_at` inclusively; date-only values are days in the company time zone. 404 for an id that is not a live caja of the company (or outside the client scope).',
      },
    })
    .get('/till-sessions/:id', ({ run, params }) => run((tx, caller) => getTillSession(tx, caller, params.id)), {
      policy: READ,
      params: IdParams,
      response: { 200: TillModel.session },
      detail: { tags, summary: 'A till session', description: "An open session's `summary` is as of now; a closed one's, as its close froze it." },
    })
    .get(
      '/till-sessions/:id/report',
      async ({ run, params, query }) => {
        const report = await run((tx, caller) => tillReport(tx, caller, params.id))
        const name = `caja-${report.session.caja_id}-sesion-${report.session.id}`
        if (query.format === 'csv')
          return new Response(reportCsv(report), { headers: { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename="${name}.csv"` } })
        // Drawn after the read's transaction has ended: the connection is not held while the PDF is made.
        if (query.format === 'pdf') return new Response(await reportPdf(report), { headers: { 'content-type': 'application/pdf', 'content-disposition': `inline; filename="${name}.pdf"` } })
        return report
      },
      {
        policy: READ,
        params: IdParams,
        query: TillModel.reportQuery,
        detail: {
          tags,
          summary: "A till session's day report, as JSON, CSV or PDF",
          description: REPORT_NOTE,
          responses: {
            200: {
              description: 'The report: JSON by default, CSV with `format=csv`, PDF with `format=pdf`',
              headers: { 'Content-Disposition': { description: 'CSV and PDF: the file name, `caja-<caja>-sesion-<session>`', schema: { type: 'string' } } },
              content: {
                'application/json': { schema: schemaOf(TillModel.report) },
                'text/csv': { schema: { type: 'string', description: 'es-AR: UTF-8 with BOM, `;` separator, decimal comma' } },
                'application/pdf': { schema: { type: 'string', format: 'binary', description: 'The report on landscape A4' } },
              },
            },
            400: errorResponse('Invalid id or `format`'),
            404: errorResponse('A session of another company, or of a caja outside the client scope'),
          },
        },
      },
    )
