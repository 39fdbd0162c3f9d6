import { createSignal, onCleanup, type Accessor } from 'solid-js'

/** `connecting` before the first event, `open` once events flow, `retrying` while waiting to reconnect. */
export type SSEState = 'connecting' | 'open' | 'retrying' | 'closed'

export interface SSEOptions {
  /** Named events to listen to (`event: <name>` lines). Any of them counts as a healthy stream. */
  events: Record<string, (event: MessageEvent<string>) => void>
  /** Runs after a failure, before the next attempt is scheduled; answer false to stop for good. */
  onError?: () => boolean | Promise<boolean>
  initialDelayMs?: number
  maxDelayMs?: number
}

export interface SSEHandle {
  state: Accessor<SSEState>
  close(): void
  /** Opens a fresh connection now, dropping any pending retry. */
  reconnect(): void
}

/**
 * An EventSource in the manner of solid-primitives' createSSE (closed on the owner's cleanup), with its own
 * reconnection: the browser's built-in retry gives up on HTTP errors and never backs off, so every failure
 * closes the source and a new one is opened after an exponential, jittered delay that resets once events arrive.
 */
export function createSSE(url: string, options: SSEOptions): SSEHandle {
  const initial = options.initialDelayMs ?? 1000
  const max = options.maxDelayMs ?? 30_000
  const [state, setState] = createSignal<SSEState>('connecting')
  let source: EventSource | undefined
  let timer: ReturnType<typeof setTimeout> | undefined
  let failures = 0
  let closed = false

  const detach = () => {
    clearTimeout(timer)
    timer = undefined
    source?.close()
    source = undefined
  }

  const open = () => {
    detach()
    if (closed) return
    const es = new EventSource(url)
    source = es
    for (const [name, handler] of Object.entries(options.events)) {
      es.addEventListener(name, (event) => {
        if (source !== es) return
        failures = 0
        setState('open')
        handler(event as MessageEvent<string>)
      })
    }
    es.onerror = async () => {
      if (source !== es) return
      detach()
      setState('retrying')
      const delay = Math.min(max, initial * 2 ** failures) * (0.8 + Math.random() * 0.4)
      failures++
      const keepGoing = options.onError ? await options.onError() : true
      if (closed || source) return
      if (!keepGoing) return close()
      timer = setTimeout(open, delay)
    }
  }

  const close = () => {
    closed = true
    detach()
    setState('closed')
  }

  const reconnect = () => {
    closed = false
    failures = 0
    setState('connecting')
    open()
  }

  // A TV waking up or its network coming back should not wait out the remaining backoff.
  const onOnline = () => {
    if (!closed && state() === 'retrying') open()
  }
  window.addEventListener('online', onOnline)
  onCleanup(() => {
    window.removeEventListener('online', onOnline)
    close()
  })

  open()
  return { state, close, reconnect }
}
