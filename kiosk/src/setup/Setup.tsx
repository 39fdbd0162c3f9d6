import { createSignal, For, onMount, Show } from 'solid-js'
import { leaveWelcome, linkFor, rememberCompany } from '../company'
import { body, check, tokenOf, type Fields, type Problems } from './check'

const DEFAULT_ZONE = 'America/Argentina/Buenos_Aires'
/** Suggestions for the zone field; any zone the browser knows is taken. */
const ZONES: readonly string[] = (() => {
  try {
    const all = Intl.supportedValuesOf('timeZone')
    return all.includes(DEFAULT_ZONE) ? all : [DEFAULT_ZONE, ...all]
  } catch {
    return [DEFAULT_ZONE, 'America/Montevideo', 'America/Santiago', 'America/Sao_Paulo', 'America/Asuncion', 'UTC']
  }
})()

type Outcome = { kind: 'error'; text: string; manage?: boolean } | null

/** The API's refusal in words for the person setting up; the field messages come from `details` when it has them. */
function explain(status: number, answer: { error?: string; details?: { field: string; message: string }[] } | null): Outcome {
  if (status === 401) return { kind: 'error', text: 'El enlace de configuración no es válido o ya venció (dura 24 horas). Reiniciá el servicio y abrí el enlace nuevo que muestra al arrancar.' }
  if (status === 404) return { kind: 'error', text: 'Este servicio ya está configurado. Ingresá con tu e-mail y contraseña.', manage: true }
  if (status === 409) return { kind: 'error', text: 'Ya existe una persona con ese e-mail.' }
  if (status === 429) return { kind: 'error', text: 'Demasiados intentos seguidos. Esperá un minuto y volvé a probar.' }
  if (status === 400) {
    const fields = (answer?.details ?? []).map((d) => `${d.field}: ${d.message}`).join('; ')
    return { kind: 'error', text: `Revisá los datos: ${fields || answer?.error || 'hay un dato que el servicio no acepta.'}` }
  }
  return { kind: 'error', text: 'No se pudo completar la configuración. Revisá la conexión y volvé a intentar.' }
}

export function Setup() {
  const token = tokenOf(window.location.hash)
  const [fields, setFields] = createSignal<Fields>({
    companyName: '',
    timezone: DEFAULT_ZONE,
    mesas: false,
    ventanilla: true,
    ownerName: '',
    email: '',
    password: '',
    repeat: '',
    starter: true,
  })
  const [problems, setProblems] = createSignal<Problems>({})
  const [outcome, setOutcome] = createSignal<Outcome>(null)
  const [sending, setSending] = createSignal(false)
  // The first field takes the keyboard at once (an autofocus attribute on an element made by script is not reliable).
  onMount(() => document.getElementById('companyName')?.focus())
  // A field's message goes as soon as it is edited: what is left in red is what is still to fix.
  const set = <K extends keyof Fields>(key: K, value: Fields[K]) => {
    setFields({ ...fields(), [key]: value })
    if (problems()[key]) setProblems({ ...problems(), [key]: undefined })
  }

  async function submit(e: Event) {
    e.preventDefault()
    setOutcome(null)
    const found = check(fields())
    setProblems(found)
    const first = Object.keys(found)[0]
    if (first) {
      document.getElementById(first)?.focus()
      return
    }
    setSending(true)
    try {
      const res = await fetch('/api/setup', {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body(token, fields())),
      })
      if (res.status === 201) {
        const answer = (await res.json()) as { company: { id: number; name: string } }
        // This browser now knows the number: the manager app and the counter console open with it filled in. The owner
        // is signed in already, so the manager app opens at once, its welcome saying the number and the links
        // (contract §15 and §18).
        rememberCompany(answer.company.id)
        leaveWelcome({ company: answer.company.id, name: answer.company.name, starter: fields().starter })
        location.replace(linkFor('/manage', answer.company.id))
        return
      }
      setOutcome(explain(res.status, await res.json().catch(() => null)))
    } catch {
      setOutcome(explain(0, null))
    } finally {
      setSending(false)
    }
  }

  const field = (id: keyof Fields, label: string, type: string, extra: Record<string, string> = {}) => (
    <div class="field">
      <label for={id}>{label}</label>
      <input
        id={id}
        type={type}
        value={String(fields()[id])}
        onInput={(e) => set(id, e.currentTarget.value as never)}
        aria-invalid={problems()[id] ? 'true' : 'false'}
        aria-describedby={problems()[id] ? `${id}-problem` : undefined}
        {...extra}
      />
      <Show when={problems()[id]}>
        <p class="problem" id={`${id}-problem`}>
          {problems()[id]}
        </p>
      </Show>
    </div>
  )

  return (
    <main class="setup">
      <h1>Configurar el servicio</h1>
      <Show
        when={token}
        fallback={
          <p class="notice error" role="alert">
            Este enlace no tiene el código de configuración. Copiá el enlace completo (con la parte que sigue a “#”) que muestra el servicio al arrancar.
          </p>
        }
      >
        <p class="muted">Creá tu empresa y tu usuario de dueño. Después vas a entrar al panel de gestión con este e-mail y contraseña.</p>
        <form onSubmit={submit} novalidate>
          <fieldset>
            <legend>Empresa</legend>
            {field('companyName', 'Nombre de la empresa', 'text', { autocomplete: 'organization' })}
            {field('timezone', 'Zona horaria', 'text', { list: 'zones', autocomplete: 'off' })}
            <datalist id="zones">
              <For each={ZONES}>{(z) => <option value={z} />}</For>
            </datalist>
            <div class="modules" role="group" aria-label="Módulos">
              <label>
                <input type="checkbox" checked={fields().ventanilla} onChange={(e) => set('ventanilla', e.currentTarget.checked)} /> Ventanilla: sala de espera, turnos y
                pantalla de cotizaciones
              </label>
              <label>
                <input type="checkbox" checked={fields().mesas} onChange={(e) => set('mesas', e.currentTarget.checked)} /> Mesas de cambio
              </label>
            </div>
            <div class="modules">
              <label>
                <input type="checkbox" name="starter" checked={fields().starter} onChange={(e) => set('starter', e.currentTarget.checked)} aria-describedby="starter-hint" />{' '}
                Empezar con caja y tipos de operación de ejemplo
              </label>
              <p class="hint" id="starter-hint">
                La «Caja principal» con cuentas en ARS, USD, EUR y BRL, los tipos «Compra de divisas», «Venta de divisas», «Ingreso», «Egreso» y «Ajuste de caja»,
                y los movimientos «Capital» y «Comisión»: para registrar la primera compra apenas termine. Se pueden cambiar después.
              </p>
            </div>
          </fieldset>
          <fieldset>
            <legend>Dueño</legend>
            {field('ownerName', 'Tu nombre', 'text', { autocomplete: 'name' })}
            {field('email', 'E-mail', 'email', { autocomplete: 'email' })}
            {field('password', 'Contraseña (al menos 12 caracteres)', 'password', { autocomplete: 'new-password' })}
            {field('repeat', 'Repetí la contraseña', 'password', { autocomplete: 'new-password' })}
          </fieldset>
          <div aria-live="polite">
            <Show when={outcome()}>
              {(o) => (
                <p class="notice error" role="alert">
                  {o().text}{' '}
                  <Show when={o().manage}>
                    <a href="/manage">Ir al panel de gestión</a>
                  </Show>
                </p>
              )}
            </Show>
          </div>
          <button class="primary" type="submit" disabled={sending()}>
            {sending() ? 'Creando…' : 'Crear empresa'}
          </button>
        </form>
      </Show>
    </main>
  )
}
