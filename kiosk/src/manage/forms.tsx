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

/** The message under a field; `role="alert"` so a screen reader hears it when it appears. */
export function FieldError(props: { text: string | undefined | null; testid?: string }) {
  return (
    <Show when={props.text}>
      <span class="field-error" role="alert" data-testid={props.testid}>
        {props.text}
      </span>
    </Show>
  )
}

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
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.value)
      setCopied(true)
    } catch {
      // Clipboard refused (an http origin, a denied permission): the value stays selectable on screen.
      setCopied(false)
    }
  }
  return (
    <div class="shown-once" role="region" aria-label={props.title} tabindex="-1" ref={box} data-testid={props.testid ?? 'shown-once'}>
      <p>
        <strong>{props.title}.</strong> Cópielo ahora y guárdelo en un lugar seguro: <strong>no se volverá a mostrar</strong>. {props.hint}
      </p>
      <code class="secret" data-testid="secret-value">
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
          {copied() === true ? 'Copiado.' : copied() === false ? 'No se pudo copiar: selecciónelo y cópielo a mano.' : ''}
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
