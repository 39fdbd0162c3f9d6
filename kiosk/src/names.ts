/** The longest customer name the screens take: what the kiosk board and the console are laid out for. */
export const NAME_MAX = 60

/**
 * `text` cut to `max` characters as a person counts them (grapheme clusters), with line breaks made spaces.
 * `maxlength` counts UTF-16 units, so a flag or a name written with combining accents (NFD) would be cut early,
 * or in the middle of a letter.
 */
export function clipName(text: string, max = NAME_MAX): string {
  const flat = text.replace(/[\r\n]+/g, ' ')
  const parts = Array.from(new Intl.Segmenter('es-AR', { granularity: 'grapheme' }).segment(flat), (s) => s.segment)
  return parts.length <= max ? flat : parts.slice(0, max).join('')
}

/** What is sent: trimmed, composed (NFC) so the same name typed on two keyboards is the same text; empty is none. */
export const nameToSend = (text: string): string | null => text.normalize('NFC').trim().replace(/\s+/g, ' ') || null
