import Decimal from 'decimal.js'

/**
 * Money as people in Argentina type it: `.` groups thousands, `,` separates decimals ("1.165,50" is 1165.50).
 * The result is a decimal string for the API, never a JS number, so no float rounding reaches a rate.
 */
export type Parsed = { ok: true; value: string } | { ok: false; message: string }

const PLAIN = /^\d+(,\d+)?$/
const GROUPED = /^\d{1,3}(\.\d{3})+(,\d+)?$/
const MAX_DECIMALS = 6

export function parseArs(input: string): Parsed {
  const text = input.trim().replace(/\s+/g, '')
  if (text === '') return { ok: false, message: 'Falta el valor.' }
  if (text.startsWith('-')) return { ok: false, message: 'El valor no puede ser negativo.' }
  if (!PLAIN.test(text) && !GROUPED.test(text)) {
    // "1165.50" or "1,165.50": a dot where the decimal comma goes.
    if (/^[\d.,]+$/.test(text))
      return { ok: false, message: 'Separador equivocado: use coma para los decimales y punto para los miles, por ejemplo 1.165,50.' }
    return { ok: false, message: 'Escriba un número, por ejemplo 1.165,50.' }
  }
  const [int, frac = ''] = text.replace(/\./g, '').split(',')
  if (frac.length > MAX_DECIMALS) return { ok: false, message: `Como máximo ${MAX_DECIMALS} decimales.` }
  const digits = int.replace(/^0+(?=\d)/, '')
  return { ok: true, value: frac ? `${digits}.${frac}` : digits }
}

/** A decimal string from the API ("1165.5") as es-AR text with at least two decimals ("1.165,50"). */
export function formatArs(value: string): string {
  const d = new Decimal(value)
  const fixed = d.toFixed(Math.max(2, d.decimalPlaces()))
  const [int, frac] = fixed.split('.')
  const sign = int.startsWith('-') ? '-' : ''
  const grouped = int.replace('-', '').replace(/\B(?=(\d{3})+(?!\d))/g, '.')
  return `${sign}${grouped},${frac}`
}

/** Exact comparison of two decimal strings. */
export const lessThan = (a: string, b: string) => new Decimal(a).lt(new Decimal(b))
