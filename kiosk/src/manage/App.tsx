import { A, Navigate, Route, Router, useNavigate, type RouteSectionProps } from '@solidjs/router'
import { createSignal, For, lazy, Match, onMount, Show, Switch, type Component } from 'solid-js'
import { api, ApiFailure, explain, type Session } from './api'
import { companyId, notice, rememberCompany, session, setNotice, setSession } from './session'
import { GROUPS, SECTIONS } from './sections'
import { WelcomeNotice } from './Welcome'
import { linkFor } from '../company'
import { Rates } from './Rates'
import { Display } from './Display'
import { Services } from './Services'
import { Links } from './Links'
import { Staff } from './Staff'
import { Monitor } from './Monitor'
import { OperationPage, Operations } from './Operations'
import { Position } from './Position'
import { Audit } from './Audit'
import { NewOperation } from './NewOperation'
import { ClientNew, Clients } from './Clients'
import { ClientPage } from './ClientPage'
import { Tags } from './Tags'
import { Types } from './Types'
import { Company, CompanyBadge } from './Company'

// Chart.js is most of the app's weight and only the statistics need it: loaded when that section opens.
const Stats = lazy(() => import('./Stats').then((m) => ({ default: m.Stats })))
const Results = lazy(() => import('./Results').then((m) => ({ default: m.Results })))
const Mesas = lazy(() => import('./Mesas').then((m) => ({ default: m.Mesas })))
const CostCenters = lazy(() => import('./CostCenters').then((m) => ({ default: m.CostCenters })))
const Tools = lazy(() => import('./Tools').then((m) => ({ default: m.Tools })))
const Integrations = lazy(() => import('./Integrations').then((m) => ({ default: m.Integrations })))
const Cajas = lazy(() => import('./Cajas').then((m) => ({ default: m.Cajas })))

function SignIn(props: { notice: string | null }) {
  const [company, setCompany] = createSignal(companyId())
  const [email, setEmail] = createSignal('')
  const [password, setPassword] = createSignal('')
  const [error, setError] = createSignal<string | null>(null)
  const [busy, setBusy] = createSignal(false)
  let emailField: HTMLInputElement | undefined
  onMount(() => emailField?.focus())
  const submit = async (e: Event) => {
    e.preventDefault()
    const id = Number(company())
    if (!Number.isInteger(id) || id < 1) return setError('Ingrese el número de empresa que le dio el administrador.')
    setBusy(true)
    setError(null)
    try {
      const s = await api<Session>('POST', '/api/sessions', { company_id: id, email: email().trim(), password: password() })
      rememberCompany(id)
      setSession(s)
    } catch (err) {
      setError(err instanceof ApiFailure && err.code === 'UNAUTHORIZED' ? 'Correo o contraseña incorrectos.' : explain(err))
    } finally {
      setBusy(false)
      setPassword('')
    }
  }
  return (
    <main class="signin">
      <form class="card" onSubmit={submit} data-testid="signin">
        <h1>Administración</h1>
        <p class="muted">Ingrese con su usuario de la casa de cambio.</p>
        <Show when={props.notice}>
          <p class="notice" role="status">
            {props.notice}
          </p>
        </Show>
        <label>
          Número de empresa
          <input name="company" inputmode="numeric" autocomplete="organization" value={company()} onInput={(e) => setCompany(e.currentTarget.value)} required />
        </label>
        <label>
          Correo electrónico
          <input ref={emailField} name="email" type="email" autocomplete="username" value={email()} onInput={(e) => setEmail(e.currentTarget.value)} required />
        </label>
        <label>
          Contraseña
          <input name="password" type="password" autocomplete="current-password" value={password()} onInput={(e) => setPassword(e.currentTarget.value)} required />
        </label>
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

function Shell(props: RouteSectionProps) {
  const [checked, setChecked] = createSignal(false)
  onMount(async () => {
    try {
      setSession(await api<Session>('GET', '/api/sessions/current'))
    } catch {
      // Not signed in: the sign-in form is the start.
    }
    setChecked(true)
  })
  const signOut = async () => {
    await api('DELETE', '/api/sessions/current').catch(() => {})
    setNotice(null)
    setSession(null)
  }
  // Each heading with the sections this employee may open; a heading with none is left out.
  const groups = () => GROUPS.map((g) => ({ ...g, sections: g.sections.filter((s) => s.allowed()) })).filter((g) => g.sections.length)
  return (
    <Switch>
      <Match when={!checked()}>
        <main class="signin">
          <h1 class="visually-hidden">Administración</h1>
          <p class="muted">Cargando…</p>
        </main>
      </Match>
      <Match when={!session()}>
        <SignIn notice={notice()} />
      </Match>
      <Match when={session()}>
        {(s) => (
          <div class="layout">
            <header class="bar">
              <a class="skip" href="#contenido">
                Saltar al contenido
              </a>
              <span class="brand">Administración</span>
              <CompanyBadge />
              <div class="who">
                <span class="muted">{s().employee.name}</span>
                <button type="button" onClick={signOut} data-testid="sign-out">
                  Salir
                </button>
              </div>
            </header>
            <nav class="menu" aria-label="Secciones" data-testid="nav">
              <div class="menu-inner">
                <For each={groups()}>
                  {(group, i) => (
                    <div class="menu-group" role="group" aria-labelledby={`menu-${i()}`} data-testid="menu-group">
                      <h2 class="menu-heading" id={`menu-${i()}`}>
                        {group.label}
                      </h2>
                      <ul>
                        <For each={group.sections}>
                          {(section) => (
                            <li>
                              <A href={section.path} activeClass="active" end>
                                {section.label}
                              </A>
                            </li>
                          )}
                        </For>
                      </ul>
                    </div>
                  )}
                </For>
              </div>
            </nav>
            <main id="contenido" class="content" tabindex="-1">
              <WelcomeNotice />
              {props.children}
            </main>
          </div>
        )}
      </Match>
    </Switch>
  )
}

function Home() {
  const first = () => SECTIONS.find((s) => s.allowed())
  return (
    <Show when={first()} fallback={<NoAccess />}>
      {(s) => <Navigate href={s().path} />}
    </Show>
  )
}

function NoAccess() {
  return (
    <section class="panel" data-testid="no-access">
      <h1>Sin permisos de administración</h1>
      <p>
        Su usuario no tiene permisos para administrar la sucursal (cotizaciones, pantallas, servicios, personal o estadísticas). Pida a un gerente o al
        dueño de la cuenta que se los asigne.
      </p>
      <p>
        Si atiende en ventanilla, use la <a href={linkFor('/staff', companyId())}>consola de atención</a>.
      </p>
    </section>
  )
}

function NotFound() {
  const navigate = useNavigate()
  return (
    <section class="panel">
      <h1>Página no encontrada</h1>
      <button type="button" onClick={() => navigate('/')}>
        Ir al inicio
      </button>
    </section>
  )
}

const guarded = (path: string, Section: Component) => () => {
  const section = SECTIONS.find((s) => s.path === path)!
  return (
    <Show when={section.allowed()} fallback={<NoAccess />}>
      <Section />
    </Show>
  )
}

export function App() {
  return (
    <Router base="/manage" root={Shell}>
      <Route path="/" component={Home} />
      <Route path="/operaciones" component={guarded('/operaciones', Operations)} />
      <Route path="/operaciones/:id" component={guarded('/operaciones', OperationPage)} />
      <Route path="/nueva" component={guarded('/nueva', NewOperation)} />
      <Route path="/auditoria" component={guarded('/auditoria', Audit)} />
      <Route path="/resultado" component={guarded('/resultado', Results)} />
      <Route path="/mesas" component={guarded('/mesas', Mesas)} />
      <Route path="/centros-de-costo" component={guarded('/centros-de-costo', CostCenters)} />
      <Route path="/herramientas" component={guarded('/herramientas', Tools)} />
      <Route path="/integraciones" component={guarded('/integraciones', Integrations)} />
      <Route path="/posicion" component={guarded('/posicion', Position)} />
      <Route path="/cajas" component={guarded('/cajas', Cajas)} />
      <Route path="/clientes" component={guarded('/clientes', Clients)} />
      <Route path="/clientes/nuevo" component={guarded('/clientes', ClientNew)} />
      <Route path="/clientes/:id" component={guarded('/clientes', ClientPage)} />
      <Route path="/etiquetas" component={guarded('/etiquetas', Tags)} />
      <Route path="/tipos" component={guarded('/tipos', Types)} />
      <Route path="/empresa" component={guarded('/empresa', Company)} />
      <Route path="/cotizaciones" component={guarded('/cotizaciones', Rates)} />
      <Route path="/pantalla" component={guarded('/pantalla', Display)} />
      <Route path="/servicios" component={guarded('/servicios', Services)} />
      <Route path="/enlaces" component={guarded('/enlaces', Links)} />
      <Route path="/personal" component={guarded('/personal', Staff)} />
      <Route path="/monitor" component={guarded('/monitor', Monitor)} />
      <Route path="/estadisticas" component={guarded('/estadisticas', Stats)} />
      <Route path="*" component={NotFound} />
    </Router>
  )
}
