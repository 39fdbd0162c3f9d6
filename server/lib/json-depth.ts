/**
 * Tracks the nesting depth and the number of elements of JSON text as its bytes arrive, so a body nested too deeply,
 * or holding too many array items and object members, is refused while it is still being read, before any parser or
 * validator spends time on it (parsing costs about a third of a microsecond per element, validating more). Only the
 * structure matters here: brackets and commas inside strings are skipped, and anything else malformed is left for the
 * parser to report. Elements are counted as containers opened plus commas between items, which is each item and
 * member once (an empty container counts as one). Works on the bytes of UTF-8 or ISO-8859-1 text directly: neither
 * encodes a character other than the ASCII ones as a byte below 0x80, so none is mistaken for a quote, bracket,
 * comma or backslash.
 */
export class JsonDepthScanner {
  private depth = 0
  private inString = false
  private escaped = false
  /** The deepest level seen so far. */
  deepest = 0
  /** Elements seen so far. */
  elements = 0
  /** Which bound the last refused push broke. */
  broke: 'depth' | 'elements' | null = null

  constructor(
    private readonly max: number,
    private readonly maxElements = Infinity,
  ) {}

  /** Scans the next bytes; false as soon as the depth or the element count passes its bound. */
  push(bytes: Uint8Array, maxElements = this.maxElements): boolean {
    let { depth, inString, escaped, deepest, elements } = this
    const max = this.max
    let broke: 'depth' | 'elements' | null = null
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i]
      if (inString) {
        if (escaped) escaped = false
        else if (b === 0x5c) escaped = true
        else if (b === 0x22) inString = false
      } else if (b === 0x22) inString = true
      else if (b === 0x2c) {
        if (++elements > maxElements) {
          broke = 'elements'
          break
        }
      } else if (b === 0x5b || b === 0x7b) {
        if (++depth > deepest) deepest = depth
        if (depth > max) {
          broke = 'depth'
          break
        }
        if (++elements > maxElements) {
          broke = 'elements'
          break
        }
      } else if ((b === 0x5d || b === 0x7d) && depth > 0) depth--
    }
    Object.assign(this, { depth, inString, escaped, deepest, elements, broke })
    return broke === null
  }
}

/** Whether a whole JSON text stays within `max` levels of nesting. */
export function withinDepth(text: string, max: number): boolean {
  return new JsonDepthScanner(max).push(new TextEncoder().encode(text))
}
