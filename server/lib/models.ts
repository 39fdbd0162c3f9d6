import { t, type TSchema } from 'elysia'
import { TypeRegistry } from 'elysia/type-system'
import { invalid } from './errors'
import { isExactMoney, MONEY_LIMIT, MONEY_PATTERN, type ExactMoney } from './money'

export const ErrorBody = t.Object(
  { error: t.String(), code: t.String(), details: t.Optional(t.Any()) },
  { $id: 'Error', description: 'Every error: a human message and a stable code.' },
)

/**
 * Digits of 1..2147483647 with no sign, leading zero, exponent, fraction or blank. `t.Numeric` is not enough:
 * it takes anything `Number()` takes ('1e3', ' 12', '0x10'), so the range lives in the pattern itself.
 */
export const ID_PATTERN =
  '^(?:[1-9][0-9]{0,8}|1[0-9]{9}|20[0-9]{8}|21[0-3][0-9]{7}|214[0-6][0-9]{6}|2147[0-3][0-9]{5}|21474[0-7][0-9]{4}|214748[0-2][0-9]{3}|2147483[0-5][0-9]{2}|21474836[0-3][0-9]|214748364[0-7])$'

/** A path id: positive decimal integer up to 2^31−1. Anything else is 400 INVALID_ID (see the errors plugin). */
export const Id = t
  .Transform(
    t.String({ pattern: ID_PATTERN, description: 'Positive integer id: decimal digits, 1 to 2147483647' }),
  )
  .Decode((value) => Number(value))
  .Encode((value) => String(value))
export const IdParams = t.Object({ id: Id })

/**
 * Extension key carrying a JSON body schema from a route to the document step (server/plugins/openapi.ts), which
 * moves it into the request body and removes it: a route that checks its caller in the parse stage has a function
 * there, and the generator then cannot tell the body's content type.
 */
export const JSON_BODY = 'x-json-body'

/**
 * Extension key marking a body schema whose route refuses fields the schema does not name (`closed`); the document
 * step keeps `additionalProperties: false` on it (and on it only: elsewhere unknown fields are ignored) and removes
 * the key.
 */
export const UNKNOWN_FIELDS = 'x-unknown-fields'

type ObjectSchema = TSchema & { properties: Record<string, unknown> }
export type Closed<T extends ObjectSchema> = T & { [UNKNOWN_FIELDS]: 'refused' }

/** A body whose misspelt field must not pass for an absent one (a setting left unchanged while the answer is 200). */
export const closed = <T extends ObjectSchema>(schema: T): Closed<T> =>
  Object.assign(schema, { additionalProperties: false, [UNKNOWN_FIELDS]: 'refused' as const })

/**
 * The route half of `closed`: refuses a body naming a field its schema does not have, 400 naming each. The
 * framework drops such fields silently (it normalizes bodies to their schema), so this runs in the transform stage,
 * which sees the body as sent, before it is normalized.
 */
export const onlyFields = (schema: Closed<ObjectSchema>) => {
  const known = new Set(Object.keys(schema.properties))
  return ({ body }: { body: unknown }) => {
    if (!body || typeof body !== 'object' || Array.isArray(body)) return
    const unknown = Object.keys(body).filter((k) => !known.has(k))
    if (unknown.length)
      throw invalid(`Unknown field${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`, unknown.map((field) => ({ field, message: 'not a field of this body' })))
  }
}

/** The `Idempotency-Key` request header, for routes that claim it (the route policy's `idempotent`, or their own). */
export const IdempotencyHeaders = t.Object(
  { 'idempotency-key': t.Optional(t.String({ minLength: 1, maxLength: 255, description: 'Replays the first answer of the same request within 24 h' })) },
  { additionalProperties: true },
)

/** The longest decimal string taken as money: a sign, 22 integer digits, a point and 76 decimals to round away. */
const MONEY_TEXT_MAX = 100

export const Money = t.Union([t.Number({ exclusiveMinimum: -MONEY_LIMIT, exclusiveMaximum: MONEY_LIMIT }), t.String({ pattern: MONEY_PATTERN, maxLength: MONEY_TEXT_MAX })], {
  description:
    'Exact decimal: a JSON number or a decimal string (at most 100 characters), below 10^22 in absolute value (numeric(28,6)); stored with 6 decimal places (half away from zero).',
})

/**
 * Money in an answer: what `toJson` makes (server/lib/money.ts), checked as such, so a value that went through a
 * float fails the route's response check instead of leaving rounded. A custom kind through TypeBox's public
 * registry; the document sees its plain JSON Schema, a number.
 */
const MONEY_KIND = 'ExactMoney'
if (!TypeRegistry.Has(MONEY_KIND)) TypeRegistry.Set(MONEY_KIND, (_schema, value) => isExactMoney(value))
export const MONEY_OUT_NOTE =
  'Exact decimal: a JSON number with every digit of the stored value, trailing zeros trimmed (a decimal string under `Accept: application/json; money=string`)'
export const MoneyOut = (description?: string) =>
  t.Unsafe<ExactMoney>({
    [Symbol.for('TypeBox.Kind')]: MONEY_KIND,
    type: 'number',
    description: description ? `${description}. ${MONEY_OUT_NOTE}.` : `${MONEY_OUT_NOTE}.`,
  })

/** Money that must not be negative (an exchange rate): the same forms, the bound in the schema itself. */
export const NonNegativeMoney = (description: string) =>
  t.Union([t.Number({ minimum: 0, exclusiveMaximum: MONEY_LIMIT }), t.String({ pattern: MONEY_PATTERN.replace('^-?', '^'), maxLength: MONEY_TEXT_MAX })], {
    description: `${description}: a JSON number or a decimal string, not negative, below 10^22; stored with 6 decimal places.`,
  })

export const DateTime = t.String({ format: 'date-time', maxLength: 40, description: 'ISO 8601 UTC' })

export function pageQuery(max = 200) {
  return {
    page: t.Optional(t.Integer({ minimum: 1, maximum: 1_000_000, default: 1, description: 'Page number, from 1 (at most 1,000,000)' })),
    pageSize: t.Optional(t.Integer({ minimum: 1, maximum: max, default: 50, description: `Items per page, 1–${max}` })),
  }
}

export const Pagination = t.Object({
  page: t.Integer(),
  pageSize: t.Integer(),
  total: t.Integer(),
  totalPages: t.Integer(),
}, { $id: 'Pagination' })

export function pagination(page: number, pageSize: number, total: number) {
  return { page, pageSize, total, totalPages: Math.ceil(total / pageSize) }
}

/**
 * Error responses for the OpenAPI document; pass the statuses a route can answer. 429 is added to every route:
 * the rate limits apply to all of them.
 */
export function errors(...statuses: number[]) {
  return Object.fromEntries([...new Set([...statuses, 429])].map((s) => [s, ErrorBody])) as Record<number, typeof ErrorBody>
}

export const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null)
