import { createSignal, For, Match, onCleanup, onMount, Show, Switch } from 'solid-js'
import { createFitGroup, fitText } from '../fit'
import { clipName, nameToSend } from '../names'

interface View {
  companyName: string
  timezone: string
  priority: boolean
  /** Whether a name is asked after a service is touched (the `dispenserAsksName` setting). */
  asksName?: 'off' | 'optional' | 'required'
  services: Service[]
}

interface Service {
  id: number
  name: string
  prefix: string
}

interface Issued {
  number: string
  service: string
  priority: boolean
  waiting_ahead: number
}

/** How long the issued number stays on screen before the buttons come back. */
const SHOW_MS = 8000
/** How often the tablet checks that the server answers: while it does not, people are told before they tap. */
const PROBE_MS = 15_000
const PROBE_OFFLINE_MS = 5_000
/** A name step left alone this long goes back to the services: the next customer should not find someone else's. */
const NAME_IDLE_MS = 45_000

/** `/dispenser/{token}` → token. */
export function tokenFromPath(pathname: string): string | null {
  const match = /^\/dispenser\/([^/]+)\/?$/.exec(pathname)
  if (!match) return null
  try {
    return decodeURIComponent(match[1])
  } catch {
    return null
  }
}

export const aheadText = (n: number) =>
  n === 0 ? 'No hay personas antes que usted' : n === 1 ? '1 persona antes que usted' : `${n} personas antes que usted`

/** When the ticket was taken, on the branch's clocks (a tablet's own zone may be anything). */
function printedAt(timeZone: string | undefined) {
  const options: Intl.DateTimeFormatOptions = { day: '2-digit', month: '2-digit', year: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }
  try {
    return new Intl.DateTimeFormat('es-AR', { ...options, timeZone }).format(new Date())
  } catch {
    return new Intl.DateTimeFormat('es-AR', options).format(new Date())
  }
}

function Message(props: { title: string; text: string }) {
  return (
    <main class="message" aria-live="assertive">
      <h1>{props.title}</h1>
      <p>{props.text}</p>
    </main>
  )
}

/**
 * The name field keeps one size (so the buttons under it never move) and its type shrinks until the whole name
 * shows. Measured here rather than with fitText: that one refits on DOM changes, and a field's value is not one.
 */
function fitField(field: HTMLTextAreaElement) {
  field.style.fontSize = ''
  let size = parseFloat(getComputedStyle(field).fontSize)
  while (field.scrollHeight > field.clientHeight + 1 && size > 14) {
    size -= 1
    field.style.fontSize = `${size}px`
  }
}

function NameStep(props: {
  service: Service
  priority: boolean
  required: boolean
  busy: boolean
  reachable: boolean
  error: string | null
  onTake: (name: string | null) => void
  onBack: () => void
}) {
  const [typed, setTyped] = createSignal('')
  // Shown after «Continuar» with nothing written, and gone as soon as something is.
  const [tried, setTried] = createSignal(false)
  const problem = () =>
    tried() && !nameToSend(typed())
      ? props.required
        ? 'Escriba su nombre para tomar el número.'
        : 'Escriba su nombre o toque «Seguir sin nombre».'
      : null
  let field: HTMLTextAreaElement | undefined
  let idle: ReturnType<typeof setTimeout> | undefined
  const stillHere = () => {
    clearTimeout(idle)
    idle = setTimeout(props.onBack, NAME_IDLE_MS)
  }
  onMount(() => {
    field?.focus()
    stillHere()
  })
  onCleanup(() => clearTimeout(idle))
  const submit = (e?: Event) => {
    e?.preventDefault()
    stillHere()
    setTried(true)
    const name = nameToSend(typed())
    if (!name) return field?.focus()
    props.onTake(name)
  }
  const edit = (el: HTMLTextAreaElement) => {
    stillHere()
    // A line break (pasted, or a keyboard's own Enter) would be part of no name; the limit counts what people see.
    const clipped = clipName(el.value)
    if (clipped !== el.value) el.value = clipped
    setTyped(clipped)
    fitField(el)
  }
  return (
    <main class="name-step" data-testid="name-step" classList={{ unreachable: !props.reachable }}>
      <form class="name-form" onSubmit={submit} noValidate>
        <p class="chosen" data-testid="name-service">
          <span class="prefix">{props.service.prefix}</span>
          <span class="chosen-name">
            {props.service.name}
            <Show when={props.priority}> · Prioridad</Show>
          </span>
        </p>
        <h1>¿A nombre de quién?</h1>
        <label for="customer-name">{props.required ? 'Escriba su nombre y apellido para tomar el número.' : 'Escriba su nombre si quiere que lo llamemos por él (es opcional).'}</label>
        <textarea
          ref={field}
          id="customer-name"
          name="customer_name"
          class="name-field"
          rows={2}
          autocomplete="name"
          autocapitalize="words"
          spellcheck={false}
          enterkeyhint="done"
          aria-required={props.required ? 'true' : undefined}
          aria-invalid={problem() ? 'true' : undefined}
          aria-describedby={problem() ? 'customer-name-error' : undefined}
          placeholder="Nombre y apellido"
          onInput={(e) => edit(e.currentTarget)}
          onKeyDown={(e) => {
            // One line only: Enter means «Continuar», as on any form.
            if (e.key === 'Enter' && !e.isComposing) submit(e)
          }}
          data-testid="name-field"
        />
        <Show when={problem()}>
          <p class="error" role="alert" id="customer-name-error" data-testid="name-error">
            {problem()}
          </p>
        </Show>
        <Show when={!props.reachable}>
          <p class="error" role="alert" data-testid="dispenser-offline">
            Sin conexión con el servidor: por ahora no se entregan números. Consulte en la ventanilla.
          </p>
        </Show>
        <Show when={props.reachable && props.error}>
          <p class="error" role="alert" data-testid="dispenser-error">
            {props.error}
          </p>
        </Show>
        <div class="name-actions">
          <button type="button" class="back" onClick={props.onBack} data-testid="name-back">
            Volver
          </button>
          <Show when={!props.required}>
            <button type="button" class="skip" disabled={props.busy || !props.reachable} onClick={() => props.onTake(null)} data-testid="name-skip">
              Seguir sin nombre
            </button>
          </Show>
          <button type="submit" class="go" disabled={props.busy || !props.reachable} data-testid="name-continue">
            Continuar
          </button>
        </div>
      </form>
    </main>
  )
}

function Machine(props: { token: string }) {
  const base = `/api/public/ventanilla/${encodeURIComponent(props.token)}`
  const [view, setView] = createSignal<View | null>(null)
  const [state, setState] = createSignal<'loading' | 'ready' | 'disabled' | 'offline'>('loading')
  const [priority, setPriority] = createSignal(false)
  const [issued, setIssued] = createSignal<(Issued & { at: string; name: string | null }) | null>(null)
  // The service touched while its name is being asked.
  const [asking, setAsking] = createSignal<Service | null>(null)
  const [error, setError] = createSignal<string | null>(null)
  const [busy, setBusy] = createSignal(false)
  // `?imprimir=1`: a tablet with a ticket printer (e.g. Chromium in kiosk mode with silent printing) prints each number.
  const print = new URLSearchParams(location.search).get('imprimir') === '1'
  let back: ReturnType<typeof setTimeout> | undefined
  // The service names share one size: buttons side by side with different type look like different things.
  const names = createFitGroup()

  // False once the server did not answer; the buttons wait and a notice says why, until an answer comes back.
  const [reachable, setReachable] = createSignal(true)
  let probe: ReturnType<typeof setTimeout> | undefined

  const load = async () => {
    try {
      const res = await fetch(`${base}/services`, { cache: 'no-store' })
      if (res.status === 404) return setState('disabled')
      if (!res.ok) throw new Error(String(res.status))
      setView((await res.json()) as View)
      setState('ready')
      setReachable(true)
    } catch {
      setReachable(false)
      if (!view()) setState('offline')
    }
  }
  // Services and the priority setting change rarely, but whether the server answers is checked often, and more
  // often while it does not, so the notice goes away soon after the network is back.
  const watch = async () => {
    await load()
    probe = setTimeout(watch, reachable() ? PROBE_MS : PROBE_OFFLINE_MS)
  }
  onMount(watch)
  const wentOffline = () => setReachable(false)
  const cameOnline = () => {
    clearTimeout(probe)
    void watch()
  }
  window.addEventListener('offline', wentOffline)
  window.addEventListener('online', cameOnline)
  onCleanup(() => {
    clearTimeout(probe)
    clearTimeout(back)
    window.removeEventListener('offline', wentOffline)
    window.removeEventListener('online', cameOnline)
  })

  const reset = () => {
    clearTimeout(back)
    setIssued(null)
    setAsking(null)
    setPriority(false)
    setError(null)
  }

  const asksName = () => view()?.asksName ?? 'off'
  const choose = (service: Service) => {
    if (busy()) return
    if (asksName() === 'off') return void take(service.id, null)
    setError(null)
    setAsking(service)
  }

  const take = async (serviceId: number, name: string | null) => {
    if (busy()) return
    setBusy(true)
    setError(null)
    try {
      const res = await fetch(`${base}/tickets`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ service_id: serviceId, priority: priority(), ...(name !== null && { customer_name: name }) }),
      })
      if (res.status === 404) return setState('disabled')
      if (res.status === 429) return setError('Hay muchos pedidos en este momento. Espere unos segundos y vuelva a intentar.')
      if (res.status === 422) {
        await load()
        setAsking(null)
        return setError('Ese servicio ya no está disponible.')
      }
      // The name became required after this screen was loaded: the name step asks for it from now on.
      if (res.status === 400 && name === null) {
        await load()
        if (!asking()) setAsking(view()?.services.find((s) => s.id === serviceId) ?? null)
        return setError('Para tomar un número hace falta escribir su nombre.')
      }
      if (!res.ok) return setError('No se pudo entregar el número. Intente de nuevo o consulte en la ventanilla.')
      setAsking(null)
      setIssued({ ...((await res.json()) as Issued), at: printedAt(view()?.timezone), name })
      if (print) setTimeout(() => window.print(), 50)
      clearTimeout(back)
      back = setTimeout(reset, SHOW_MS)
    } catch {
      setReachable(false)
    } finally {
      setBusy(false)
    }
  }

  return (
    <Switch>
      <Match when={state() === 'disabled'}>
        <Message title="Dispensador deshabilitado" text="Este dispositivo ya no entrega números. Consulte en la ventanilla." />
      </Match>
      <Match when={state() === 'offline'}>
        <Message title="Sin conexión" text="No se pudo contactar al servidor. Consulte en la ventanilla." />
      </Match>
      <Match when={issued()}>
        {(t) => (
          <main class="issued" data-testid="issued" onClick={reset}>
            <p class="company">{view()?.companyName}</p>
            <h1 class="lead">Su número</h1>
            <div class="number" data-testid="issued-number">
              {t().number}
            </div>
            <Show when={t().name}>
              <p class="for" data-testid="issued-name">
                A nombre de {t().name}
              </p>
            </Show>
            <p class="service">
              {t().service}
              <Show when={t().priority}> · Prioridad</Show>
            </p>
            <p class="ahead" data-testid="issued-ahead">
              {aheadText(t().waiting_ahead)}
            </p>
            <p class="when">{t().at}</p>
            <p class="hint">Aguarde a ser llamado en la pantalla.</p>
          </main>
        )}
      </Match>
      <Match when={asking()}>
        {(s) => (
          <NameStep
            service={s()}
            priority={priority()}
            required={asksName() === 'required'}
            busy={busy()}
            reachable={reachable()}
            error={error()}
            onTake={(name) => take(s().id, name)}
            onBack={() => {
              setAsking(null)
              setError(null)
            }}
          />
        )}
      </Match>
      <Match when={view()}>
        {(v) => (
          <main class="menu" classList={{ unreachable: !reachable() }}>
            <header>
              <h1>{v().companyName}</h1>
              <p>Toque el servicio para tomar su número</p>
            </header>
            <div class="services">
              <For each={v().services} fallback={<p class="empty">No hay servicios disponibles.</p>}>
                {(s) => (
                  <button type="button" class="service-button" disabled={busy() || !reachable()} onClick={() => choose(s)} data-testid="service-button">
                    <span class="prefix">{s.prefix}</span>
                    <span class="service-name" ref={(el) => fitText(el, { min: 12, group: names, max: (b) => Math.min(b.clientHeight / 1.2, Math.min(innerWidth, innerHeight) * 0.05) })}>
                      <span>{s.name}</span>
                    </span>
                  </button>
                )}
              </For>
            </div>
            <Show when={v().priority}>
              <button
                type="button"
                class="priority-button"
                classList={{ on: priority() }}
                aria-pressed={priority()}
                onClick={() => setPriority(!priority())}
                data-testid="priority-button"
              >
                {priority() ? '✓ Atención prioritaria: elija el servicio' : 'Atención prioritaria (embarazadas, personas mayores o con discapacidad)'}
              </button>
            </Show>
            <Show when={!reachable()}>
              <p class="error" role="alert" data-testid="dispenser-offline">
                Sin conexión con el servidor: por ahora no se entregan números. Consulte en la ventanilla.
              </p>
            </Show>
            <Show when={reachable() && error()}>
              <p class="error" role="alert" data-testid="dispenser-error">
                {error()}
              </p>
            </Show>
          </main>
        )}
      </Match>
      <Match when={true}>
        <Message title="Cargando…" text="" />
      </Match>
    </Switch>
  )
}

export function Dispenser() {
  const token = tokenFromPath(location.pathname)
  return (
    <Show when={token} fallback={<Message title="Enlace inválido" text="La dirección de este dispensador no contiene un código válido." />}>
      {(t) => <Machine token={t()} />}
    </Show>
  )
}
