import { parse, stringify } from 'lossless-json'
import { createSignal, For, Index, onCleanup, onMount, Show } from 'solid-js'
import { createStore } from 'solid-js/store'
import { ApiFailure, apiMoney, explain, money, type Employee } from './api'
import { EVENT_FAMILIES, EVENT_LABELS, filterLabel, typesOf } from './eventTypes'
import { clearsError, Confirm, createFill, FieldError, ShownOnce } from './forms'
import { canHooks, isOwner } from './access'
import { createAction, NoteLine, when } from './ui'
import './treasury.css'

/** Contract §15: a company's live keys, without their values. */
interface ApiKey {
  id: number
  name: string
  prefix: string
  employee_id: number | null
  created_at: string
  last_used_at: string | null
}

/** Contract §11. */
interface Endpoint {
  id: number
  url: string
  event_types: string[]
  description: string
  enabled: boolean
  disabled_reason: string | null
}

interface Attempt {
  id: number
  event_id: string
  attempt: number
  status: 'succeeded' | 'failed' | 'pending'
  response_status: number | null
  response_ms: number | null
  error: string | null
  created_at: string
  next_attempt_at: string | null
}

interface FeedEvent {
  id: string
  type: string
  created_at: string
  data: { object?: { id?: unknown } } & Record<string, unknown>
}

const ATTEMPTS_PER_PAGE = 20
/** How often an open delivery log asks again. */
const POLL_MS = 2_000
const EVENTS_PER_PAGE = 50

function describe(e: unknown): string {
  if (e instanceof ApiFailure)
    switch (e.code) {
      case 'WEBHOOK_URL_NOT_ALLOWED':
        return `Esa dirección no puede recibir avisos: ${urlRefusal(e.details[0]?.message ?? '')}`
      case 'IDEMPOTENCY_KEY_REUSED':
        return 'Este formulario ya se envió con otros datos. Vuelva a enviarlo.'
    }
  return explain(e)
}

/** Why the API refused a webhook URL (`details[0].message`), in words. */
function urlRefusal(reason: string): string {
  if (reason === 'not a URL') return 'no es una dirección web completa (por ejemplo https://sistema.ejemplo.com/avisos).'
  if (reason.startsWith('scheme must be')) return reason.includes('http') && reason.includes('or') ? 'tiene que empezar con https:// (o http://).' : 'tiene que empezar con https://.'
  if (reason.startsWith('credentials')) return 'no se aceptan usuario ni contraseña dentro de la dirección.'
  if (reason === 'blocked address') return 'apunta a una dirección interna o privada (red local, la misma máquina o los metadatos de la nube), que no se permite.'
  if (reason === 'host does not resolve') return 'ese nombre de servidor no existe (no resuelve en DNS).'
  return `${reason || 'no se puede usar'}.`
}

/** A delivery attempt's error, in words; the API's text stays beside it for whoever runs the receiver. */
function attemptError(error: string | null): string {
  if (!error) return ''
  if (error === 'blocked address') return 'Dirección bloqueada (interna o privada)'
  if (error === 'redirect not followed') return 'Respondió con una redirección, que no se sigue'
  if (error.startsWith('HTTP ')) return `El receptor respondió ${error.slice(5)}`
  if (error.startsWith('timeout')) return 'Sin respuesta a tiempo'
  if (error.startsWith('connection failed')) return 'No se pudo conectar'
  if (error.startsWith('interrupted')) return 'Interrumpido: el servidor se detuvo; se reintenta'
  if (error.startsWith('not sent')) return 'No se envió'
  if (error === 'host does not resolve') return 'El nombre del receptor no existe'
  return error
}

const STATUS: Record<Attempt['status'], string> = { succeeded: 'Entregado', failed: 'Falló', pending: 'En curso' }

/** Integraciones: API keys (§15), webhook endpoints with their delivery log (§11), and the event feed. */
export function Integrations() {
  return (
    <section class="panel" data-testid="integrations-section">
      <h1>Integraciones</h1>
      <p class="muted">Para conectar otros sistemas (contabilidad, un sitio web, el bot): claves de acceso a la API, avisos automáticos a una dirección web y el registro de eventos.</p>
      <Show when={isOwner()}>
        <ApiKeys />
      </Show>
      <Show when={canHooks()}>
        <Webhooks />
        <Events />
      </Show>
    </section>
  )
}

function ApiKeys() {
  const [keys, setKeys] = createSignal<ApiKey[]>([])
  const [employees, setEmployees] = createSignal<Employee[]>([])
  const [name, setName] = createSignal('')
  const [nameError, setNameError] = createSignal<string | null>(null)
  const [fresh, setFresh] = createSignal<{ name: string; key: string } | null>(null)
  const [revoking, setRevoking] = createSignal<number | null>(null)
  const action = createAction(describe)
  const refresh = async () => {
    const [k, e] = await Promise.all([money<{ data: ApiKey[] }>('GET', '/api/api-keys'), money<{ data: Employee[] }>('GET', '/api/employees')])
    setKeys(k.data)
    setEmployees(e.data)
  }
  onMount(() => action.run(refresh))
  const whose = (k: ApiKey) => (k.employee_id === null ? 'La empresa (todos los permisos)' : (employees().find((e) => e.id === k.employee_id)?.name ?? `Empleado ${k.employee_id}`))
  const create = (e: Event) => {
    e.preventDefault()
    if (!name().trim()) return setNameError('Escriba un nombre que diga dónde se usa, por ejemplo «Sistema contable».')
    // Not replayable by the API (the key is never stored in clear): the disabled button is what keeps it to one.
    void action.run(async () => {
      const made = await money<{ name: string; key: string }>('POST', '/api/api-keys', { name: name().trim() })
      setFresh({ name: made.name, key: made.key })
      setName('')
      await refresh()
    })
  }
  const revoke = (k: ApiKey) =>
    action.run(async () => {
      try {
        await money('DELETE', `/api/api-keys/${k.id}`)
      } finally {
        setRevoking(null)
        await refresh()
      }
      return `Clave «${k.name}» revocada: lo que la use recibe 401 desde ahora.`
    })
  return (
    <section class="sub" aria-labelledby="keys-title" data-testid="api-keys">
      <h2 id="keys-title">Claves de API</h2>
      <p class="muted small">Una clave de la empresa tiene todos los permisos: désela solo a un sistema de confianza y revóquela si se filtra.</p>
      <form class="inline" onSubmit={create} novalidate>
        <label>
          Nombre de la clave nueva
          <input name="key-name" maxlength="100" autocomplete="off" aria-invalid={nameError() ? 'true' : undefined} value={name()} onInput={(e) => (setName(e.currentTarget.value), setNameError(null))} />
          <FieldError text={nameError()} testid="error-key-name" />
        </label>
        <button type="submit" class="primary" disabled={action.busy()} data-testid="key-create">
          Crear clave
        </button>
      </form>
      <Show when={fresh()}>{(f) => <ShownOnce title={`Clave «${f().name}»`} value={f().key} hint="Se envía en el encabezado x-api-key." onClose={() => setFresh(null)} testid="new-key" />}</Show>
      <NoteLine note={action.note()} testid="keys-message" />
      <table class="grid">
        <caption class="visually-hidden">Claves vigentes</caption>
        <thead>
          <tr>
            <th scope="col">Nombre</th>
            <th scope="col">Comienza con</th>
            <th scope="col">De</th>
            <th scope="col">Creada</th>
            <th scope="col">Último uso</th>
            <th scope="col">
              <span class="visually-hidden">Revocar</span>
            </th>
          </tr>
        </thead>
        <tbody>
          <For each={keys()} fallback={<tr><td colspan="6" class="muted">Ninguna clave vigente.</td></tr>}>
            {(k) => (
              <tr data-testid="key-row" data-id={k.id}>
                <td>{k.name}</td>
                <td>
                  <code>{k.prefix}…</code>
                </td>
                <td>{whose(k)}</td>
                <td>{when(k.created_at)}</td>
                <td>{k.last_used_at ? when(k.last_used_at) : 'Nunca'}</td>
                <td>
                  <Show
                    when={revoking() === k.id}
                    fallback={
                      <button type="button" class="danger" onClick={() => setRevoking(k.id)} data-testid="key-revoke">
                        Revocar
                      </button>
                    }
                  >
                    <Confirm question={<>¿Revocar «{k.name}»? Lo que la use deja de funcionar.</>} yes="Sí, revocar" busy={action.busy()} onYes={() => revoke(k)} onNo={() => setRevoking(null)} testid="key-revoke-confirm" />
                  </Show>
                </td>
              </tr>
            )}
          </For>
        </tbody>
      </table>
    </section>
  )
}

function Webhooks() {
  const [endpoints, setEndpoints] = createSignal<Endpoint[]>([])
  const [creating, setCreating] = createSignal(false)
  const [fresh, setFresh] = createSignal<{ url: string; secret: string } | null>(null)
  const action = createAction(describe)
  const refresh = async () => void setEndpoints((await money<{ data: Endpoint[] }>('GET', '/api/webhook-endpoints')).data)
  onMount(() => action.run(refresh))
  return (
    <section class="sub" aria-labelledby="hooks-title" data-testid="webhooks">
      <h2 id="hooks-title">Avisos automáticos (webhooks)</h2>
      <p class="muted small">
        Cada evento elegido se envía a la dirección con una firma (Standard Webhooks) que el receptor comprueba con el secreto; si falla, se reintenta durante días.
      </p>
      <Show when={fresh()}>
        {(f) => <ShownOnce title={`Secreto de firma de ${f().url}`} value={f().secret} hint="El receptor lo usa para comprobar que cada aviso viene de aquí." onClose={() => setFresh(null)} testid="new-secret" />}
      </Show>
      <NoteLine note={action.note()} testid="hooks-message" />
      <ul class="list">
        <Index each={endpoints()} fallback={<li class="muted">Ningún destino todavía.</li>}>
          {(ep) => <EndpointItem endpoint={ep()} onChanged={refresh} onDeleted={(url) => action.run(async () => (await refresh(), `Destino ${url} borrado: no se le envía nada más.`))} />}
        </Index>
      </ul>
      <Show
        when={creating()}
        fallback={
          <div class="row">
            <button type="button" class="primary" onClick={() => setCreating(true)} data-testid="hook-new">
              Destino nuevo
            </button>
          </div>
        }
      >
        <EndpointForm
          onDone={async (made) => {
            setCreating(false)
            if (made && made !== 'saved') {
              setFresh({ url: made.url, secret: made.secret })
              await action.run(refresh)
            }
          }}
        />
      </Show>
    </section>
  )
}

/** The event types an endpoint listens to: everything, whole families, or single types. */
function TypesPicker(props: { value: string[]; onChange: (v: string[]) => void; error?: string }) {
  const all = () => props.value.includes('*')
  const has = (f: string) => props.value.includes(f)
  const toggle = (f: string, on: boolean) => props.onChange(on ? [...props.value.filter((x) => x !== f), f] : props.value.filter((x) => x !== f))
  const toggleFamily = (family: string, on: boolean) =>
    props.onChange(on ? [...props.value.filter((x) => x.split('.')[0] !== family), `${family}.*`] : props.value.filter((x) => x !== `${family}.*`))
  return (
    <fieldset data-testid="event-types">
      <legend>Qué eventos se avisan</legend>
      <label class="check">
        <input type="checkbox" name="all-events" checked={all()} onChange={(e) => props.onChange(e.currentTarget.checked ? ['*'] : [])} />
        Todos los eventos, también los que se agreguen más adelante
      </label>
      <Show when={!all()}>
        <div class="families">
          <For each={EVENT_FAMILIES}>
            {([family, label]) => (
              <div class="family">
                <label class="check strong">
                  <input type="checkbox" name={`family-${family}`} checked={has(`${family}.*`)} onChange={(e) => toggleFamily(family, e.currentTarget.checked)} />
                  {label}: todos
                </label>
                <For each={typesOf(family)}>
                  {(t) => (
                    <label class="check">
                      <input type="checkbox" name="event-type" value={t} disabled={has(`${family}.*`)} checked={has(t) || has(`${family}.*`)} onChange={(e) => toggle(t, e.currentTarget.checked)} />
                      {EVENT_LABELS[t]}
                    </label>
                  )}
                </For>
              </div>
            )}
          </For>
        </div>
      </Show>
      <FieldError text={props.error} testid="error-event-types" />
    </fieldset>
  )
}

/** Create an endpoint (the secret is answered once), or edit one (`endpoint` given). */
function EndpointForm(props: { endpoint?: Endpoint; onDone: (result: (Endpoint & { secret: string }) | 'saved' | null) => void }) {
  const [form, setForm] = createStore({ url: props.endpoint?.url ?? '', description: props.endpoint?.description ?? '', types: props.endpoint?.event_types ?? ['*'] })
  const [errors, setErrors] = createStore<Record<string, string | undefined>>({})
  const action = createAction(describe)
  const fill = createFill()
  const submit = (e: Event) => {
    e.preventDefault()
    const found = {
      url: /^\S+:\/\/\S+$/.test(form.url.trim()) ? undefined : 'Escriba la dirección completa, por ejemplo https://sistema.ejemplo.com/avisos.',
      types: form.types.length ? undefined : 'Elija al menos un evento, o «Todos los eventos».',
    }
    setErrors(found)
    if (found.url || found.types) return action.setNote({ kind: 'error', text: 'Hay datos para corregir; no se envió nada.' })
    const body = { url: form.url.trim(), description: form.description.trim(), event_types: form.types }
    void action.run(async () => {
      try {
        if (props.endpoint) {
          await money('PATCH', `/api/webhook-endpoints/${props.endpoint.id}`, body)
          props.onDone('saved')
        } else {
          const made = await money<Endpoint & { secret: string }>('POST', '/api/webhook-endpoints', body, fill.headers(body))
          fill.done()
          props.onDone(made)
        }
      } catch (err) {
        if (err instanceof ApiFailure && err.code === 'WEBHOOK_URL_NOT_ALLOWED') setErrors('url', describe(err))
        throw err
      }
    })
  }
  const title = props.endpoint ? `Editar el destino ${props.endpoint.url}` : 'Destino nuevo'
  return (
    <form class="card-lite stack" onSubmit={submit} aria-label={title} data-testid="hook-form" onInput={clearsError(action)} onChange={clearsError(action)} novalidate>
      <h3>{props.endpoint ? 'Editar el destino' : 'Destino nuevo'}</h3>
      <div class="row">
        <label class="grow">
          Dirección que recibe los avisos
          <input ref={(el) => queueMicrotask(() => el.focus())} name="url" type="url" maxlength="2000" placeholder="https://sistema.ejemplo.com/avisos" aria-invalid={errors.url ? 'true' : undefined} value={form.url} onInput={(e) => (setForm('url', e.currentTarget.value), setErrors('url', undefined))} />
          <FieldError text={errors.url} testid="error-url" />
        </label>
        <label class="grow">
          Descripción (opcional)
          <input name="description" maxlength="500" value={form.description} onInput={(e) => setForm('description', e.currentTarget.value)} />
        </label>
      </div>
      <TypesPicker value={form.types} error={errors.types} onChange={(v) => (setForm('types', v), setErrors('types', undefined))} />
      <div class="row">
        <button type="submit" class="primary" disabled={action.busy()} data-testid="hook-save">
          {props.endpoint ? 'Guardar cambios' : 'Crear destino'}
        </button>
        <button type="button" onClick={() => props.onDone(null)}>
          Cancelar
        </button>
      </div>
      <NoteLine note={action.note()} testid="hook-form-message" />
    </form>
  )
}

function EndpointItem(props: { endpoint: Endpoint; onChanged: () => Promise<unknown>; onDeleted: (url: string) => void }) {
  const ep = () => props.endpoint
  const [editing, setEditing] = createSignal(false)
  const [asking, setAsking] = createSignal<'rotate' | 'delete' | null>(null)
  const [secret, setSecret] = createSignal<string | null>(null)
  const [log, setLog] = createSignal(false)
  const action = createAction(describe)
  const toggle = () =>
    action.run(async () => {
      const next = !ep().enabled
      await money('PATCH', `/api/webhook-endpoints/${ep().id}`, { enabled: next })
      await props.onChanged()
      return next ? 'Activado: los avisos pendientes salen ahora.' : 'Desactivado: no se le envía nada hasta activarlo.'
    })
  const rotate = () =>
    action.run(async () => {
      const { secret } = await money<{ secret: string }>('POST', `/api/webhook-endpoints/${ep().id}/rotate-secret`)
      setAsking(null)
      setSecret(secret)
      return 'Secreto nuevo: el anterior sigue firmando 24 horas, para que el receptor cambie sin perder avisos.'
    })
  const test = () =>
    action.run(async () => {
      const { queued } = await money<{ queued: boolean }>('POST', `/api/webhook-endpoints/${ep().id}/test`)
      if (!queued) return 'El destino está desactivado: no se envió la prueba.'
      setLog(true)
      return 'Aviso de prueba en camino: el resultado aparece en las entregas.'
    })
  const remove = () =>
    action.run(async () => {
      await money('DELETE', `/api/webhook-endpoints/${ep().id}`)
      setAsking(null)
      props.onDeleted(ep().url)
    })
  return (
    <li class="item" data-testid="hook-row" data-id={ep().id}>
      <div class="item-head">
        <div class="grow">
          <strong class="url">{ep().url}</strong>{' '}
          <span class={ep().enabled ? 'badge ok' : 'badge off'} data-testid="hook-state">
            {ep().enabled ? 'Activo' : 'Desactivado'}
          </span>
          <div class="muted small">
            {ep().description ? `${ep().description} · ` : ''}
            {ep().event_types.map(filterLabel).join(', ')}
          </div>
          <Show when={ep().disabled_reason}>
            <div class="small warning-text">El servicio lo desactivó porque el receptor no respondía bien ({ep().disabled_reason}). Revíselo y actívelo de nuevo.</div>
          </Show>
        </div>
        <div class="row">
          <button type="button" onClick={() => setEditing(!editing())} aria-expanded={editing()} data-testid="hook-edit">
            Editar
          </button>
          <button type="button" onClick={toggle} disabled={action.busy()} data-testid="hook-toggle">
            {ep().enabled ? 'Desactivar' : 'Activar'}
          </button>
          <button type="button" onClick={test} disabled={action.busy()} data-testid="hook-test">
            Probar
          </button>
          <button type="button" onClick={() => setAsking('rotate')} data-testid="hook-rotate">
            Rotar secreto
          </button>
          <button type="button" onClick={() => setLog(!log())} aria-expanded={log()} data-testid="hook-log">
            Entregas
          </button>
          <button type="button" class="danger" onClick={() => setAsking('delete')} data-testid="hook-delete">
            Borrar
          </button>
        </div>
      </div>
      <Show when={asking() === 'rotate'}>
        <Confirm question="¿Rotar el secreto? El receptor tendrá que usar el nuevo (el actual sigue valiendo 24 horas)." yes="Sí, rotar" danger={false} busy={action.busy()} onYes={rotate} onNo={() => setAsking(null)} testid="hook-rotate-confirm" />
      </Show>
      <Show when={asking() === 'delete'}>
        <Confirm question={<>¿Borrar el destino {ep().url}? No se le envía nada más.</>} yes="Sí, borrar" busy={action.busy()} onYes={remove} onNo={() => setAsking(null)} testid="hook-delete-confirm" />
      </Show>
      <Show when={secret()}>{(s) => <ShownOnce title={`Secreto nuevo de ${ep().url}`} value={s()} hint="Cárguelo en el receptor." onClose={() => setSecret(null)} testid="rotated-secret" />}</Show>
      <NoteLine note={action.note()} testid="hook-message" />
      <Show when={editing()}>
        <EndpointForm
          endpoint={ep()}
          onDone={async (result) => {
            setEditing(false)
            if (result) await action.run(async () => (await props.onChanged(), 'Cambios guardados.'))
          }}
        />
      </Show>
      <Show when={log()}>
        <Deliveries endpoint={ep()} />
      </Show>
    </li>
  )
}

/**
 * The endpoint's attempt log, newest first, with «Reenviar». While open it asks again every 2 s with
 * `If-None-Match` (an unchanged log is a 304 with no body), so a test or a resend shows its outcome by itself.
 */
function Deliveries(props: { endpoint: Endpoint }) {
  const [attempts, setAttempts] = createSignal<Attempt[]>([])
  const [page, setPage] = createSignal(1)
  const [pages, setPages] = createSignal(1)
  const [total, setTotal] = createSignal(0)
  const action = createAction(describe)
  let etag: string | null = null
  let timer: ReturnType<typeof setTimeout> | undefined
  let stopped = false
  const load = async (p = page()) => {
    const answer = await apiMoney<{ data: Attempt[]; pagination: { totalPages: number; total: number } }>(
      'GET',
      `/api/webhook-endpoints/${props.endpoint.id}/attempts?page=${p}&pageSize=${ATTEMPTS_PER_PAGE}`,
      { etag: p === page() ? etag : null },
    )
    if (!answer.data) return
    etag = answer.etag
    setAttempts(answer.data.data)
    setPages(Math.max(1, answer.data.pagination.totalPages))
    setTotal(answer.data.pagination.total)
    setPage(p)
  }
  const poll = async () => {
    try {
      await load()
    } catch {
      // The next look tries again; a lasting failure shows on the buttons' own messages.
    }
    if (!stopped) timer = setTimeout(poll, POLL_MS)
  }
  onMount(() => action.run(async () => {
    await load(1)
    timer = setTimeout(poll, POLL_MS)
  }))
  onCleanup(() => {
    stopped = true
    clearTimeout(timer)
  })
  const resend = (a: Attempt) =>
    action.run(async () => {
      await money('POST', `/api/events/${a.event_id}/resend`, { endpoint_id: props.endpoint.id })
      return `Evento ${a.event_id} reenviado a este destino: el intento aparece aquí en unos segundos.`
    })
  return (
    <div class="deliveries" data-testid="deliveries">
      <div class="row">
        <h3>Entregas ({total()})</h3>
        <button type="button" onClick={() => action.run(() => load(page()))} disabled={action.busy()} data-testid="deliveries-refresh">
          Actualizar
        </button>
      </div>
      <NoteLine note={action.note()} testid="deliveries-message" />
      <Show when={attempts().length} fallback={<p class="muted">Todavía no hubo entregas.</p>}>
        <div class="scroll-x">
          <table class="grid">
            <caption class="visually-hidden">Intentos de entrega, lo más reciente primero</caption>
            <thead>
              <tr>
                <th scope="col">Hora</th>
                <th scope="col">Evento</th>
                <th scope="col">Intento</th>
                <th scope="col">Estado</th>
                <th scope="col">Respuesta</th>
                <th scope="col">Demora</th>
                <th scope="col">Error</th>
                <th scope="col">Próximo intento</th>
                <th scope="col">
                  <span class="visually-hidden">Reenviar</span>
                </th>
              </tr>
            </thead>
            <tbody>
              <For each={attempts()}>
                {(a) => (
                  <tr data-testid="attempt-row" data-event={a.event_id} data-status={a.status}>
                    <td>{when(a.created_at)}</td>
                    <td>
                      <code>{a.event_id}</code>
                    </td>
                    <td class="num">{a.attempt}</td>
                    <td data-testid="attempt-status">{STATUS[a.status]}</td>
                    <td class="num" data-testid="attempt-response">
                      {a.response_status ?? '—'}
                    </td>
                    <td class="num">{a.response_ms === null ? '—' : `${a.response_ms} ms`}</td>
                    <td>
                      {attemptError(a.error)}
                      <Show when={a.error && attemptError(a.error) !== a.error}>
                        <div class="muted small">{a.error}</div>
                      </Show>
                    </td>
                    <td>{a.next_attempt_at ? when(a.next_attempt_at) : '—'}</td>
                    <td>
                      <button type="button" onClick={() => resend(a)} disabled={action.busy()} data-testid="attempt-resend">
                        Reenviar
                      </button>
                    </td>
                  </tr>
                )}
              </For>
            </tbody>
          </table>
        </div>
        <Show when={pages() > 1}>
          <nav class="row" aria-label="Páginas de entregas">
            <button type="button" disabled={page() === 1} onClick={() => action.run(() => load(page() - 1))}>
              Anterior
            </button>
            <span>
              Página {page()} de {pages()}
            </span>
            <button type="button" disabled={page() === pages()} onClick={() => action.run(() => load(page() + 1))}>
              Siguiente
            </button>
          </nav>
        </Show>
      </Show>
    </div>
  )
}

/**
 * GET /api/events read with lossless-json: an event's object carries amounts as JSON numbers, and showing them
 * through JSON.parse would round them; kept as LosslessNumber, `stringify` writes back the digits the server sent.
 */
async function eventPage(query: URLSearchParams): Promise<{ data: FeedEvent[]; next_cursor: string }> {
  let res: Response
  try {
    res = await fetch(`/api/events?${query}`, { credentials: 'same-origin' })
  } catch {
    throw new ApiFailure(0, 'NETWORK', 'Sin conexión con el servidor')
  }
  const text = await res.text()
  if (!res.ok) {
    const body = (() => {
      try {
        return JSON.parse(text) as { code?: string; error?: string }
      } catch {
        return null
      }
    })()
    throw new ApiFailure(res.status, body?.code ?? 'INTERNAL_ERROR', body?.error ?? `HTTP ${res.status}`)
  }
  return parse(text) as { data: FeedEvent[]; next_cursor: string }
}

/** The event feed, oldest first, a page at a time by `next_cursor`, filtered by type or family. */
function Events() {
  const [filter, setFilter] = createSignal('')
  const [events, setEvents] = createSignal<FeedEvent[]>([])
  /** Cursors of the pages before the one shown, to go back: the API pages only forward. */
  const [trail, setTrail] = createSignal<(string | null)[]>([])
  const [cursor, setCursor] = createSignal<string | null>(null)
  const [next, setNext] = createSignal<string | null>(null)
  const [opened, setOpened] = createSignal<string | null>(null)
  const action = createAction(describe)
  const types = () => (filter().endsWith('.*') ? typesOf(filter().slice(0, -2)).join(',') : filter())
  const read = async (after: string | null) => {
    const q = new URLSearchParams({ limit: String(EVENTS_PER_PAGE) })
    if (after) q.set('after', after)
    if (types()) q.set('type', types())
    const page = await eventPage(q)
    setEvents(page.data)
    setCursor(after)
    setNext(page.next_cursor)
  }
  onMount(() => action.run(() => read(null)))
  const search = (e: SubmitEvent) => {
    e.preventDefault()
    setTrail([])
    void action.run(() => read(null))
  }
  const forward = () =>
    action.run(async () => {
      const from = cursor()
      await read(next())
      setTrail([...trail(), from])
      if (!events().length) return 'No hay eventos más nuevos por ahora.'
    })
  const back = () =>
    action.run(async () => {
      const t = trail()
      await read(t[t.length - 1])
      setTrail(t.slice(0, -1))
    })
  const resend = (ev: FeedEvent) =>
    action.run(async () => {
      const { endpoint_ids } = await money<{ endpoint_ids: number[] }>('POST', `/api/events/${ev.id}/resend`, {})
      return endpoint_ids.length
        ? `Evento ${ev.id} reenviado a ${endpoint_ids.length === 1 ? 'un destino' : `${endpoint_ids.length} destinos`}.`
        : `Ningún destino activo recibe «${EVENT_LABELS[ev.type] ?? ev.type}»: no se reenvió.`
    })
  return (
    <section class="sub" aria-labelledby="events-title" data-testid="events">
      <h2 id="events-title">Eventos</h2>
      <p class="muted small">Todo lo que pasó y se avisa, del más antiguo al más nuevo (se guardan 30 días). Un sistema que no recibe avisos puede leerlos de aquí con la API.</p>
      <form class="inline" onSubmit={search}>
        <label>
          Tipo
          <select name="event-filter" onChange={(e) => setFilter(e.currentTarget.value)}>
            <option value="">Todos</option>
            <For each={EVENT_FAMILIES}>
              {([family, label]) => (
                <optgroup label={label}>
                  <option value={`${family}.*`}>{label}: todos</option>
                  <For each={typesOf(family)}>{(t) => <option value={t}>{EVENT_LABELS[t]}</option>}</For>
                </optgroup>
              )}
            </For>
          </select>
        </label>
        <button type="submit" class="primary" disabled={action.busy()} data-testid="events-search">
          Buscar
        </button>
      </form>
      <NoteLine note={action.note()} testid="events-message" />
      <Show when={events().length} fallback={<p class="muted">Sin eventos en esta página.</p>}>
        <table class="grid" data-testid="event-list">
          <caption class="visually-hidden">Eventos, del más antiguo al más nuevo</caption>
          <thead>
            <tr>
              <th scope="col">Hora</th>
              <th scope="col">Evento</th>
              <th scope="col">Tipo</th>
              <th scope="col">N.º</th>
              <th scope="col">
                <span class="visually-hidden">Acciones</span>
              </th>
            </tr>
          </thead>
          <tbody>
            <For each={events()}>
              {(ev) => (
                <>
                  <tr data-testid="event-row" data-id={ev.id} data-type={ev.type}>
                    <td>{when(ev.created_at)}</td>
                    <td>{EVENT_LABELS[ev.type] ?? ev.type}</td>
                    <td>
                      <code>{ev.type}</code>
                    </td>
                    <td>{ev.data.object?.id !== undefined ? String(ev.data.object.id) : '—'}</td>
                    <td class="actions">
                      <button type="button" aria-expanded={opened() === ev.id} onClick={() => setOpened(opened() === ev.id ? null : ev.id)} data-testid="event-data">
                        Datos
                      </button>
                      <button type="button" onClick={() => resend(ev)} disabled={action.busy()} data-testid="event-resend">
                        Reenviar
                      </button>
                    </td>
                  </tr>
                  <Show when={opened() === ev.id}>
                    <tr>
                      <td colspan="5">
                        <pre class="json" tabindex="0" data-testid="event-json">
                          {stringify(ev, null, 2)}
                        </pre>
                      </td>
                    </tr>
                  </Show>
                </>
              )}
            </For>
          </tbody>
        </table>
      </Show>
      <nav class="row" aria-label="Páginas de eventos">
        <button type="button" disabled={!trail().length || action.busy()} onClick={back} data-testid="events-previous">
          Anteriores
        </button>
        <button type="button" disabled={action.busy()} onClick={forward} data-testid="events-next">
          Siguientes
        </button>
      </nav>
    </section>
  )
}
