export type ErrorCode =
  | 'INVALID_ID'
  | 'VALIDATION_ERROR'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'MESAS_DISABLED'
  | 'VENTANILLA_DISABLED'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'NOT_ALL_PENDING'
  | 'NOT_ALL_COMPLETED'
  | 'ALREADY_CANCELLED'
  | 'SLUG_TAKEN'
  | 'ACCOUNT_IN_OTHER_MESA'
  | 'IDEMPOTENCY_KEY_REUSED'
  | 'API_KEY_LIMIT_REACHED'
  | 'TOOL_DISABLED'
  | 'QUEUE_EMPTY'
  | 'TICKET_CLOSED'
  | 'PREFIX_TAKEN'
  | 'INVALID_TICKET_STATUS'
  | 'DOCUMENT_TAKEN'
  | 'TILL_OPEN'
  | 'TILL_NOT_OPEN'
  | 'TILL_CLOSED'
  | 'BALANCE_NOT_ZERO'
  | 'FILE_TOO_LARGE'
  | 'PAYLOAD_TOO_LARGE'
  | 'QUOTA_EXCEEDED'
  | 'HEADERS_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'CURRENCIES_MUST_DIFFER'
  | 'ACCOUNT_NOT_INTERNAL'
  | 'ACCOUNT_CURRENCY_MISMATCH'
  | 'OPERATION_TYPE_NOT_FOUND'
  | 'OPERATION_TYPE_KIND_MISMATCH'
  | 'UNKNOWN_ACCOUNT'
  | 'UNKNOWN_CLIENT'
  | 'UNKNOWN_TAG'
  | 'UNKNOWN_COST_CENTER'
  | 'UNKNOWN_TRANSACTION_TYPE'
  | 'UNKNOWN_EMPLOYEE'
  | 'UNKNOWN_SERVICE'
  | 'UNKNOWN_TICKET'
  | 'INVALID_PARAMETERS'
  | 'NO_TRADE_LEGS'
  | 'WEBHOOK_URL_NOT_ALLOWED'
  | 'BATCH_ITEM_INVALID'
  | 'AMOUNT_OUT_OF_RANGE'
  | 'REQUEST_TIMEOUT'
  | 'RATE_LIMITED'
  | 'SERVICE_UNAVAILABLE'
  | 'INTERNAL_ERROR'

/** The one error type services throw; the errors plugin turns it into `{ error, code, details? }`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
    /** Headers the answer carries besides the body (`Retry-After` of a 429 or of an overload refusal). */
    readonly headers?: Record<string, string>,
  ) {
    super(message)
  }
}

export const notFound = (what = 'Record') => new ApiError(404, 'NOT_FOUND', `${what} not found`)
export const forbidden = (message = 'Not allowed for this key') => new ApiError(403, 'FORBIDDEN', message)
export const unauthorized = (message = 'Missing or invalid API key') => new ApiError(401, 'UNAUTHORIZED', message)
export const invalid = (message: string, details?: unknown) => new ApiError(400, 'VALIDATION_ERROR', message, details)
export const conflict = (code: ErrorCode, message: string) => new ApiError(409, code, message)
export const unprocessable = (code: ErrorCode, message: string, details?: unknown) =>
  new ApiError(422, code, message, details)
export const rateLimited = (message: string, retryAfterS: number) =>
  new ApiError(429, 'RATE_LIMITED', message, undefined, { 'retry-after': String(Math.max(1, Math.ceil(retryAfterS))) })

/**
 * Whether `e` (or an error it wraps) is Postgres's unique violation, of the index or constraint `name` when given: the
 * answer a unique index gives a writer that lost a race against another.
 */
export function isUniqueViolation(e: unknown, name?: string): boolean {
  for (let cur = e as { code?: string; constraint_name?: string; constraint?: string; message?: string; cause?: unknown } | undefined; cur; cur = cur.cause as typeof cur) {
    if (cur.code === '23505' && (name === undefined || String(cur.constraint_name ?? cur.constraint ?? cur.message ?? '').includes(name))) return true
  }
  return false
}
