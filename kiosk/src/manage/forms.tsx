import { createSignal, onMount, Show, type JSX } from 'solid-js'

/**
 * One Idempotency-Key per fill of a form (contract §1). The same body sent again — a double click, a retry after an
 * answer lost on the way back — carries the same key and gets the first answer; a changed body is a new fill with a
 * new key (the old one would be answered 409 IDEMPOTENCY_KEY_REUSED). `done` after a success: sending the same
 * values again later is a second record on purpose (two equal budgets, two equal lines), so it gets a new key.
 * Comparing bodies rather than wiring every input saves each form from telling the fill it changed.
 */
export function createFill() {
  let key = crypto.randomUUID()
  let sent: string | null = null
  return {
    headers(body: unknown): Record<string, string> {
      const text = JSON.stringify(body ?? null)
      if (sent !== null && sent !== text) key = crypto.randomUUID()
      sent = text
      return { 'idempotency-key': key }
    },
    done() {
      key = crypto.randomUUID()
      sent = null
    },
  }
}

/**
 * The message under a field; `role="alert"` so a screen reader hears it when it appears. With `id`, the field points
 * at it through `invalid(id, text)` and the test id is `error-<id>`.
 */
export function FieldError(props: { text: string | undefined | null; id?: string; testid?: string }) {
  return (
    <Show when={props.text}>
      <span class="field-error" id={props.id} role="alert" data-testid={props.testid ?? (props.id && `error-${props.id}`)}>
        {props.text}
      </span>
    </Show>
  )
}

/** Props that tie a field to its message for screen readers and mark it invalid. */
export const invalid = (id: string, text: string | null | undefined) => ({ 'aria-invalid': text ? ('true' as const) : undefined, 'aria-describedby': text ? id : undefined })

/**
 * A question in place of the button that asked it: «Sí» has the focus, so Enter confirms and Escape or «No» backs
 * out. Used before anything that cannot be undone (revoking, deleting, rotating).
 */
export function Confirm(props: { question: JSX.Element; yes: string; onYes: () => void; onNo: () => void; busy?: boolean; testid?: string; danger?: boolean }) {
  let yes: HTMLButtonElement | undefined
  onMount(() => yes?.focus())
  return (
    <div class="confirm" role="group" aria-label="Confirmar" data-testid={props.testid ?? 'confirm'} onKeyDown={(e) => e.key === 'Escape' && props.onNo()}>
      <span>{props.question}</span>
      <button type="button" ref={yes} class={props.danger === false ? 'primary' : 'danger'} disabled={props.busy} onClick={props.onYes} data-testid="confirm-yes">
        {props.yes}
      </button>
      <button type="button" onClick={props.onNo}>
        No
      </button>
    </div>
  )
}

/**
 * A secret the API shows once (an API key, a webhook signing secret): the value to copy, a copy button, and the
 * warning that it will not be shown again. The box takes the focus so a keyboard user lands on it.
 */
export function ShownOnce(props: { title: string; value: string; hint: string; onClose: () => void; testid?: string }) {
  const [copied, setCopied] = createSignal<boolean | null>(null)
  let box: HTMLDivElement | undefined
  onMount(() => box?.focus())
  let value: HTMLElement | undefined
  const copy = async () => setCopied(await copyText(props.value, value))
  return (
    <div class="shown-once" role="region" aria-label={props.title} tabindex="-1" ref={box} data-testid={props.testid ?? 'shown-once'}>
      <p>
        <strong>{props.title}.</strong> Cópielo ahora y guárdelo en un lugar seguro: <strong>no se volverá a mostrar</strong>. {props.hint}
      </p>
      <code class="secret" ref={value} data-testid="secret-value">
        {props.value}
      </code>
      <div class="row">
        <button type="button" class="primary" onClick={copy} data-testid="secret-copy">
          Copiar
        </button>
        <button type="button" onClick={props.onClose} data-testid="secret-close">
          Listo, ya lo guardé
        </button>
        <span role="status" class="muted">
          {copied() === true ? 'Copiado.' : copied() === false ? 'Quedó seleccionado: cópielo con Ctrl+C.' : ''}
        </span>
      </div>
    </div>
  )
}

/**
 * For a form's `onInput`/`onChange` (they bubble from every field): once the person edits, the form-wide «Hay datos
 * para corregir» from the last try is stale and goes; each field's own message goes with its own edit.
 */
export const clearsError = (action: { note: () => { kind: string } | null; setNote: (n: null) => void }) => () => {
  if (action.note()?.kind === 'error') action.setNote(null)
}

/**
 * Copies text for the person to paste elsewhere. The Clipboard API exists only on secure origins (https or
 * localhost); on a branch's plain-http address the text is selected where it is shown (a field, or any element) and
 * copied the old way, and if even that is refused it stays selected for Ctrl+C.
 */
export async function copyText(text: string, shown?: HTMLElement): Promise<boolean> {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text)
      return true
    }
  } catch {
    // Refused (no permission): fall through to selecting it.
  }
  if (!shown) return false
  if (shown instanceof HTMLInputElement || shown instanceof HTMLTextAreaElement) {
    shown.focus()
    shown.select()
  } else {
    const range = document.createRange()
    range.selectNodeContents(shown)
    getSelection()?.removeAllRanges()
    getSelection()?.addRange(range)
  }
  try {
    return document.execCommand('copy')
  } catch {
    return false
  }
}

/** A value to hand out (a link, a key) in a read-only field with «Copiar»; the field selects itself on focus. */
export function CopyField(props: { label: string; value: string; testid: string }) {
  let field: HTMLInputElement | undefined
  const [copied, setCopied] = createSignal<boolean | null>(null)
  return (
    <div class="copy-field">
      <label>
        {props.label}
        <input ref={field} readonly value={props.value} data-testid={props.testid} onFocus={(e) => e.currentTarget.select()} />
      </label>
      <button type="button" onClick={async () => setCopied(await copyText(props.value, field))} data-testid={`${props.testid}-copy`}>
        Copiar
      </button>
      <span class="small muted copied" role="status">
        {copied() === true ? 'Copiado.' : copied() === false ? 'Quedó seleccionado: cópielo con Ctrl+C.' : ''}
      </span>
    </div>
  )
}

/**
 * A labelled text field (a `textarea` with `rows`) and its message under it: marked invalid and described by the
 * message while there is one. `onInput` gets the text; the caller clears the message there.
 */
export function TextField(props: {
  label: JSX.Element
  name: string
  /** The message's id (`error-<id>` its test id). */
  id: string
  value: string
  error: string | null | undefined
  onInput: (value: string) => void
  maxlength: number
  rows?: number
  class?: string
  autocomplete?: string
  placeholder?: string
  ref?: (el: HTMLInputElement) => void
}) {
  return (
    <label>
      {props.label}
      <Show
        when={props.rows}
        fallback={
          <input
            ref={props.ref}
            name={props.name}
            class={props.class}
            maxlength={props.maxlength}
            autocomplete={props.autocomplete}
            placeholder={props.placeholder}
            value={props.value}
            {...invalid(props.id, props.error)}
            onInput={(e) => props.onInput(e.currentTarget.value)}
          />
        }
      >
        <textarea name={props.name} rows={props.rows} maxlength={props.maxlength} value={props.value} {...invalid(props.id, props.error)} onInput={(e) => props.onInput(e.currentTarget.value)} />
      </Show>
      <FieldError id={props.id} text={props.error} />
    </label>
  )
}
