import { createSignal, For, onMount, Show } from 'solid-js'
import { api, ApiFailure, explain } from './api'
import { createAction, NoteLine } from './ui'

export interface Service {
  id: number
  name: string
  prefix: string
}

const PREFIX = /^[A-Za-z0-9]{1,4}$/

/** The checks the API makes, said before sending; answers the message or null. */
export function serviceProblem(name: string, prefix: string): string | null {
  if (!name.trim()) return 'Escriba el nombre del servicio.'
  if (name.trim().length > 100) return 'El nombre tiene como máximo 100 caracteres.'
  if (!PREFIX.test(prefix.trim())) return 'El prefijo es de 1 a 4 letras o números, por ejemplo A.'
  return null
}

const describe = (prefix: string) => (e: unknown) =>
  e instanceof ApiFailure && e.code === 'PREFIX_TAKEN' ? `Ya hay otro servicio con el prefijo ${prefix.toUpperCase()}. Elija otro.` : explain(e)

function ServiceRow(props: { service: Service; onChanged: () => void }) {
  const [name, setName] = createSignal(props.service.name)
  const [prefix, setPrefix] = createSignal(props.service.prefix)
  const [confirming, setConfirming] = createSignal(false)
  let lastPrefix = ''
  const action = createAction((e) => describe(lastPrefix)(e))
  const save = (e: Event) => {
    e.preventDefault()
    const problem = serviceProblem(name(), prefix())
    if (problem) return action.setNote({ kind: 'error', text: problem })
    lastPrefix = prefix().trim()
    void action.run(async () => {
      // The row already shows what was saved; reloading the list would redraw it and lose this message.
      const saved = await api<Service>('PATCH', `/api/ventanilla/services/${props.service.id}`, { name: name().trim(), prefix: prefix().trim() })
      setName(saved.name)
      setPrefix(saved.prefix)
      return 'Guardado.'
    })
  }
  const remove = () =>
    action.run(async () => {
      await api('DELETE', `/api/ventanilla/services/${props.service.id}`)
      props.onChanged()
    })
  return (
    <li class="item" data-testid="service-row">
      <form class="inline" onSubmit={save}>
        <label class="service-name">
          Nombre
          <input value={name()} maxlength="100" onInput={(e) => setName(e.currentTarget.value)} data-testid="service-name" />
        </label>
        <label>
          Prefijo
          <input class="code" value={prefix()} maxlength="4" onInput={(e) => setPrefix(e.currentTarget.value)} data-testid="service-prefix" />
        </label>
        <button type="submit" disabled={action.busy()}>
          Guardar
        </button>
        <Show
          when={confirming()}
          fallback={
            <button type="button" class="danger" onClick={() => setConfirming(true)}>
              Eliminar
            </button>
          }
        >
          <span role="group" aria-label={`Confirmar eliminación de ${name()}`} class="confirm">
            ¿Eliminar «{name()}»? Los turnos ya emitidos quedan registrados.
            <button type="button" class="danger" onClick={remove} data-testid="service-delete-confirm">
              Sí, eliminar
            </button>
            <button type="button" onClick={() => setConfirming(false)}>
              No
            </button>
          </span>
        </Show>
      </form>
      <NoteLine note={action.note()} />
    </li>
  )
}

export function Services() {
  const [services, setServices] = createSignal<Service[]>([])
  const [name, setName] = createSignal('')
  const [prefix, setPrefix] = createSignal('')
  const list = createAction()
  let submitted = ''
  const create = createAction((e) => describe(submitted)(e))
  const load = () => list.run(async () => {
    setServices((await api<{ data: Service[] }>('GET', '/api/ventanilla/services')).data)
  })
  onMount(load)
  const add = (e: Event) => {
    e.preventDefault()
    const problem = serviceProblem(name(), prefix())
    if (problem) return create.setNote({ kind: 'error', text: problem })
    submitted = prefix().trim()
    void create.run(async () => {
      const s = await api<Service>('POST', '/api/ventanilla/services', { name: name().trim(), prefix: prefix().trim() })
      setName('')
      setPrefix('')
      await load()
      return `Servicio «${s.name}» creado con el prefijo ${s.prefix}.`
    })
  }
  return (
    <section class="panel" data-testid="services-section">
      <h1>Servicios</h1>
      <p class="muted">Cada servicio tiene su cola y su prefijo: los turnos salen como A-001, A-002…</p>
      <form class="inline card-lite" onSubmit={add} data-testid="service-create">
        <label class="service-name">
          Nombre del servicio nuevo
          <input name="name" maxlength="100" value={name()} onInput={(e) => setName(e.currentTarget.value)} placeholder="Cambio de divisas" />
        </label>
        <label>
          Prefijo
          <input name="prefix" class="code" maxlength="4" value={prefix()} onInput={(e) => setPrefix(e.currentTarget.value)} placeholder="A" />
        </label>
        <button type="submit" class="primary" disabled={create.busy()}>
          Crear servicio
        </button>
      </form>
      <NoteLine note={create.note()} testid="service-create-message" />
      <h2>Servicios activos</h2>
      <ul class="list">
        <For each={services()} fallback={<li class="muted">Todavía no hay servicios.</li>}>
          {(s) => <ServiceRow service={s} onChanged={load} />}
        </For>
      </ul>
      <NoteLine note={list.note()} />
    </section>
  )
}
