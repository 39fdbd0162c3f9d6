import { createSignal, Show } from 'solid-js'
import { ApiFailure, explain } from './api'
import { session, sessionEnded } from './session'

export type Note = { kind: 'error' | 'info'; text: string }

/**
 * One action at a time per section, with its outcome in words: `run` answers whether the action went through.
 * A 401 ends the session; any other failure becomes the section's error message.
 */
export function createAction(describe: (e: unknown) => string = explain) {
  const [busy, setBusy] = createSignal(false)
  const [note, setNote] = createSignal<Note | null>(null)
  async function run(fn: () => Promise<string | void>): Promise<boolean> {
    if (busy()) return false
    setBusy(true)
    setNote(null)
    try {
      const done = await fn()
      if (done) setNote({ kind: 'info', text: done })
      return true
    } catch (err) {
      if (err instanceof ApiFailure && err.status === 401) sessionEnded()
      else setNote({ kind: 'error', text: describe(err) })
      return false
    } finally {
      setBusy(false)
    }
  }
  return { busy, note, setNote, run }
}

export function NoteLine(props: { note: Note | null; testid?: string }) {
  return (
    <Show when={props.note}>
      {(n) => (
        <p class={`note ${n().kind}`} role={n().kind === 'error' ? 'alert' : 'status'} data-testid={props.testid ?? 'message'}>
          {n().text}
        </p>
      )}
    </Show>
  )
}

const formats = new Map<string, Intl.DateTimeFormat>()
const dateTime = (timeZone: string | undefined) => {
  const key = timeZone ?? ''
  let format = formats.get(key)
  if (!format) {
    format = new Intl.DateTimeFormat('es-AR', { day: '2-digit', month: '2-digit', year: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23', timeZone })
    formats.set(key, format)
  }
  return format
}
/** A moment as es-AR writes it, in the company's time zone (the session says which), whatever the computer's. */
export const when = (iso: string | null | undefined) => (iso ? dateTime(session()?.company.timezone).format(new Date(iso)) : '—')
