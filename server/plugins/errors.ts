import { Elysia, ValidationError } from 'elysia'
import { ValueErrorType } from '@sinclair/typebox/errors'
import { Overloaded, overloaded } from '../lib/admission'
import type { UnavailableCause } from '../infra/telemetry'
import { ApiError } from '../lib/errors'
import { requestId } from './request-log'
import { sentJson } from './body-limit'
import { isConnectionLost } from '../../db/client'

const json = (status: number, body: unknown, headers?: Record<string, string>) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers } })

type Detail = { field: string; message: string }

/**
 * The schema checker's words for a missing field, a value of the wrong JSON type or one not of the pattern its
 * schema shows examples of, said as the other errors say things (a pattern is no help to a reader).
 */
function plainMessage(message: string, schema: unknown): string {
  if (message === 'Expected required property') return 'required'
  const examples = (schema as { examples?: unknown } | undefined)?.examples
  if (message.startsWith('Expected string to match') && Array.isArray(examples) && examples.length > 0)
    return `must look like ${examples.map((e) => JSON.stringify(e)).join(' or ')}`
  const type = /^Expected (array|object|string|number|integer|boolean|null)$/.exec(message)?.[1]
  return type ? `must be ${type === 'null' ? 'null' : /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`}` : message
}

/**
 * One error per field: a missing field is only `required` (the checker also reports it as failing the field's own
 * schema), and the same complaint twice is said once.
 */
function onePerField(details: Detail[]): Detail[] {
  const required = new Set(details.filter((d) => d.message === 'required').map((d) => d.field))
  const seen = new Set<string>()
  return details.filter((d) => {
    const key = `${d.field}\u0000${d.message}`
    if ((required.has(d.field) && d.message !== 'required') || seen.has(key)) return false
    seen.add(key)
    return true
  })
}

type CheckerError = ValidationError['all'][number]

const detailsOf = (type: string, all: CheckerError[]): Detail[] =>
  onePerField(
    all.map((e) => ({
      field: 'path' in e && e.path ? e.path.replace(/^\//, '').replace(/\//g, '.') || type : type,
      message: 'message' in e ? plainMessage(e.message, 'schema' in e ? e.schema : undefined) : 'invalid',
    })),
  )

function validationDetails(error: ValidationError): Detail[] {
  try {
    return detailsOf(error.type, error.all)
  } catch {
    return [{ field: error.type, message: 'invalid' }]
  }
}

/** A checker's complaint about a field the object's schema does not name: such fields are ignored, never refused. */
const unknownField = (e: CheckerError) => 'type' in e && e.type === ValueErrorType.ObjectAdditionalProperties

/**
 * The framework normalizes a body to its schema before it checks it, and a field of the wrong type comes out of
 * that mangled: `{"rates":"USD"}` is checked as three empty rate objects, fifteen complaints about fields nobody
 * sent. The body as sent (`sentJson`) is checked again with the same validator, so the answer names what is wrong
 * with it (`rates`: must be an array), wherever it is in any route's body; fields the schema does not name stay
 * ignored, as they are when the body passes.
 */
async function bodyDetails(error: ValidationError, request: Request): Promise<Detail[]> {
  const sent = await sentJson(request).catch(() => undefined)
  if (sent === undefined) return validationDetails(error)
  try {
    const kept = new ValidationError('body', error.validator, sent).all.filter((e) => !unknownField(e))
    return kept.length === 0 ? validationDetails(error) : detailsOf('body', kept)
  } catch {
    return validationDetails(error)
  }
}

/**
 * A numeric query parameter that parses but breaks a bound (`pageSize=500`, `type=2`) fails inside Elysia's
 * coercion with a bare 'property' error that no longer names the parameter; the query string still does.
 */
function queryFieldsHolding(value: unknown, request: Request): string[] {
  if (typeof value !== 'number') return []
  const names = new Set<string>()
  for (const [name, raw] of new URL(request.url).searchParams) if (raw.trim() !== '' && Number(raw) === value) names.add(name)
  return [...names]
}

const databaseError = (error: unknown) => {
  const e = error as { code?: string; message?: string; cause?: { code?: string; message?: string } }
  return { code: e?.cause?.code ?? e?.code, message: (e?.cause?.message ?? e?.message ?? '') as string }
}

/** Postgres errors that are the caller's fault (bad text encoding, out-of-range values) are 400s, not 500s. */
function clientFaultFromDatabase(error: unknown): boolean {
  const { code } = databaseError(error)
  return typeof code === 'string' && /^(22|23514)/.test(code)
}

/**
 * The database could not take the work now: it refused a connection (too many clients, starting or shutting down),
 * a statement ran past its timeout, or the connection could not be made or was lost. None is the caller's fault and
 * a retry later can succeed, so they answer 503 with Retry-After like a full admission queue.
 */
function databaseUnavailable(error: unknown): boolean {
  const { code } = databaseError(error)
  return isConnectionLost(error) || typeof code === 'string' && (/^(53|57P0)/.test(code) || code === '57014' || /^(CONNECT_TIMEOUT|CONNECTION_(CLOSED|ENDED|DESTROYED)|ECONNREFUSED|ECONNRESET)$/.test(code))
}

/**
 * Every amount is checked against numeric(28,6) on input, so a numeric overflow in the database is a sum leaving
 * it: a balance moved by a create, an approval, a revert or a cancellation. The transaction is rolled back.
 */
function moneyOverflow(error: unknown): boolean {
  const { code, message } = databaseError(error)
  return code === '22003' && /numeric field overflow/i.test(message)
}

/** A refusal as the contract writes it: `{ error, code, details? }` with its status and headers. */
export function apiErrorResponse(error: ApiError): Response {
  const body: Record<string, unknown> = { error: error.message, code: error.code }
  if (error.details !== undefined) body.details = error.details
  return json(error.status, body, error.headers)
}

/**
 * Turns every failure into `{ error, code, details? }` with the contract's status; nothing else leaves.
 * Unknown failures are logged with the request id and answered 500 INTERNAL_ERROR without a trace. Every 503 is
 * told to `unavailable` with its cause (the metrics' count of 503s by cause).
 */
export const errors = (log: (entry: Record<string, unknown>) => void, unavailable?: (cause: UnavailableCause) => void) =>
  new Elysia({ name: 'errors' })
    .error({ ApiError })
    .onError({ as: 'global' }, async ({ code, error: raised, request }) => {
      // A refusal decided while the body is being read (the route policy gates in the parse stage) arrives
      // wrapped in the framework's parse error.
      const cause = (raised as { cause?: unknown })?.cause
      let error = code === 'PARSE' && cause instanceof ApiError ? cause : raised
      if (!(error instanceof ApiError) && databaseUnavailable(error)) {
        log({ level: 'warn', msg: 'database unavailable', id: requestId(request), error: databaseError(error).code })
        error = overloaded('database_unavailable')
      }
      if (error instanceof Overloaded) unavailable?.(error.cause503)
      if (error instanceof ApiError) return apiErrorResponse(error)
      switch (code) {
        case 'VALIDATION': {
          const v = error as ValidationError
          if (v.type === 'params') return json(400, { error: 'Invalid id in path', code: 'INVALID_ID' })
          if (v.type === 'property') {
            const fields = queryFieldsHolding(v.value, request)
            if (fields.length) {
              const message = validationDetails(v)[0]?.message ?? 'invalid'
              return json(400, { error: 'Invalid query', code: 'VALIDATION_ERROR', details: fields.map((field) => ({ field, message })) })
            }
          }
          const details = v.type === 'body' ? await bodyDetails(v, request) : validationDetails(v)
          return json(400, { error: `Invalid ${v.type}`, code: 'VALIDATION_ERROR', details })
        }
        case 'PARSE':
          return json(400, { error: 'Malformed request body', code: 'VALIDATION_ERROR' })
        case 'NOT_FOUND':
          return json(404, { error: 'Not found', code: 'NOT_FOUND' })
        case 'INVALID_FILE_TYPE':
          return json(415, { error: 'Unsupported media type', code: 'UNSUPPORTED_MEDIA_TYPE' })
      }
      if (moneyOverflow(error))
        return json(422, { error: 'A balance would leave the range of numeric(28,6) (below 10^22 in absolute value); nothing was changed', code: 'AMOUNT_OUT_OF_RANGE' })
      if (clientFaultFromDatabase(error)) return json(400, { error: 'Invalid value', code: 'VALIDATION_ERROR' })
      log({
        level: 'error',
        msg: 'unhandled',
        id: requestId(request),
        method: request.method,
        path: new URL(request.url).pathname,
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      })
      return json(500, { error: 'Internal error', code: 'INTERNAL_ERROR' })
    })
