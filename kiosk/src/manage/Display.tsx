import { createSignal, For, onCleanup, onMount, Show } from 'solid-js'
import { createStore, unwrap } from 'solid-js/store'
import { api, apiExact } from './api'
import { formatArs } from './decimal'
import { session } from './session'
import { createAction, NoteLine } from './ui'

type Privacy = 'full_name' | 'first_last_initial' | 'ticket'

interface Settings {
  displayName: string | null
  logoUrl: string
  showLogo: boolean
  timezone: string
  tickerText: string
  announceSound: boolean
  announceTts: boolean
  privacyMode: Privacy
  priorityMode: 'first' | 'off'
  /** Present once the server knows it (§16); sent back only then. */
  dispenserAsksName?: 'off' | 'optional' | 'required'
}

const ZONES: string[] = (() => {
  try {
    return (Intl as unknown as { supportedValuesOf(k: string): string[] }).supportedValuesOf('timeZone')
  } catch {
    return ['America/Argentina/Buenos_Aires']
  }
})()

// The list holds canonical names only; a zone saved under another accepted name (UTC, an alias) is still fine.
const knownZone = (zone: string) => {
  try {
    new Intl.DateTimeFormat('es-AR', { timeZone: zone })
    return zone.length > 0
  } catch {
    return false
  }
}

/** What the form checks before anything is sent; each message names the field and the fix. */
export function settingsProblems(s: Settings): Partial<Record<keyof Settings, string>> {
  const problems: Partial<Record<keyof Settings, string>> = {}
  const logo = s.logoUrl.trim()
  if (logo) {
    let ok = false
    try {
      ok = new URL(logo).protocol === 'https:'
    } catch {
      ok = false
    }
    if (!ok) problems.logoUrl = 'El logo debe ser una dirección segura que empiece con https://'
  }
  if (s.showLogo && !logo) problems.logoUrl = 'Para mostrar el logo, escriba su dirección https://'
  if (!s.tickerText.trim()) problems.tickerText = 'Escriba el texto de la marquesina (por ejemplo, el horario de atención).'
  if (!knownZone(s.timezone)) problems.timezone = 'Elija una zona horaria de la lista.'
  return problems
}

const SAMPLE_NAME = 'Juan Pérez'
const masked = (mode: Privacy) => (mode === 'full_name' ? SAMPLE_NAME : mode === 'first_last_initial' ? 'Juan P.' : null)

/** A scaled-down drawing of the kiosk with the form's values, so a change is seen before it is saved. */
function Preview(props: { settings: Settings; rates: { currency: string; buy: string; sell: string }[] }) {
  const [now, setNow] = createSignal(new Date())
  const timer = setInterval(() => setNow(new Date()), 1000)
  onCleanup(() => clearInterval(timer))
  const clock = () => {
    try {
      return new Intl.DateTimeFormat('es-AR', { hour: '2-digit', minute: '2-digit', hourCycle: 'h23', timeZone: props.settings.timezone }).format(now())
    } catch {
      return '--:--'
    }
  }
  const logo = () => (props.settings.showLogo && props.settings.logoUrl.startsWith('https://') ? props.settings.logoUrl : null)
  return (
    <figure class="preview" data-testid="preview">
      <figcaption>Vista previa de la pantalla</figcaption>
      <div class="tv" aria-hidden="true">
        <div class="tv-top">
          <Show when={logo()}>{(src) => <img src={src()} alt="" />}</Show>
          <span class="tv-name" data-testid="preview-name">
            {props.settings.displayName?.trim() || session()?.company.name || 'Nombre de la empresa'}
          </span>
          <span class="tv-clock">{clock()}</span>
        </div>
        <div class="tv-body">
          <div class="tv-call">
            <span class="tv-label">Turno llamado</span>
            <span class="tv-ticket">A-001</span>
            <Show when={masked(props.settings.privacyMode)}>{(n) => <span class="tv-person">{n()}</span>}</Show>
            <span class="tv-desk">→ Caja 1</span>
          </div>
          {/* Every currency, as the TV shows them all: a long board in smaller type. */}
          <table class="tv-rates" classList={{ many: props.rates.length > 6 }}>
            <tbody>
              <For each={props.rates} fallback={<tr><td>Sin cotizaciones</td></tr>}>
                {(r) => (
                  <tr>
                    <td>{r.currency}</td>
                    <td>{formatArs(r.buy)}</td>
                    <td>{formatArs(r.sell)}</td>
                  </tr>
                )}
              </For>
            </tbody>
          </table>
        </div>
        <div class="tv-ticker" data-testid="preview-ticker">
          {props.settings.tickerText}
        </div>
      </div>
    </figure>
  )
}

export function Display() {
  const [form, setForm] = createStore<Settings>({
    displayName: '',
    logoUrl: '',
    showLogo: false,
    timezone: 'America/Argentina/Buenos_Aires',
    tickerText: '',
    announceSound: true,
    announceTts: true,
    privacyMode: 'first_last_initial',
    priorityMode: 'first',
  })
  const [loaded, setLoaded] = createSignal(false)
  const [problems, setProblems] = createSignal<ReturnType<typeof settingsProblems>>({})
  const [rates, setRates] = createSignal<{ currency: string; buy: string; sell: string }[]>([])
  const action = createAction()

  onMount(() => {
    void action.run(async () => {
      const settings = await api<Settings>('GET', '/api/ventanilla/settings')
      setForm({ ...settings, displayName: settings.displayName ?? '' })
      setLoaded(true)
    })
    // The preview's rates are a nicety: without them the form still works.
    apiExact<{ rates: { currency: string; buy: string; sell: string }[] }>('/api/ventanilla/rates').then(
      (body) => setRates(body.rates.map((r) => ({ currency: r.currency, buy: String(r.buy), sell: String(r.sell) }))),
      () => setRates([]),
    )
  })

  const save = (e: Event) => {
    e.preventDefault()
    const current = unwrap(form)
    const found = settingsProblems(current)
    setProblems(found)
    if (Object.keys(found).length) {
      action.setNote({ kind: 'error', text: 'Hay datos para corregir; no se guardó nada.' })
      document.querySelector<HTMLElement>('[aria-invalid=true]')?.focus()
      return
    }
    // Only the fields this form edits: PATCH refuses any it does not know.
    const body = {
      displayName: current.displayName?.trim() || null,
      logoUrl: current.logoUrl.trim(),
      showLogo: current.showLogo,
      timezone: current.timezone,
      tickerText: current.tickerText,
      announceSound: current.announceSound,
      announceTts: current.announceTts,
      privacyMode: current.privacyMode,
      priorityMode: current.priorityMode,
      ...(current.dispenserAsksName !== undefined && { dispenserAsksName: current.dispenserAsksName }),
    }
    void action.run(async () => {
      const saved = await api<Settings>('PATCH', '/api/ventanilla/settings', body)
      setForm({ ...saved, displayName: saved.displayName ?? '' })
      return 'Pantalla guardada: las pantallas abiertas se actualizan solas.'
    })
  }

  const error = (field: keyof Settings) => problems()[field]
  const described = (field: keyof Settings) => ({
    'aria-invalid': error(field) ? ('true' as const) : undefined,
    'aria-describedby': error(field) ? `${field}-error` : undefined,
  })
  const FieldError = (p: { field: keyof Settings }) => (
    <Show when={error(p.field)}>
      <span class="field-error" id={`${p.field}-error`} data-testid={`${p.field}-error`}>
        {error(p.field)}
      </span>
    </Show>
  )

  return (
    <section class="panel" data-testid="display-section">
      <h1>Pantalla</h1>
      <div class="split">
        <form class="stack" onSubmit={save} aria-busy={!loaded()}>
          <label>
            Nombre en pantalla (vacío: el nombre de la empresa)
            <input
              name="displayName"
              maxlength="200"
              value={form.displayName ?? ''}
              placeholder={session()?.company.name}
              onInput={(e) => setForm('displayName', e.currentTarget.value)}
            />
          </label>
          <label>
            Logo (dirección https://)
            <input name="logoUrl" type="url" inputmode="url" maxlength="2000" value={form.logoUrl} onInput={(e) => setForm('logoUrl', e.currentTarget.value)} {...described('logoUrl')} />
            <FieldError field="logoUrl" />
          </label>
          <label class="check">
            <input type="checkbox" name="showLogo" checked={form.showLogo} onChange={(e) => setForm('showLogo', e.currentTarget.checked)} />
            Mostrar el logo
          </label>
          <label>
            Marquesina
            <textarea name="tickerText" rows="2" maxlength="2000" value={form.tickerText} onInput={(e) => setForm('tickerText', e.currentTarget.value)} {...described('tickerText')} />
            <FieldError field="tickerText" />
          </label>
          <div class="pair">
            <label class="check">
              <input type="checkbox" name="announceSound" checked={form.announceSound} onChange={(e) => setForm('announceSound', e.currentTarget.checked)} />
              Sonido al llamar
            </label>
            <label class="check">
              <input type="checkbox" name="announceTts" checked={form.announceTts} onChange={(e) => setForm('announceTts', e.currentTarget.checked)} />
              Anunciar en voz alta
            </label>
          </div>
          <label>
            Nombres en pantalla
            <select name="privacyMode" value={form.privacyMode} onChange={(e) => setForm('privacyMode', e.currentTarget.value as Privacy)}>
              <option value="full_name">Nombre completo (Juan Pérez)</option>
              <option value="first_last_initial">Nombre e inicial (Juan P.)</option>
              <option value="ticket">Solo el número de turno</option>
            </select>
          </label>
          <label>
            Atención prioritaria
            <select name="priorityMode" value={form.priorityMode} onChange={(e) => setForm('priorityMode', e.currentTarget.value as 'first' | 'off')}>
              <option value="first">Primero los turnos prioritarios</option>
              <option value="off">Solo por orden de llegada</option>
            </select>
          </label>
          <Show when={form.dispenserAsksName !== undefined}>
            <label>
              El dispensador pide el nombre
              <select
                name="dispenserAsksName"
                value={form.dispenserAsksName}
                onChange={(e) => setForm('dispenserAsksName', e.currentTarget.value as Settings['dispenserAsksName'])}
              >
                <option value="off">No</option>
                <option value="optional">Opcional</option>
                <option value="required">Obligatorio</option>
              </select>
            </label>
          </Show>
          <label>
            Zona horaria
            <select name="timezone" value={form.timezone} onChange={(e) => setForm('timezone', e.currentTarget.value)} {...described('timezone')}>
              <Show when={!ZONES.includes(form.timezone)}>
                <option value={form.timezone}>{form.timezone}</option>
              </Show>
              <For each={ZONES}>{(z) => <option value={z}>{z}</option>}</For>
            </select>
            <FieldError field="timezone" />
          </label>
          <div class="row">
            <button type="submit" class="primary" disabled={action.busy() || !loaded()} data-testid="display-save">
              Guardar
            </button>
          </div>
          <NoteLine note={action.note()} />
        </form>
        <Preview settings={form} rates={rates()} />
      </div>
    </section>
  )
}
