/** Spanish words for spoken announcements ("Turno A cero cuarenta y dos, caja dos"). */

const UNITS = ['cero', 'uno', 'dos', 'tres', 'cuatro', 'cinco', 'seis', 'siete', 'ocho', 'nueve']
const TEENS = ['diez', 'once', 'doce', 'trece', 'catorce', 'quince', 'dieciséis', 'diecisiete', 'dieciocho', 'diecinueve']
const TWENTIES = ['veinte', 'veintiuno', 'veintidós', 'veintitrés', 'veinticuatro', 'veinticinco', 'veintiséis', 'veintisiete', 'veintiocho', 'veintinueve']
const TENS = ['', '', '', 'treinta', 'cuarenta', 'cincuenta', 'sesenta', 'setenta', 'ochenta', 'noventa']
const HUNDREDS = ['', 'ciento', 'doscientos', 'trescientos', 'cuatrocientos', 'quinientos', 'seiscientos', 'setecientos', 'ochocientos', 'novecientos']

function below100(n: number): string {
  if (n < 10) return UNITS[n]
  if (n < 20) return TEENS[n - 10]
  if (n < 30) return TWENTIES[n - 20]
  const unit = n % 10
  return unit === 0 ? TENS[Math.floor(n / 10)] : `${TENS[Math.floor(n / 10)]} y ${UNITS[unit]}`
}

function below1000(n: number): string {
  if (n === 100) return 'cien'
  const hundreds = Math.floor(n / 100)
  const rest = n % 100
  if (hundreds === 0) return below100(rest)
  return rest === 0 ? HUNDREDS[hundreds] : `${HUNDREDS[hundreds]} ${below100(rest)}`
}

/** "uno" becomes "un"/"ún" before "mil" (veintiún mil, treinta y un mil). */
const apocope = (words: string) => words.replace(/veintiuno$/, 'veintiún').replace(/uno$/, 'un')

/** Cardinal in words for 0 ≤ n ≤ 999 999; larger or non-integer values are read digit by digit. */
export function numberToSpanish(n: number): string {
  if (!Number.isInteger(n) || n < 0 || n > 999_999) return String(n).split('').map((d) => UNITS[Number(d)] ?? d).join(' ')
  if (n < 1000) return below1000(n)
  const thousands = Math.floor(n / 1000)
  const rest = n % 1000
  const head = thousands === 1 ? 'mil' : `${apocope(below1000(thousands))} mil`
  return rest === 0 ? head : `${head} ${below1000(rest)}`
}

/** A run of digits as a caller says it: each leading zero on its own, then the number ("042" → "cero cuarenta y dos"). */
export function digitsToSpanish(digits: string): string {
  const zeros = digits.match(/^0*/)![0].length
  if (zeros === digits.length) return Array(digits.length).fill('cero').join(' ')
  const words = Array(zeros).fill('cero')
  words.push(digits.length - zeros > 6 ? digits.slice(zeros).split('').map((d) => UNITS[Number(d)]).join(' ') : numberToSpanish(Number(digits.slice(zeros))))
  return words.join(' ')
}

/** Ticket "A-042" → "A cero cuarenta y dos": letters spelled one by one (so "AB" is not read as a word). */
export function ticketToSpanish(ticket: string): string {
  const parts: string[] = []
  for (const [token] of ticket.matchAll(/\d+|\p{L}+/gu)) {
    parts.push(/\d/.test(token) ? digitsToSpanish(token) : token.toUpperCase().split('').join(' '))
  }
  return parts.join(' ')
}

/** Desk "Caja 2" → "caja dos"; numbers inside are read as whole numbers. */
export function deskToSpanish(desk: string): string {
  return desk
    .replace(/\d+/g, (d) => ` ${digitsToSpanish(d)} `)
    .replace(/\s+/g, ' ')
    .trim()
    .toLowerCase()
}

/** What the speaker says for a call; names are never spoken, whatever the privacy mode. */
export function announcementText(call: { ticket: string; desk: string }): string {
  return `Turno ${ticketToSpanish(call.ticket)}, ${deskToSpanish(call.desk)}`
}
