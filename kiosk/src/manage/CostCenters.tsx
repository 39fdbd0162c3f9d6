import Decimal from 'decimal.js'
import { createMemo, createSignal, For, Index, onMount, Show } from 'solid-js'
import { createStore } from 'solid-js/store'
import { ApiFailure, explain, money } from './api'
import { formatArs, parseArs } from './decimal'
import { clearsError, createFill, FieldError } from './forms'
import { allCajas, today, type Client } from './ledger'
import { cajaAccounts, ClientPicker, currenciesOf } from './pickers'
import { can } from './session'
import { createAction, NoteLine } from './ui'
import './treasury.css'

/** Contract §5 and 2.6 of the interface, with `money=string`. */
interface Budget {
  id: number
  currency: string
  year: number
  period: number
  amount: string
  kind: 'expense' | 'income'
}

interface CostCenter {
  id: number
  client_id: number
  name: string
  default_currency: string
  default_internal_account_id: number | null
  net_balance_by_default: boolean
  budgets: Budget[]
}

/** `GET /api/metrics/home` (§9): this month's expense budget and spending per cost center and currency. */
interface MonthFigure {
  cost_center_id: number
  currency: string
  budget: string
  spent: string
}

const MONTHS = ['enero', 'febrero', 'marzo', 'abril', 'mayo', 'junio', 'julio', 'agosto', 'septiembre', 'octubre', 'noviembre', 'diciembre']
const KIND: Record<Budget['kind'], string> = { expense: 'Gasto', income: 'Ingreso' }

function describe(e: unknown): string {
  if (e instanceof ApiFailure)
    switch (e.code) {
      case 'UNKNOWN_CLIENT':
        return 'Ese cliente ya no existe. Elija otro.'
      case 'UNKNOWN_ACCOUNT':
        return 'Esa cuenta ya no existe. Actualice la página.'
      case 'ACCOUNT_NOT_INTERNAL':
        return 'La cuenta por defecto tiene que ser de una caja.'
      case 'IDEMPOTENCY_KEY_REUSED':
        return 'Este formulario ya se envió con otros datos. Vuelva a enviarlo.'
      case 'AMOUNT_OUT_OF_RANGE':
        return 'El importe supera el máximo que se puede registrar (22 cifras enteras y 6 decimales).'
    }
  return explain(e)
}

/** Centros de costo: create, budgets per currency, year and month (create or update), and this month's spending. */
export function CostCenters() {
  const [centers, setCenters] = createSignal<CostCenter[] | null>(null)
  const [cajas, setCajas] = createSignal<Client[]>([])
  const [month, setMonth] = createSignal<MonthFigure[] | null>(null)
  const [creating, setCreating] = createSignal(false)
  const [clientNames, setClientNames] = createSignal<Record<number, string>>({})
  const load = createAction(describe)
  const refresh = async () => {
    const [list, home] = await Promise.all([
      money<{ data: CostCenter[] }>('GET', '/api/cost-centers'),
      can('metrics.view') ? money<{ costCenters: MonthFigure[] }>('GET', '/api/metrics/home') : null,
    ])
    // A branch has a handful of cost centers: their clients' names are read one by one, once, before the list shows.
    if (can('clients.view')) {
      const missing = [...new Set(list.data.map((c) => c.client_id))].filter((id) => !(id in clientNames()))
      const named = await Promise.all(missing.map((id) => money<Client>('GET', `/api/clients/${id}`).then((c) => [id, c.name] as const, () => [id, `Cliente ${id}`] as const)))
      setClientNames({ ...clientNames(), ...Object.fromEntries(named) })
    }
    setCenters(list.data)
    // A slot with neither budget nor spending (the default currency of a new center) says nothing worth a line.
    if (home) setMonth(home.costCenters.filter((f) => !new Decimal(f.budget).isZero() || !new Decimal(f.spent).isZero()))
  }
  onMount(() => load.run(async () => void (await Promise.all([refresh(), can('clients.view') ? allCajas().then(setCajas) : null]))))
  const edit = () => can('cost_centers.edit')
  const accounts = createMemo(() => new Map(cajaAccounts(cajas()).map((a) => [a.id, a.label])))
  const [y, m] = today().split('-').map(Number)

  return (
    <section class="panel" data-testid="cost-centers-section">
      <h1>Centros de costo</h1>
      <p class="muted">
        Cada centro agrupa gastos e ingresos (alquiler, sueldos, servicios) con un presupuesto por moneda y por mes. Lo gastado de {MONTHS[m - 1]} {y} se compara con
        su presupuesto.
      </p>
      <NoteLine note={load.note()} />
      <Show when={!can('metrics.view')}>
        <p class="muted small">Para ver lo gastado contra el presupuesto su usuario necesita el permiso de ver métricas (metrics.view).</p>
      </Show>
      <Show when={centers()}>
        {(list) => (
          <>
            <Show when={list().length} fallback={<p class="muted">Todavía no hay centros de costo.</p>}>
              <ul class="list" data-testid="cost-centers">
                {/* By position, not by record: a refresh after saving a budget keeps each form and its message. */}
                <Index each={list()}>
                  {(c) => (
                    <Center
                      center={c()}
                      clientName={clientNames()[c().client_id] ?? `Cliente ${c().client_id}`}
                      figures={(month() ?? []).filter((f) => f.cost_center_id === c().id)}
                      showMonth={month() !== null}
                      currencies={currenciesOf(cajas())}
                      accountName={(id) => accounts().get(id) ?? `Cuenta ${id}`}
                      onChanged={() => load.run(refresh)}
                    />
                  )}
                </Index>
              </ul>
            </Show>
            <Show when={edit()}>
              <Show
                when={creating()}
                fallback={
                  <div class="row">
                    <button type="button" class="primary" onClick={() => setCreating(true)} data-testid="cost-center-new">
                      Centro de costo nuevo
                    </button>
                  </div>
                }
              >
                <CenterForm
                  cajas={cajas()}
                  onDone={async (made) => {
                    setCreating(false)
                    if (made) await load.run(async () => (await refresh(), `Centro de costo «${made.name}» creado.`))
                  }}
                />
              </Show>
            </Show>
          </>
        )}
      </Show>
    </section>
  )
}

function CenterForm(props: { cajas: Client[]; onDone: (made: CostCenter | null) => void }) {
  const currencies = () => currenciesOf(props.cajas)
  const [form, setForm] = createStore({
    name: '',
    client: null as number | null,
    currency: currencies().includes('ARS') ? 'ARS' : (currencies()[0] ?? ''),
    account: '',
    net: false,
  })
  const [errors, setErrors] = createStore<Record<string, string | undefined>>({})
  const action = createAction(describe)
  const fill = createFill()
  const accounts = () => cajaAccounts(props.cajas).filter((a) => a.currency_name === form.currency)
  const submit = (e: Event) => {
    e.preventDefault()
    const found = {
      name: form.name.trim() ? undefined : 'Escriba un nombre, por ejemplo «Alquiler del local».',
      client: form.client === null ? 'Elija el cliente al que se cargan los gastos del centro.' : undefined,
      currency: /^\S{1,32}$/.test(form.currency) ? undefined : 'Elija o escriba la moneda, por ejemplo ARS.',
    }
    setErrors(found)
    if (found.name || found.client || found.currency) return action.setNote({ kind: 'error', text: 'Hay datos para corregir; no se envió nada.' })
    const body = {
      name: form.name.trim(),
      client_id: form.client,
      default_currency: form.currency,
      ...(form.account && { default_internal_account_id: Number(form.account) }),
      net_balance_by_default: form.net,
    }
    void action.run(async () => {
      try {
        const made = await money<CostCenter>('POST', '/api/cost-centers', body, fill.headers(body))
        fill.done()
        props.onDone(made)
      } catch (err) {
        if (err instanceof ApiFailure && err.code === 'UNKNOWN_CLIENT') setErrors('client', describe(err))
        if (err instanceof ApiFailure && (err.code === 'UNKNOWN_ACCOUNT' || err.code === 'ACCOUNT_NOT_INTERNAL')) setErrors('account', describe(err))
        throw err
      }
    })
  }
  return (
    <form class="sub stack" onSubmit={submit} aria-labelledby="cc-new-title" data-testid="cost-center-form" onInput={clearsError(action)} onChange={clearsError(action)} novalidate>
      <h2 id="cc-new-title">Centro de costo nuevo</h2>
      <div class="row">
        <label class="grow">
          Nombre
          <input ref={(el) => queueMicrotask(() => el.focus())} name="name" maxlength="200" aria-invalid={errors.name ? 'true' : undefined} value={form.name} onInput={(e) => (setForm('name', e.currentTarget.value), setErrors('name', undefined))} />
          <FieldError text={errors.name} testid="error-name" />
        </label>
      </div>
      <ClientPicker label="Cliente" name="client" value={form.client} error={errors.client} onChange={(c) => (setForm('client', c?.id ?? null), setErrors('client', undefined))} />
      <div class="row">
        <label>
          Moneda por defecto
          <input name="currency" list="cc-currencies" class="code" maxlength="32" aria-invalid={errors.currency ? 'true' : undefined} value={form.currency} onInput={(e) => (setForm({ currency: e.currentTarget.value.trim().toUpperCase(), account: '' }), setErrors('currency', undefined))} />
          <datalist id="cc-currencies">
            <For each={currencies()}>{(c) => <option value={c} />}</For>
          </datalist>
          <FieldError text={errors.currency} testid="error-currency" />
        </label>
        <label class="grow">
          Caja que paga por defecto
          <select name="account" aria-invalid={errors.account ? 'true' : undefined} onChange={(e) => (setForm('account', e.currentTarget.value), setErrors('account', undefined))}>
            <option value="" selected={form.account === ''}>
              La primera caja con cuenta en {form.currency || 'esa moneda'}
            </option>
            <For each={accounts()}>
              {(a) => (
                <option value={String(a.id)} selected={form.account === String(a.id)}>
                  {a.label}
                </option>
              )}
            </For>
          </select>
          <FieldError text={errors.account} testid="error-account" />
        </label>
      </div>
      <label class="check">
        <input type="checkbox" name="net" checked={form.net} onChange={(e) => setForm('net', e.currentTarget.checked)} />
        Mostrar el saldo neto por defecto
      </label>
      <div class="row">
        <button type="submit" class="primary" disabled={action.busy()} data-testid="cost-center-save">
          Crear centro de costo
        </button>
        <button type="button" onClick={() => props.onDone(null)}>
          Cancelar
        </button>
      </div>
      <NoteLine note={action.note()} testid="cost-center-message" />
    </form>
  )
}

function Center(props: {
  center: CostCenter
  clientName: string
  figures: MonthFigure[]
  showMonth: boolean
  currencies: string[]
  accountName: (id: number) => string
  onChanged: () => Promise<unknown>
}) {
  const c = () => props.center
  // Newest period first: this year's months are what a manager looks at.
  const budgets = createMemo(() => [...c().budgets].sort((a, b) => b.year - a.year || b.period - a.period || a.currency.localeCompare(b.currency) || a.kind.localeCompare(b.kind)))
  return (
    <li class="item" data-testid="cost-center" data-id={c().id}>
      <div class="item-head">
        <div>
          <strong>{c().name}</strong>{' '}
          <span class="muted">
            · {props.clientName} · {c().default_currency} · paga {c().default_internal_account_id === null ? 'la primera caja en esa moneda' : props.accountName(c().default_internal_account_id!)}
          </span>
        </div>
      </div>
      <Show when={props.showMonth}>
        <Show when={props.figures.length} fallback={<p class="muted small">Sin presupuesto de gastos ni gastos este mes.</p>}>
          <div class="spending" data-testid="spent">
            <For each={props.figures}>{(f) => <Spending figure={f} />}</For>
          </div>
        </Show>
      </Show>
      <details open={budgets().length <= 6}>
        <summary>Presupuestos ({budgets().length})</summary>
        <Show when={budgets().length} fallback={<p class="muted">Sin presupuestos.</p>}>
          <table class="grid compact" data-testid="budgets">
            <caption class="visually-hidden">Presupuestos de {c().name}</caption>
            <thead>
              <tr>
                <th scope="col">Período</th>
                <th scope="col">Tipo</th>
                <th scope="col">Monto</th>
              </tr>
            </thead>
            <tbody>
              <For each={budgets()}>
                {(b) => (
                  <tr data-testid="budget-row" data-slot={`${b.currency}-${b.year}-${b.period}-${b.kind}`}>
                    <td>
                      {MONTHS[b.period - 1]} {b.year}
                    </td>
                    <td>{KIND[b.kind]}</td>
                    <td class="num" data-testid="budget-amount">
                      {b.currency} {formatArs(b.amount)}
                    </td>
                  </tr>
                )}
              </For>
            </tbody>
          </table>
        </Show>
        <Show when={can('cost_centers.edit')}>
          <BudgetForm center={c()} currencies={props.currencies} onSaved={props.onChanged} />
        </Show>
      </details>
    </li>
  )
}

/** Spent against budget for one currency this month, as words and a bar. */
function Spending(props: { figure: MonthFigure }) {
  const f = () => props.figure
  const over = () => new Decimal(f().spent).gt(f().budget)
  const left = () => new Decimal(f().budget).minus(f().spent)
  const share = () => (new Decimal(f().budget).isZero() ? null : new Decimal(f().spent).div(f().budget).times(100).toDecimalPlaces(0).toNumber())
  return (
    <div class={`spend ${over() ? 'over' : ''}`} data-currency={f().currency}>
      <span data-testid="spent-text">
        Gastado {f().currency} {formatArs(f().spent)} de {formatArs(f().budget)}
        {share() === null ? '' : ` (${share()} %)`} ·{' '}
        {over() ? `excedido en ${formatArs(left().neg().toFixed())}` : `quedan ${formatArs(left().toFixed())}`}
      </span>
      {/* The bar's length is the one place an amount becomes a float (pixels); the words above carry the exact figures. */}
      <meter min="0" max={Number(f().budget) || 1} value={Number(f().spent)} optimum={0} high={Number(f().budget) * 0.9 || undefined} aria-label={`Gastado en ${f().currency} este mes`} />
    </div>
  )
}

/** Create or update a budget: the same currency, year, month and kind again replaces its amount (contract §5). */
function BudgetForm(props: { center: CostCenter; currencies: string[]; onSaved: () => Promise<unknown> }) {
  const [y, m] = today().split('-').map(Number)
  const [form, setForm] = createStore({ currency: props.center.default_currency, year: String(y), period: String(m), kind: 'expense' as Budget['kind'], amount: '' })
  const [errors, setErrors] = createStore<Record<string, string | undefined>>({})
  const action = createAction(describe)
  const fill = createFill()
  const existing = () => props.center.budgets.find((b) => b.currency === form.currency && String(b.year) === form.year && String(b.period) === form.period && b.kind === form.kind)
  const submit = (e: Event) => {
    e.preventDefault()
    const amount = parseArs(form.amount)
    const year = Number(form.year)
    const found = {
      currency: /^\S{1,32}$/.test(form.currency) ? undefined : 'Escriba la moneda, por ejemplo ARS.',
      year: Number.isInteger(year) && year >= 1900 && year <= 9999 ? undefined : 'Escriba el año con cuatro cifras.',
      amount: amount.ok ? undefined : amount.message,
    }
    setErrors(found)
    if (found.currency || found.year || found.amount) return action.setNote({ kind: 'error', text: 'Hay datos para corregir; no se envió nada.' })
    const had = existing()
    const body = { currency: form.currency, year, period: Number(form.period), kind: form.kind, amount: (amount as { value: string }).value }
    void action.run(async () => {
      await money('POST', `/api/cost-centers/${props.center.id}/budgets`, body, fill.headers(body))
      fill.done()
      setForm('amount', '')
      await props.onSaved()
      const what = `${KIND[body.kind].toLowerCase()} de ${MONTHS[body.period - 1]} ${body.year} en ${body.currency}`
      return had ? `Presupuesto de ${what} actualizado: ${formatArs(body.amount)} (antes ${formatArs(had.amount)}).` : `Presupuesto de ${what} creado: ${formatArs(body.amount)}.`
    })
  }
  const id = `budget-${props.center.id}`
  return (
    <form class="inline budget-form" onSubmit={submit} aria-label={`Presupuesto de ${props.center.name}`} data-testid="budget-form" onInput={clearsError(action)} onChange={clearsError(action)} novalidate>
      <label>
        Moneda
        <input name="currency" class="code" list={`${id}-currencies`} maxlength="32" aria-invalid={errors.currency ? 'true' : undefined} value={form.currency} onInput={(e) => (setForm('currency', e.currentTarget.value.trim().toUpperCase()), setErrors('currency', undefined))} />
        <datalist id={`${id}-currencies`}>
          <For each={props.currencies}>{(c) => <option value={c} />}</For>
        </datalist>
        <FieldError text={errors.currency} />
      </label>
      <label>
        Año
        <input name="year" class="year" inputmode="numeric" maxlength="4" aria-invalid={errors.year ? 'true' : undefined} value={form.year} onInput={(e) => (setForm('year', e.currentTarget.value), setErrors('year', undefined))} />
        <FieldError text={errors.year} />
      </label>
      <label>
        Mes
        <select name="period" onChange={(e) => setForm('period', e.currentTarget.value)}>
          <For each={MONTHS}>
            {(name, i) => (
              <option value={String(i() + 1)} selected={form.period === String(i() + 1)}>
                {name}
              </option>
            )}
          </For>
        </select>
      </label>
      <label>
        Tipo
        <select name="kind" onChange={(e) => setForm('kind', e.currentTarget.value as Budget['kind'])}>
          <option value="expense" selected={form.kind === 'expense'}>
            Gasto
          </option>
          <option value="income" selected={form.kind === 'income'}>
            Ingreso
          </option>
        </select>
      </label>
      <label>
        Monto
        <input name="amount" class="money" inputmode="decimal" placeholder="250.000,00" aria-invalid={errors.amount ? 'true' : undefined} value={form.amount} onInput={(e) => (setForm('amount', e.currentTarget.value), setErrors('amount', undefined))} />
        <FieldError text={errors.amount} testid="error-budget-amount" />
      </label>
      <button type="submit" class="primary" disabled={action.busy()} data-testid="budget-save">
        {existing() ? 'Actualizar presupuesto' : 'Agregar presupuesto'}
      </button>
      <Show when={existing()}>{(b) => <span class="muted small">Ya hay uno de {formatArs(b().amount)}: se reemplaza.</span>}</Show>
      <NoteLine note={action.note()} testid="budget-message" />
    </form>
  )
}
