import Decimal from 'decimal.js'
import { createSignal, For, onMount, Show } from 'solid-js'
import { linkFor } from '../company'
import type { CompanyProfile } from '../exchange'
import { knownZone } from '../setup/check'
import { ApiFailure, explain, money } from './api'
import { formatArs, parseArs } from './decimal'
import { CopyField, FieldError, invalid } from './forms'
import { companyId, rememberCompany, session } from './session'
import { createAction, NoteLine } from './ui'
import './records.css'

export const [profile, setProfile] = createSignal<CompanyProfile | null>(null)

/** The profile for the header and the links: its number is also remembered for the next sign-in on this browser. */
export async function loadProfile(): Promise<CompanyProfile> {
  const p = await money<CompanyProfile>('GET', '/api/company')
  setProfile(p)
  rememberCompany(p.id)
  return p
}

/** The header's line: which company this is, by number and name, so the number is there to read out or note. */
export function CompanyBadge() {
  // The header still shows the remembered number if the profile cannot be read right now.
  onMount(() => void loadProfile().catch(() => {}))
  return (
    <Show when={profile()?.id ?? companyId()}>
      {(id) => (
        <p class="company-badge" data-testid="company-number">
          <span class="label">Empresa n.º</span> <strong>{id()}</strong>
          <Show when={profile()?.name}>{(name) => <span class="name">{name()}</span>}</Show>
        </p>
      )}
    </Show>
  )
}

const isOwner = () => session()?.employee.permissions.includes('company.admin') ?? false

const ZONES: readonly string[] = (() => {
  try {
    return Intl.supportedValuesOf('timeZone')
  } catch {
    return ['America/Argentina/Buenos_Aires', 'America/Montevideo', 'America/Santiago', 'America/Sao_Paulo', 'America/Asuncion', 'UTC']
  }
})()

/**
 * A CUIT or CUIL's check digit (AFIP's modulo 11 with weights 5432765432), said as a doubt rather than a refusal:
 * the API takes any tax id of up to 20 characters, and the owner may confirm one the rule does not fit. Only eleven
 * digits, with or without the usual dashes, are checked: a tax id of another country is taken as written.
 */
export function cuitDoubt(value: string): string | null {
  const m = /^(\d{2})-?(\d{8})-?(\d)$/.exec(value.trim())
  if (!m) return null
  const digits = (m[1] + m[2]).split('').map(Number)
  const sum = [5, 4, 3, 2, 7, 6, 5, 4, 3, 2].reduce((acc, w, i) => acc + w * digits[i], 0)
  const check = 11 - (sum % 11)
  const expected = check === 11 ? 0 : check
  if (expected === Number(m[3])) return null
  const should = expected === 10 ? 'no hay dígito que cierre con esos diez números' : `con esos números terminaría en ${expected}`
  return `El dígito verificador no coincide (${should}). Revise el CUIT, o pulse «Guardar igual» si es correcto así.`
}

interface Fields {
  name: string
  timezone: string
  legal_name: string
  tax_id: string
  address: string
  license: string
  receipt_point: string
  local_currency: string
  till_tolerance: string
}
type Problems = Partial<Record<keyof Fields, string>>

/** The fields in the order the form shows them: the first with a message takes the focus. */
const ORDER: (keyof Fields)[] = ['name', 'timezone', 'legal_name', 'tax_id', 'address', 'license', 'receipt_point', 'local_currency', 'till_tolerance']

const fieldsOf = (p: CompanyProfile): Fields => ({
  name: p.name,
  timezone: p.timezone,
  legal_name: p.legal_name ?? '',
  tax_id: p.tax_id ?? '',
  address: p.address ?? '',
  license: p.license ?? '',
  receipt_point: String(p.receipt_point),
  local_currency: p.local_currency,
  till_tolerance: formatArs(p.till_tolerance),
})

const TEXT_LIMITS: [keyof Fields, number][] = [
  ['legal_name', 200],
  ['tax_id', 20],
  ['address', 300],
  ['license', 100],
]

/** The same bounds the API holds (contract §18), said next to each field before anything is sent. */
function check(f: Fields): { problems: Problems; tolerance: string | null } {
  const problems: Problems = {}
  if (!f.name.trim()) problems.name = 'Escriba el nombre de la empresa.'
  else if (f.name.trim().length > 200) problems.name = 'El nombre tiene como máximo 200 caracteres.'
  if (!knownZone(f.timezone.trim())) problems.timezone = 'Elija una zona horaria de la lista, como America/Argentina/Buenos_Aires.'
  for (const [k, max] of TEXT_LIMITS) if (f[k].trim().length > max) problems[k] = `Como máximo ${max} caracteres.`
  if (!/^\d{1,5}$/.test(f.receipt_point.trim()) || Number(f.receipt_point) < 1) problems.receipt_point = 'Un número entero de 1 a 99999.'
  if (!/^[A-Z]{3}$/.test(f.local_currency.trim())) problems.local_currency = 'Tres letras mayúsculas, por ejemplo ARS.'
  const t = parseArs(f.till_tolerance)
  if (!t.ok) problems.till_tolerance = t.message
  for (const k of Object.keys(problems) as (keyof Fields)[]) if (!problems[k]) delete problems[k]
  return { problems, tolerance: t.ok ? t.value : null }
}

/** What changed against the saved profile, in the shape PATCH /api/company takes; an emptied text clears its field. */
function changes(saved: CompanyProfile, f: Fields, tolerance: string): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  if (f.name.trim() !== saved.name) out.name = f.name.trim()
  if (f.timezone.trim() !== saved.timezone) out.timezone = f.timezone.trim()
  for (const [k] of TEXT_LIMITS) {
    const value = f[k].trim() || null
    if (value !== saved[k as 'legal_name']) out[k] = value
  }
  if (Number(f.receipt_point) !== saved.receipt_point) out.receipt_point = Number(f.receipt_point)
  if (f.local_currency.trim() !== saved.local_currency) out.local_currency = f.local_currency.trim()
  if (!new Decimal(tolerance).eq(saved.till_tolerance)) out.till_tolerance = tolerance
  return out
}

const describe = (e: unknown) =>
  e instanceof ApiFailure && e.code === 'FORBIDDEN' ? 'Solo el dueño de la cuenta puede cambiar los datos de la empresa.' : explain(e)

export function Company() {
  const [fields, setFields] = createSignal<Fields | null>(null)
  const [problems, setProblems] = createSignal<Problems>({})
  const load = createAction()
  const save = createAction(describe)
  // The tax id the owner already confirmed against the check-digit doubt; any other value is asked about again.
  const [confirmedTaxId, setConfirmedTaxId] = createSignal<string | null>(null)
  const doubt = () => {
    const taxId = fields()?.tax_id.trim() ?? ''
    return taxId !== (profile()?.tax_id ?? '') && taxId !== confirmedTaxId() ? cuitDoubt(taxId) : null
  }
  const [asked, setAsked] = createSignal(false)
  onMount(() => load.run(async () => void setFields(fieldsOf(await loadProfile()))))
  const set = (k: keyof Fields, v: string) => {
    setFields({ ...fields()!, [k]: v })
    if (problems()[k]) setProblems({ ...problems(), [k]: undefined })
    if (k === 'tax_id') setAsked(false)
  }
  const submit = (e: Event) => {
    e.preventDefault()
    const f = fields()!
    const { problems: found, tolerance } = check(f)
    if (!found.tax_id && doubt()) {
      if (asked()) setConfirmedTaxId(f.tax_id.trim())
      else found.tax_id = doubt()!
    }
    setAsked(Boolean(found.tax_id && doubt()))
    setProblems(found)
    const first = ORDER.find((k) => found[k])
    if (first) {
      document.getElementById(`company-${first}`)?.focus()
      return save.setNote({ kind: 'error', text: 'Hay datos para corregir; no se guardó nada.' })
    }
    const body = changes(profile()!, f, tolerance!)
    if (!Object.keys(body).length) return save.setNote({ kind: 'info', text: 'No hay cambios para guardar.' })
    void save.run(async () => {
      const saved = await money<CompanyProfile>('PATCH', '/api/company', body)
      setProfile(saved)
      setFields(fieldsOf(saved))
      return 'Datos de la empresa guardados.'
    })
  }

  const field = (k: keyof Fields, label: string, extra: Record<string, string> = {}) => (
    <label>
      {label}
      <input
        id={`company-${k}`}
        name={k}
        value={fields()![k]}
        readonly={!isOwner()}
        {...invalid(`company-${k}-error`, problems()[k])}
        onInput={(e) => set(k, e.currentTarget.value)}
        {...extra}
      />
      <FieldError id={`company-${k}-error`} testid={`error-company-${k}`} text={problems()[k]} />
    </label>
  )

  return (
    <section class="panel" data-testid="company-section">
      <h1>Empresa</h1>
      <NoteLine note={load.note()} />
      <Show when={profile() && fields()} fallback={<p class="muted">Cargando…</p>}>
        <section class="sub company-number" aria-labelledby="number-title">
          <h2 id="number-title">
            Número de empresa: <span data-testid="company-section-number">{profile()!.id}</span>
          </h2>
          <p class="muted small">Es el número que piden el panel de gestión y la consola de atención al ingresar. Los enlaces de abajo ya lo llevan.</p>
          <CopyField label="Panel de gestión (dueños y gerentes)" value={linkFor('/manage', profile()!.id)} testid="manage-link" />
          <CopyField label="Consola de atención (personal de ventanilla)" value={linkFor('/staff', profile()!.id)} testid="staff-link" />
        </section>
        <form class="sub stack" onSubmit={submit} novalidate aria-labelledby="profile-title" data-testid="company-form">
          <h2 id="profile-title">Datos de la empresa</h2>
          <Show when={!isOwner()}>
            <p class="notice">Solo el dueño de la cuenta puede cambiar estos datos.</p>
          </Show>
          <div class="pair">
            {field('name', 'Nombre comercial', { maxlength: '200', autocomplete: 'organization' })}
            <div>
              {field('timezone', 'Zona horaria', { list: 'company-zones', autocomplete: 'off' })}
              <datalist id="company-zones">
                <For each={ZONES}>{(z) => <option value={z} />}</For>
              </datalist>
            </div>
          </div>
          <fieldset>
            <legend>Lo que imprimen los boletos</legend>
            <div class="pair">
              {field('legal_name', 'Razón social', { maxlength: '200' })}
              {field('tax_id', 'CUIT', { maxlength: '20', placeholder: '30-71234567-1' })}
              {field('address', 'Domicilio', { maxlength: '300' })}
              {field('license', 'N.º de habilitación como casa de cambio', { maxlength: '100' })}
              {field('receipt_point', 'Punto de venta (1 a 99999)', { inputmode: 'numeric', maxlength: '5' })}
            </div>
          </fieldset>
          <fieldset>
            <legend>Caja y cambio</legend>
            <div class="pair">
              {field('local_currency', 'Moneda local (en la que se liquidan compras y ventas)', { maxlength: '3', class: 'code' })}
              {field('till_tolerance', 'Tolerancia de arqueo (diferencia aceptada al cerrar una caja)', { inputmode: 'decimal', class: 'money' })}
            </div>
          </fieldset>
          <p class="muted small" data-testid="company-modules">
            Módulos: Ventanilla {profile()!.modules.ventanilla ? 'activada' : 'desactivada'} · Mesas de cambio {profile()!.modules.mesas ? 'activadas' : 'desactivadas'}. Los
            activa o desactiva el operador de la plataforma.
          </p>
          <Show when={isOwner()}>
            <div class="row">
              <button type="submit" class="primary" disabled={save.busy()} data-testid="company-save">
                {asked() ? 'Guardar igual' : 'Guardar'}
              </button>
            </div>
          </Show>
          <NoteLine note={save.note()} testid="company-message" />
        </form>
      </Show>
    </section>
  )
}
