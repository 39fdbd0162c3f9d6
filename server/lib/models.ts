import { t } from 'elysia'
import { MONEY_PATTERN } from './money'

export const ErrorBody = t.Object(
  { error: t.String(), code: t.String(), details: t.Optional(t.Any()) },
  { $id: '#/components/schemas/Error', description: 'Every error: a human message and a stable code.' },
)

/** A path id: positive decimal integer up to 2^31−1. Anything else is 400 INVALID_ID (see the errors plugin). */
export const Id = t.Numeric({ minimum: 1, maximum: 2147483647, multipleOf: 1, description: 'Positive integer id' })
export const IdParams = t.Object({ id: Id })

export const Money = t.Union([t.Number(), t.String({ pattern: MONEY_PATTERN })], {
  description: 'Exact decimal: a JSON number or a decimal string; stored with 6 decimal places (half away from zero).',
})

export const DateTime = t.String({ format: 'date-time', description: 'ISO 8601 UTC' })

export function pageQuery(max = 200) {
  return {
    page: t.Optional(t.Integer({ minimum: 1, default: 1, description: 'Page number, from 1' })),
    pageSize: t.Optional(t.Integer({ minimum: 1, maximum: max, default: 50, description: `Items per page, 1–${max}` })),
  }
}

export const Pagination = t.Object({
  page: t.Integer(),
  pageSize: t.Integer(),
  total: t.Integer(),
  totalPages: t.Integer(),
})

export function pagination(page: number, pageSize: number, total: number) {
  return { page, pageSize, total, totalPages: Math.ceil(total / pageSize) }
}

/** Error responses for the OpenAPI document; pass the statuses a route can answer. */
export function errors(...statuses: number[]) {
  return Object.fromEntries(statuses.map((s) => [s, ErrorBody])) as Record<number, typeof ErrorBody>
}

export const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null)
