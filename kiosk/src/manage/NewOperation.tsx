import { A } from '@solidjs/router'
import Decimal from 'decimal.js'
import { createMemo, createSignal, For, onMount, Show } from 'solid-js'
import { createStore, produce } from 'solid-js/store'
import { api, ApiFailure, explain, money, type Session } from './api'
import { formatArs, parseArs, type Parsed } from './decimal'
import { createFill, FieldError } from './forms'
import { allCajas, type Client, type Operation, type OperationType } from './ledger'
import { accountLabel, ClientPicker } from './pickers'
import { can, companyId, session, setSession } from './session'
import { NoteLine, type Note } from './ui'

/** The peso: the leg a purchase pays out and a sale takes in. */
const LOCAL = 'ARS'
/** numeric(28,6): 22 integer digits and 6 decimals (contract §1). */
const LIMIT = new Decimal('1e22')

interface TransactionType {
  id: number
  name: string
  is_commission: boolean
}

interface Leg {
  account_id: number
  amount: string
  transaction_type_id?: number
  description?: string
}

/** A value that fits numeric(28,6) exactly, or the words saying why not. */
function fits(value: string): Parsed {
  const d = new Decimal(value)
  if (d.abs().gte(LIMIT)) return { ok: false, message: 'El importe supera el máximo que se puede registrar (22 cifras enteras y 6 decimales).' }
  if (d.decimalPlaces() > 6) return { ok: false, message: `El resultado (${formatArs(d.toFixed())}) tiene más de 6 decimales: ajuste el importe o la cotización.` }
  if (d.isZero()) return { ok: false, message: 'El importe no puede ser cero.' }
  return { ok: true, value: d.toFixed() }
}

/** es-AR text with an optional leading minus: a generic leg debits with a negative amount (contract §3). */
function parseSigned(input: string): Parsed {
  const text = input.trim()
  const negative = text.startsWith('-')
  const parsed = parseArs(negative ? text.slice(1) : text)
  if (!parsed.ok) return parsed
  return fits(negative ? `-${parsed.value}` : parsed.value)
}

/**
 * Sends one operation with the fill's Idempotency-Key, so a double click or a retry after a network failure makes
 * one operation (contract §1). A 401 does not end the session here: the form keeps its data, asks for the password
 * and sends the same body again, which the fill gives the same key.
 */
function createSender(onCreated: (op: Operation) => void) {
  const [busy, setBusy] = createSignal(false)
  const [note, setNote] = createSignal<Note | null>(null)
  const [expired, setExpired] = createSignal(false)
  const fill = createFill()
  let pending: unknown = null
  const send = async (body: unknown) => {
    if (busy()) return
    pending = body
    setBusy(true)
    setNote(null)
    try {
      const op = await money<Operation>('POST', '/api/operations', body, fill.headers(body))
      fill.done()
      pending = null
      onCreated(op)
      setNote({ kind: 'info', text: `Operación ${op.id} registrada (pendiente de aprobación salvo que se indique otra cosa).` })
    } catch (e) {
      if (e instanceof ApiFailure && e.status === 401) setExpired(true)
      else setNote({ kind: 'error', text: describe(e) })
    } finally {
      setBusy(false)
    }
  }
  /** After signing in again: the same body, so the same key. */
  const resume = async () => {
    setExpired(false)
    if (pending !== null) await send(pending)
  }
  return { busy, note, setNote, expired, send, resume }
}

function describe(e: unknown): string {
  if (e instanceof ApiFailure)
    switch (e.code) {
      case 'AMOUNT_OUT_OF_RANGE':
        return 'Un saldo quedaría fuera del máximo que se puede registrar (22 cifras enteras y 6 decimales).'
      case 'UNKNOWN_ACCOUNT':
        return 'Una de las cuentas ya no existe. Actualice la página.'
      case 'UNKNOWN_CLIENT':
        return 'El cliente ya no existe. Actualice la página.'
      case 'IDEMPOTENCY_KEY_REUSED':
        return 'Este formulario ya se envió con otros datos. Vuelva a enviarlo.'
    }
  return explain(e)
}

/** Asks for the password again inside the form, so nothing typed is lost. */
function SignInAgain(props: { onDone: () => void }) {
  const [password, setPassword] = createSignal('')
  const [error, setError] = createSignal<string | null>(null)
  const submit = async (e: Event) => {
    e.preventDefault()
    try {
      const s = await api<Session>('POST', '/api/sessions', { company_id: Number(companyId()), email: session()?.employee.email ?? '', password: password() })
      setSession(s)
      setPassword('')
      props.onDone()
    } catch (err) {
      setError(err instanceof ApiFailure && err.code === 'UNAUTHORIZED' ? 'Contraseña incorrecta.' : explain(err))
    }
  }
  return (
    <form class="card-lite stack" onSubmit={submit} role="group" aria-label="Ingresar de nuevo" data-testid="signin-again">
      <p class="notice" role="alert">
        La sesión terminó. Los datos del formulario se conservan: ingrese su contraseña y se enviará.
      </p>
      <label>
        Contraseña de {session()?.employee.email}
        <input type="password" name="password" autocomplete="current-password" ref={(el) => queueMicrotask(() => el.focus())} value={password()} onInput={(e) => setPassword(e.currentTarget.value)} required />
      </label>
      <Show when={error()}>
        <p class="error" role="alert">
          {error()}
        </p>
      </Show>
      <button type="submit" class="primary">
        Ingresar y enviar
      </button>
    </form>
  )
}

export function NewOperation() {
  const [boxes, setBoxes] = createSignal<Client[]>([])
  const [types, setTypes] = createSignal<OperationType[]>([])
  const [txTypes, setTxTypes] = createSignal<TransactionType[]>([])
  const [loadNote, setLoadNote] = createSignal<Note | null>(null)
  const [created, setCreated] = createSignal<Operation | null>(null)
  // Every caja (a branch has a few); customers are picked by a search, never read whole.
  onMount(async () => {
    try {
      const [c, t, tt] = await Promise.all([
        can('clients.view') ? allCajas() : Promise.resolve([]),
        money<{ data: OperationType[] }>('GET', '/api/operation-types').then((b) => b.data),
        money<{ data: TransactionType[] }>('GET', '/api/transaction-types').then((b) => b.data),
      ])
      setBoxes(c)
      setTypes(t)
      setTxTypes(tt)
    } catch (e) {
      setLoadNote({ kind: 'error', text: explain(e) })
    }
  })
  return (
    <section class="panel" data-testid="new-operation-section">
      <h1>Nueva operación</h1>
      <NoteLine note={loadNote()} />
      <Show when={can('clients.view')} fallback={<p class="notice">Para elegir cajas y cuentas su usuario necesita el permiso de ver clientes (clients.view).</p>}>
        <Show when={created()}>
          {(op) => (
            <p class="note info" role="status" data-testid="created">
              Última registrada: <A href={`/operaciones/${op().id}`}>operación {op().id}</A>
            </p>
          )}
        </Show>
        <Exchange boxes={boxes()} types={types()} txTypes={txTypes()} onCreated={setCreated} />
        <Generic boxes={boxes()} types={types()} onCreated={setCreated} />
      </Show>
    </section>
  )
}

function Exchange(props: { boxes: Client[]; types: OperationType[]; txTypes: TransactionType[]; onCreated: (op: Operation) => void }) {
  const sender = createSender(props.onCreated)
  const [side, setSide] = createSignal<'buy' | 'sell'>('buy')
  const [boxId, setBoxId] = createSignal('')
  const [currency, setCurrency] = createSignal('')
  const [amount, setAmount] = createSignal('')
  const [rate, setRate] = createSignal('')
  const [commission, setCommission] = createSignal('')
  const [commissionType, setCommissionType] = createSignal('')
  const [typeId, setTypeId] = createSignal('')
  const [clientId, setClientId] = createSignal<number | null>(null)
  const [errors, setErrors] = createStore<Record<string, string>>({})
  /** An edit takes away the message of the field it fixes (a changed body is a new fill by itself). */
  const touch = <T,>(set: (v: T) => void, field?: string) => (v: T) => {
    set(v)
    if (field && errors[field]) setErrors(field, undefined!)
    if (sender.note()?.kind === 'error') sender.setNote(null)
  }

  const box = () => props.boxes.find((b) => String(b.id) === (boxId() || String(props.boxes[0]?.id ?? '')))
  const foreign = () => (box()?.accounts ?? []).filter((a) => a.currency_name !== LOCAL)
  const chosenCurrency = () => currency() || foreign()[0]?.currency_name || ''
  const exchangeTypes = () => props.types.filter((t) => t.kind === 'exchange')
  const commissionTypes = () => props.txTypes.filter((t) => t.is_commission)

  /** Both legs from the typed text, exactly: pesos = amount × rate with decimal.js, no float anywhere. */
  const legs = createMemo(() => {
    const a = parseArs(amount())
    const r = parseArs(rate())
    if (!a.ok || !r.ok) return null
    const local = fits(new Decimal(a.value).times(r.value).toFixed())
    const foreignLeg = fits(a.value)
    if (!local.ok || !foreignLeg.ok) return null
    return side() === 'buy' ? { foreign: foreignLeg.value, local: `-${local.value}` } : { foreign: `-${foreignLeg.value}`, local: local.value }
  })

  const submit = (e: Event) => {
    e.preventDefault()
    const found: Record<string, string> = {}
    const b = box()
    const usd = b?.accounts.find((x) => x.currency_name === chosenCurrency())
    const ars = b?.accounts.find((x) => x.currency_name === LOCAL)
    if (!b) found.box = 'Elija una caja.'
    else if (!usd) found.currency = 'La caja no tiene cuenta en esa moneda.'
    else if (!ars) found.box = `La caja no tiene cuenta en ${LOCAL}.`
    const a = parseArs(amount())
    const r = parseArs(rate())
    if (!a.ok) found.amount = a.message
    else if (!fits(a.value).ok) found.amount = (fits(a.value) as { message: string }).message
    if (!r.ok) found.rate = r.message
    else if (new Decimal(r.value).isZero()) found.rate = 'La cotización no puede ser cero.'
    if (a.ok && r.ok && !found.amount && !found.rate) {
      const local = fits(new Decimal(a.value).times(r.value).toFixed())
      if (!local.ok) found.rate = local.message
    }
    let fee: Parsed | null = null
    if (commission().trim()) {
      fee = parseArs(commission())
      if (!fee.ok) found.commission = fee.message
      else if (!fits(fee.value).ok) found.commission = (fits(fee.value) as { message: string }).message
      else if (!commissionTypes().length) found.commission = 'No hay un tipo de movimiento de comisión; pida que se cree uno.'
    }
    const opType = typeId() || String(exchangeTypes()[0]?.id ?? props.types[0]?.id ?? '')
    if (!opType) found.type = 'No hay tipos de operación; pida que se cree uno.'
    setErrors(produce((s) => {
      for (const k of Object.keys(s)) delete s[k]
      Object.assign(s, found)
    }))
    if (Object.keys(found).length) return sender.setNote({ kind: 'error', text: 'Hay datos para corregir; no se envió nada.' })
    const l = legs()!
    const transactions: Leg[] = [
      { account_id: usd!.id, amount: l.foreign },
      { account_id: ars!.id, amount: l.local },
    ]
    // The customer pays the commission in pesos into the same caja.
    if (fee?.ok) transactions.push({ account_id: ars!.id, amount: fee.value, transaction_type_id: Number(commissionType() || commissionTypes()[0].id), description: 'Comisión' })
    void sender.send({ operation_type_id: Number(opType), client_id: clientId(), transactions })
  }

  const err = (k: string) => <FieldError testid={`error-${k}`} text={errors[k]} />

  return (
    <form class="sub stack" onSubmit={submit} aria-labelledby="fx-title" data-testid="fx-form" novalidate>
      <h2 id="fx-title">Compra y venta de moneda</h2>
      <fieldset class="row">
        <legend>Operación</legend>
        <label class="choice">
          <input type="radio" name="side" value="buy" checked={side() === 'buy'} onChange={() => touch(setSide)('buy')} /> Compra (la casa recibe la moneda)
        </label>
        <label class="choice">
          <input type="radio" name="side" value="sell" checked={side() === 'sell'} onChange={() => touch(setSide)('sell')} /> Venta (la casa entrega la moneda)
        </label>
      </fieldset>
      <div class="row">
        <label>
          Caja
          <select name="box" value={boxId()} onChange={(e) => touch(setBoxId, 'box')(e.currentTarget.value)}>
            <For each={props.boxes}>{(b) => <option value={String(b.id)}>{b.name}</option>}</For>
          </select>
          {err('box')}
        </label>
        <label>
          Moneda
          <select name="currency" value={chosenCurrency()} onChange={(e) => touch(setCurrency, 'currency')(e.currentTarget.value)}>
            <For each={foreign()}>{(a) => <option value={a.currency_name}>{a.currency_name}</option>}</For>
          </select>
          {err('currency')}
        </label>
        <label>
          Tipo
          <select name="type" value={typeId()} onChange={(e) => touch(setTypeId, 'type')(e.currentTarget.value)}>
            <For each={exchangeTypes().length ? exchangeTypes() : props.types}>{(t) => <option value={String(t.id)}>{t.name}</option>}</For>
          </select>
          {err('type')}
        </label>
      </div>
      <ClientPicker label="Cliente" name="client" type={1} value={clientId()} optional="Sin cliente (mostrador)" onChange={(c) => touch(setClientId)(c?.id ?? null)} />
      <div class="row">
        <label>
          Importe en {chosenCurrency() || 'moneda'}
          <input name="amount" class="money" aria-invalid={errors.amount ? 'true' : undefined} inputmode="decimal" value={amount()} onInput={(e) => touch(setAmount, 'amount')(e.currentTarget.value)} placeholder="1.000,00" />
          {err('amount')}
        </label>
        <label>
          Cotización ({LOCAL} por unidad)
          <input name="rate" class="money" aria-invalid={errors.rate ? 'true' : undefined} inputmode="decimal" value={rate()} onInput={(e) => touch(setRate, 'rate')(e.currentTarget.value)} placeholder="1.165,50" />
          {err('rate')}
        </label>
        <label>
          Comisión en {LOCAL} (opcional)
          <input name="commission" class="money" aria-invalid={errors.commission ? 'true' : undefined} inputmode="decimal" value={commission()} onInput={(e) => touch(setCommission, 'commission')(e.currentTarget.value)} />
          {err('commission')}
        </label>
        <Show when={commissionTypes().length > 1}>
          <label>
            Tipo de comisión
            <select name="commission-type" value={commissionType()} onChange={(e) => touch(setCommissionType)(e.currentTarget.value)}>
              <For each={commissionTypes()}>{(t) => <option value={String(t.id)}>{t.name}</option>}</For>
            </select>
          </label>
        </Show>
      </div>
      <Show when={legs()}>
        {(l) => (
          <p class="muted" data-testid="fx-legs" aria-live="polite">
            La caja {side() === 'buy' ? 'recibe' : 'entrega'} {chosenCurrency()} {formatArs(l().foreign.replace('-', ''))} y {side() === 'buy' ? 'paga' : 'cobra'} {LOCAL}{' '}
            {formatArs(l().local.replace('-', ''))}.
          </p>
        )}
      </Show>
      <Show when={sender.expired()}>
        <SignInAgain onDone={() => void sender.resume()} />
      </Show>
      <div class="row">
        <button type="submit" class="primary" disabled={sender.busy()} data-testid="fx-submit">
          {sender.busy() ? 'Enviando…' : 'Registrar'}
        </button>
      </div>
      <NoteLine note={sender.note()} testid="fx-message" />
    </form>
  )
}

let nextLeg = 1

/**
 * Any operation, leg by leg. The legs move the cajas' accounts, the accounts of the operation's client and those of
 * any other client added below the legs: each client is found with a search, so a company of 50,000 clients lists
 * only the accounts in play.
 */
function Generic(props: { boxes: Client[]; types: OperationType[]; onCreated: (op: Operation) => void }) {
  const sender = createSender(props.onCreated)
  const [rows, setRows] = createStore<{ key: number; account: string; amount: string; error?: string }[]>([
    { key: nextLeg++, account: '', amount: '' },
    { key: nextLeg++, account: '', amount: '' },
  ])
  const [typeId, setTypeId] = createSignal('')
  const [client, setClient] = createSignal<Client | null>(null)
  const [others, setOthers] = createSignal<Client[]>([])
  const [description, setDescription] = createSignal('')
  const accounts = createMemo(() => {
    const seen = new Set<number>()
    return [...props.boxes, client(), ...others()]
      .filter((c): c is Client => c !== null && !seen.has(c.id) && Boolean(seen.add(c.id)))
      .flatMap((c) => c.accounts.map((a) => ({ ...a, label: accountLabel(c, a) })))
  })
  const submit = (e: Event) => {
    e.preventDefault()
    const legs: Leg[] = []
    let bad = false
    rows.forEach((row, i) => {
      const account = row.account || String(accounts()[0]?.id ?? '')
      const parsed = parseSigned(row.amount)
      const error = !account ? 'Elija una cuenta.' : !parsed.ok ? parsed.message : undefined
      setRows(i, 'error', error)
      if (error) bad = true
      else legs.push({ account_id: Number(account), amount: (parsed as { value: string }).value })
    })
    const opType = typeId() || String(props.types[0]?.id ?? '')
    if (!opType) bad = true
    if (bad || !legs.length) return sender.setNote({ kind: 'error', text: 'Hay datos para corregir; no se envió nada.' })
    void sender.send({
      operation_type_id: Number(opType),
      client_id: client()?.id ?? null,
      ...(description().trim() && { description: description().trim() }),
      transactions: legs,
    })
  }
  return (
    <form class="sub stack" onSubmit={submit} aria-labelledby="generic-title" data-testid="generic-form" novalidate>
      <h2 id="generic-title">Operación con varios movimientos</h2>
      <p class="muted">Un importe negativo debita la cuenta (por ejemplo -1.165.500); uno positivo la acredita.</p>
      <div class="row">
        <label>
          Tipo
          <select name="type" value={typeId()} onChange={(e) => setTypeId(e.currentTarget.value)}>
            <For each={props.types}>{(t) => <option value={String(t.id)}>{t.name}</option>}</For>
          </select>
        </label>
        <label>
          Descripción
          <input name="description" value={description()} onInput={(e) => setDescription(e.currentTarget.value)} />
        </label>
      </div>
      <ClientPicker label="Cliente" name="generic-client" value={client()?.id ?? null} optional="Sin cliente" onChange={setClient} />
      <table class="grid">
        <caption class="visually-hidden">Movimientos</caption>
        <thead>
          <tr>
            <th scope="col">Cuenta</th>
            <th scope="col">Importe</th>
            <th scope="col">
              <span class="visually-hidden">Quitar</span>
            </th>
          </tr>
        </thead>
        <tbody>
          <For each={rows}>
            {(row, i) => (
              <tr data-testid="leg-row">
                <td>
                  <select aria-label={`Cuenta del movimiento ${i() + 1}`} value={row.account} onChange={(e) => setRows(i(), 'account', e.currentTarget.value)}>
                    <For each={accounts()}>{(a) => <option value={String(a.id)}>{a.label}</option>}</For>
                  </select>
                </td>
                <td>
                  <input class="money" inputmode="decimal" aria-label={`Importe del movimiento ${i() + 1}`} value={row.amount} onInput={(e) => setRows(i(), 'amount', e.currentTarget.value)} />
                  <Show when={row.error}>
                    <span class="field-error" role="alert" data-testid="leg-error">
                      {row.error}
                    </span>
                  </Show>
                </td>
                <td>
                  <button type="button" disabled={rows.length === 1} onClick={() => setRows(produce((r) => void r.splice(i(), 1)))}>
                    Quitar
                  </button>
                </td>
              </tr>
            )}
          </For>
        </tbody>
      </table>
      <ClientPicker
        label="Cuentas de otro cliente"
        name="other-client"
        value={null}
        optional="— Agregar sus cuentas a la lista —"
        onChange={(c) => c && !others().some((o) => o.id === c.id) && setOthers([...others(), c])}
      />
      <Show when={others().length}>
        <ul class="chips" aria-label="Otros clientes con cuentas en la lista">
          <For each={others()}>
            {(c) => (
              <li>
                {c.name}{' '}
                <button type="button" aria-label={`Quitar las cuentas de ${c.name} de la lista`} onClick={() => setOthers(others().filter((o) => o.id !== c.id))}>
                  Quitar
                </button>
              </li>
            )}
          </For>
        </ul>
      </Show>
      <Show when={sender.expired()}>
        <SignInAgain onDone={() => void sender.resume()} />
      </Show>
      <div class="row">
        <button type="button" onClick={() => setRows(rows.length, { key: nextLeg++, account: '', amount: '' })}>
          Agregar movimiento
        </button>
        <button type="submit" class="primary" disabled={sender.busy()} data-testid="generic-submit">
          {sender.busy() ? 'Enviando…' : 'Registrar'}
        </button>
      </div>
      <NoteLine note={sender.note()} testid="generic-message" />
    </form>
  )
}
