import { createSignal, onCleanup, type Accessor } from 'solid-js'
import { createSSE, type SSEState } from './sse'
import type { Call, Snapshot } from './types'

export interface KioskFeed {
  snapshot: Accessor<Snapshot | null>
  state: Accessor<SSEState>
  disabled: Accessor<boolean>
}

const storageKey = (token: string) => `fos.kiosk.snapshot.${token}`

function loadStored(token: string): Snapshot | null {
  try {
    const raw = localStorage.getItem(storageKey(token))
    return raw ? (JSON.parse(raw) as Snapshot) : null
  } catch {
    return null
  }
}

const callKey = (call: Call | null) => (call ? `${call.ticket}|${call.calledAt}` : null)

/**
 * The live snapshot of one kiosk token. The last snapshot is kept (in memory and in localStorage, so a reload
 * while offline still has something to show) until a newer one arrives; a revoked or unknown token disables
 * the screen and forgets it. `onNewCall` fires when the current call changes, but never for the first live
 * snapshot after loading, so a reload does not repeat the last announcement.
 */
export function createKioskFeed(token: string, onNewCall: (call: Call, snapshot: Snapshot) => void): KioskFeed {
  const base = `/api/public/ventanilla/${encodeURIComponent(token)}`
  const [snapshot, setSnapshot] = createSignal<Snapshot | null>(loadStored(token))
  const [disabled, setDisabled] = createSignal(false)
  let lastCall: string | null | undefined
  let recheck: ReturnType<typeof setInterval> | undefined

  const apply = (next: Snapshot) => {
    const key = callKey(next.currentCall)
    if (lastCall !== undefined && key !== null && key !== lastCall) onNewCall(next.currentCall!, next)
    lastCall = key
    setSnapshot(next)
    try {
      localStorage.setItem(storageKey(token), JSON.stringify(next))
    } catch {
      // A full or blocked storage only costs the offline-reload fallback.
    }
  }

  const disable = () => {
    sse.close()
    setDisabled(true)
    setSnapshot(null)
    try {
      localStorage.removeItem(storageKey(token))
    } catch {
      // Nothing stored to forget.
    }
    // A module switched off may be switched on again; nobody reloads a TV on the wall, so look again now and then.
    recheck ??= setInterval(async () => {
      if ((await probe()) !== 'ok') return
      clearInterval(recheck)
      recheck = undefined
      setDisabled(false)
      sse.reconnect()
    }, 60_000)
  }

  /** Fetches the snapshot over plain HTTP: the only way to tell a 404 from a network failure. */
  const probe = async (): Promise<'ok' | 'gone' | 'down'> => {
    try {
      const res = await fetch(base, { cache: 'no-store', headers: { accept: 'application/json' } })
      if (res.status === 404) return 'gone'
      if (!res.ok) return 'down'
      apply((await res.json()) as Snapshot)
      return 'ok'
    } catch {
      return 'down'
    }
  }

  const sse = createSSE(`${base}/events`, {
    events: {
      snapshot: (event) => apply(JSON.parse(event.data) as Snapshot),
      revoked: () => disable(),
    },
    onError: async () => {
      if ((await probe()) !== 'gone') return true
      disable()
      return false
    },
  })

  onCleanup(() => clearInterval(recheck))
  return { snapshot, state: sse.state, disabled }
}
