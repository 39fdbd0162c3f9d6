import Decimal from 'decimal.js'
import { createMemo, createSignal, For, Index, onMount, Show } from 'solid-js'
import { createStore } from 'solid-js/store'
import { ApiFailure, explain, money } from './api'
import { formatArs, parseArs } from './decimal'
import { createFill, FieldError } from './forms'
import { can } from './session'
import { createAction, NoteLine, when } from './ui'
import './treasury.css'
import './cajas.css'

/** Contract §20 as read with `money=string`: every amount is a decimal string. */
interface CountRow {
  currency: string
  expected: string
  counted: string
  difference: string
  denominations?: { value: string; count: number }[]
}

interface SummaryRow {
  currency: string
  bought: string
  sold: string
  operations: number
  commissions: string
}

interface TillSession {
  id: number
  caja_id: number
  caja_name: string
  status: 'open' | 'closed'
  opened_at: string
  opened_by: number | null
  opened_by_name: string | null
  opening: CountRow[]
  opening_adjustment_operation_id: number | null
  closed_at: string | null
  closed_by: number | null
  closed_by_name: string | null
  closing: CountRow[] | null
  closing_adjustment_operation_id: number | null
  summary: SummaryRow[]
  note: string | null
}

interface Caja {
  id: number
  name: string
  accounts: { id: number; currency: string; balance: string }[]
  till: 'never_opened' | 'open' | 'closed'
  session: TillSession | null
}

interface Report {
  session: TillSession
  opening: CountRow[]
  operations: {
    operation_id: number
    receipt_number: string | null
    at: string
    type: string
    description: string
    client: { id: number; name: string } | null
    status: 'pending' | 'completed' | 'cancelled'
    events: { event: 'created' | 'approved' | 'reverted' | 'cancelled'; at: string }[]
    movements: { currency: string; amount: string }[]
  }[]
  summary: SummaryRow[]
  movements: { currency: string; amount: string }[]
  closing: CountRow[] | null
  differences: { moment: 'opening' | 'closing'; currency: string; difference: string; adjustment_operation_id: number }[]
}

/**
 * Bills and coins per currency for the count by denomination, largest first. Decided here (the API takes any face
 * value): ARS the notes in circulation in 2026 (10 to 20.000) and the 1, 2, 5 and 10 peso coins; USD the seven notes
 * and the coins down to the cent; EUR the seven notes from 5 (the 500 is no longer issued but still legal tender) and
 * the eight coins; BRL the seven Real notes and the coins from 5 centavos. Any other currency has no list: its total
 * is typed.
 */
const DENOMINATIONS: Record<string, { bills: string[]; coins: string[] }> = {
  ARS: { bills: ['20000', '10000', '2000', '1000', '500', '200', '100', '50', '20', '10'], coins: ['10', '5', '2', '1'] },
  USD: { bills: ['100', '50', '20', '10', '5', '2', '1'], coins: ['1', '0.5', '0.25', '0.1', '0.05', '0.01'] },
  EUR: { bills: ['500', '200', '100', '50', '20', '10', '5'], coins: ['2', '1', '0.5', '0.2', '0.1', '0.05', '0.02', '0.01'] },
  BRL: { bills: ['200', '100', '50', '20', '10', '5', '2'], coins: ['1', '0.5', '0.25', '0.1', '0.05'] },
}

const STATUS = { pending: 'Pendiente', completed: 'Completada', cancelled: 'Anulada' } as const
const EVENTS = { created: 'creada', approved: 'aprobada', reverted: 'revertida', cancelled: 'anulada' } as const

const person = (id: number | null, name: string | null) => name ?? (id === null ? 'la clave de la empresa' : `el empleado ${id}`)
const signed = (value: string) => (new Decimal(value).gt(0) ? `+${formatArs(value)}` : formatArs(value))

function describe(e: unknown): string {
  if (e instanceof ApiFailure)
    switch (e.code) {
      case 'TILL_OPEN':
        return 'Esta caja ya estaba abierta (otra persona la abrió recién). La lista se actualizó.'
      case 'TILL_NOT_OPEN':
        return 'Esta caja ya no está abierta (otra persona la cerró recién). La lista se actualizó.'
      case 'OPERATION_TYPE_NOT_FOUND':
        return 'Falta el tipo de operación «Ajuste de caja» (clase «otra») con el que se registran las diferencias. Pida al dueño que lo cree, o cuente de nuevo sin diferencias.'
      case 'FORBIDDEN':
        return e.details.length
          ? 'Hay una diferencia mayor que la tolerancia de la empresa: cerrar así necesita un supervisor (permiso «Supervisar cajas»). Pida a un supervisor que cierre la caja.'
          : 'Su usuario no tiene permiso para abrir o cerrar cajas.'
      case 'IDEMPOTENCY_KEY_REUSED':
        return 'Este conteo ya se envió con otros datos. Vuelva a confirmarlo.'
      case 'AMOUNT_OUT_OF_RANGE':
        return 'Un importe supera el máximo que se puede registrar (22 cifras enteras y 6 decimales).'
    }
  return explain(e)
}

/** Cajas: each caja's till, opened and closed with a count, and its past sessions with their reports (contract §20). */
export function Cajas() {
  const [cajas, setCajas] = createSignal<Caja[] | null>(null)
  const [tolerance, setTolerance] = createSignal('0')
  const load = createAction(describe)
  const refresh = async () => {
    setCajas((await money<{ data: Caja[] }>('GET', '/api/cajas')).data)
  }
  onMount(() =>
    load.run(async () => {
      const [company] = await Promise.all([money<{ till_tolerance: string }>('GET', '/api/company'), refresh()])
      setTolerance(company.till_tolerance)
    }),
  )
  return (
    <section class="panel" data-testid="cajas-section">
      <h1>Cajas</h1>
      <p class="muted">
        Abra cada caja al empezar el día contando el efectivo, y ciérrela al terminar con otro conteo. Si lo contado no coincide con el saldo, la diferencia se
        registra como una operación «Ajuste de caja», y el saldo queda igual a lo contado. Con la caja cerrada no se puede comprar, vender ni registrar nada en
        ella hasta abrirla de nuevo.
      </p>
      <p class="muted" data-testid="tolerance">
        Tolerancia de la empresa: {formatArs(tolerance())} por moneda.{' '}
        {new Decimal(tolerance()).isZero()
          ? 'Cerrar con cualquier diferencia necesita un supervisor.'
          : 'Cerrar con una diferencia mayor necesita un supervisor.'}
      </p>
      <NoteLine note={load.note()} />
      <Show when={cajas()}>
        {(list) => (
          <Show when={list().length} fallback={<p class="muted">No hay cajas a su alcance. Las cajas se crean en Clientes, como clientes de tipo caja.</p>}>
            <ul class="list" data-testid="cajas">
              <Index each={list()}>{(caja) => <CajaItem caja={caja()} tolerance={tolerance()} onChanged={() => load.run(refresh)} />}</Index>
            </ul>
          </Show>
        )}
      </Show>
    </section>
  )
}

function CajaItem(props: { caja: Caja; tolerance: string; onChanged: () => Promise<boolean> }) {
  const [counting, setCounting] = createSignal<'open' | 'close' | null>(null)
  const [history, setHistory] = createSignal(false)
  const [result, setResult] = createSignal<{ session: TillSession; adjustment: number | null; mode: 'open' | 'close' } | null>(null)
  const operate = () => can('tills.operate')
  const s = () => props.caja.session
  const titleId = `caja-${props.caja.id}-title`
  return (
    <li class="item" data-testid="caja" data-caja={props.caja.id} aria-labelledby={titleId}>
      <div class="item-head">
        <div class="grow">
          <h2 id={titleId} class="caja-name">
            {props.caja.name}{' '}
            <span class={`badge ${props.caja.till === 'open' ? 'ok' : 'off'}`} data-testid="caja-state">
              {props.caja.till === 'open' ? 'Abierta' : props.caja.till === 'closed' ? 'Cerrada' : 'Sin abrir nunca'}
            </span>
          </h2>
          <p class="muted small" data-testid="caja-since">
            <Show when={s()} fallback="Todavía no se abrió: se puede operar en ella sin abrirla, hasta su primera apertura.">
              {(session) => (
                <>
                  {session().status === 'open'
                    ? `Abierta desde el ${when(session().opened_at)} por ${person(session().opened_by, session().opened_by_name)} (sesión ${session().id}).`
                    : `Cerrada el ${when(session().closed_at)} por ${person(session().closed_by, session().closed_by_name)} (sesión ${session().id}). No se puede operar en ella hasta abrirla.`}
                </>
              )}
            </Show>
          </p>
        </div>
        <div class="row">
          <Show when={operate() && !counting()}>
            <Show
              when={props.caja.till === 'open'}
              fallback={
                <button type="button" class="primary" onClick={() => (setResult(null), setCounting('open'))} data-testid="caja-open">
                  Abrir caja
                </button>
              }
            >
              <button type="button" class="primary" onClick={() => (setResult(null), setCounting('close'))} data-testid="caja-close">
                Cerrar caja
              </button>
            </Show>
          </Show>
          <Show when={props.caja.till !== 'never_opened'}>
            <button type="button" aria-expanded={history()} onClick={() => setHistory(!history())} data-testid="caja-history">
              {history() ? 'Ocultar sesiones' : 'Sesiones y reportes'}
            </button>
          </Show>
        </div>
      </div>
      <table class="grid compact balances" data-testid="caja-balances">
        <caption class="visually-hidden">Saldo de {props.caja.name} por moneda</caption>
        <thead>
          <tr>
            <For each={props.caja.accounts}>
              {(a) => (
                <th scope="col" class="num">
                  {a.currency}
                </th>
              )}
            </For>
          </tr>
        </thead>
        <tbody>
          <tr>
            <For each={props.caja.accounts}>{(a) => <td class="num">{formatArs(a.balance)}</td>}</For>
          </tr>
        </tbody>
      </table>
      <Show when={result()}>{(r) => <Outcome {...r()} />}</Show>
      <Show when={counting()}>
        {(mode) => (
          <CountForm
            caja={props.caja}
            mode={mode()}
            tolerance={props.tolerance}
            onCancel={() => setCounting(null)}
            onDone={async (session, adjustment) => {
              // Read before the form goes: its accessor is stale once `counting` is cleared.
              const done = mode()
              setCounting(null)
              await props.onChanged()
              setResult(session ? { session, adjustment, mode: done } : null)
            }}
          />
        )}
      </Show>
      <Show when={history()}>
        <Sessions caja={props.caja} />
      </Show>
    </li>
  )
}

/** What an open or close did, in words, right under the caja. */
function Outcome(props: { session: TillSession; adjustment: number | null; mode: 'open' | 'close' }) {
  const rows = () => (props.mode === 'open' ? props.session.opening : (props.session.closing ?? []))
  const differing = () => rows().filter((r) => !new Decimal(r.difference).isZero())
  return (
    <div class="note info" role="status" data-testid="caja-outcome">
      <p>
        {props.mode === 'open' ? `Caja abierta (sesión ${props.session.id}).` : `Caja cerrada (sesión ${props.session.id}).`}{' '}
        {props.adjustment === null
          ? 'Todo coincidió: no hubo ajuste.'
          : `Diferencias registradas en la operación de ajuste N.º ${props.adjustment}: ${differing()
              .map((r) => `${r.currency} ${signed(r.difference)}`)
              .join(', ')}.`}
      </p>
      <Show when={props.mode === 'close'}>
        <p>
          Reporte del día:{' '}
          <a href={`/api/till-sessions/${props.session.id}/report?format=pdf`} target="_blank" rel="noopener">
            PDF
          </a>{' '}
          ·{' '}
          <a href={`/api/till-sessions/${props.session.id}/report?format=csv`} download={`caja-${props.session.caja_id}-sesion-${props.session.id}.csv`}>
            CSV
          </a>
        </p>
      </Show>
    </div>
  )
}

interface Line {
  currency: string
  text: string
  byNotes: boolean
  notes: Record<string, string>
}

/** A count by denomination as the API takes it, and its exact total; null while a quantity is not a whole number. */
function notesOf(line: Line): { total: string; denominations: { value: string; count: number }[] } | null {
  const list = DENOMINATIONS[line.currency.toUpperCase()]
  if (!list) return null
  let total = new Decimal(0)
  const denominations: { value: string; count: number }[] = []
  for (const [kind, values] of [['b', list.bills], ['m', list.coins]] as const)
    for (const value of values) {
      const raw = (line.notes[`${kind}${value}`] ?? '').trim()
      if (raw === '') continue
      if (!/^\d{1,7}$/.test(raw)) return null
      const count = Number(raw)
      if (count === 0) continue
      total = total.plus(new Decimal(value).times(count))
      denominations.push({ value, count })
    }
  return { total: total.toFixed(), denominations }
}

/**
 * The count form: one line per currency of the caja (the total typed, or counted by bills and coins, which fills it),
 * then the differences against the balances as they are now, in words, before anything is sent; then the
 * confirmation, with one Idempotency-Key per fill so a double click opens or closes once.
 */
function CountForm(props: { caja: Caja; mode: 'open' | 'close'; tolerance: string; onCancel: () => void; onDone: (session: TillSession | null, adjustment: number | null) => void }) {
  const currencies = [...new Set(props.caja.accounts.map((a) => a.currency))]
  const [lines, setLines] = createStore<Line[]>(currencies.map((currency) => ({ currency, text: '', byNotes: false, notes: {} })))
  const [errors, setErrors] = createStore<Record<string, string | undefined>>({})
  const [note, setNote] = createSignal('')
  const [review, setReview] = createSignal<{ rows: CountRow[] } | null>(null)
  const action = createAction(describe)
  const fill = createFill()
  const verb = props.mode === 'open' ? 'apertura' : 'cierre'
  const formId = `count-${props.caja.id}`
  // Enter on the differences confirms: the button takes the focus once they show («Volver a contar» when it cannot).
  let confirmButton: HTMLButtonElement | undefined
  let againButton: HTMLButtonElement | undefined

  const totalOf = (i: number) => {
    const line = lines[i]
    if (line.byNotes) return notesOf(line)?.total ?? null
    const parsed = parseArs(line.text)
    return parsed.ok ? parsed.value : null
  }

  const check = () => {
    const found: Record<string, string | undefined> = {}
    lines.forEach((line, i) => {
      if (line.byNotes) {
        if (!notesOf(line)) found[line.currency] = 'Las cantidades de billetes y monedas son números enteros, por ejemplo 12.'
        return
      }
      const parsed = parseArs(line.text)
      if (!parsed.ok) found[line.currency] = parsed.message === 'Falta el valor.' ? `Escriba cuánto contó en ${line.currency} (0 si no hay).` : parsed.message
      else if (totalOf(i) === null) found[line.currency] = 'Revise el importe.'
    })
    setErrors(found)
    return Object.values(found).every((v) => !v)
  }

  const counted = () =>
    lines.map((line, i) => {
      const notes = line.byNotes ? notesOf(line) : null
      return { currency: line.currency, amount: totalOf(i)!, ...(notes && notes.denominations.length && { denominations: notes.denominations }) }
    })

  /** The differences against the balances read now, so what is confirmed is what the caja holds at this moment. */
  const toReview = (e: Event) => {
    e.preventDefault()
    if (!check()) return action.setNote({ kind: 'error', text: 'Hay conteos para corregir; no se envió nada.' })
    void action.run(async () => {
      const now = (await money<{ data: Caja[] }>('GET', '/api/cajas')).data.find((c) => c.id === props.caja.id)
      if (!now) throw new ApiFailure(404, 'NOT_FOUND', 'caja')
      const count = counted()
      const rows = currencies.map((currency) => {
        const expected = now.accounts.filter((a) => a.currency === currency).reduce((s, a) => s.plus(a.balance), new Decimal(0))
        const amount = count.find((c) => c.currency === currency)!.amount
        return { currency, expected: expected.toFixed(), counted: amount, difference: new Decimal(amount).minus(expected).toFixed() }
      })
      setReview({ rows })
    }).then((shown) => shown && (blocked() ? againButton : confirmButton)?.focus())
  }

  const differing = createMemo(() => (review()?.rows ?? []).filter((r) => !new Decimal(r.difference).isZero()))
  const over = createMemo(() => (props.mode === 'close' ? differing().filter((r) => new Decimal(r.difference).abs().gt(props.tolerance)) : []))
  const blocked = () => over().length > 0 && !can('tills.supervise')

  const confirm = () => {
    const body = { counted: counted(), ...(props.mode === 'close' && note().trim() && { note: note().trim() }) }
    void action.run(async () => {
      try {
        const answer = await money<TillSession & { adjustment_operation_id: number | null }>('POST', `/api/cajas/${props.caja.id}/${props.mode}`, body, fill.headers(body))
        fill.done()
        props.onDone(answer, answer.adjustment_operation_id)
      } catch (err) {
        if (err instanceof ApiFailure && (err.code === 'TILL_OPEN' || err.code === 'TILL_NOT_OPEN')) {
          props.onDone(null, null)
          throw err
        }
        if (err instanceof ApiFailure && err.code === 'VALIDATION_ERROR') {
          // The API names each line it refused (`counted.N.…`), or the currency it missed (a caja that gained one).
          setReview(null)
          for (const d of err.details) {
            const index = /^counted\.(\d+)/.exec(d.field ?? '')?.[1]
            const currency = index !== undefined ? currencies[Number(index)] : currencies.find((c) => d.message?.startsWith(`${c} `))
            if (currency) setErrors(currency, d.message)
          }
        }
        throw err
      }
    })
  }

  return (
    <form class="sub stack count-form" id={formId} onSubmit={toReview} aria-label={`Conteo de ${verb} de ${props.caja.name}`} data-testid="count-form" novalidate>
      <h3>{props.mode === 'open' ? 'Conteo de apertura' : 'Conteo de cierre'}</h3>
      <p class="muted small">
        Cuente el efectivo de cada moneda y escriba el total (con coma para los decimales, por ejemplo 1.165,50), o cuéntelo por billetes y monedas y el total se
        completa solo.
      </p>
      <table class="grid count" data-testid="count-lines">
        <caption class="visually-hidden">Lo contado por moneda</caption>
        <thead>
          <tr>
            <th scope="col">Moneda</th>
            <th scope="col">Contado</th>
            <th scope="col">Por billetes y monedas</th>
          </tr>
        </thead>
        <tbody>
          <Index each={lines}>
            {(line, i) => {
              const list = DENOMINATIONS[line().currency.toUpperCase()]
              const inputId = `${formId}-${line().currency}`
              const errorId = `${inputId}-error`
              return (
                <tr data-testid="count-line" data-currency={line().currency}>
                  <th scope="row">
                    <label for={inputId}>{line().currency}</label>
                  </th>
                  <td>
                    <input
                      id={inputId}
                      class="money"
                      name={`counted-${line().currency}`}
                      inputmode="decimal"
                      autocomplete="off"
                      ref={(el) => i === 0 && queueMicrotask(() => el.focus())}
                      readOnly={line().byNotes}
                      aria-invalid={errors[line().currency] ? 'true' : undefined}
                      aria-describedby={errors[line().currency] ? errorId : undefined}
                      value={line().byNotes ? formatArs(totalOf(i) ?? '0') : line().text}
                      onInput={(e) => (setLines(i, 'text', e.currentTarget.value), setErrors(line().currency, undefined), setReview(null))}
                      data-testid="count-amount"
                    />
                    <span id={errorId}>
                      <FieldError text={errors[line().currency]} testid="count-error" />
                    </span>
                  </td>
                  <td>
                    <Show when={list} fallback={<span class="muted small">Sin lista de billetes para {line().currency}: escriba el total.</span>}>
                      {(known) => (
                        <>
                          <label class="check">
                            <input
                              type="checkbox"
                              class="box"
                              checked={line().byNotes}
                              onChange={(e) => (setLines(i, 'byNotes', e.currentTarget.checked), setErrors(line().currency, undefined), setReview(null))}
                              data-testid="count-by-notes"
                            />
                            Contar por billetes y monedas
                          </label>
                          <Show when={line().byNotes}>
                            <fieldset class="notes" data-testid="notes">
                              <legend>Cantidad de cada billete y moneda de {line().currency}</legend>
                              <For each={[...known().bills.map((v) => ['b', v] as const), ...known().coins.map((v) => ['m', v] as const)]}>
                                {([kind, value]) => (
                                  <label class="note-count">
                                    <span>
                                      {kind === 'b' ? 'Billete' : 'Moneda'} {formatArs(value).replace(/,00$/, '')}
                                    </span>
                                    <input
                                      inputmode="numeric"
                                      autocomplete="off"
                                      value={line().notes[`${kind}${value}`] ?? ''}
                                      onInput={(e) => (setLines(i, 'notes', `${kind}${value}`, e.currentTarget.value), setErrors(line().currency, undefined), setReview(null))}
                                      data-testid={`note-${kind}${value}`}
                                    />
                                  </label>
                                )}
                              </For>
                            </fieldset>
                          </Show>
                        </>
                      )}
                    </Show>
                  </td>
                </tr>
              )
            }}
          </Index>
        </tbody>
      </table>
      <Show when={props.mode === 'close'}>
        <label>
          Nota para el reporte (opcional)
          <textarea name="note" rows="2" maxlength="2000" value={note()} onInput={(e) => setNote(e.currentTarget.value)} data-testid="count-note" />
        </label>
      </Show>
      <NoteLine note={action.note()} testid="count-message" />
      <Show
        when={review()}
        fallback={
          <div class="row">
            <button type="submit" class="primary" disabled={action.busy()} data-testid="count-review">
              Ver diferencias
            </button>
            <button type="button" onClick={props.onCancel}>
              Cancelar
            </button>
          </div>
        }
      >
        {(r) => (
          <div class="review stack" data-testid="count-review-panel">
            <table class="grid" data-testid="review-table">
              <caption>Diferencias contra el saldo de este momento</caption>
              <thead>
                <tr>
                  <th scope="col">Moneda</th>
                  <th scope="col" class="num">Saldo esperado</th>
                  <th scope="col" class="num">Contado</th>
                  <th scope="col" class="num">Diferencia</th>
                </tr>
              </thead>
              <tbody>
                <For each={r().rows}>
                  {(row) => (
                    <tr data-testid="review-row" data-currency={row.currency} classList={{ differs: !new Decimal(row.difference).isZero() }}>
                      <th scope="row">{row.currency}</th>
                      <td class="num">{formatArs(row.expected)}</td>
                      <td class="num">{formatArs(row.counted)}</td>
                      <td class="num" data-testid="review-difference">
                        {new Decimal(row.difference).isZero() ? '0,00' : signed(row.difference)}
                      </td>
                    </tr>
                  )}
                </For>
              </tbody>
            </table>
            <p data-testid="review-words">
              {differing().length === 0
                ? `Todo coincide: la ${verb} no registra ningún ajuste.`
                : `Se registrará una operación «Ajuste de caja» para que el saldo quede igual a lo contado: ${differing()
                    .map((d) => `${new Decimal(d.difference).isNegative() ? 'faltan' : 'sobran'} ${formatArs(new Decimal(d.difference).abs().toFixed())} ${d.currency}`)
                    .join(', ')}.`}
            </p>
            <Show when={over().length}>
              <p class={blocked() ? 'warning' : 'notice'} role={blocked() ? 'alert' : undefined} data-testid="review-supervisor">
                {over().length === 1 ? 'La diferencia en ' : 'Las diferencias en '}
                {over()
                  .map((d) => d.currency)
                  .join(', ')}{' '}
                {over().length === 1 ? 'supera' : 'superan'} la tolerancia de la empresa ({formatArs(props.tolerance)}).{' '}
                {blocked()
                  ? 'Cerrar así necesita un supervisor (permiso «Supervisar cajas»), y su usuario no lo tiene: cuente de nuevo, o pida a un supervisor que cierre la caja.'
                  : 'Usted es supervisor: al confirmar, el cierre queda registrado a su nombre con esta diferencia.'}
              </p>
            </Show>
            <div class="row">
              <button type="button" class="primary" disabled={action.busy() || blocked()} onClick={confirm} ref={confirmButton} data-testid="count-confirm">
                {props.mode === 'open' ? 'Confirmar apertura' : 'Confirmar cierre'}
              </button>
              <button type="button" ref={againButton} onClick={() => setReview(null)} data-testid="count-again">
                Volver a contar
              </button>
              <button type="button" onClick={props.onCancel}>
                Cancelar
              </button>
            </div>
          </div>
        )}
      </Show>
    </form>
  )
}

const PAGE = 10

/** The caja's sessions, newest first, each with its report (shown here, or as CSV and PDF). */
function Sessions(props: { caja: Caja }) {
  const [page, setPage] = createSignal(1)
  const [list, setList] = createSignal<{ data: TillSession[]; pagination: { total: number; totalPages: number } } | null>(null)
  const [shown, setShown] = createSignal<number | null>(null)
  const action = createAction(describe)
  const load = (p: number) =>
    action.run(async () => {
      setList(await money('GET', `/api/cajas/${props.caja.id}/sessions?page=${p}&pageSize=${PAGE}`))
      setPage(p)
    })
  onMount(() => load(1))
  const differences = (s: TillSession) => {
    const parts = [...s.opening.map((r) => ({ r, at: 'apertura' })), ...(s.closing ?? []).map((r) => ({ r, at: 'cierre' }))]
      .filter(({ r }) => !new Decimal(r.difference).isZero())
      .map(({ r, at }) => `${at}: ${r.currency} ${signed(r.difference)}`)
    return parts.length ? parts.join('; ') : 'Sin diferencias'
  }
  return (
    <section class="sessions" aria-label={`Sesiones de ${props.caja.name}`} data-testid="sessions">
      <NoteLine note={action.note()} />
      <Show when={list()}>
        {(l) => (
          <>
            <table class="grid compact" data-testid="sessions-table">
              <caption class="visually-hidden">Sesiones de {props.caja.name}, la más reciente primero</caption>
              <thead>
                <tr>
                  <th scope="col">Sesión</th>
                  <th scope="col">Apertura</th>
                  <th scope="col">Cierre</th>
                  <th scope="col">Diferencias</th>
                  <th scope="col">Reporte</th>
                </tr>
              </thead>
              <tbody>
                <For each={l().data}>
                  {(s) => (
                    <tr data-testid="session-row" data-session={s.id}>
                      <th scope="row">{s.id}</th>
                      <td>
                        {when(s.opened_at)}
                        <br />
                        <span class="muted small">{person(s.opened_by, s.opened_by_name)}</span>
                      </td>
                      <td>
                        <Show when={s.closed_at} fallback={<span class="badge ok">Abierta</span>}>
                          {when(s.closed_at)}
                          <br />
                          <span class="muted small">{person(s.closed_by, s.closed_by_name)}</span>
                        </Show>
                      </td>
                      <td>{differences(s)}</td>
                      <td class="report-links">
                        <button type="button" class="link" aria-expanded={shown() === s.id} onClick={() => setShown(shown() === s.id ? null : s.id)} data-testid="session-show">
                          {shown() === s.id ? 'Ocultar' : 'Ver'}
                        </button>
                        <a href={`/api/till-sessions/${s.id}/report?format=pdf`} target="_blank" rel="noopener" data-testid="session-pdf">
                          PDF
                        </a>
                        <a href={`/api/till-sessions/${s.id}/report?format=csv`} download={`caja-${s.caja_id}-sesion-${s.id}.csv`} data-testid="session-csv">
                          CSV
                        </a>
                      </td>
                    </tr>
                  )}
                </For>
              </tbody>
            </table>
            <Show when={l().pagination.totalPages > 1}>
              <div class="row">
                <button type="button" disabled={page() <= 1 || action.busy()} onClick={() => load(page() - 1)}>
                  Más recientes
                </button>
                <span class="muted">
                  Página {page()} de {l().pagination.totalPages}
                </span>
                <button type="button" disabled={page() >= l().pagination.totalPages || action.busy()} onClick={() => load(page() + 1)}>
                  Anteriores
                </button>
              </div>
            </Show>
            <Show when={shown()}>{(id) => <ReportView id={id()} />}</Show>
          </>
        )}
      </Show>
    </section>
  )
}

/** A session's day report as the API's JSON gives it: in tables, and the JSON itself for whoever needs it. */
function ReportView(props: { id: number }) {
  const [report, setReport] = createSignal<Report | null>(null)
  const action = createAction(describe)
  onMount(() => action.run(async () => void setReport(await money<Report>('GET', `/api/till-sessions/${props.id}/report`))))
  const currencies = () => report()?.movements.map((m) => m.currency) ?? []
  return (
    <section class="report sub" aria-label={`Reporte de la sesión ${props.id}`} data-testid="report">
      <NoteLine note={action.note()} />
      <Show when={report()}>
        {(r) => (
          <>
            <h3>
              Reporte de la sesión {r().session.id}
              {r().session.status === 'open' ? ' (parcial: la caja sigue abierta)' : ''}
            </h3>
            <Show when={r().session.note}>
              <p>Nota del cierre: {r().session.note}</p>
            </Show>
            <table class="grid compact" data-testid="report-operations">
              <caption>Operaciones de la sesión</caption>
              <thead>
                <tr>
                  <th scope="col">Hora</th>
                  <th scope="col">Operación</th>
                  <th scope="col">Boleto</th>
                  <th scope="col">Detalle</th>
                  <th scope="col">Estado</th>
                  <For each={currencies()}>
                    {(c) => (
                      <th scope="col" class="num">
                        {c}
                      </th>
                    )}
                  </For>
                </tr>
              </thead>
              <tbody>
                <For each={r().operations} fallback={<tr><td colspan={5 + currencies().length}>Ninguna operación en esta sesión.</td></tr>}>
                  {(o) => (
                    <tr data-testid="report-operation">
                      <td>{when(o.at).split(' ')[1]}</td>
                      <td>
                        <a href={`/manage/operaciones/${o.operation_id}`}>{o.operation_id}</a>
                      </td>
                      <td class="nowrap">{o.receipt_number ?? '—'}</td>
                      <td>
                        {o.type}: {o.description}
                        {o.client ? ` (${o.client.name})` : ''}
                      </td>
                      <td>
                        {STATUS[o.status]} ({o.events.map((e) => EVENTS[e.event]).join(', ')})
                      </td>
                      <For each={currencies()}>
                        {(c) => {
                          const m = o.movements.find((x) => x.currency === c)
                          return <td class="num">{m ? signed(m.amount) : ''}</td>
                        }}
                      </For>
                    </tr>
                  )}
                </For>
              </tbody>
            </table>
            <table class="grid compact" data-testid="report-summary">
              <caption>Resumen</caption>
              <thead>
                <tr>
                  <th scope="col">Moneda</th>
                  <th scope="col" class="num">Compras</th>
                  <th scope="col" class="num">Ventas</th>
                  <th scope="col" class="num">Operaciones</th>
                  <th scope="col" class="num">Comisiones</th>
                  <th scope="col" class="num">Movimiento neto</th>
                  <th scope="col" class="num">Apertura contada</th>
                  <th scope="col" class="num">Cierre contado</th>
                </tr>
              </thead>
              <tbody>
                <For each={r().summary}>
                  {(s) => (
                    <tr data-testid="report-summary-row" data-currency={s.currency}>
                      <th scope="row">{s.currency}</th>
                      <td class="num">{formatArs(s.bought)}</td>
                      <td class="num">{formatArs(s.sold)}</td>
                      <td class="num">{s.operations}</td>
                      <td class="num">{formatArs(s.commissions)}</td>
                      <td class="num">{signed(r().movements.find((m) => m.currency === s.currency)?.amount ?? '0')}</td>
                      <td class="num">{formatArs(r().opening.find((o) => o.currency === s.currency)?.counted ?? '0')}</td>
                      <td class="num">{r().closing ? formatArs(r().closing!.find((o) => o.currency === s.currency)?.counted ?? '0') : '—'}</td>
                    </tr>
                  )}
                </For>
              </tbody>
            </table>
            <p data-testid="report-differences">
              {r().differences.length
                ? `Diferencias: ${r()
                    .differences.map((d) => `${d.moment === 'opening' ? 'apertura' : 'cierre'} ${d.currency} ${signed(d.difference)} (ajuste N.º ${d.adjustment_operation_id})`)
                    .join('; ')}.`
                : 'Sin diferencias en la apertura ni en el cierre.'}
            </p>
            <details>
              <summary>Ver el reporte como JSON</summary>
              <pre class="json" data-testid="report-json">
                {JSON.stringify(r(), null, 2)}
              </pre>
            </details>
          </>
        )}
      </Show>
    </section>
  )
}
