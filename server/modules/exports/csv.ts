/**
 * RFC 4180 output: fields joined by commas (or the given separator, `;` where the comma is the decimal mark),
 * records ended by CRLF, a field quoted when it holds the separator, a double quote, CR or LF, and quotes inside
 * doubled.
 */
export function csvField(value: string, separator = ','): string {
  return value.includes(separator) || /["\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value
}

export const csvRecord = (fields: string[], separator = ',') => `${fields.map((f) => csvField(f, separator)).join(separator)}\r\n`

/**
 * Free text that a spreadsheet would run as a formula (first character = + - @, or a tab/CR that some
 * programs skip before one) is neutralised with a leading apostrophe. Only text columns pass through here:
 * amounts are numbers, and "-12.5" must stay a negative number.
 */
export function safeText(value: string): string {
  return /^[=+\-@\t\r]/.test(value) ? `'${value}` : value
}
