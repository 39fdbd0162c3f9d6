import { createSignal, For, onMount, Show } from 'solid-js'
import { explain, money } from './api'
import { createFill } from './fill'
import { can } from './session'
import { createAction, NoteLine } from './ui'
import './records.css'

export type Kind = 'exchange' | 'up_down' | 'other' | 'budget'

interface OperationType {
  id: number
  name: string
  kind: Kind
}

interface TransactionType {
  id: number
  name: string
  is_commission: boolean
}

/** The kinds of contract §3 in the words of the branch; the kind decides which bot tools and desks use the type. */
export const KIND_LABEL: Record<Kind, string> = {
  exchange: 'Cambio de divisas (compra o venta)',
  up_down: 'Ingreso o egreso de dinero',
  budget: 'Gasto o ingreso de un centro de costo',
  other: 'Otro (ajustes, traspasos)',
}

const KINDS = Object.keys(KIND_LABEL) as Kind[]

const nameProblem = (name: string, taken: string[]) => {
  const n = name.trim()
  if (!n) return 'Escriba el nombre.'
  if (n.length > 200) return 'El nombre tiene como máximo 200 caracteres.'
  if (taken.some((t) => t.toLowerCase() === n.toLowerCase())) return `Ya hay un tipo «${n}». Elija otro nombre.`
  return null
}

function FieldError(props: { id: string; text?: string | null }) {
  return (
    <Show when={props.text}>
      <span class="field-error" id={props.id} role="alert" data-testid={`error-${props.id}`}>
        {props.text}
      </span>
    </Show>
  )
}

function OperationTypes() {
  const [types, setTypes] = createSignal<OperationType[] | null>(null)
  const [name, setName] = createSignal('')
  const [kind, setKind] = createSignal<Kind>('exchange')
  const [error, setError] = createSignal<string | null>(null)
  const list = createAction()
  const create = createAction(explain)
  const fill = createFill()
  onMount(() => list.run(async () => void setTypes((await money<{ data: OperationType[] }>('GET', '/api/operation-types')).data)))
  const add = (e: Event) => {
    e.preventDefault()
    const problem = nameProblem(name(), (types() ?? []).map((t) => t.name))
    setError(problem)
    if (problem) return
    const body = { name: name().trim(), kind: kind() }
    void create.run(async () => {
      const made = await money<OperationType>('POST', '/api/operation-types', body, fill.keyFor(body))
      fill.done()
      setName('')
      setTypes([...(types() ?? []), made])
      return `Tipo de operación «${made.name}» creado.`
    })
  }
  return (
    <section class="sub" aria-labelledby="op-types-title" data-testid="operation-types">
      <h2 id="op-types-title">Tipos de operación</h2>
      <p class="muted small">
        Toda operación tiene un tipo. La compra y venta en ventanilla usa los tipos de cambio llamados exactamente «Compra de divisas» y «Venta de divisas».
      </p>
      <Show when={types()} fallback={<p class="muted">Cargando…</p>}>
        {(all) => (
          <table class="grid" data-testid="operation-type-list">
            <caption class="visually-hidden">Tipos de operación</caption>
            <thead>
              <tr>
                <th scope="col">Nombre</th>
                <th scope="col">Clase</th>
              </tr>
            </thead>
            <tbody>
              <For
                each={all()}
                fallback={
                  <tr>
                    <td colspan="2" class="muted">
                      Todavía no hay tipos de operación.
                    </td>
                  </tr>
                }
              >
                {(t) => (
                  <tr data-testid="operation-type-row">
                    <td>{t.name}</td>
                    <td>{KIND_LABEL[t.kind] ?? t.kind}</td>
                  </tr>
                )}
              </For>
            </tbody>
          </table>
        )}
      </Show>
      <NoteLine note={list.note()} />
      <Show when={can('operations.create')}>
        <form class="inline fields top-gap" onSubmit={add} novalidate data-testid="operation-type-create">
          <label>
            Nombre del tipo nuevo
            <input
              name="name"
              maxlength="200"
              value={name()}
              aria-invalid={error() ? 'true' : undefined}
              aria-describedby={error() ? 'op-type-name' : undefined}
              onInput={(e) => {
                setName(e.currentTarget.value)
                setError(null)
              }}
            />
            <FieldError id="op-type-name" text={error()} />
          </label>
          <label>
            Clase
            <select name="kind" value={kind()} onChange={(e) => setKind(e.currentTarget.value as Kind)}>
              <For each={KINDS}>{(k) => <option value={k}>{KIND_LABEL[k]}</option>}</For>
            </select>
          </label>
          <button type="submit" class="primary" disabled={create.busy()} data-testid="operation-type-save">
            Crear tipo de operación
          </button>
        </form>
        <NoteLine note={create.note()} testid="operation-type-message" />
      </Show>
    </section>
  )
}

function TransactionTypes() {
  const [types, setTypes] = createSignal<TransactionType[] | null>(null)
  const [name, setName] = createSignal('')
  const [commission, setCommission] = createSignal(false)
  const [error, setError] = createSignal<string | null>(null)
  const list = createAction()
  const create = createAction(explain)
  const fill = createFill()
  onMount(() => list.run(async () => void setTypes((await money<{ data: TransactionType[] }>('GET', '/api/transaction-types')).data)))
  const add = (e: Event) => {
    e.preventDefault()
    const problem = nameProblem(name(), (types() ?? []).map((t) => t.name))
    setError(problem)
    if (problem) return
    const body = { name: name().trim(), is_commission: commission() }
    void create.run(async () => {
      const made = await money<TransactionType>('POST', '/api/transaction-types', body, fill.keyFor(body))
      fill.done()
      setName('')
      setCommission(false)
      setTypes([...(types() ?? []), made])
      return `Tipo de movimiento «${made.name}» creado${made.is_commission ? ' (comisión)' : ''}.`
    })
  }
  return (
    <section class="sub" aria-labelledby="tx-types-title" data-testid="transaction-types">
      <h2 id="tx-types-title">Tipos de movimiento</h2>
      <p class="muted small">Clasifican cada movimiento de una operación. Los de comisión se suman como comisiones en los resultados.</p>
      <Show when={types()} fallback={<p class="muted">Cargando…</p>}>
        {(all) => (
          <table class="grid" data-testid="transaction-type-list">
            <caption class="visually-hidden">Tipos de movimiento</caption>
            <thead>
              <tr>
                <th scope="col">Nombre</th>
                <th scope="col">Comisión</th>
              </tr>
            </thead>
            <tbody>
              <For
                each={all()}
                fallback={
                  <tr>
                    <td colspan="2" class="muted">
                      Todavía no hay tipos de movimiento.
                    </td>
                  </tr>
                }
              >
                {(t) => (
                  <tr data-testid="transaction-type-row">
                    <td>{t.name}</td>
                    <td>{t.is_commission ? 'Sí' : 'No'}</td>
                  </tr>
                )}
              </For>
            </tbody>
          </table>
        )}
      </Show>
      <NoteLine note={list.note()} />
      <Show when={can('operations.create')}>
        <form class="inline fields top-gap" onSubmit={add} novalidate data-testid="transaction-type-create">
          <label>
            Nombre del tipo nuevo
            <input
              name="name"
              maxlength="200"
              value={name()}
              aria-invalid={error() ? 'true' : undefined}
              aria-describedby={error() ? 'tx-type-name' : undefined}
              onInput={(e) => {
                setName(e.currentTarget.value)
                setError(null)
              }}
            />
            <FieldError id="tx-type-name" text={error()} />
          </label>
          <label class="check">
            <input type="checkbox" name="is_commission" checked={commission()} onChange={(e) => setCommission(e.currentTarget.checked)} />
            Es una comisión
          </label>
          <button type="submit" class="primary" disabled={create.busy()} data-testid="transaction-type-save">
            Crear tipo de movimiento
          </button>
        </form>
        <NoteLine note={create.note()} testid="transaction-type-message" />
      </Show>
    </section>
  )
}

export function Types() {
  return (
    <section class="panel" data-testid="types-section">
      <h1>Tipos de operación y de movimiento</h1>
      <OperationTypes />
      <TransactionTypes />
    </section>
  )
}
