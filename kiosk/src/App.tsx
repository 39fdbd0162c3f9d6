import { createSignal, For, Match, onCleanup, Show, Switch } from 'solid-js'
import { announce, unlockAudioOnGesture } from './announce'
import { createKioskFeed } from './feed'
import { callTime, clockTime, currencyName, longDate, rate } from './format'
import type { Call, Snapshot } from './types'

const DEFAULT_ZONE = 'America/Argentina/Buenos_Aires'

/** `/kiosk/{token}` → token; anything else has no token. */
export function tokenFromPath(pathname: string): string | null {
  const match = /^\/kiosk\/([^/]+)\/?$/.exec(pathname)
  if (!match) return null
  try {
    return decodeURIComponent(match[1])
  } catch {
    return null
  }
}

function Message(props: { title: string; text: string }) {
  return (
    <main class="message" role="alert">
      <h1>{props.title}</h1>
      <p>{props.text}</p>
    </main>
  )
}

function Clock(props: { zone: string }) {
  const [now, setNow] = createSignal(new Date())
  const timer = setInterval(() => setNow(new Date()), 1000)
  onCleanup(() => clearInterval(timer))
  return (
    <div class="clock">
      <div class="clock-time" data-testid="clock">
        {clockTime(now(), props.zone)}
      </div>
      <div class="clock-date">{longDate(now(), props.zone)}</div>
    </div>
  )
}

function Header(props: { snapshot: Snapshot; offline: boolean }) {
  const [logoFailed, setLogoFailed] = createSignal(false)
  return (
    <header class="top">
      <div class="brand">
        <Show when={props.snapshot.showLogo && props.snapshot.logoUrl && !logoFailed()}>
          <img class="logo" src={props.snapshot.logoUrl} alt="" onError={() => setLogoFailed(true)} />
        </Show>
        <span class="company">{props.snapshot.companyName}</span>
      </div>
      <Show when={props.offline}>
        <div class="offline" data-testid="offline" role="status">
          <span class="dot" /> Sin conexión
        </div>
      </Show>
      <Clock zone={props.snapshot.timezone || DEFAULT_ZONE} />
    </header>
  )
}

function CurrentCall(props: { call: Call | null; flash: boolean }) {
  return (
    <section class="current" classList={{ flash: props.flash }} data-testid="current-call" aria-live="polite">
      <h2 class="label">Turno llamado</h2>
      <Show when={props.call} fallback={<p class="idle">Aguarde su turno</p>}>
        {(call) => (
          <>
            <div class="ticket" data-testid="current-ticket">
              {call().ticket}
            </div>
            <Show when={call().name}>
              <div class="name" data-testid="current-name">
                {call().name}
              </div>
            </Show>
            <div class="desk" data-testid="current-desk">
              <span class="arrow" aria-hidden="true">
                →
              </span>
              {call().desk}
            </div>
          </>
        )}
      </Show>
    </section>
  )
}

function RecentCalls(props: { calls: Call[]; zone: string }) {
  return (
    <section class="recent">
      <h2 class="label">Llamados anteriores</h2>
      <ol class="recent-list" data-testid="recent-calls">
        <For each={props.calls.slice(0, 6)}>
          {(call) => (
            <li class="recent-item">
              <span class="recent-ticket">{call.ticket}</span>
              <span class="recent-desk">{call.desk}</span>
              <Show when={call.name}>
                <span class="recent-name">{call.name}</span>
              </Show>
              <span class="recent-time">{callTime(call.calledAt, props.zone)}</span>
            </li>
          )}
        </For>
      </ol>
    </section>
  )
}

function Rates(props: { snapshot: Snapshot }) {
  return (
    <section class="rates">
      <h2 class="label">Cotizaciones</h2>
      <Show when={props.snapshot.rates.length} fallback={<p class="idle small">Sin cotizaciones publicadas</p>}>
        <table data-testid="rates">
          <thead>
            <tr>
              <th scope="col">Moneda</th>
              <th scope="col">Compra</th>
              <th scope="col">Venta</th>
            </tr>
          </thead>
          <tbody>
            <For each={props.snapshot.rates}>
              {(r) => (
                <tr>
                  <th scope="row">
                    <span class="code">{r.currency}</span>
                    <span class="currency-name">{currencyName(r.currency)}</span>
                  </th>
                  <td>{rate(r.buy)}</td>
                  <td>{rate(r.sell)}</td>
                </tr>
              )}
            </For>
          </tbody>
        </table>
      </Show>
      <Show when={props.snapshot.services.length}>
        <div class="queues">
          <h2 class="label">En espera</h2>
          <ul>
            <For each={props.snapshot.services}>
              {(s) => (
                <li>
                  <span class="queue-prefix">{s.prefix}</span>
                  <span class="queue-name">{s.name}</span>
                  <span class="queue-count">{s.waiting}</span>
                </li>
              )}
            </For>
          </ul>
        </div>
      </Show>
    </section>
  )
}

function Ticker(props: { text: string }) {
  // Two copies, each at least a screen wide, scrolled by half the track: the loop has no visible seam.
  const seconds = () => Math.max(20, Math.round(props.text.length * 0.3))
  return (
    <footer class="ticker" aria-label={props.text}>
      <div class="ticker-track" style={{ '--ticker-duration': `${seconds()}s` }} aria-hidden="true">
        <span class="ticker-item">{props.text}</span>
        <span class="ticker-item">{props.text}</span>
      </div>
    </footer>
  )
}

function Board(props: { token: string }) {
  const [flash, setFlash] = createSignal(false)
  let flashTimer: ReturnType<typeof setTimeout> | undefined
  unlockAudioOnGesture()
  const feed = createKioskFeed(props.token, (call, snapshot) => {
    setFlash(true)
    clearTimeout(flashTimer)
    flashTimer = setTimeout(() => setFlash(false), 6000)
    announce(call, { sound: snapshot.announceSound, tts: snapshot.announceTts })
  })
  onCleanup(() => clearTimeout(flashTimer))
  const offline = () => feed.state() === 'retrying'
  return (
    <Switch>
      <Match when={feed.disabled()}>
        <Message title="Pantalla deshabilitada" text="Este enlace ya no está habilitado. Solicite uno nuevo al administrador." />
      </Match>
      <Match when={feed.snapshot()}>
        {(snapshot) => (
          <div class="board" classList={{ stale: offline() }}>
            <Header snapshot={snapshot()} offline={offline()} />
            <main class="content">
              <div class="calls">
                <CurrentCall call={snapshot().currentCall} flash={flash()} />
                <RecentCalls calls={snapshot().recentCalls} zone={snapshot().timezone || DEFAULT_ZONE} />
              </div>
              <Rates snapshot={snapshot()} />
            </main>
            <Show when={(snapshot().tickerText ?? "").trim()}>{(text) => <Ticker text={text()} />}</Show>
          </div>
        )}
      </Match>
      <Match when={offline()}>
        <Message title="Sin conexión" text="Reintentando conectar con el servidor…" />
      </Match>
      <Match when={true}>
        <Message title="Conectando…" text="" />
      </Match>
    </Switch>
  )
}

export function App() {
  const token = tokenFromPath(location.pathname)
  return (
    <Show when={token} fallback={<Message title="Enlace inválido" text="La dirección de esta pantalla no contiene un código válido." />}>
      {(t) => <Board token={t()} />}
    </Show>
  )
}
