import { createSignal, For, onCleanup, onMount, Show } from 'solid-js'
import { ApiFailure, explain, money } from './api'
import type { Account, Client } from './ledger'

/** A caja's account as the pickers list it: «Caja principal · Dólares (USD)». */
export const accountLabel = (client: Pick<Client, 'name'>, a: Account) => `${client.name} · ${a.name || a.currency_name} (${a.currency_name})`

/** Every caja account of the company, labelled, in caja-name order. */
export const cajaAccounts = (cajas: Client[]) => cajas.flatMap((c) => c.accounts.map((a) => ({ ...a, label: accountLabel(c, a) })))

/** The currencies the company's cajas hold accounts in: what a mesa, a budget or a cost center can be in. */
export const currenciesOf = (cajas: Client[]) => [...new Set(cajas.flatMap((c) => c.accounts.map((a) => a.currency_name)))].sort()

const PAGE = 50

/** What a typed document number looks like: digits with dots, dashes or spaces, at least six digits in all. */
const DOCUMENT = /^(?=(?:\D*\d){6})[\d.\-\s]+$/

/**
 * The query for what was typed: a document number (`20.123.456`) is looked up exactly by `document`, anything else
 * as a part of the name or description (`search`).
 */
export function clientQuery(typed: string, type?: 0 | 1, pageSize = PAGE): URLSearchParams {
  const q = new URLSearchParams({ page: '1', pageSize: String(pageSize) })
  const text = typed.trim()
  if (DOCUMENT.test(text)) q.set('document', text)
  else if (text) q.set('search', text)
  if (type !== undefined) q.set('type', String(type))
  return q
}

/** A client as a list of choices names it: the name, then the document or the description when there is one. */
export const clientChoice = (c: Client) => [c.name, c.document ? `${c.document.type} ${c.document.number}` : c.description].filter(Boolean).join(' — ')

/**
 * Picks one client among possibly tens of thousands: a search box (by name, description or document number) and a
 * list of the first 50 matches in name order, with how many there are in all. Nothing is loaded beyond one page, so
 * a company with 50,000 clients answers as fast as one with five.
 */
export function ClientPicker(props: {
  label: string
  name: string
  value: number | null
  onChange: (client: Client | null) => void
  type?: 0 | 1
  error?: string
  optional?: string
}) {
  const [query, setQuery] = createSignal('')
  const [found, setFound] = createSignal<Client[]>([])
  const [count, setCount] = createSignal<number | null>(null)
  const [current, setCurrent] = createSignal<Client | null>(null)
  const [problem, setProblem] = createSignal<string | null>(null)
  let timer: ReturnType<typeof setTimeout> | undefined
  let asked = 0
  const search = async () => {
    const q = clientQuery(query(), props.type)
    const mine = ++asked
    try {
      const body = await money<{ data: Client[]; count: number }>('GET', `/api/clients?${q}`)
      // An older search answering late must not replace a newer one.
      if (mine !== asked) return
      setFound(body.data)
      setCount(body.count)
      setProblem(null)
    } catch (e) {
      if (mine === asked) setProblem(explain(e))
    }
  }
  onMount(async () => {
    await search()
    if (props.value !== null && !found().some((c) => c.id === props.value)) {
      try {
        setCurrent(await money<Client>('GET', `/api/clients/${props.value}`))
      } catch (e) {
        if (!(e instanceof ApiFailure && e.code === 'NOT_FOUND')) setProblem(explain(e))
      }
    }
  })
  onCleanup(() => clearTimeout(timer))
  const typed = (v: string) => {
    setQuery(v)
    clearTimeout(timer)
    timer = setTimeout(search, 250)
  }
  const options = () => {
    const c = current()
    return c && !found().some((f) => f.id === c.id) ? [c, ...found()] : found()
  }
  const choose = (id: string) => {
    const client = options().find((c) => String(c.id) === id) ?? null
    if (client) setCurrent(client)
    props.onChange(client)
  }
  return (
    <div class="picker" role="group" aria-label={props.label}>
      <label>
        Buscar {props.label.toLowerCase()} por nombre, descripción o documento
        <input type="search" name={`${props.name}-search`} autocomplete="off" maxlength="200" value={query()} onInput={(e) => typed(e.currentTarget.value)} />
      </label>
      <label>
        {props.label}
        <select name={props.name} aria-invalid={props.error ? 'true' : undefined} value={props.value === null ? '' : String(props.value)} onChange={(e) => choose(e.currentTarget.value)}>
          <option value="">{props.optional ?? '— Elija —'}</option>
          <For each={options()}>
            {(c) => (
              <option value={String(c.id)} selected={c.id === props.value}>
                {clientChoice(c)}
              </option>
            )}
          </For>
        </select>
        <span class="muted small" aria-live="polite">
          {count() === null ? 'Buscando…' : count()! > PAGE ? `${count()!.toLocaleString('es-AR')} coinciden: se muestran los primeros ${PAGE}; escriba para acotar.` : count() === 0 ? 'Ninguno coincide.' : count() === 1 ? 'Uno coincide.' : `${count()} coinciden.`}
        </span>
        <Show when={props.error}>
          <span class="field-error" role="alert">
            {props.error}
          </span>
        </Show>
        <Show when={problem()}>
          <span class="field-error" role="alert">
            {problem()}
          </span>
        </Show>
      </label>
    </div>
  )
}
