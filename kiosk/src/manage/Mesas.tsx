import { A, useSearchParams } from '@solidjs/router'
import Decimal from 'decimal.js'
import { createEffect, createMemo, createSignal, For, on, onMount, Show } from 'solid-js'
import { createStore } from 'solid-js/store'
import { ApiFailure, explain, money } from './api'
import { formatArs, parseArs } from './decimal'
import { clearsError, Confirm, createFill, FieldError } from './forms'
import { allCajas, type Client } from './ledger'
import { cajaAccounts, currenciesOf } from './pickers'
import { can } from './session'
import { createAction, NoteLine, when } from './ui'
import './treasury.css'

/** Contract §6 as read with `money=string`: every amount a decimal string. */
interface Mesa {
  id: number
  name: string
  local_currency: string
  quote_currency: string
  costing_method: 'fifo' | 'wac'
  account_ids: number[]
  quote_direction: 'quote' | 'local'
  blotter_feed_mode: 'manual' | 'auto'
  include_pending_legs: boolean
}

type Side = 'buy' | 'sell'
type MatchKind = 'exact' | 'fx_close' | 'partial'

interface Line {
  id: number
  operation_id: number | null
  side: Side
  local_amount: string
  quote_amount: string
  fx: string
  source: 'manual' | 'auto' | 'fabricated'
  match_kind: MatchKind | null
  traded_at: string
}

interface Trade {
  side: Side
  localAmount: string
  quoteAmount: string
  fx: string
  fallback: boolean
}

interface Inference {
  operationId: number
  suggestion: Trade
  legs: { id: number; account_id: number; currency: string; amount: string; status: string }[]
}

interface Position {
  quote_position: string
  average_cost: string | null
  realized_pnl: string
  lots: { line_id: number | null; quantity: string; price: string; cost: string }[]
}

const METHOD: Record<Mesa['costing_method'], string> = { fifo: 'PEPS (FIFO): las ventas consumen los lotes más antiguos', wac: 'Costo promedio ponderado' }
const METHOD_SHORT: Record<Mesa['costing_method'], string> = { fifo: 'PEPS (FIFO)', wac: 'Promedio ponderado' }
const SOURCE: Record<Line['source'], string> = { manual: 'Confirmada', auto: 'Automática', fabricated: 'Cargada a mano' }
const MATCH: Record<MatchKind, string> = { exact: 'Exacta', fx_close: 'Cotización cercana', partial: 'Parcial' }
const SIDE: Record<Side, string> = { buy: 'Compra', sell: 'Venta' }
/** What comes into the mesa's accounts on a «Compra»: the quote currency, or the local one with `quote_direction = local` (§6). */
const comesIn = (m: Mesa, side: Side) => ((side === 'buy') === (m.quote_direction === 'quote') ? m.quote_currency : m.local_currency)

/** Lines a page of the blotter shows: a desk trades all day, and a long table is read a page at a time. */
const LINES_PER_PAGE = 20

function describe(e: unknown): string {
  if (e instanceof ApiFailure)
    switch (e.code) {
      case 'MESAS_DISABLED':
        return DISABLED
      case 'CURRENCIES_MUST_DIFFER':
        return 'La moneda cotizada tiene que ser distinta de la moneda local.'
      case 'ACCOUNT_NOT_INTERNAL':
        return 'Solo pueden entrar en una mesa cuentas de cajas, no de clientes.'
      case 'ACCOUNT_CURRENCY_MISMATCH':
        return 'Cada cuenta tiene que estar en una de las dos monedas de la mesa.'
      case 'ACCOUNT_IN_OTHER_MESA':
        return 'Una de las cuentas ya está en otra mesa: una cuenta puede estar en una sola mesa. Quítela de la otra o elija otra cuenta.'
      case 'UNKNOWN_ACCOUNT':
        return 'Una de las cuentas ya no existe. Actualice la página.'
      case 'NO_TRADE_LEGS':
        return 'Esa operación no tiene movimientos que cuenten en las dos monedas de la mesa (en sus cuentas, sin comisiones, aprobados, o también pendientes si la mesa los cuenta).'
      case 'CONFLICT':
        return 'No se pudo: la mesa ya cambió (esa operación ya tiene su línea, o las monedas no se pueden cambiar porque el blotter tiene líneas).'
      case 'IDEMPOTENCY_KEY_REUSED':
        return 'Este formulario ya se envió con otros datos. Vuelva a enviarlo.'
      case 'AMOUNT_OUT_OF_RANGE':
        return 'El importe supera el máximo que se puede registrar (22 cifras enteras y 6 decimales).'
    }
  return explain(e)
}

const DISABLED =
  'Las mesas no están habilitadas para esta empresa. Las habilita el operador del servicio (al crear la empresa, o con el comando «company modules … --on mesas»); pídaselo y vuelva a entrar.'

/** Mesas (contract §6): FX desks with their blotter, suggestions, inference, position and realized result. */
export function Mesas() {
  const [mesas, setMesas] = createSignal<Mesa[] | null>(null)
  const [cajas, setCajas] = createSignal<Client[]>([])
  const [disabled, setDisabled] = createSignal(false)
  const [creating, setCreating] = createSignal(false)
  const [params, setParams] = useSearchParams<{ mesa?: string }>()
  const load = createAction(describe)
  const refresh = async () => {
    try {
      setMesas((await money<{ data: Mesa[] }>('GET', '/api/mesas')).data)
      setDisabled(false)
    } catch (e) {
      if (e instanceof ApiFailure && e.code === 'MESAS_DISABLED') return void setDisabled(true)
      throw e
    }
  }
  const [ready, setReady] = createSignal(false)
  // The form needs the cajas to offer currencies and accounts: the section shows once both lists are in.
  onMount(() =>
    load.run(async () => {
      await Promise.all([refresh(), can('clients.view') ? allCajas().then(setCajas) : null])
      setReady(true)
    }),
  )
  const selected = () => mesas()?.find((m) => String(m.id) === params.mesa) ?? null
  // The open mesa as last seen: a desk being closed (its mesa just deleted) still reads its own record while it goes.
  const current = createMemo<Mesa | null>((last) => selected() ?? last, null)
  const labels = createMemo(() => new Map(cajaAccounts(cajas()).map((a) => [a.id, a.label])))
  const accountName = (id: number) => labels().get(id) ?? `Cuenta ${id}`

  return (
    <section class="panel" data-testid="mesas-section">
      <h1>Mesas</h1>
      <p class="muted">
        Cada mesa sigue el negocio de una moneda contra la local en las cuentas de sus cajas: el blotter de compras y ventas, la posición abierta y el resultado realizado.
      </p>
      <NoteLine note={load.note()} />
      <Show when={disabled()}>
        <p class="notice" role="status" data-testid="mesas-disabled">
          {DISABLED}
        </p>
      </Show>
      <Show when={ready() && mesas()}>
        {(list) => (
          <>
            <Show when={list().length} fallback={<p class="muted">Todavía no hay mesas.</p>}>
              <table class="grid" data-testid="mesas-table">
                <caption class="visually-hidden">Mesas de la empresa</caption>
                <thead>
                  <tr>
                    <th scope="col">Mesa</th>
                    <th scope="col">Monedas</th>
                    <th scope="col">Costeo</th>
                    <th scope="col">Cuentas</th>
                    <th scope="col">
                      <span class="visually-hidden">Abrir</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  <For each={list()}>
                    {(m) => (
                      <tr data-testid="mesa-row" data-id={m.id} aria-current={selected()?.id === m.id ? 'true' : undefined}>
                        <td>{m.name}</td>
                        <td>
                          {m.quote_currency} contra {m.local_currency}
                        </td>
                        <td>{METHOD_SHORT[m.costing_method]}</td>
                        <td>{m.account_ids.map(accountName).join('; ')}</td>
                        <td>
                          <button type="button" onClick={() => setParams({ mesa: String(m.id) })} data-testid="mesa-open">
                            Abrir {m.name}
                          </button>
                        </td>
                      </tr>
                    )}
                  </For>
                </tbody>
              </table>
            </Show>
            <Show when={can('mesas.manage')}>
              <Show
                when={creating()}
                fallback={
                  <div class="row">
                    <button type="button" class="primary" onClick={() => setCreating(true)} data-testid="mesa-new">
                      Mesa nueva
                    </button>
                  </div>
                }
              >
                <MesaForm
                  cajas={cajas()}
                  mesas={list()}
                  onDone={async (made) => {
                    setCreating(false)
                    if (made) {
                      await load.run(refresh)
                      setParams({ mesa: String(made.id) })
                    }
                  }}
                />
              </Show>
            </Show>
            <Show when={selected()?.id} keyed>
              {(_id: number) => (
                <Desk
                  mesa={current()!}
                  cajas={cajas()}
                  mesas={list()}
                  accountName={accountName}
                  onChanged={() => load.run(refresh)}
                  onDeleted={async () => {
                    setParams({ mesa: undefined })
                    const name = current()!.name
                    await load.run(async () => {
                      await refresh()
                      return `Mesa «${name}» borrada: sus cuentas quedan libres para otra mesa.`
                    })
                  }}
                />
              )}
            </Show>
          </>
        )}
      </Show>
    </section>
  )
}

/** Create a mesa, or edit one (`mesa` given): name, currencies, costing, the caja accounts, the three settings. */
function MesaForm(props: { mesa?: Mesa; cajas: Client[]; mesas: Mesa[]; onDone: (saved: Mesa | null) => void }) {
  const currencies = createMemo(() => {
    const list = currenciesOf(props.cajas)
    for (const c of props.mesa ? [props.mesa.local_currency, props.mesa.quote_currency] : []) if (!list.includes(c)) list.push(c)
    return list
  })
  const defaultLocal = () => (currencies().includes('ARS') ? 'ARS' : (currencies()[0] ?? ''))
  const [form, setForm] = createStore({
    name: props.mesa?.name ?? '',
    local: props.mesa?.local_currency ?? defaultLocal(),
    // The dollar is what most desks trade against the peso: offered first when the cajas hold it.
    quote: props.mesa?.quote_currency ?? ([...(currencies().includes('USD') ? ['USD'] : []), ...currencies()].find((c) => c !== defaultLocal()) ?? ''),
    method: props.mesa?.costing_method ?? ('fifo' as Mesa['costing_method']),
    accounts: props.mesa?.account_ids ?? ([] as number[]),
    direction: props.mesa?.quote_direction ?? ('quote' as Mesa['quote_direction']),
    feed: props.mesa?.blotter_feed_mode ?? ('manual' as Mesa['blotter_feed_mode']),
    pending: props.mesa?.include_pending_legs ?? false,
  })
  const [errors, setErrors] = createStore<Record<string, string | undefined>>({})
  const action = createAction(describe)
  const fill = createFill()
  /** Accounts taken by another live mesa cannot be chosen (contract §6: an account in at most one mesa). */
  const takenBy = createMemo(() => {
    const taken = new Map<number, string>()
    for (const m of props.mesas) if (m.id !== props.mesa?.id) for (const id of m.account_ids) taken.set(id, m.name)
    return taken
  })
  const candidates = () => cajaAccounts(props.cajas).filter((a) => a.currency_name === form.local || a.currency_name === form.quote)
  const toggle = (id: number) => {
    setForm('accounts', (ids) => (ids.includes(id) ? ids.filter((x) => x !== id) : [...ids, id]))
    setErrors('accounts', undefined)
  }
  // Accounts in a currency the mesa no longer has are dropped when a currency changes.
  createEffect(
    on(
      () => [form.local, form.quote],
      () => {
        const allowed = new Set(candidates().map((a) => a.id))
        setForm('accounts', (ids) => ids.filter((id) => allowed.has(id) || !props.cajas.length))
      },
      { defer: true },
    ),
  )
  const fieldOf: Record<string, string> = {
    CURRENCIES_MUST_DIFFER: 'quote',
    ACCOUNT_NOT_INTERNAL: 'accounts',
    ACCOUNT_CURRENCY_MISMATCH: 'accounts',
    ACCOUNT_IN_OTHER_MESA: 'accounts',
    UNKNOWN_ACCOUNT: 'accounts',
    CONFLICT: 'quote',
  }
  const submit = (e: Event) => {
    e.preventDefault()
    const found: Record<string, string> = {}
    if (!form.name.trim()) found.name = 'Escriba un nombre, por ejemplo «Mesa Dólar».'
    if (!form.local) found.local = 'Elija la moneda local.'
    if (!form.quote) found.quote = 'Elija la moneda que se cotiza.'
    else if (form.quote.toUpperCase() === form.local.toUpperCase()) found.quote = 'La moneda cotizada tiene que ser distinta de la moneda local.'
    if (!form.accounts.length) found.accounts = 'Elija al menos una cuenta de caja en una de las dos monedas.'
    setErrors({ name: found.name, local: found.local, quote: found.quote, accounts: found.accounts })
    if (Object.keys(found).length) return action.setNote({ kind: 'error', text: 'Hay datos para corregir; no se envió nada.' })
    const body = {
      name: form.name.trim(),
      local_currency: form.local,
      quote_currency: form.quote,
      costing_method: form.method,
      account_ids: form.accounts,
      quote_direction: form.direction,
      blotter_feed_mode: form.feed,
      include_pending_legs: form.pending,
    }
    void action.run(async () => {
      try {
        const saved = props.mesa
          ? await money<Mesa>('PATCH', `/api/mesas/${props.mesa.id}`, body)
          : await money<Mesa>('POST', '/api/mesas', body, fill.headers(body))
        fill.done()
        props.onDone(saved)
      } catch (err) {
        const field = err instanceof ApiFailure ? fieldOf[err.code] : undefined
        if (field) setErrors(field, describe(err))
        throw err
      }
    })
  }
  const title = props.mesa ? `Editar «${props.mesa.name}»` : 'Mesa nueva'
  return (
    <form class="sub stack" onSubmit={submit} aria-label={title} data-testid="mesa-form" onInput={clearsError(action)} onChange={clearsError(action)} novalidate>
      <h2>{title}</h2>
      <Show when={!props.cajas.length}>
        <p class="notice">
          {can('clients.view')
            ? 'Para armar una mesa hace falta una caja con cuentas en las dos monedas. Créela primero en Clientes y cajas.'
            : 'Para elegir las cuentas de las cajas su usuario necesita el permiso de ver clientes (clients.view).'}
        </p>
      </Show>
      <div class="row">
        <label class="grow">
          Nombre
          <input ref={(el) => queueMicrotask(() => el.focus())} name="name" maxlength="200" aria-invalid={errors.name ? 'true' : undefined} value={form.name} onInput={(e) => (setForm('name', e.currentTarget.value), setErrors('name', undefined))} />
          <FieldError text={errors.name} testid="error-name" />
        </label>
        <label>
          Moneda local
          <select name="local" aria-invalid={errors.local ? 'true' : undefined} onChange={(e) => (setForm('local', e.currentTarget.value), setErrors({ local: undefined, quote: undefined }))}>
            <For each={currencies()}>{(c) => <option selected={c === form.local}>{c}</option>}</For>
          </select>
          <FieldError text={errors.local} testid="error-local" />
        </label>
        <label>
          Moneda que se cotiza
          <select name="quote" aria-invalid={errors.quote ? 'true' : undefined} onChange={(e) => (setForm('quote', e.currentTarget.value), setErrors({ local: undefined, quote: undefined }))}>
            <For each={currencies()}>{(c) => <option selected={c === form.quote}>{c}</option>}</For>
          </select>
          <FieldError text={errors.quote} testid="error-quote" />
        </label>
      </div>
      <fieldset class="row">
        <legend>Método de costeo</legend>
        <For each={['fifo', 'wac'] as const}>
          {(m) => (
            <label class="choice">
              <input type="radio" name="method" value={m} checked={form.method === m} onChange={() => setForm('method', m)} /> {METHOD[m]}
            </label>
          )}
        </For>
      </fieldset>
      <fieldset>
        <legend>Cuentas de caja de la mesa</legend>
        <Show when={candidates().length} fallback={<p class="muted">Ninguna caja tiene cuentas en {form.quote || '…'} o {form.local || '…'}.</p>}>
          <div class="checks">
            <For each={candidates()}>
              {(a) => (
                <label class="check">
                  <input type="checkbox" name="account" value={a.id} checked={form.accounts.includes(a.id)} disabled={takenBy().has(a.id)} onChange={() => toggle(a.id)} />
                  {a.label}
                  <Show when={takenBy().get(a.id)}>{(other) => <span class="muted small">(en la mesa «{other()}»)</span>}</Show>
                </label>
              )}
            </For>
          </div>
        </Show>
        <FieldError text={errors.accounts} testid="error-accounts" />
      </fieldset>
      <div class="row">
        <label>
          Qué es una compra
          <select name="direction" onChange={(e) => setForm('direction', e.currentTarget.value as Mesa['quote_direction'])}>
            <option value="quote" selected={form.direction === 'quote'}>
              Entra {form.quote || 'la moneda cotizada'} (lo habitual)
            </option>
            <option value="local" selected={form.direction === 'local'}>
              Entra {form.local || 'la moneda local'}
            </option>
          </select>
        </label>
        <label>
          Blotter
          <select name="feed" onChange={(e) => setForm('feed', e.currentTarget.value as Mesa['blotter_feed_mode'])}>
            <option value="manual" selected={form.feed === 'manual'}>
              Manual: se confirma cada sugerencia
            </option>
            <option value="auto" selected={form.feed === 'auto'}>
              Automático: las sugerencias exactas o de cotización cercana entran solas
            </option>
          </select>
        </label>
        <label class="check">
          <input type="checkbox" name="pending" checked={form.pending} onChange={(e) => setForm('pending', e.currentTarget.checked)} />
          Contar también movimientos pendientes de aprobación
        </label>
      </div>
      <div class="row">
        <button type="submit" class="primary" disabled={action.busy()} data-testid="mesa-save">
          {action.busy() ? 'Guardando…' : props.mesa ? 'Guardar cambios' : 'Crear mesa'}
        </button>
        <button type="button" onClick={() => props.onDone(null)}>
          Cancelar
        </button>
      </div>
      <NoteLine note={action.note()} testid="mesa-form-message" />
    </form>
  )
}

/** One mesa: its settings, position and result, suggestions, inference, blotter and a hand-made line. */
function Desk(props: { mesa: Mesa; cajas: Client[]; mesas: Mesa[]; accountName: (id: number) => string; onChanged: () => Promise<unknown>; onDeleted: () => void }) {
  const m = () => props.mesa
  const base = () => `/api/mesas/${m().id}`
  const [lines, setLines] = createSignal<Line[]>([])
  const [suggestions, setSuggestions] = createSignal<{ operation_id: number; match_kind: MatchKind; suggestion: Trade }[]>([])
  const [position, setPosition] = createSignal<Position | null>(null)
  const [page, setPage] = createSignal(1)
  const [editing, setEditing] = createSignal(false)
  const [deleting, setDeleting] = createSignal(false)
  const [removing, setRemoving] = createSignal<number | null>(null)
  const load = createAction(describe)
  const act = createAction(describe)
  const manage = () => can('mesas.manage')

  const reload = async () => {
    const [l, s, p] = await Promise.all([
      money<{ data: Line[] }>('GET', `${base()}/lines`),
      money<{ data: { operation_id: number; match_kind: MatchKind; suggestion: Trade }[] }>('GET', `${base()}/suggestions`),
      money<Position>('GET', `${base()}/position`),
    ])
    setLines(l.data)
    setSuggestions(s.data)
    setPosition(p)
  }
  onMount(() => load.run(reload))

  // Newest first: the trades a dealer checks are today's.
  const newest = createMemo(() => [...lines()].reverse())
  const pages = () => Math.max(1, Math.ceil(newest().length / LINES_PER_PAGE))
  const shown = () => newest().slice((page() - 1) * LINES_PER_PAGE, page() * LINES_PER_PAGE)

  const confirmFills = new Map<number, ReturnType<typeof createFill>>()
  const confirm = (operationId: number) =>
    act.run(async () => {
      const fill = confirmFills.get(operationId) ?? createFill()
      confirmFills.set(operationId, fill)
      const body = { operation_id: operationId }
      await money('POST', `${base()}/lines`, body, fill.headers(body))
      fill.done()
      await reload()
      return `Operación ${operationId} confirmada: ya está en el blotter.`
    })
  const removeLine = (line: Line) =>
    act.run(async () => {
      await money('DELETE', `${base()}/lines/${line.id}`)
      setRemoving(null)
      await reload()
      if (page() > pages()) setPage(pages())
      return `Línea borrada. ${line.operation_id ? `La operación ${line.operation_id} y los saldos no cambian.` : 'Ningún saldo cambia.'}`
    })
  const deleteMesa = () =>
    act.run(async () => {
      await money('DELETE', base())
      props.onDeleted()
    })

  const price = (v: string | null) => (v === null ? '—' : `${m().local_currency} ${formatArs(v)}`)

  return (
    <section class="sub desk" aria-labelledby="desk-title" data-testid="mesa-desk" data-id={m().id}>
      <div class="item-head">
        <h2 id="desk-title">
          {m().name}: {m().quote_currency} contra {m().local_currency}
        </h2>
        <Show when={manage() && !editing() && !deleting()}>
          <div class="row">
            <button type="button" onClick={() => setEditing(true)} data-testid="mesa-edit">
              Editar
            </button>
            <button type="button" class="danger" onClick={() => setDeleting(true)} data-testid="mesa-delete">
              Borrar mesa
            </button>
          </div>
        </Show>
      </div>
      <p class="muted small">
        {METHOD[m().costing_method]} · Compra = entra {comesIn(m(), 'buy')} · Blotter {m().blotter_feed_mode === 'auto' ? 'automático' : 'manual'} ·{' '}
        {m().include_pending_legs ? 'cuenta movimientos pendientes' : 'solo movimientos aprobados'} · Cuentas: {m().account_ids.map(props.accountName).join('; ')}
      </p>
      <Show when={deleting()}>
        <Confirm
          question={<>¿Borrar la mesa «{m().name}»? Sus cuentas quedan libres para otra mesa; las operaciones y los saldos no cambian.</>}
          yes="Sí, borrar la mesa"
          busy={act.busy()}
          onYes={deleteMesa}
          onNo={() => setDeleting(false)}
          testid="mesa-delete-confirm"
        />
      </Show>
      <Show when={editing()}>
        <MesaForm
          mesa={m()}
          cajas={props.cajas}
          mesas={props.mesas}
          onDone={async (saved) => {
            setEditing(false)
            if (saved) {
              // The costing method or the accounts may have changed: the position and suggestions are read again.
              await Promise.all([props.onChanged(), load.run(reload)])
              act.setNote({ kind: 'info', text: `Mesa «${saved.name}» guardada.` })
            }
          }}
        />
      </Show>
      <NoteLine note={load.note()} />
      <NoteLine note={act.note()} testid="desk-message" />

      <Show when={position()}>
        {(p) => (
          <div class="figures" data-testid="mesa-position">
            <div>
              <span class="muted">Posición abierta</span>
              <strong data-testid="position-quote">
                {m().quote_currency} {formatArs(p().quote_position)}
              </strong>
            </div>
            <div>
              <span class="muted">Costo promedio</span>
              <strong data-testid="position-cost">{price(p().average_cost)}</strong>
            </div>
            <div>
              <span class="muted">Resultado realizado</span>
              <strong data-testid="position-pnl">
                {m().local_currency} {formatArs(p().realized_pnl)}
              </strong>
            </div>
          </div>
        )}
      </Show>
      <Show when={position()?.lots.length}>
        <details>
          <summary>Lotes abiertos ({position()!.lots.length})</summary>
          <table class="grid compact">
            <caption class="visually-hidden">Lotes abiertos de la posición</caption>
            <thead>
              <tr>
                <th scope="col">Cantidad</th>
                <th scope="col">Precio</th>
                <th scope="col">Costo</th>
              </tr>
            </thead>
            <tbody>
              <For each={position()!.lots}>
                {(lot) => (
                  <tr>
                    <td class="num">
                      {m().quote_currency} {formatArs(lot.quantity)}
                    </td>
                    <td class="num">{price(lot.price)}</td>
                    <td class="num">{price(lot.cost)}</td>
                  </tr>
                )}
              </For>
            </tbody>
          </table>
        </details>
      </Show>

      <h3>Sugerencias ({suggestions().length})</h3>
      <p class="muted small">Operaciones en las cuentas de la mesa que todavía no tienen su línea en el blotter.</p>
      <Show when={suggestions().length} fallback={<p class="muted">Nada para confirmar.</p>}>
        <table class="grid" data-testid="suggestions">
          <caption class="visually-hidden">Sugerencias para el blotter</caption>
          <thead>
            <tr>
              <th scope="col">Operación</th>
              <th scope="col">Lado</th>
              <th scope="col">{m().quote_currency}</th>
              <th scope="col">{m().local_currency}</th>
              <th scope="col">Cotización</th>
              <th scope="col">Coincidencia</th>
              <Show when={manage()}>
                <th scope="col">
                  <span class="visually-hidden">Confirmar</span>
                </th>
              </Show>
            </tr>
          </thead>
          <tbody>
            <For each={suggestions()}>
              {(s) => (
                <tr data-testid="suggestion-row" data-operation={s.operation_id}>
                  <td>
                    <A href={`/operaciones/${s.operation_id}`}>{s.operation_id}</A>
                  </td>
                  <td>{SIDE[s.suggestion.side]}</td>
                  <td class="num">{formatArs(s.suggestion.quoteAmount)}</td>
                  <td class="num">{formatArs(s.suggestion.localAmount)}</td>
                  <td class="num">{formatArs(s.suggestion.fx)}</td>
                  <td>
                    {MATCH[s.match_kind]}
                    {s.suggestion.fallback ? ' (neteada)' : ''}
                  </td>
                  <Show when={manage()}>
                    <td>
                      <button type="button" class="primary" disabled={act.busy()} onClick={() => confirm(s.operation_id)} data-testid="suggestion-confirm">
                        Confirmar
                      </button>
                    </td>
                  </Show>
                </tr>
              )}
            </For>
          </tbody>
        </table>
      </Show>

      <Infer mesa={m()} manage={manage()} onAdded={reload} accountName={props.accountName} />

      <h3>Blotter ({lines().length})</h3>
      <Show when={lines().length} fallback={<p class="muted">El blotter está vacío.</p>}>
        <table class="grid" data-testid="blotter">
          <caption class="visually-hidden">Blotter de la mesa, lo más reciente primero</caption>
          <thead>
            <tr>
              <th scope="col">Fecha</th>
              <th scope="col">Lado</th>
              <th scope="col">{m().quote_currency}</th>
              <th scope="col">{m().local_currency}</th>
              <th scope="col">Cotización</th>
              <th scope="col">Origen</th>
              <th scope="col">Operación</th>
              <Show when={manage()}>
                <th scope="col">
                  <span class="visually-hidden">Borrar</span>
                </th>
              </Show>
            </tr>
          </thead>
          <tbody>
            <For each={shown()}>
              {(line) => (
                <tr data-testid="line-row" data-id={line.id}>
                  <td>{when(line.traded_at)}</td>
                  <td>{SIDE[line.side]}</td>
                  <td class="num">{formatArs(line.quote_amount)}</td>
                  <td class="num">{formatArs(line.local_amount)}</td>
                  <td class="num">{formatArs(line.fx)}</td>
                  <td>
                    {SOURCE[line.source]}
                    {line.match_kind ? ` · ${MATCH[line.match_kind]}` : ''}
                  </td>
                  <td>{line.operation_id ? <A href={`/operaciones/${line.operation_id}`}>{line.operation_id}</A> : '—'}</td>
                  <Show when={manage()}>
                    <td>
                      <Show
                        when={removing() === line.id}
                        fallback={
                          <button type="button" class="danger" onClick={() => setRemoving(line.id)} data-testid="line-delete">
                            Borrar
                          </button>
                        }
                      >
                        <Confirm
                          question="¿Borrar la línea? No toca operaciones ni saldos."
                          yes="Sí, borrar"
                          busy={act.busy()}
                          onYes={() => removeLine(line)}
                          onNo={() => setRemoving(null)}
                          testid="line-delete-confirm"
                        />
                      </Show>
                    </td>
                  </Show>
                </tr>
              )}
            </For>
          </tbody>
        </table>
        <Show when={pages() > 1}>
          <nav class="row" aria-label="Páginas del blotter">
            <button type="button" disabled={page() === 1} onClick={() => setPage(page() - 1)} data-testid="lines-previous">
              Anterior
            </button>
            <span data-testid="lines-page">
              Página {page()} de {pages()}
            </span>
            <button type="button" disabled={page() === pages()} onClick={() => setPage(page() + 1)} data-testid="lines-next">
              Siguiente
            </button>
          </nav>
        </Show>
      </Show>
      <Show when={manage()}>
        <Fabricated mesa={m()} onAdded={reload} />
      </Show>
    </section>
  )
}

/** Infer the trade of any operation (GET …/infer), and put it in the blotter. */
function Infer(props: { mesa: Mesa; manage: boolean; onAdded: () => Promise<void>; accountName: (id: number) => string }) {
  const [number, setNumber] = createSignal('')
  const [error, setError] = createSignal<string | null>(null)
  const [found, setFound] = createSignal<Inference | null>(null)
  const action = createAction(describe)
  const fill = createFill()
  const infer = (e: Event) => {
    e.preventDefault()
    setFound(null)
    const id = number().trim()
    if (!/^[1-9]\d{0,9}$/.test(id) || Number(id) > 2147483647) return setError('Escriba el número de la operación, por ejemplo 42.')
    setError(null)
    void action.run(async () => {
      try {
        setFound(await money<Inference>('GET', `/api/mesas/${props.mesa.id}/infer?operation_id=${id}`))
      } catch (err) {
        if (err instanceof ApiFailure && err.code === 'NOT_FOUND') return void setError(`No hay una operación ${id} a su alcance.`)
        if (err instanceof ApiFailure && err.code === 'NO_TRADE_LEGS') return void setError(describe(err))
        throw err
      }
    })
  }
  const add = () =>
    action.run(async () => {
      const body = { operation_id: found()!.operationId }
      await money('POST', `/api/mesas/${props.mesa.id}/lines`, body, fill.headers(body))
      fill.done()
      const id = found()!.operationId
      setFound(null)
      setNumber('')
      await props.onAdded()
      return `Operación ${id} agregada al blotter.`
    })
  return (
    <form class="card-lite stack" onSubmit={infer} aria-labelledby="infer-title" data-testid="infer-form" onInput={clearsError(action)} onChange={clearsError(action)} novalidate>
      <h3 id="infer-title">Inferir el trade de una operación</h3>
      <div class="inline">
        <label>
          N.º de operación
          <input name="operation" inputmode="numeric" autocomplete="off" aria-invalid={error() ? 'true' : undefined} value={number()} onInput={(e) => (setNumber(e.currentTarget.value), setError(null))} />
        </label>
        <button type="submit" disabled={action.busy()} data-testid="infer-submit">
          Inferir
        </button>
      </div>
      <FieldError text={error()} testid="infer-error" />
      <Show when={found()}>
        {(f) => (
          <div data-testid="inference">
            <p>
              <strong>{SIDE[f().suggestion.side]}</strong> de {props.mesa.quote_currency} {formatArs(f().suggestion.quoteAmount)} por {props.mesa.local_currency}{' '}
              {formatArs(f().suggestion.localAmount)}, cotización {formatArs(f().suggestion.fx)}.
              {f().suggestion.fallback ? ' La operación tiene varios movimientos por moneda: se netearon.' : ''}
            </p>
            <ul class="legs">
              <For each={f().legs}>
                {(leg) => (
                  <li>
                    <span class="num">
                      {leg.currency} {formatArs(leg.amount)}
                    </span>{' '}
                    <span class="muted">
                      {props.accountName(leg.account_id)} · {leg.status === 'completed' ? 'aprobado' : 'pendiente'}
                    </span>
                  </li>
                )}
              </For>
            </ul>
            <Show when={props.manage}>
              <button type="button" class="primary" disabled={action.busy()} onClick={add} data-testid="infer-add">
                Agregar al blotter
              </button>
            </Show>
          </div>
        )}
      </Show>
      <NoteLine note={action.note()} testid="infer-message" />
    </form>
  )
}

/** A line typed by hand, linked to no operation (contract §6 «fabricated»): a trade made outside the ledger. */
function Fabricated(props: { mesa: Mesa; onAdded: () => Promise<void> }) {
  const [side, setSide] = createSignal<Side>('buy')
  const [quote, setQuote] = createSignal('')
  const [local, setLocal] = createSignal('')
  const [at, setAt] = createSignal('')
  const [errors, setErrors] = createStore<Record<string, string | undefined>>({})
  const action = createAction(describe)
  const fill = createFill()
  const positive = (text: string, what: string) => {
    const p = parseArs(text)
    if (!p.ok) return p
    if (new Decimal(p.value).isZero()) return { ok: false as const, message: `${what} no puede ser cero.` }
    return p
  }
  const fx = createMemo(() => {
    const q = parseArs(quote())
    const l = parseArs(local())
    return q.ok && l.ok && !new Decimal(q.value).isZero() ? new Decimal(l.value).div(q.value).toDecimalPlaces(6).toFixed() : null
  })
  const submit = (e: Event) => {
    e.preventDefault()
    const q = positive(quote(), 'El importe')
    const l = positive(local(), 'El importe')
    const when = at() ? new Date(at()) : null
    setErrors({
      quote: q.ok ? undefined : q.message,
      local: l.ok ? undefined : l.message,
      at: when && Number.isNaN(when.getTime()) ? 'Fecha y hora no válidas.' : undefined,
    })
    if (!q.ok || !l.ok || errors.at) return action.setNote({ kind: 'error', text: 'Hay datos para corregir; no se envió nada.' })
    const body = { side: side(), quote_amount: q.value, local_amount: l.value, ...(when && { traded_at: when.toISOString() }) }
    void action.run(async () => {
      await money('POST', `/api/mesas/${props.mesa.id}/lines`, body, fill.headers(body))
      fill.done()
      setQuote('')
      setLocal('')
      setAt('')
      await props.onAdded()
      return 'Línea cargada en el blotter.'
    })
  }
  return (
    <form class="card-lite stack" onSubmit={submit} aria-labelledby="fabricated-title" data-testid="fabricated-form" onInput={clearsError(action)} onChange={clearsError(action)} novalidate>
      <h3 id="fabricated-title">Cargar una línea a mano</h3>
      <p class="muted small">Para un trade que no pasó por una operación: queda en el blotter y en la posición, sin mover ningún saldo.</p>
      <div class="row">
        <label>
          Lado
          <select name="side" onChange={(e) => setSide(e.currentTarget.value as Side)}>
            <For each={['buy', 'sell'] as const}>
              {(s) => (
                <option value={s} selected={side() === s}>
                  {SIDE[s]} (entra {comesIn(props.mesa, s)})
                </option>
              )}
            </For>
          </select>
        </label>
        <label>
          Importe en {props.mesa.quote_currency}
          <input name="quote" class="money" inputmode="decimal" placeholder="1.000,00" aria-invalid={errors.quote ? 'true' : undefined} value={quote()} onInput={(e) => (setQuote(e.currentTarget.value), setErrors('quote', undefined))} />
          <FieldError text={errors.quote} testid="error-quote-amount" />
        </label>
        <label>
          Importe en {props.mesa.local_currency}
          <input name="local" class="money" inputmode="decimal" placeholder="1.165.500,00" aria-invalid={errors.local ? 'true' : undefined} value={local()} onInput={(e) => (setLocal(e.currentTarget.value), setErrors('local', undefined))} />
          <FieldError text={errors.local} testid="error-local-amount" />
        </label>
        <label>
          Fecha y hora (vacío: ahora)
          <input name="traded_at" type="datetime-local" aria-invalid={errors.at ? 'true' : undefined} value={at()} onInput={(e) => (setAt(e.currentTarget.value), setErrors('at', undefined))} />
          <FieldError text={errors.at} />
        </label>
      </div>
      <Show when={fx()}>
        {(v) => (
          <p class="muted" aria-live="polite" data-testid="fabricated-fx">
            Cotización: {props.mesa.local_currency} {formatArs(v())} por {props.mesa.quote_currency}.
          </p>
        )}
      </Show>
      <div class="row">
        <button type="submit" class="primary" disabled={action.busy()} data-testid="fabricated-submit">
          Cargar línea
        </button>
      </div>
      <NoteLine note={action.note()} testid="fabricated-message" />
    </form>
  )
}
