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

/**
 * Picks one client among possibly tens of thousands: a search box (the API filters by a part of the client's
 * description, contract §2) and a list of the first 50 matches in name order, with how many there are in all.
 * Nothing is loaded beyond one page, so a company with 50,000 clients answers as fast as one with five.
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
    const q = new URLSearchParams({ page: '1', pageSize: String(PAGE) })
    if (query().trim()) q.set('description', query().trim())
    if (props.type !== undefined) q.set('type', String(props.type))
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
        Buscar {props.label.toLowerCase()} por descripción
        <input type="search" name={`${props.name}-search`} autocomplete="off" value={query()} onInput={(e) => typed(e.currentTarget.value)} />
      </label>
      <label>
        {props.label}
        <select name={props.name} aria-invalid={props.error ? 'true' : undefined} value={props.value === null ? '' : String(props.value)} onChange={(e) => choose(e.currentTarget.value)}>
          <option value="">{props.optional ?? '— Elija —'}</option>
          <For each={options()}>
            {(c) => (
              <option value={String(c.id)} selected={c.id === props.value}>
                {c.description ? `${c.name} — ${c.description}` : c.name}
              </option>
            )}
          </For>
        </select>
        <span class="muted small" aria-live="polite">
          {count() === null ? 'Buscando…' : count()! > PAGE ? `${count()} coinciden: se muestran los primeros ${PAGE}; escriba para acotar.` : `${count()} coinciden.`}
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
