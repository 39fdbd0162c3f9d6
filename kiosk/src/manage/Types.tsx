import { createSignal, For, onMount, Show, type JSX } from 'solid-js'
import { explain, money } from './api'
import { createFill, TextField } from './forms'
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

/**
 * One kind of type: its list and, for `operations.create`, the form that adds one. Operation and transaction types
 * differ only in their second field (the kind, or whether it is a commission), so both are this one section.
 */
function TypeSection<T extends { id: number; name: string }, X>(props: {
  /** The API path, and the prefix of the test ids (`operation-type` → `operation-type-row`, …). */
  path: string
  testid: string
  /** Prefix of the element ids (`op-type` → `op-types-title`, `op-type-name`). */
  id: string
  title: string
  intro: string
  column: string
  empty: string
  cell: (t: T) => JSX.Element
  initial: X
  field: (value: () => X, set: (x: X) => void) => JSX.Element
  body: (name: string, x: X) => Record<string, unknown>
  made: (t: T) => string
  save: string
}) {
  const [types, setTypes] = createSignal<T[] | null>(null)
  const [name, setName] = createSignal('')
  const [extra, setExtra] = createSignal<X>(props.initial)
  const [error, setError] = createSignal<string | null>(null)
  const list = createAction()
  const create = createAction(explain)
  const fill = createFill()
  onMount(() => list.run(async () => void setTypes((await money<{ data: T[] }>('GET', props.path)).data)))
  const add = (e: Event) => {
    e.preventDefault()
    const problem = nameProblem(name(), (types() ?? []).map((t) => t.name))
    setError(problem)
    if (problem) return
    const body = props.body(name().trim(), extra())
    void create.run(async () => {
      const made = await money<T>('POST', props.path, body, fill.headers(body))
      fill.done()
      setName('')
      setExtra(() => props.initial)
      setTypes([...(types() ?? []), made])
      return props.made(made)
    })
  }
  return (
    <section class="sub" aria-labelledby={`${props.id}s-title`} data-testid={`${props.testid}s`}>
      <h2 id={`${props.id}s-title`}>{props.title}</h2>
      <p class="muted small">{props.intro}</p>
      <Show when={types()} fallback={<p class="muted">Cargando…</p>}>
        {(all) => (
          <table class="grid" data-testid={`${props.testid}-list`}>
            <caption class="visually-hidden">{props.title}</caption>
            <thead>
              <tr>
                <th scope="col">Nombre</th>
                <th scope="col">{props.column}</th>
              </tr>
            </thead>
            <tbody>
              <For
                each={all()}
                fallback={
                  <tr>
                    <td colspan="2" class="muted">
                      {props.empty}
                    </td>
                  </tr>
                }
              >
                {(t) => (
                  <tr data-testid={`${props.testid}-row`}>
                    <td>{t.name}</td>
                    <td>{props.cell(t)}</td>
                  </tr>
                )}
              </For>
            </tbody>
          </table>
        )}
      </Show>
      <NoteLine note={list.note()} />
      <Show when={can('operations.create')}>
        <form class="inline fields top-gap" onSubmit={add} novalidate data-testid={`${props.testid}-create`}>
          <TextField label="Nombre del tipo nuevo" name="name" id={`${props.id}-name`} maxlength={200} value={name()} error={error()} onInput={(v) => (setName(v), setError(null))} />
          {props.field(extra, (x) => setExtra(() => x))}
          <button type="submit" class="primary" disabled={create.busy()} data-testid={`${props.testid}-save`}>
            {props.save}
          </button>
        </form>
        <NoteLine note={create.note()} testid={`${props.testid}-message`} />
      </Show>
    </section>
  )
}

export function Types() {
  return (
    <section class="panel" data-testid="types-section">
      <h1>Tipos de operación y de movimiento</h1>
      <TypeSection<OperationType, Kind>
        path="/api/operation-types"
        testid="operation-type"
        id="op-type"
        title="Tipos de operación"
        intro="Toda operación tiene un tipo. La compra y venta en ventanilla usa los tipos de cambio llamados exactamente «Compra de divisas» y «Venta de divisas»."
        column="Clase"
        empty="Todavía no hay tipos de operación."
        cell={(t) => KIND_LABEL[t.kind] ?? t.kind}
        initial="exchange"
        field={(kind, setKind) => (
          <label>
            Clase
            <select name="kind" value={kind()} onChange={(e) => setKind(e.currentTarget.value as Kind)}>
              <For each={KINDS}>{(k) => <option value={k}>{KIND_LABEL[k]}</option>}</For>
            </select>
          </label>
        )}
        body={(name, kind) => ({ name, kind })}
        made={(t) => `Tipo de operación «${t.name}» creado.`}
        save="Crear tipo de operación"
      />
      <TypeSection<TransactionType, boolean>
        path="/api/transaction-types"
        testid="transaction-type"
        id="tx-type"
        title="Tipos de movimiento"
        intro="Clasifican cada movimiento de una operación. Los de comisión se suman como comisiones en los resultados."
        column="Comisión"
        empty="Todavía no hay tipos de movimiento."
        cell={(t) => (t.is_commission ? 'Sí' : 'No')}
        initial={false}
        field={(commission, setCommission) => (
          <label class="check">
            <input type="checkbox" name="is_commission" checked={commission()} onChange={(e) => setCommission(e.currentTarget.checked)} />
            Es una comisión
          </label>
        )}
        body={(name, is_commission) => ({ name, is_commission })}
        made={(t) => `Tipo de movimiento «${t.name}» creado${t.is_commission ? ' (comisión)' : ''}.`}
        save="Crear tipo de movimiento"
      />
    </section>
  )
}
