/**
 * Bind parameters written into the statement text as SQL literals, for a pooler in transaction pooling. There every
 * statement is unnamed, and postgres.js sends an unnamed statement with parameters as Parse + Describe, waits for
 * the parameter types, and only then sends Bind + Execute: two round trips per statement. The same statement with
 * its values as literals has no parameters and goes out as Parse + Describe + Bind + Execute at once: one round trip.
 * The server plans it exactly as it plans the unnamed statement (with the values known either way).
 *
 * A value becomes a quoted literal of unknown type, which the server resolves from its context just as it resolves
 * a parameter of unknown type (oid 0, what postgres.js declares for strings and numbers); the types postgres.js
 * infers from a JS value (boolean, bigint, Date, bytes) are kept with a cast. Quoting is that of libpq's
 * `PQescapeLiteral`: quotes doubled, and when a backslash occurs the `E'…'` form with backslashes doubled, which reads
 * the same whatever `standard_conforming_strings` says; the connection's encoding is UTF-8 (postgres.js sets it).
 * Anything else (objects, NUL characters, placeholders the text does not have) answers null and the statement keeps
 * its parameters.
 */

/** The statement text split at its placeholders: text, parameter number (1-based), text, …, text. */
type Split = (string | number)[]

const IDENT = /[A-Za-z0-9_$\u0080-\uffff]/
const DOLLAR_TAG = /^\$([A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/

/**
 * Finds the `$n` placeholders that are tokens of their own: not inside a quoted string, a quoted identifier, a
 * dollar-quoted string or a comment, and not part of an identifier (`a$1` is one).
 */
export function splitPlaceholders(text: string): Split {
  const out: Split = []
  let from = 0
  let i = 0
  const n = text.length
  while (i < n) {
    const c = text[i]
    if (c === "'") {
      // E'…' (any case) takes backslash escapes; other strings only end at a quote not followed by another.
      const escapes = i > 0 && (text[i - 1] === 'E' || text[i - 1] === 'e') && (i < 2 || !IDENT.test(text[i - 2]))
      i++
      while (i < n) {
        if (escapes && text[i] === '\\') i += 2
        else if (text[i] === "'") {
          if (text[i + 1] === "'") i += 2
          else break
        } else i++
      }
      i++
    } else if (c === '"') {
      i++
      while (i < n && !(text[i] === '"' && text[i + 1] !== '"')) i += text[i] === '"' ? 2 : 1
      i++
    } else if (c === '-' && text[i + 1] === '-') {
      while (i < n && text[i] !== '\n') i++
    } else if (c === '/' && text[i + 1] === '*') {
      let depth = 1
      i += 2
      while (i < n && depth > 0) {
        if (text[i] === '/' && text[i + 1] === '*') (depth++, (i += 2))
        else if (text[i] === '*' && text[i + 1] === '/') (depth--, (i += 2))
        else i++
      }
    } else if (c === '$' && (i === 0 || !IDENT.test(text[i - 1]))) {
      const digits = /^\$(\d+)/.exec(text.slice(i, i + 12))
      if (digits) {
        out.push(text.slice(from, i), Number(digits[1]))
        i += digits[0].length
        from = i
        continue
      }
      const tag = DOLLAR_TAG.exec(text.slice(i, i + 64))
      if (tag) {
        const end = text.indexOf(tag[0], i + tag[0].length)
        i = end === -1 ? n : end + tag[0].length
      } else i++
    } else i++
  }
  out.push(text.slice(from))
  return out
}

/** libpq's PQescapeLiteral. */
export function quoteLiteral(s: string): string {
  const quoted = s.replace(/'/g, "''")
  return s.includes('\\') ? ` E'${quoted.replace(/\\/g, '\\\\')}'` : `'${quoted}'`
}

/** An array's input form (`{"a","b"}`) for strings and numbers, nested arrays included; null for anything else. */
function arrayText(xs: unknown[]): string | null {
  const parts: string[] = []
  for (const x of xs) {
    if (x === null) parts.push('NULL')
    else if (Array.isArray(x)) {
      const inner = arrayText(x)
      if (inner === null) return null
      parts.push(inner)
    } else if (typeof x === 'string' || (typeof x === 'number' && Number.isFinite(x))) parts.push(`"${String(x).replace(/[\\"]/g, '\\$&')}"`)
    else return null
  }
  return `{${parts.join(',')}}`
}

/** One value as a literal, with the type postgres.js would have declared for it; null when it has no literal here. */
export function literal(x: unknown): string | null {
  if (x === null) return 'NULL'
  if (typeof x === 'string') return x.includes('\0') ? null : quoteLiteral(x)
  if (typeof x === 'number') return quoteLiteral(String(x))
  if (typeof x === 'boolean') return x ? 'true' : 'false'
  if (typeof x === 'bigint') return `${quoteLiteral(String(x))}::int8`
  if (x instanceof Date) return Number.isNaN(x.getTime()) ? null : `${quoteLiteral(x.toISOString())}::timestamptz`
  if (x instanceof Uint8Array) return `${quoteLiteral(`\\x${Buffer.from(x).toString('hex')}`)}::bytea`
  if (Array.isArray(x)) {
    const text = arrayText(x)
    return text === null || text.includes('\0') ? null : quoteLiteral(text)
  }
  return null
}

/** Texts split so far; statement texts repeat, so each is scanned once. Bounded like the prepared set. */
const splits = new Map<string, Split>()
const MAX_SPLITS = 1000

/** `text` with `params` written in as literals, or null when one of them has no literal (see above). */
export function inlineParameters(text: string, params: readonly unknown[]): string | null {
  let split = splits.get(text)
  if (!split) {
    split = splitPlaceholders(text)
    if (splits.size < MAX_SPLITS) splits.set(text, split)
  }
  const literals = params.map(literal)
  let out = ''
  for (const part of split) {
    if (typeof part === 'string') out += part
    else {
      const value = literals[part - 1]
      if (value === undefined || value === null) return null
      out += value
    }
  }
  return out
}
