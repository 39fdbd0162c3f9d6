/**
 * Tracks the nesting depth of JSON text as its bytes arrive, so a body nested too deeply is refused while it is
 * still being read, before any parser or validator recurses into it. Only the structure matters here: brackets
 * inside strings are skipped, and anything else malformed is left for the parser to report. Works on UTF-8 bytes
 * directly: every byte of a multi-byte character is ≥ 0x80, so none is mistaken for a quote, bracket or backslash.
 */
export class JsonDepthScanner {
  private depth = 0
  private inString = false
  private escaped = false
  /** The deepest level seen so far. */
  deepest = 0

  constructor(private readonly max: number) {}

  /** Scans the next bytes; false as soon as the depth passes the bound. */
  push(bytes: Uint8Array): boolean {
    let { depth, inString, escaped, deepest } = this
    const max = this.max
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i]
      if (inString) {
        if (escaped) escaped = false
        else if (b === 0x5c) escaped = true
        else if (b === 0x22) inString = false
      } else if (b === 0x22) inString = true
      else if (b === 0x5b || b === 0x7b) {
        if (++depth > deepest) deepest = depth
        if (depth > max) {
          Object.assign(this, { depth, inString, escaped, deepest })
          return false
        }
      } else if ((b === 0x5d || b === 0x7d) && depth > 0) depth--
    }
    Object.assign(this, { depth, inString, escaped, deepest })
    return true
  }
}

/** Whether a whole JSON text stays within `max` levels of nesting. */
export function withinDepth(text: string, max: number): boolean {
  return new JsonDepthScanner(max).push(new TextEncoder().encode(text))
}
