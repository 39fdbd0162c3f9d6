import { createSignal, For, onCleanup, Show } from 'solid-js'
import { createSSE } from '../sse'
import { elapsed } from '../staff/format'
import { api, ApiFailure } from './api'
import { sessionEnded } from './session'

interface Waiting {
  id: number
  number: string
  customer_name: string | null
  priority: boolean
  created_at: string
}

interface QueueBody {
  data: { service_id: number; name: string; prefix: string; waiting: Waiting[] }[]
  serving?: { desk: string; ticket: { id: number; number: string; customer_name: string | null; service_id: number }; employee: { id: number; name: string } | null; called_at: string }[]
}

/** The live queue of every service and who is at each desk, from the same stream the counter console uses. */
export function Monitor() {
  const [queue, setQueue] = createSignal<QueueBody | null>(null)
  const [now, setNow] = createSignal(Date.now())
  const timer = setInterval(() => setNow(Date.now()), 1000)
  onCleanup(() => clearInterval(timer))
  const feed = createSSE('/api/ventanilla/events', {
    events: { queue: (e) => setQueue(JSON.parse(e.data) as QueueBody) },
    onError: async () => {
      try {
        await api('GET', '/api/sessions/current')
        return true
      } catch (err) {
        if (err instanceof ApiFailure && err.status === 401) {
          sessionEnded()
          return false
        }
        return true
      }
    },
  })
  const serviceName = (id: number) => queue()?.data.find((s) => s.service_id === id)?.name ?? ''
  return (
    <section class="panel" data-testid="monitor-section">
      <h1>Monitor</h1>
      <Show when={feed.state() === 'retrying'}>
        <p class="note error" role="status">
          Sin conexión con el servidor; reintentando…
        </p>
      </Show>
      <Show when={queue()} fallback={<p class="muted">Conectando…</p>}>
        {(q) => (
          <>
            <h2>En atención</h2>
            <table class="grid" data-testid="serving">
              <thead>
                <tr>
                  <th scope="col">Puesto</th>
                  <th scope="col">Turno</th>
                  <th scope="col">Cliente</th>
                  <th scope="col">Servicio</th>
                  <th scope="col">Atiende</th>
                  <th scope="col">Hace</th>
                </tr>
              </thead>
              <tbody>
                <For each={q().serving ?? []} fallback={<tr><td colspan="6" class="muted">Ningún puesto atendiendo.</td></tr>}>
                  {(s) => (
                    <tr data-testid="serving-row">
                      <td>{s.desk}</td>
                      <td>
                        <strong>{s.ticket.number}</strong>
                      </td>
                      <td>{s.ticket.customer_name ?? '—'}</td>
                      <td>{serviceName(s.ticket.service_id)}</td>
                      <td>{s.employee?.name ?? '—'}</td>
                      <td>{elapsed(now() - Date.parse(s.called_at))}</td>
                    </tr>
                  )}
                </For>
              </tbody>
            </table>
            <h2>En espera</h2>
            <div class="queues">
              <For each={q().data} fallback={<p class="muted">No hay servicios. Créelos en «Servicios».</p>}>
                {(s) => (
                  <section class="queue" data-testid={`monitor-queue-${s.prefix}`} aria-labelledby={`mq-${s.service_id}`}>
                    <h3 id={`mq-${s.service_id}`}>
                      <span class="prefix">{s.prefix}</span> {s.name} <span class="count" data-testid="monitor-count">{s.waiting.length} en espera</span>
                    </h3>
                    {/* Outside the numbered list: an empty line would read "1. Nadie espera". */}
                    <Show when={s.waiting.length} fallback={<p class="muted">Nadie espera</p>}>
                      <ol>
                        <For each={s.waiting}>
                          {(w) => (
                            <li data-testid="monitor-ticket">
                              <strong>{w.number}</strong> {w.customer_name ?? ''}
                              <Show when={w.priority}>
                                <span class="mark">Prioridad</span>
                              </Show>
                              <span class="muted"> {elapsed(now() - Date.parse(w.created_at))}</span>
                            </li>
                          )}
                        </For>
                      </ol>
                    </Show>
                  </section>
                )}
              </For>
            </div>
          </>
        )}
      </Show>
    </section>
  )
}
