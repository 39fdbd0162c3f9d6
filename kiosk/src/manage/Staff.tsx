import { createSignal, For, onMount, Show } from 'solid-js'
import { api, ApiFailure, explain, type Employee } from './api'
import { linkFor } from '../company'
import { can, companyId, session } from './session'
import { createAction, NoteLine } from './ui'

/** The permissions a manager hands out here, in words; the API's names are in the value. */
export const PERMISSION_LABELS: [string, string][] = [
  ['ventanilla.call', 'Atender en ventanilla (llamar turnos)'],
  ['ventanilla.manage', 'Administrar ventanilla (cotizaciones, pantallas, servicios, estadísticas)'],
  ['employees.manage', 'Administrar personal'],
  ['metrics.view', 'Ver métricas'],
  ['audit.view', 'Ver auditoría'],
  ['clients.view', 'Ver clientes'],
  ['clients.edit', 'Editar clientes'],
  ['operations.view', 'Ver operaciones'],
  ['operations.create', 'Cargar operaciones'],
  ['operations.approve', 'Aprobar operaciones'],
  ['exchanges.rate', 'Cambiar la cotización al comprar o vender en ventanilla'],
  ['tills.operate', 'Abrir y cerrar cajas (conteo de efectivo)'],
  ['tills.supervise', 'Supervisar cajas (cerrar con diferencias mayores que la tolerancia)'],
]

/** Presets are only starting points: the boxes stay editable after choosing one. */
export const PRESETS: Record<string, string[]> = {
  Cajero: ['ventanilla.call'],
  // Buys and sells at the counter (C / V in the console): the exchange, its cajas and customers, and its receipt.
  'Cajero de cambio': ['ventanilla.call', 'operations.create', 'operations.view', 'clients.view'],
  Supervisor: ['ventanilla.call', 'ventanilla.manage'],
  Gerente: ['ventanilla.call', 'ventanilla.manage', 'employees.manage', 'metrics.view'],
}

const MIN_PASSWORD = 12

const words = (e: unknown) => {
  if (e instanceof ApiFailure && e.code === 'CONFLICT') return 'Ya hay un empleado con ese correo.'
  if (e instanceof ApiFailure && e.code === 'FORBIDDEN') return 'No puede dar permisos que usted no tiene, ni cambiar a un dueño o a usted mismo.'
  return explain(e)
}

const passwordProblem = (p: string) =>
  p.length < MIN_PASSWORD ? `La contraseña necesita al menos ${MIN_PASSWORD} caracteres (puede ser una frase).` : p.length > 200 ? 'La contraseña es demasiado larga.' : null

function EmployeeRow(props: { employee: Employee; onChanged: () => void }) {
  const [resetting, setResetting] = createSignal(false)
  const [removing, setRemoving] = createSignal(false)
  const [password, setPassword] = createSignal('')
  const action = createAction(words)
  const self = () => session()?.employee.id === props.employee.id
  const reset = (e: Event) => {
    e.preventDefault()
    const problem = passwordProblem(password())
    if (problem) return action.setNote({ kind: 'error', text: problem })
    void action.run(async () => {
      await api('PATCH', `/api/employees/${props.employee.id}`, { password: password() })
      setPassword('')
      setResetting(false)
      return `Contraseña de ${props.employee.name} cambiada; sus sesiones abiertas se cerraron.`
    })
  }
  const remove = () =>
    action.run(async () => {
      await api('DELETE', `/api/employees/${props.employee.id}`)
      props.onChanged()
    })
  const labels = () => props.employee.permissions.map((p) => (p === 'company.admin' ? 'Dueño' : (PERMISSION_LABELS.find(([k]) => k === p)?.[1] ?? p)))
  return (
    <li class="item" data-testid="employee-row">
      <div class="item-head">
        <div>
          <strong>{props.employee.name}</strong> <span class="muted">{props.employee.email}</span>
          <div class="muted small">{labels().join(' · ') || 'Sin permisos'}</div>
        </div>
        <Show when={!self()}>
          <div class="row">
            <button type="button" onClick={() => setResetting(!resetting())}>
              Cambiar contraseña
            </button>
            <button type="button" class="danger" onClick={() => setRemoving(true)}>
              Quitar
            </button>
          </div>
        </Show>
      </div>
      <Show when={resetting()}>
        <form class="inline" onSubmit={reset}>
          <label>
            Contraseña nueva para {props.employee.name}
            <input type="password" autocomplete="new-password" value={password()} onInput={(e) => setPassword(e.currentTarget.value)} />
          </label>
          <button type="submit" class="primary" disabled={action.busy()}>
            Guardar contraseña
          </button>
        </form>
      </Show>
      <Show when={removing()}>
        <p class="confirm" role="group" aria-label={`Confirmar quitar a ${props.employee.name}`}>
          ¿Quitar a {props.employee.name}? No podrá ingresar más.
          <button type="button" class="danger" onClick={remove}>
            Sí, quitar
          </button>
          <button type="button" onClick={() => setRemoving(false)}>
            No
          </button>
        </p>
      </Show>
      <NoteLine note={action.note()} />
    </li>
  )
}

export function Staff() {
  const [employees, setEmployees] = createSignal<Employee[]>([])
  const [name, setName] = createSignal('')
  const [email, setEmail] = createSignal('')
  const [password, setPassword] = createSignal('')
  const [preset, setPreset] = createSignal('Cajero')
  const [permissions, setPermissions] = createSignal<string[]>(PRESETS.Cajero)
  const list = createAction(words)
  const create = createAction(words)
  const load = () => list.run(async () => {
    setEmployees((await api<{ data: Employee[] }>('GET', '/api/employees')).data)
  })
  onMount(load)
  const consoleLink = () => linkFor('/staff', companyId())
  const manageLink = () => linkFor('/manage', companyId())
  // Only what the signed-in employee holds can be handed out (the API refuses the rest).
  const grantable = () => PERMISSION_LABELS.filter(([p]) => can(p))
  const choosePreset = (p: string) => {
    setPreset(p)
    setPermissions(PRESETS[p].filter((x) => can(x)))
  }
  const toggle = (p: string) => setPermissions((c) => (c.includes(p) ? c.filter((x) => x !== p) : [...c, p]))
  const add = (e: Event) => {
    e.preventDefault()
    if (!name().trim()) return create.setNote({ kind: 'error', text: 'Escriba el nombre del empleado.' })
    if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email().trim())) return create.setNote({ kind: 'error', text: 'Escriba un correo válido, por ejemplo lucia@cambios.com.ar.' })
    const problem = passwordProblem(password())
    if (problem) return create.setNote({ kind: 'error', text: problem })
    void create.run(async () => {
      const made = await api<Employee>('POST', '/api/employees', { name: name().trim(), email: email().trim(), password: password(), permissions: permissions() })
      setName('')
      setEmail('')
      setPassword('')
      await load()
      return `${made.name} ya puede ingresar en la consola con su correo y contraseña.`
    })
  }
  return (
    <section class="panel" data-testid="staff-section">
      <h1>Personal</h1>
      <p>
        Enlace de la consola para el personal: <code data-testid="console-link">{consoleLink()}</code>
        <br />
        Enlace del panel de gestión, para gerentes: <code data-testid="manage-link">{manageLink()}</code>
      </p>
      <form class="stack card-lite" onSubmit={add} data-testid="employee-create">
        <h2>Empleado nuevo</h2>
        <div class="pair">
          <label>
            Nombre
            <input name="name" maxlength="200" autocomplete="off" value={name()} onInput={(e) => setName(e.currentTarget.value)} />
          </label>
          <label>
            Correo electrónico
            <input name="email" type="email" autocomplete="off" maxlength="254" value={email()} onInput={(e) => setEmail(e.currentTarget.value)} />
          </label>
        </div>
        <div class="pair">
          <label>
            Contraseña (12 caracteres o más)
            <input name="password" type="password" autocomplete="new-password" value={password()} onInput={(e) => setPassword(e.currentTarget.value)} />
          </label>
          <label>
            Rol
            <select name="preset" value={preset()} onChange={(e) => choosePreset(e.currentTarget.value)}>
              <For each={Object.keys(PRESETS)}>{(p) => <option value={p}>{p}</option>}</For>
            </select>
          </label>
        </div>
        <fieldset>
          <legend>Permisos</legend>
          <div class="checks">
            <For each={grantable()}>
              {([p, label]) => (
                <label class="check">
                  <input type="checkbox" value={p} checked={permissions().includes(p)} onChange={() => toggle(p)} />
                  {label}
                </label>
              )}
            </For>
          </div>
        </fieldset>
        <div class="row">
          <button type="submit" class="primary" disabled={create.busy()} data-testid="employee-save">
            Crear empleado
          </button>
        </div>
        <NoteLine note={create.note()} testid="employee-message" />
      </form>
      <h2>Equipo</h2>
      <ul class="list">
        <For each={employees()} fallback={<li class="muted">Sin empleados.</li>}>
          {(e) => <EmployeeRow employee={e} onChanged={load} />}
        </For>
      </ul>
      <NoteLine note={list.note()} />
    </section>
  )
}
