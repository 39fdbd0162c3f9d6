import { createMemo, createSignal, For, type JSX, Match, onCleanup, onMount, Show, Switch, untrack } from 'solid-js'
import { lastCompany, rememberCompany } from '../company'
import { createSSE } from '../sse'
import { clipName, NAME_MAX, nameToSend } from '../names'
import { api, ApiFailure, explain, type QueueService, type Serving, type Session, type Ticket } from './api'
import { elapsed, nextService } from './format'
import { ExchangePanel } from './Exchange'
import type { Side } from '../exchange'

const STORE = {
  desk: 'fos.staff.desk',
  services: 'fos.staff.services',
  current: 'fos.staff.current',
}

const load = <T,>(key: string, fallback: T): T => {
  try {
    const raw = localStorage.getItem(key)
    return raw === null ? fallback : (JSON.parse(raw) as T)
  } catch {
    return fallback
  }
}
const save = (key: string, value: unknown) => {
  if (value === null || value === undefined) localStorage.removeItem(key)
  else localStorage.setItem(key, JSON.stringify(value))
}

function useNow(intervalMs = 1000) {
  const [now, setNow] = createSignal(Date.now())
  const timer = setInterval(() => setNow(Date.now()), intervalMs)
  onCleanup(() => clearInterval(timer))
  return now
}

/** A typed key acts as a shortcut only when no text field has the focus. */
const typing = (e: KeyboardEvent) => {
  const el = e.target as HTMLElement | null
  return !!el && (el.tagName === 'INPUT' || el.tagName === 'SELECT' || el.tagName === 'TEXTAREA')
}

/** The sign-in's fields, in the order they are filled and checked. */
type Field = 'company' | 'email' | 'password'
const FIELDS: Field[] = ['company', 'email', 'password']

/** What is wrong with a field's value, in words, or null. Checked here so no browser bubble (in its own language) shows. */
function fieldProblem(field: Field, value: string, input?: HTMLInputElement): string | null {
  const v = value.trim()
  if (field === 'company') {
    if (!v) return 'Ingrese el número de empresa que le dio el administrador.'
    return /^[1-9]\d{0,9}$/.test(v) ? null : 'El número de empresa lleva solo dígitos, por ejemplo 12.'
  }
  if (field === 'email') {
    if (!v) return 'Ingrese su correo electrónico.'
    return input?.validity.typeMismatch || !/^[^\s@]+@[^\s@]+$/.test(v) ? 'Revise el correo electrónico: debe tener la forma nombre@empresa.com.' : null
  }
  return value ? null : 'Ingrese su contraseña.'
}

/** The counter's sign-in; the receipt page asks with it too, under its own `title`. */
export function SignIn(props: { notice: string | null; onSignedIn: (s: Session) => void; title?: string }) {
  const params = new URLSearchParams(location.search)
  const values = {
    company: createSignal(params.get('empresa') ?? lastCompany()),
    email: createSignal(''),
    password: createSignal(''),
  }
  const inputs: Partial<Record<Field, HTMLInputElement>> = {}
  // A field's message shows once the field was checked (on submit) and goes away by itself as soon as it is fixed.
  const [checked, setChecked] = createSignal(false)
  const problem = (field: Field) => (checked() ? fieldProblem(field, values[field][0](), inputs[field]) : null)
  const [error, setError] = createSignal<string | null>(null)
  const [busy, setBusy] = createSignal(false)
  // `autofocus` only works for fields present when the page loads; these are drawn later. The first empty one
  // is where typing starts: the company number on a new computer, the e-mail where the number is remembered.
  onMount(() => (FIELDS.map((f) => inputs[f]).find((el) => el && !el.value) ?? inputs.email)?.focus())
  const edit = (field: Field, value: string) => {
    values[field][1](value)
    // The server's answer was about what was sent; once the sign-in data changes it no longer applies.
    setError(null)
  }
  const submit = async (e: Event) => {
    e.preventDefault()
    setChecked(true)
    const wrong = FIELDS.find((f) => problem(f))
    if (wrong) return inputs[wrong]?.focus()
    setBusy(true)
    setError(null)
    try {
      const session = await api<Session>('POST', '/api/sessions', {
        company_id: Number(values.company[0]().trim()),
        email: values.email[0]().trim(),
        password: values.password[0](),
      })
      rememberCompany(values.company[0]().trim())
      props.onSignedIn(session)
    } catch (err) {
      setError(err instanceof ApiFailure && err.code === 'UNAUTHORIZED' ? 'Correo o contraseña incorrectos.' : explain(err))
      values.password[1]('')
      setChecked(false)
      inputs.password?.focus()
    } finally {
      setBusy(false)
    }
  }
  const field = (name: Field, label: string, attrs: JSX.InputHTMLAttributes<HTMLInputElement>) => (
    <div class="field">
      <label for={`signin-${name}`}>{label}</label>
      <input
        ref={(el) => (inputs[name] = el)}
        id={`signin-${name}`}
        name={name}
        value={values[name][0]()}
        onInput={(e) => edit(name, e.currentTarget.value)}
        aria-required="true"
        aria-invalid={problem(name) ? 'true' : undefined}
        aria-describedby={problem(name) ? `signin-${name}-error` : undefined}
        {...attrs}
      />
      <Show when={problem(name)}>
        <p class="field-error" id={`signin-${name}-error`} data-testid={`signin-${name}-error`}>
          {problem(name)}
        </p>
      </Show>
    </div>
  )
  return (
    <main class="signin">
      <form class="card" onSubmit={submit} noValidate data-testid="signin">
        <h1>{props.title ?? 'Atención al público'}</h1>
        <p class="muted">Ingrese con su usuario de la casa de cambio.</p>
        <Show when={props.notice}>
          <p class="notice" role="status">
            {props.notice}
          </p>
        </Show>
        {field('company', 'Número de empresa', { inputmode: 'numeric', autocomplete: 'organization' })}
        {field('email', 'Correo electrónico', { type: 'email', autocomplete: 'username' })}
        {field('password', 'Contraseña', { type: 'password', autocomplete: 'current-password' })}
        <Show when={error()}>
          <p class="error" role="alert" data-testid="signin-error">
            {error()}
          </p>
        </Show>
        <button type="submit" class="primary" disabled={busy()}>
          {busy() ? 'Ingresando…' : 'Ingresar'}
        </button>
      </form>
    </main>
  )
}

function Setup(props: { session: Session; services: QueueService[]; onDone: (desk: string, services: number[]) => void; onSignOut: () => void }) {
  const [desk, setDesk] = createSignal(load<string>(STORE.desk, ''))
  const saved = load<number[]>(STORE.services, [])
  const [chosen, setChosen] = createSignal<number[]>(saved.filter((id) => props.services.some((s) => s.service_id === id)))
  // Shown after «Comenzar» and derived from what is filled in, so each message leaves once its cause is gone.
  const [tried, setTried] = createSignal(false)
  const error = () => {
    if (!tried()) return null
    if (!desk().trim()) return 'Escriba el nombre de su puesto, por ejemplo «Caja 2».'
    if (chosen().length === 0) return 'Elija al menos un servicio.'
    return null
  }
  let deskField: HTMLInputElement | undefined
  let firstService: HTMLInputElement | undefined
  let start: HTMLButtonElement | undefined
  onMount(() => (!desk().trim() ? deskField : chosen().length === 0 && firstService ? firstService : start)?.focus())
  const toggle = (id: number) => setChosen((c) => (c.includes(id) ? c.filter((x) => x !== id) : [...c, id]))
  const submit = (e: Event) => {
    e.preventDefault()
    setTried(true)
    if (!desk().trim()) return deskField?.focus()
    if (chosen().length === 0) return firstService?.focus()
    props.onDone(desk().trim(), chosen())
  }
  return (
    <main class="signin">
      <form class="card wide" onSubmit={submit} noValidate data-testid="setup">
        <h1>Hola, {props.session.employee.name}</h1>
        <div class="field">
          <label for="setup-desk">Puesto (se recuerda en esta computadora)</label>
          <input
            ref={deskField}
            id="setup-desk"
            name="desk"
            maxlength="40"
            value={desk()}
            onInput={(e) => setDesk(e.currentTarget.value)}
            placeholder="Caja 2"
            aria-required="true"
            aria-invalid={tried() && !desk().trim() ? 'true' : undefined}
          />
        </div>
        <fieldset>
          <legend>Servicios que atiende</legend>
          <Show when={props.services.length} fallback={<p class="muted">La sucursal todavía no tiene servicios.</p>}>
            <For each={props.services}>
              {(s, i) => (
                <label class="check">
                  <input ref={(el) => i() === 0 && (firstService = el)} type="checkbox" checked={chosen().includes(s.service_id)} onChange={() => toggle(s.service_id)} />
                  <span class="prefix">{s.prefix}</span> {s.name}
                </label>
              )}
            </For>
          </Show>
        </fieldset>
        <Show when={error()}>
          <p class="error" role="alert" data-testid="setup-error">
            {error()}
          </p>
        </Show>
        <div class="row">
          <button type="button" onClick={props.onSignOut}>
            Salir
          </button>
          <button ref={start} type="submit" class="primary">
            Comenzar
          </button>
        </div>
      </form>
    </main>
  )
}

function QueueColumn(props: { service: QueueService; now: number }) {
  const oldest = () => props.service.waiting.reduce((min, w) => Math.min(min, Date.parse(w.created_at)), Infinity)
  return (
    <section class="queue" data-testid={`queue-${props.service.prefix}`} aria-label={`Cola de ${props.service.name}`}>
      <header>
        <h2>
          <span class="prefix">{props.service.prefix}</span> {props.service.name}
        </h2>
        <div class="stats">
          <span class="count" data-testid="queue-count">
            {props.service.waiting.length} en espera
          </span>
          <Show when={props.service.waiting.length}>
            <span class="oldest">más antiguo: {elapsed(props.now - oldest())}</span>
          </Show>
        </div>
      </header>
      <ol>
        <For each={props.service.waiting} fallback={<li class="empty">Nadie espera</li>}>
          {(w) => (
            <li classList={{ priority: w.priority }} data-testid="queue-ticket">
              <span class="number">{w.number}</span>
              <span class="name">{w.customer_name ?? ''}</span>
              <Show when={w.priority}>
                <span class="mark" title="Atención prioritaria">
                  Prioridad
                </span>
              </Show>
              <span class="wait">{elapsed(props.now - Date.parse(w.created_at))}</span>
            </li>
          )}
        </For>
      </ol>
    </section>
  )
}

function Desk(props: { session: Session; desk: string; serviceIds: number[]; onChangeSetup: () => void; onSignedOut: (notice: string | null) => void }) {
  const now = useNow()
  const [queue, setQueue] = createSignal<QueueService[]>([])
  const [current, setCurrent] = createSignal<Ticket | null>(load<Ticket | null>(STORE.current, null))
  // `network`: the failure was the connection, so the message is void once the live feed is back.
  const [message, setMessage] = createSignal<{ kind: 'error' | 'info'; text: string; network?: boolean } | null>(null)
  const [busy, setBusy] = createSignal(false)
  const [transferring, setTransferring] = createSignal(false)
  // The name field of the ticket being served, open while its text is being typed or corrected.
  const [editing, setEditing] = createSignal(false)
  const [draft, setDraft] = createSignal('')
  // Compra / Venta open for the ticket being served (contract §19), with the side it was opened on.
  const [exchange, setExchange] = createSignal<Side | null>(null)
  const perms = props.session.employee.permissions
  const canExchange = perms.includes('company.admin') || perms.includes('operations.create')
  let nameField: HTMLInputElement | undefined
  let editButton: HTMLButtonElement | undefined

  const remember = (t: Ticket | null) => {
    // Another ticket (or none) is served now: a name being typed was for the one before.
    if (t?.id !== untrack(current)?.id) {
      setEditing(false)
      setExchange(null)
    }
    setCurrent(t)
    save(STORE.current, t)
  }

  const feed = createSSE('/api/ventanilla/events', {
    events: {
      queue: (e) => {
        const update = JSON.parse(e.data) as { data: QueueService[]; serving?: Serving[] }
        setQueue(update.data)
        // A name written elsewhere (another desk, the manager app) shows here too.
        const mine = untrack(current)
        const listed = mine && update.serving?.find((s) => s.ticket.id === mine.id)
        if (listed && listed.ticket.customer_name !== mine.customer_name) remember({ ...mine, customer_name: listed.ticket.customer_name })
        if (untrack(message)?.network) void clearIfReachable()
      },
    },
    // An error may be a lost network or an ended session; only the second stops the stream.
    onError: async () => {
      try {
        await api('GET', '/api/sessions/current')
        return true
      } catch (err) {
        if (err instanceof ApiFailure && err.status === 401) {
          props.onSignedOut('La sesión terminó. Ingrese de nuevo.')
          return false
        }
        return true
      }
    },
  })
  const offline = () => feed.state() === 'retrying'
  // Live data only hints that the server is reachable again: a stream opened before the failure can keep delivering
  // while new requests still fail (a half-broken network, or a browser's offline mode). A request that gets through
  // is the proof; only then does a connection failure said earlier go, unless something else was said since.
  let checking = false
  async function clearIfReachable() {
    const said = untrack(message)
    if (checking || !said?.network) return
    checking = true
    try {
      await api('GET', '/api/sessions/current')
      if (untrack(message) === said) setMessage(null)
    } catch {
      // Still unreachable (or the session ended, which the feed's own check handles): the words stay.
    } finally {
      checking = false
    }
  }
  const served = createMemo(() => queue().filter((s) => props.serviceIds.includes(s.service_id)))
  const others = createMemo(() => queue().filter((s) => current() && s.service_id !== current()!.service_id))
  const serviceName = (id: number) => queue().find((s) => s.service_id === id)?.name ?? ''

  /** Runs one action; a 401 anywhere means the session is gone, and the sign-in takes over. */
  async function act(fn: () => Promise<void>) {
    if (busy()) return
    setBusy(true)
    setMessage(null)
    try {
      await fn()
    } catch (err) {
      if (err instanceof ApiFailure && err.status === 401) return props.onSignedOut('La sesión terminó. Ingrese de nuevo.')
      setMessage({ kind: 'error', text: explain(err), network: err instanceof ApiFailure && err.code === 'NETWORK' })
    } finally {
      setBusy(false)
    }
  }

  // With `priorityMode` off a priority ticket can stand behind an older ordinary one: then arrival order rules.
  const priorityFirst = () => !queue().some((s) => s.waiting.some((w, i) => w.priority && s.waiting.slice(0, i).some((x) => !x.priority)))

  const callNext = () =>
    act(async () => {
      const all = queue().length > 0 && queue().every((s) => props.serviceIds.includes(s.service_id))
      const candidates = all ? [null] : nextService(served(), priorityFirst()).map((s) => s.service_id)
      if (candidates.length === 0) throw new ApiFailure(409, 'QUEUE_EMPTY', 'empty')
      let lastError: unknown
      for (const service_id of candidates) {
        try {
          const ticket = await api<Ticket>('POST', '/api/ventanilla/calls', { desk: props.desk, ...(service_id !== null && { service_id }) })
          remember(ticket)
          return
        } catch (err) {
          // Another desk may have just taken the last one of that service: try the next service.
          if (!(err instanceof ApiFailure && err.code === 'QUEUE_EMPTY')) throw err
          lastError = err
        }
      }
      throw lastError
    })

  const onCurrent = (fn: (t: Ticket) => Promise<void>) => {
    const t = current()
    if (!t) {
      setMessage({ kind: 'info', text: 'No está atendiendo a nadie. Llame al siguiente con la barra espaciadora.' })
      return
    }
    return act(() => fn(t))
  }

  const callAgain = () => onCurrent(async (t) => remember(await api<Ticket>('POST', `/api/ventanilla/tickets/${t.id}/call`, { desk: props.desk })))
  const finish = () =>
    onCurrent(async (t) => {
      await api<Ticket>('POST', `/api/ventanilla/tickets/${t.id}/finish`)
      remember(null)
      setMessage({ kind: 'info', text: `${t.number} finalizado.` })
    })
  const noShow = () =>
    onCurrent(async (t) => {
      await api<Ticket>('POST', `/api/ventanilla/tickets/${t.id}/no-show`)
      remember(null)
      setMessage({ kind: 'info', text: `${t.number} marcado como ausente.` })
    })
  const transferTo = (serviceId: number) =>
    onCurrent(async (t) => {
      setTransferring(false)
      await api<Ticket>('POST', `/api/ventanilla/tickets/${t.id}/transfer`, { service_id: serviceId })
      remember(null)
      setMessage({ kind: 'info', text: `${t.number} derivado a ${serviceName(serviceId)}.` })
    })
  const startTransfer = () => {
    if (!current()) return onCurrent(async () => {})
    if (others().length === 0) return setMessage({ kind: 'error', text: 'No hay otro servicio al que derivar.' })
    setTransferring(true)
  }

  const startEdit = () => {
    const t = current()
    if (!t) return onCurrent(async () => {})
    setTransferring(false)
    setDraft(t.customer_name ?? '')
    setEditing(true)
  }
  const stopEdit = () => {
    setEditing(false)
    editButton?.focus()
  }
  const saveName = () =>
    onCurrent(async (t) => {
      try {
        remember(await api<Ticket>('PATCH', `/api/ventanilla/tickets/${t.id}`, { customer_name: nameToSend(draft()) }))
        stopEdit()
        setMessage({ kind: 'info', text: `Nombre de ${t.number} guardado.` })
      } catch (err) {
        // Finished or marked absent meanwhile (at another desk, or from another tab): nothing left to rename here.
        if (err instanceof ApiFailure && err.code === 'TICKET_CLOSED') {
          remember(null)
          setMessage({ kind: 'error', text: `${t.number} ya estaba cerrado (finalizado o ausente): el nombre no se guardó.` })
          return
        }
        // Anything else leaves the field open with what was typed, to try again.
        nameField?.focus()
        throw err
      }
    })

  const openExchange = (side: Side) => {
    if (!current()) return onCurrent(async () => {})
    if (!canExchange) return setMessage({ kind: 'error', text: 'Su usuario no tiene permiso para registrar compras y ventas (operations.create).' })
    setTransferring(false)
    setEditing(false)
    setMessage(null)
    setExchange(side)
  }

  const signOut = () =>
    act(async () => {
      await api('DELETE', '/api/sessions/current').catch((err) => {
        if (!(err instanceof ApiFailure && err.status === 401)) throw err
      })
      remember(null)
      props.onSignedOut(null)
    })

  const onKey = (e: KeyboardEvent) => {
    if (e.ctrlKey || e.altKey || e.metaKey || typing(e)) return
    // The exchange panel reads its own keys while it is open.
    if (exchange()) return
    // While a name is open, only Escape means something outside its field (a letter must not finish the ticket).
    if (editing()) {
      if (e.key === 'Escape') {
        e.preventDefault()
        stopEdit()
      }
      return
    }
    if (transferring()) {
      if (e.key === 'Escape') setTransferring(false)
      const n = Number(e.key)
      if (Number.isInteger(n) && n >= 1 && n <= others().length) transferTo(others()[n - 1].service_id)
      e.preventDefault()
      return
    }
    const actions: Record<string, () => unknown> = {
      ' ': callNext,
      r: callAgain,
      f: finish,
      n: noShow,
      t: startTransfer,
      e: startEdit,
      c: () => openExchange('buy'),
      v: () => openExchange('sell'),
    }
    const action = actions[e.key.toLowerCase()]
    if (!action) return
    e.preventDefault()
    action()
  }
  onMount(() => window.addEventListener('keydown', onKey))
  onCleanup(() => window.removeEventListener('keydown', onKey))

  return (
    <div class="desk-layout">
      <header class="bar">
        <h1 class="who">
          {props.desk}
          <span class="muted"> · {props.session.employee.name}</span>
        </h1>
        <Show when={offline()}>
          <div class="offline" role="status" data-testid="offline">
            Sin conexión con el servidor; reintentando…
          </div>
        </Show>
        <div class="row">
          <button type="button" onClick={props.onChangeSetup}>
            Cambiar puesto
          </button>
          <button type="button" onClick={signOut} data-testid="sign-out">
            Salir
          </button>
        </div>
      </header>
      <main class="desk">
        <section class="current" aria-live="polite" data-testid="current">
          <h2 class="label">Atendiendo</h2>
          <Show when={current()} fallback={<p class="idle">Nadie. Presione Espacio para llamar al siguiente.</p>}>
            {(t) => (
              <>
                <div class="ticket" data-testid="current-ticket">
                  {t().number}
                  <Show when={t().priority}>
                    <span class="mark">Prioridad</span>
                  </Show>
                </div>
                <Show
                  when={editing()}
                  fallback={
                    <div class="customer-row">
                      <Show when={t().customer_name} fallback={<div class="customer anonymous">Sin nombre</div>}>
                        {(name) => (
                          <div class="customer" data-testid="current-name">
                            {name()}
                          </div>
                        )}
                      </Show>
                      <button ref={editButton} type="button" class="edit-name" onClick={startEdit} disabled={busy()} data-testid="edit-name">
                        Editar nombre <kbd>E</kbd>
                      </button>
                    </div>
                  }
                >
                  <form
                    class="name-edit"
                    data-testid="name-edit"
                    noValidate
                    onSubmit={(e) => {
                      e.preventDefault()
                      void saveName()
                    }}
                  >
                    <label for="current-name-field">Nombre del cliente de {t().number}</label>
                    <input
                      ref={(el) => {
                        nameField = el
                        // Drawn on the click or key that opened it: typing starts at once, over the old name.
                        queueMicrotask(() => {
                          el.focus()
                          el.select()
                        })
                      }}
                      id="current-name-field"
                      name="customer_name"
                      autocomplete="off"
                      spellcheck={false}
                      value={draft()}
                      onInput={(e) => {
                        const clipped = clipName(e.currentTarget.value)
                        if (clipped !== e.currentTarget.value) e.currentTarget.value = clipped
                        setDraft(clipped)
                      }}
                      onKeyDown={(e) => {
                        if (e.key === 'Escape') {
                          e.preventDefault()
                          stopEdit()
                        }
                      }}
                      aria-describedby="current-name-hint"
                      data-testid="name-field"
                    />
                    <p class="muted hint" id="current-name-hint">
                      Hasta {NAME_MAX} caracteres; vacío lo deja sin nombre. Enter guarda, Esc cancela.
                    </p>
                    <div class="row">
                      <button type="button" onClick={stopEdit} disabled={busy()}>
                        Cancelar <kbd>Esc</kbd>
                      </button>
                      <button type="submit" class="primary" disabled={busy()} data-testid="save-name">
                        Guardar <kbd>Enter</kbd>
                      </button>
                    </div>
                  </form>
                </Show>
                <div class="muted">{serviceName(t().service_id)}</div>
                <div class="timer" data-testid="timer" title="Tiempo desde el último llamado">
                  {elapsed(now() - Date.parse(t().called_at ?? t().created_at))}
                </div>
              </>
            )}
          </Show>
          <div class="actions">
            <button type="button" class="primary" onClick={callNext} disabled={busy()} data-testid="call-next">
              Llamar siguiente <kbd>Espacio</kbd>
            </button>
            <button type="button" onClick={callAgain} disabled={busy() || !current()}>
              Volver a llamar <kbd>R</kbd>
            </button>
            <button type="button" onClick={finish} disabled={busy() || !current()}>
              Finalizado <kbd>F</kbd>
            </button>
            <button type="button" onClick={noShow} disabled={busy() || !current()}>
              No se presentó <kbd>N</kbd>
            </button>
            <button type="button" onClick={startTransfer} disabled={busy() || !current()}>
              Derivar <kbd>T</kbd>
            </button>
            <Show when={canExchange}>
              <button type="button" onClick={() => openExchange('buy')} disabled={busy() || !current()} data-testid="open-buy">
                Compra <kbd>C</kbd>
              </button>
              <button type="button" onClick={() => openExchange('sell')} disabled={busy() || !current()} data-testid="open-sell">
                Venta <kbd>V</kbd>
              </button>
            </Show>
          </div>
          <Show when={transferring()}>
            <div class="transfer" role="dialog" aria-label="Derivar a otro servicio" data-testid="transfer">
              <p>Derivar {current()?.number} a:</p>
              <For each={others()}>
                {(s, i) => (
                  <button type="button" onClick={() => transferTo(s.service_id)}>
                    <kbd>{i() + 1}</kbd> {s.name}
                  </button>
                )}
              </For>
              <button type="button" onClick={() => setTransferring(false)}>
                <kbd>Esc</kbd> Cancelar
              </button>
            </div>
          </Show>
          <Show when={message()}>
            {(m) => (
              <p class={m().kind} role={m().kind === 'error' ? 'alert' : 'status'} data-testid="message">
                {m().text}
              </p>
            )}
          </Show>
        </section>
        <Show
          when={exchange() && current()}
          fallback={
            <div class="queues" data-testid="queues">
              <For each={served()} fallback={<p class="idle">Esperando datos de la cola…</p>}>
                {(s) => <QueueColumn service={s} now={now()} />}
              </For>
            </div>
          }
        >
          {(t) => (
            <ExchangePanel
              session={props.session}
              desk={props.desk}
              ticket={t()}
              side={exchange()!}
              onClose={() => setExchange(null)}
              onFinish={() => {
                setExchange(null)
                void finish()
              }}
              onSignedOut={props.onSignedOut}
            />
          )}
        </Show>
      </main>
    </div>
  )
}

export function Console() {
  const [session, setSession] = createSignal<Session | null>(null)
  const [checked, setChecked] = createSignal(false)
  const [notice, setNotice] = createSignal<string | null>(null)
  const [services, setServices] = createSignal<QueueService[] | null>(null)
  const [setup, setSetup] = createSignal<{ desk: string; services: number[] } | null>(null)

  const begin = async (s: Session) => {
    setNotice(null)
    try {
      const q = await api<{ data: QueueService[] }>('GET', '/api/ventanilla/queue')
      setServices(q.data)
      const desk = load<string>(STORE.desk, '')
      const chosen = load<number[]>(STORE.services, []).filter((id) => q.data.some((x) => x.service_id === id))
      setSetup(desk && chosen.length ? { desk, services: chosen } : null)
      setSession(s)
    } catch (err) {
      setSession(null)
      setNotice(explain(err))
    }
  }

  onMount(async () => {
    try {
      await begin(await api<Session>('GET', '/api/sessions/current'))
    } catch {
      // Not signed in: the sign-in form is the start.
    }
    setChecked(true)
  })

  const signedOut = (text: string | null) => {
    setSession(null)
    setSetup(null)
    setNotice(text)
  }

  return (
    <Switch>
      <Match when={!checked()}>
        <main class="signin">
          <h1 class="muted loading">Cargando…</h1>
        </main>
      </Match>
      <Match when={!session()}>
        <SignIn notice={notice()} onSignedIn={begin} />
      </Match>
      <Match when={!setup()}>
        <Setup
          session={session()!}
          services={services() ?? []}
          onDone={(desk, ids) => {
            save(STORE.desk, desk)
            save(STORE.services, ids)
            setSetup({ desk, services: ids })
          }}
          onSignOut={() => {
            void api('DELETE', '/api/sessions/current').catch(() => {})
            signedOut(null)
          }}
        />
      </Match>
      <Match when={setup()}>
        {(s) => <Desk session={session()!} desk={s().desk} serviceIds={s().services} onChangeSetup={() => setSetup(null)} onSignedOut={signedOut} />}
      </Match>
    </Switch>
  )
}
