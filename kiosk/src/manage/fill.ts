/**
 * One Idempotency-Key per form fill (contract §1): sending the same body again (a double click, a retry after the
 * network failed) reuses the key, so the server answers the first result instead of creating a second record; a
 * changed body is a new fill with a new key (the same key with another body would be 409 IDEMPOTENCY_KEY_REUSED);
 * after a success the next send starts a new fill.
 */
export function createFill() {
  let key = crypto.randomUUID()
  let sent: string | null = null
  return {
    /** The key to send this body with. */
    keyFor(body: unknown): Record<string, string> {
      const text = JSON.stringify(body)
      if (sent !== null && sent !== text) key = crypto.randomUUID()
      sent = text
      return { 'idempotency-key': key }
    },
    /** The fill went through: whatever is sent next is another record. */
    done() {
      key = crypto.randomUUID()
      sent = null
    },
  }
}

/**
 * Copies text for the person to paste elsewhere. The Clipboard API exists only on secure origins (https or
 * localhost); on a branch's plain-http address the text is selected in its field and copied the old way.
 */
export async function copyText(text: string, field?: HTMLInputElement | HTMLTextAreaElement): Promise<boolean> {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text)
      return true
    }
  } catch {
    // Refused (no permission): fall through to selecting the field.
  }
  if (!field) return false
  field.focus()
  field.select()
  try {
    return document.execCommand('copy')
  } catch {
    return false
  }
}
