import { t } from 'elysia'
import { invalid } from '../../lib/errors'

/** Identity documents a customer may show (contract §19). */
export type DocumentType = 'DNI' | 'PASAPORTE' | 'CUIT' | 'CUIL' | 'CI' | 'OTRO'

export interface ClientDocument {
  type: DocumentType
  number: string
  country: string
}

const documentType = t.Union(
  [t.Literal('DNI'), t.Literal('PASAPORTE'), t.Literal('CUIT'), t.Literal('CUIL'), t.Literal('CI'), t.Literal('OTRO')],
  { description: 'DNI, PASAPORTE, CUIT, CUIL, CI or OTRO' },
)

export const NUMBER_RULE =
  'Dots, spaces and dashes are removed before it is stored or compared (`20-12.345.678-3` is `20123456783`, a passport `AB 123456` is `AB123456`); nothing else is changed, letter case included, and lookups and the one-per-company rule compare it exactly. What remains must be 1–30 characters, none of them a control character.'

export const DocumentModel = {
  input: t.Object(
    {
      type: documentType,
      number: t.String({ minLength: 1, maxLength: 60, description: `The document number as written. ${NUMBER_RULE}` }),
      country: t.Optional(t.String({ pattern: '^[A-Za-z]{2}$', minLength: 2, maxLength: 2, description: 'ISO 3166-1 alpha-2 code of the issuing country (any case, stored upper case); default AR' })),
    },
    { additionalProperties: false },
  ),
  output: t.Object(
    {
      type: documentType,
      number: t.String({ description: 'As given, without dots, spaces or dashes' }),
      country: t.String({ description: 'ISO 3166-1 alpha-2' }),
    },
    { description: 'An identity document' },
  ),
}

export type DocumentInput = typeof DocumentModel.input.static

/**
 * A number as stored and compared (contract §19): without dots, spaces or dashes (the hyphen and the dashes people
 * paste), nothing else changed.
 */
export const normaliseNumber = (raw: string) => raw.replace(/[.\s\-‐‑‒–—]/g, '')

/** 1–30 characters (code points), none a control character. */
const NUMBER = /^[^\p{Cc}]{1,30}$/u

/** Codes Intl names that are not countries of ISO 3166-1 (unions, unknown and grouping regions). */
const NOT_COUNTRIES = new Set(['EU', 'EZ', 'UN', 'QO', 'ZZ'])
const regions = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' })

/** Whether `code` (upper case) is a country code the runtime's CLDR data names, as ISO 3166-1 assigns them. */
export const isCountry = (code: string) => /^[A-Z]{2}$/.test(code) && !NOT_COUNTRIES.has(code) && regions.of(code) !== undefined

/** The document as stored, or 400 naming the field under `path` (`document`, `customer.document`). */
export function checkDocument(input: DocumentInput, path = 'document'): ClientDocument {
  const number = normaliseNumber(input.number)
  const country = (input.country ?? 'AR').toUpperCase()
  const problems: { field: string; message: string }[] = []
  if (!NUMBER.test(number)) problems.push({ field: `${path}.number`, message: 'after removing dots, spaces and dashes: 1 to 30 characters, no control characters' })
  if (!isCountry(country)) problems.push({ field: `${path}.country`, message: `"${country}" is not an ISO 3166-1 alpha-2 country code` })
  if (problems.length) throw invalid('Invalid document', problems)
  return { type: input.type, number, country }
}

/** A stored document number lookup: the same normalisation, or 400 when nothing searchable remains. */
export function searchNumber(raw: string): string {
  const number = normaliseNumber(raw)
  if (!NUMBER.test(number)) throw invalid('Invalid document number', [{ field: 'document', message: 'after removing dots, spaces and dashes: 1 to 30 characters, no control characters' }])
  return number
}

/** The document of a stored row, or null when it has none. */
export const documentOf = (row: { documentType: string | null; documentNumber: string | null; documentCountry: string | null }): ClientDocument | null =>
  row.documentType && row.documentNumber ? { type: row.documentType as DocumentType, number: row.documentNumber, country: row.documentCountry ?? 'AR' } : null
