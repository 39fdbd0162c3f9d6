import { createSignal, For, type JSX, Match, onCleanup, Show, Switch } from 'solid-js'
import { announce, unlockAudioOnGesture } from './announce'
import { createKioskFeed } from './feed'
import { fitText } from './fit'
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
    <main class="message" aria-live="assertive">
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
    <div class="clock" ref={(el) => fitText(el, { max: (b) => b.clientHeight / 2.1 })}>
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
        <div class="company-box" ref={(el) => fitText(el, { max: (b) => b.clientHeight / 1.25 })}>
          <h1 class="company">{props.snapshot.companyName}</h1>
        </div>
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

/** One line (or a few wrapped ones) that takes the largest type its grid row leaves room for. */
function Fit(props: { class: string; testid?: string; max?: (box: HTMLElement) => number; children: JSX.Element }) {
  return (
    <div class={`fit ${props.class}`} data-testid={props.testid} ref={(el) => fitText(el, { max: props.max ?? ((b) => b.clientHeight / 1.2) })}>
      <span>{props.children}</span>
    </div>
  )
}

function CurrentCall(props: { call: Call | null; flash: boolean }) {
  return (
    <section class="current" classList={{ flash: props.flash, named: !!props.call?.name }} data-testid="current-call" aria-live="polite">
      <h2 class="label">Turno llamado</h2>
      <Show when={props.call} fallback={
          // A calm line while nobody is called, not a shout that fills the panel.
          <Fit class="idle" max={(b) => b.clientHeight / 8}>
            Aguarde su turno
          </Fit>
        }>
        {(call) => (
          <>
            <Fit class="ticket" testid="current-ticket">
              {call().ticket}
            </Fit>
            <Show when={call().name}>
              <Fit class="name" testid="current-name">
                {call().name}
              </Fit>
            </Show>
            <Fit class="desk" testid="current-desk">
              <span class="arrow" aria-hidden="true">
                →{' '}
              </span>
              {call().desk}
            </Fit>
          </>
        )}
      </Show>
    </section>
  )
}

/** Columns for `n` cards: as many as fit side by side (3 across a landscape board, 2 down a portrait one). */
const recentColumns = (n: number, portrait: boolean) => Math.max(1, Math.min(n, portrait ? 2 : 3))

function RecentCalls(props: { calls: Call[]; zone: string; portrait: boolean }) {
  const calls = () => props.calls.slice(0, 6)
  return (
    <section class="recent">
      <h2 class="label">Llamados anteriores</h2>
      <div class="recent-box" ref={(el) => fitText(el, { max: (b) => b.clientHeight / (Math.ceil(calls().length / recentColumns(calls().length, props.portrait)) * 3.6) })}>
        <ol class="recent-list" data-testid="recent-calls" style={{ '--columns': String(recentColumns(calls().length, props.portrait)) }}>
          <For each={calls()}>
            {(call) => (
              <li class="recent-item">
                <span class="recent-head">
                  <span class="recent-ticket">{call.ticket}</span>
                  <span class="recent-desk">→ {call.desk}</span>
                  <span class="recent-time">{callTime(call.calledAt, props.zone)}</span>
                </span>
                <Show when={call.name}>
                  <span class="recent-name">{call.name}</span>
                </Show>
              </li>
            )}
          </For>
        </ol>
      </div>
    </section>
  )
}

function Side(props: { snapshot: Snapshot }) {
  // A handful of rows may grow large; a full board shrinks to what fits, measured by fitText.
  const max = (box: HTMLElement) => Math.min(box.clientHeight / 9, box.clientWidth / 16)
  return (
    <section class="side" aria-label="Cotizaciones y turnos en espera" ref={(el) => fitText(el, { max })}>
      <div class="rates">
        <h2 class="label">Cotizaciones</h2>
        <Show when={props.snapshot.rates.length} fallback={<p class="idle-note">Sin cotizaciones publicadas</p>}>
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
                      <Show when={currencyName(r.currency)}>
                        <span class="currency-name">{currencyName(r.currency)}</span>
                      </Show>
                    </th>
                    <td>{rate(r.buy)}</td>
                    <td>{rate(r.sell)}</td>
                  </tr>
                )}
              </For>
            </tbody>
          </table>
        </Show>
      </div>
      <Show when={props.snapshot.services.length}>
        <div class="queues" data-testid="queues">
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
    <footer class="ticker" aria-label={props.text} data-marquee>
      <div class="ticker-track" style={{ '--ticker-duration': `${seconds()}s` }} aria-hidden="true">
        <span class="ticker-item">{props.text}</span>
        <span class="ticker-item">{props.text}</span>
      </div>
    </footer>
  )
}

function usePortrait() {
  const query = matchMedia('(orientation: portrait)')
  const [portrait, setPortrait] = createSignal(query.matches)
  const change = () => setPortrait(query.matches)
  query.addEventListener('change', change)
  onCleanup(() => query.removeEventListener('change', change))
  return portrait
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
  const portrait = usePortrait()
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
            <main class="content" classList={{ 'has-recent': snapshot().recentCalls.length > 0 }}>
              <CurrentCall call={snapshot().currentCall} flash={flash()} />
              {/* Before the first call of the day there is nothing to list: the space goes to the current call. */}
              <Show when={snapshot().recentCalls.length}>
                <RecentCalls calls={snapshot().recentCalls} zone={snapshot().timezone || DEFAULT_ZONE} portrait={portrait()} />
              </Show>
              <Side snapshot={snapshot()} />
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
