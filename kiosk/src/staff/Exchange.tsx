import Decimal from 'decimal.js'
import { createMemo, createSignal, For, onCleanup, onMount, Show, type JSX } from 'solid-js'
import { ApiFailure, apiMoney, explain, money } from '../manage/api'
import { formatArs, parseArs } from '../manage/decimal'
import { createFill } from '../manage/forms'
import { DOCUMENT_LABEL, normaliseNumber, type ClientDocument, type DocumentType } from '../manage/Document'
import { exchangeFigures, SIDE_LABEL, type CompanyProfile, type ExchangeCreated, type Side } from '../exchange'
import type { Session, Ticket } from './api'
import './exchange.css'

/**
 * Buying and selling at the counter (contract §19) while a ticket is served: the board's rate prefilled, the
 * customer found by document or typed in, the desk's caja, the total computed exactly as the server stores it, one
 * Enter to confirm (one Idempotency-Key per fill, so a second Enter or a retry never makes a second exchange), the
 * receipt shown with its number, printable, and the ticket finished with one more key.
 */

interface BoardRate {
  currency: string
  buy: string
  sell: string
}

interface Account {
  id: number
  currency_name: string
  balance: string
}

interface Client {
  id: number
  name: string
  type: 0 | 1
  document: ClientDocument | null
  accounts: Account[]
}

/** A caja's till as `GET /api/cajas` tells it (contract §20): a closed one takes no exchange until it is opened. */
interface Till {
  till: 'never_opened' | 'open' | 'closed'
  session: { opened_at: string; opened_by_name: string | null; closed_at: string | null; closed_by_name: string | null } | null
}

const clock = new Intl.DateTimeFormat('es-AR', { day: '2-digit', month: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })
const at = (iso: string | null | undefined) => (iso ? clock.format(new Date(iso)).replace(',', '') : '')

/** The caja each desk works from, remembered by this browser per desk name. */
const CAJAS_KEY = 'fos.staff.cajas'
const storedCajas = (): Record<string, number> => {
  try {
    return JSON.parse(localStorage.getItem(CAJAS_KEY) ?? '{}') as Record<string, number>
  } catch {
    return {}
  }
}
const storeCaja = (desk: string, id: number | null) => {
  const all = storedCajas()
  if (id === null) delete all[desk]
  else all[desk] = id
  try {
    localStorage.setItem(CAJAS_KEY, JSON.stringify(all))
  } catch {
    // Asked again next time.
  }
}

/** What the API takes as a document number once dots, spaces and dashes are out: 1–30 characters, no control ones. */
const NUMBER = /^[^\p{Cc}]{1,30}$/u
/** Argentine documents carry the country implicitly; the others ask for it. */
const asksCountry = (type: DocumentType) => type === 'PASAPORTE' || type === 'CI' || type === 'OTRO'

type Field = 'caja' | 'currency' | 'amount' | 'rate' | 'document' | 'country' | 'name' | 'commission' | 'form'

type Lookup =
  | { state: 'idle' }
  | { state: 'searching' }
  | { state: 'found'; client: Client }
  | { state: 'missing'; other: Client | null }
  | { state: 'caja'; client: Client }
  | { state: 'unavailable' }

/** Which field an API refusal is about, from the fields its `details` name. */
function fieldOf(e: ApiFailure): Field {
  const named = e.details.map((d) => d.field ?? '').find(Boolean) ?? ''
  if (named === 'caja_id') return 'caja'
  if (named.startsWith('customer.document.country')) return 'country'
  if (named.startsWith('customer.document') || named === 'client_id') return 'document'
  if (named === 'customer.name' || named === 'customer') return 'name'
  if (named.startsWith('commission')) return 'commission'
  if (named === 'amount' || named === 'rate' || named === 'currency') return named
  return 'form'
}

export function ExchangePanel(props: {
  session: Session
  desk: string
  ticket: Ticket
  side: Side
  onClose: () => void
  onFinish: () => void
  onSignedOut: (notice: string | null) => void
}) {
  const perms = props.session.employee.permissions
  const can = (p: string) => perms.includes('company.admin') || perms.includes(p)
  const canRate = can('exchanges.rate')

  const [company, setCompany] = createSignal<CompanyProfile | null>(null)
  const [board, setBoard] = createSignal<BoardRate[]>([])
  const [cajas, setCajas] = createSignal<Client[] | null>(null)
  const [cajaId, setCajaId] = createSignal<number | null>(storedCajas()[props.desk] ?? null)
  const [choosingCaja, setChoosingCaja] = createSignal(false)
  // Unknown (null) when the till states cannot be read: the server still refuses a closed caja, in the same words.
  const [tills, setTills] = createSignal<Map<number, Till> | null>(null)

  const [side, setSide] = createSignal<Side>(props.side)
  const [currency, setCurrency] = createSignal('')
  const [amountText, setAmountText] = createSignal('')
  const [manualRate, setManualRate] = createSignal<string | null>(null)
  const [docType, setDocType] = createSignal<DocumentType>('DNI')
  const [docNumber, setDocNumber] = createSignal('')
  const [country, setCountry] = createSignal('AR')
  const [name, setName] = createSignal(props.ticket.customer_name ?? '')
  const [commissionText, setCommissionText] = createSignal('')
  const [lookup, setLookup] = createSignal<Lookup>({ state: 'idle' })

  const [errors, setErrors] = createSignal<Partial<Record<Field, string>>>({})
  const [busy, setBusy] = createSignal(false)
  const [done, setDone] = createSignal<ExchangeCreated | null>(null)
  const [loadError, setLoadError] = createSignal<string | null>(null)
  const fill = createFill()

  let amountField: HTMLInputElement | undefined
  let cajaField: HTMLSelectElement | undefined
  let receiptBox: HTMLDivElement | undefined

  const local = () => company()?.local_currency ?? 'ARS'
  const tradable = createMemo(() => board().filter((r) => r.currency !== local()))
  const caja = () => cajas()?.find((c) => c.id === cajaId()) ?? null
  const boardRate = () => {
    const r = board().find((x) => x.currency === currency())
    return r ? r[side()] : null
  }
  const rateText = () => manualRate() ?? (boardRate() ? formatArs(boardRate()!) : '')
  /** A rate typed over the board's (the same value typed again is still the board's). */
  const isManual = () => {
    const typed = manualRate() === null ? null : parseArs(manualRate()!)
    const shown = boardRate()
    return typed !== null && !(typed.ok && shown !== null && new Decimal(typed.value).equals(shown))
  }

  /** Fails with a 401 → the sign-in; anything else is the caller's to put in words. */
  const guard = async <T,>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn()
    } catch (e) {
      if (e instanceof ApiFailure && e.status === 401) props.onSignedOut('La sesión terminó. Ingrese de nuevo.')
      throw e
    }
  }

  const loadBoard = async () => {
    const r = await guard(() => money<{ rates: BoardRate[] }>('GET', '/api/ventanilla/rates'))
    setBoard(r.rates)
    return r.rates
  }

  const loadCajas = async () => {
    const out: Client[] = []
    for (let page = 1; page <= 10; page++) {
      const body = await guard(() => money<{ data: Client[]; count: number }>('GET', `/api/clients?type=0&pageSize=200&page=${page}`))
      out.push(...body.data)
      if (out.length >= body.count || body.data.length === 0) break
    }
    setCajas(out)
    if (cajaId() !== null && !out.some((c) => c.id === cajaId())) {
      storeCaja(props.desk, null)
      setCajaId(null)
    }
  }

  const loadTills = async () => {
    const body = await guard(() => money<{ data: ({ id: number } & Till)[] }>('GET', '/api/cajas'))
    setTills(new Map(body.data.map((c) => [c.id, { till: c.till, session: c.session }])))
  }
  const tillOf = (id: number | null) => (id === null ? undefined : tills()?.get(id))
  const closedWords = (box: Client) =>
    `La caja «${box.name}» está cerrada: no se puede comprar ni vender en ella hasta que un encargado la abra (Administración → Cajas).`

  onMount(async () => {
    void loadTills().catch(() => {})
    try {
      const [profile] = await Promise.all([guard(() => money<CompanyProfile>('GET', '/api/company')), loadBoard()])
      setCompany(profile)
      const first = tradable()[0]
      if (first) setCurrency(first.currency)
      try {
        await loadCajas()
      } catch (e) {
        if (e instanceof ApiFailure && e.code === 'FORBIDDEN') setLoadError('Su usuario no puede ver las cajas (permiso clients.view): pídaselo a un gerente para operar aquí.')
        else throw e
      }
    } catch (e) {
      if (!(e instanceof ApiFailure && e.status === 401)) setLoadError(explain(e))
    }
    if (cajaId() === null) setChoosingCaja(true)
    queueMicrotask(() => (choosingCaja() ? cajaField : amountField)?.focus())
  })

  // Looks the document up while it is typed, once the typing pauses.
  let timer: ReturnType<typeof setTimeout> | undefined
  let asked = 0
  const search = () => {
    clearTimeout(timer)
    const number = normaliseNumber(docNumber())
    if (!NUMBER.test(number)) return setLookup({ state: 'idle' })
    setLookup({ state: 'searching' })
    timer = setTimeout(async () => {
      const mine = ++asked
      try {
        const found = await guard(() => money<{ data: Client[] }>('GET', `/api/clients?document=${encodeURIComponent(number)}`))
        if (mine !== asked) return
        const same = found.data.find((c) => c.document?.type === docType())
        if (same?.type === 0) setLookup({ state: 'caja', client: same })
        else if (same) setLookup({ state: 'found', client: same })
        else setLookup({ state: 'missing', other: found.data[0] ?? null })
      } catch {
        // Without clients.view (or offline) the name is typed; the server still finds the customer by document.
        if (mine === asked) setLookup({ state: 'unavailable' })
      }
    }, 300)
  }
  onCleanup(() => clearTimeout(timer))

  const amount = () => parseArs(amountText())
  const rate = () => parseArs(rateText())
  const commission = () => (commissionText().trim() ? parseArs(commissionText()) : null)
  const figures = createMemo(() => {
    const a = amount()
    const r = rate()
    const c = commission()
    if (!a.ok || !r.ok || (c && !c.ok)) return null
    if (new Decimal(a.value).isZero() || new Decimal(r.value).isZero()) return null
    return exchangeFigures(side(), a.value, r.value, c && c.ok ? c.value : null)
  })
  /** What the caja would hold, after the exchange, of what it pays out: a warning below zero, never a refusal (§19). */
  const shortfall = createMemo(() => {
    const f = figures()
    const a = amount()
    const box = caja()
    if (!f || !a.ok || !box) return null
    const paying = side() === 'buy' ? local() : currency()
    const account = box.accounts.find((x) => x.currency_name === paying)
    if (!account) return null
    const out = side() === 'buy' ? new Decimal(f.local).minus(f.commission) : new Decimal(a.value)
    const after = new Decimal(account.balance).minus(out)
    return after.isNegative() ? { currency: paying, after: after.toFixed() } : null
  })

  const clearError = (field: Field) => setErrors((e) => ({ ...e, [field]: undefined, form: undefined }))

  /** Everything the screen can tell before asking the server, in words next to each field. */
  function check(): Partial<Record<Field, string>> {
    const out: Partial<Record<Field, string>> = {}
    const box = caja()
    if (!box) out.caja = 'Elija la caja de este puesto.'
    else if (tillOf(box.id)?.till === 'closed') out.caja = closedWords(box)
    if (!currency()) out.currency = tradable().length ? 'Elija la moneda.' : 'No hay cotizaciones publicadas: un gerente las carga en Administración → Cotizaciones.'
    else if (box) {
      const missing = [currency(), local()].filter((cur) => !box.accounts.some((a) => a.currency_name === cur))
      if (missing.length) out.caja = `La caja «${box.name}» no tiene cuenta en ${missing.join(' ni en ')}.`
    }
    const a = amount()
    if (!a.ok) out.amount = a.message === 'Falta el valor.' ? 'Escriba el importe.' : a.message
    else if (new Decimal(a.value).isZero()) out.amount = 'El importe debe ser mayor que cero.'
    const r = rate()
    if (!r.ok) out.rate = r.message
    else if (new Decimal(r.value).isZero()) out.rate = 'La cotización debe ser mayor que cero.'
    else if (isManual() && !canRate) out.rate = 'Su usuario no puede cambiar la cotización (permiso exchanges.rate).'
    const c = commission()
    if (c && !c.ok) out.commission = c.message
    else if (c && c.ok && new Decimal(c.value).decimalPlaces() > 2) out.commission = 'La comisión lleva como máximo 2 decimales.'
    else if (c && c.ok && side() === 'buy' && figures() && new Decimal(c.value).gte(figures()!.local))
      out.commission = `La comisión debe ser menor que los ${local()} ${formatArs(figures()!.local)} que recibe el cliente.`
    const number = normaliseNumber(docNumber())
    if (docNumber().trim() && !NUMBER.test(number)) out.document = 'El número lleva de 1 a 30 caracteres (los puntos, espacios y guiones no cuentan).'
    else if (lookup().state === 'caja') out.document = 'Ese documento es de una caja de la casa, no de un cliente.'
    if (docNumber().trim() && asksCountry(docType()) && !/^[A-Za-z]{2}$/.test(country().trim())) out.country = 'Dos letras, por ejemplo BR o UY.'
    const found = lookup().state === 'found'
    if (!found && !name().trim()) out.name = 'Escriba el nombre y apellido del cliente.'
    return out
  }

  /** The API's refusal in the counter's words, next to the field it is about. */
  function refusal(e: ApiFailure): Partial<Record<Field, string>> {
    const field = fieldOf(e)
    switch (e.code) {
      case 'INVALID_PARAMETERS':
        if (field === 'currency') return { currency: `${currency()} no está en el cartel de cotizaciones: publíquela en Cotizaciones antes de operar.` }
        if (field === 'commission') return { commission: 'La comisión debe ser menor que lo que recibe el cliente.' }
        if (field === 'document') return { document: 'Ese cliente es una caja de la casa.' }
        return { form: `Revise los datos: ${e.message}.` }
      case 'ACCOUNT_CURRENCY_MISMATCH':
        return { caja: `La caja «${caja()?.name ?? ''}» no tiene cuenta en ${currency()} o en ${local()}: elija otra o pida que se la agreguen.` }
      case 'ACCOUNT_NOT_INTERNAL':
      case 'UNKNOWN_CLIENT':
        if (field === 'caja') {
          storeCaja(props.desk, null)
          setCajaId(null)
          setChoosingCaja(true)
          void loadCajas().catch(() => {})
          return { caja: 'Esa caja ya no existe: elija otra.' }
        }
        return { document: 'Ese cliente ya no existe.' }
      case 'DOCUMENT_TAKEN':
        return { document: 'Ese documento es de una caja de la casa, no de un cliente.' }
      case 'TILL_CLOSED':
        void loadTills().catch(() => {})
        return { caja: caja() ? closedWords(caja()!) : 'La caja está cerrada: ábrala antes de operar.' }
      case 'AMOUNT_OUT_OF_RANGE':
        return { amount: 'El importe es demasiado grande para registrarlo.' }
      case 'OPERATION_TYPE_NOT_FOUND':
        if (field === 'commission') return { commission: 'La empresa no tiene un tipo de movimiento de comisión: un gerente lo crea en Administración.' }
        return { form: `La empresa no tiene el tipo de operación «${side() === 'buy' ? 'Compra de divisas' : 'Venta de divisas'}»: un gerente lo crea en Administración.` }
      case 'INVALID_TICKET_STATUS':
      case 'UNKNOWN_TICKET':
        return { form: `El turno ${props.ticket.number} ya no está en atención: la operación no se registró.` }
      case 'FORBIDDEN':
        if (isManual()) return { rate: 'Su usuario no puede cambiar la cotización (permiso exchanges.rate).' }
        return { form: 'Su usuario no tiene permiso para registrar compras y ventas (operations.create).' }
      case 'VALIDATION_ERROR': {
        const words: Record<Field, string> = {
          amount: 'El importe debe ser mayor que cero, con hasta 6 decimales.',
          rate: 'La cotización debe ser mayor que cero, con hasta 6 decimales.',
          commission: 'La comisión debe ser mayor que cero.',
          document: 'El número lleva de 1 a 30 letras o dígitos.',
          country: 'Dos letras, por ejemplo BR o UY.',
          name: 'Escriba el nombre y apellido del cliente.',
          caja: 'Elija la caja de este puesto.',
          currency: 'Elija la moneda.',
          form: `Revise los datos: ${e.message}.`,
        }
        return { [field]: words[field] }
      }
    }
    return { form: explain(e) }
  }

  const submit = async (e?: Event) => {
    e?.preventDefault()
    if (busy() || done()) return
    // A caja seen closed may have been opened since: asked again before refusing.
    if (tillOf(cajaId())?.till === 'closed') await loadTills().catch(() => {})
    const problems = check()
    setErrors(problems)
    if (Object.values(problems).some(Boolean)) return focusFirst(problems)
    setBusy(true)
    try {
      // The board may have changed since the panel opened: what the customer is told is what gets stored.
      if (manualRate() === null) {
        const shown = boardRate()
        const gone = currency()
        const fresh = (await loadBoard()).find((r) => r.currency === gone)
        if (!fresh) {
          setCurrency(tradable()[0]?.currency ?? '')
          setErrors({ currency: `${gone} ya no está en el cartel de cotizaciones: elija otra moneda.` })
          return focusFirst({ currency: 'x' })
        }
        if (!shown || !new Decimal(fresh[side()]).equals(shown)) {
          setErrors({ rate: `La cotización del cartel cambió a ${formatArs(fresh[side()])}: revise el total y confirme de nuevo.` })
          return
        }
      }
      const found = lookup()
      const number = normaliseNumber(docNumber())
      const body = {
        side: side(),
        currency: currency(),
        amount: (amount() as { value: string }).value,
        rate: (rate() as { value: string }).value,
        caja_id: cajaId(),
        ticket_id: props.ticket.id,
        ...(found.state === 'found'
          ? { client_id: found.client.id }
          : {
              customer: {
                name: name().trim(),
                document: number ? { type: docType(), number, country: asksCountry(docType()) ? country().trim().toUpperCase() : 'AR' } : null,
              },
            }),
        ...(commission() && { commission: { amount: (commission() as { value: string }).value } }),
      }
      const answer = await guard(() => apiMoney<ExchangeCreated>('POST', '/api/exchanges', { body, headers: fill.headers(body) }))
      fill.done()
      setDone(answer.data)
      void loadCajas().catch(() => {})
      void loadTills().catch(() => {})
      queueMicrotask(() => receiptBox?.focus())
    } catch (err) {
      if (err instanceof ApiFailure && err.status === 401) return
      const words = err instanceof ApiFailure ? refusal(err) : { form: explain(err) }
      setErrors(words)
      focusFirst(words)
    } finally {
      setBusy(false)
    }
  }

  const inputs: Partial<Record<Field, HTMLElement>> = {}
  const focusFirst = (problems: Partial<Record<Field, string>>) => {
    const order: Field[] = ['caja', 'currency', 'amount', 'rate', 'document', 'country', 'name', 'commission']
    const first = order.find((f) => problems[f])
    if (first === 'caja') setChoosingCaja(true)
    queueMicrotask(() => (first ? inputs[first] : undefined)?.focus())
  }

  const again = (next: Side) => {
    setDone(null)
    setSide(next)
    setAmountText('')
    setManualRate(null)
    setCommissionText('')
    setErrors({})
    queueMicrotask(() => amountField?.focus())
  }

  const printReceipt = () => {
    const d = done()
    if (d) window.open(`/receipts/${d.operation.id}?imprimir=1`, '_blank')
  }

  const typing = (e: KeyboardEvent) => {
    const el = e.target as HTMLElement | null
    return !!el && (el.tagName === 'INPUT' || el.tagName === 'SELECT' || el.tagName === 'TEXTAREA')
  }
  // A letter means nothing in an amount, a rate or a commission: there C and V still switch the side.
  const inFigure = (e: KeyboardEvent) => (e.target as HTMLElement | null)?.dataset?.figure === 'true'
  const onKey = (e: KeyboardEvent) => {
    if (e.ctrlKey || e.altKey || e.metaKey) return
    if (e.key === 'Escape') {
      e.preventDefault()
      if (choosingCaja() && caja()) return setChoosingCaja(false)
      if (!busy()) props.onClose()
      return
    }
    const key = e.key.toLowerCase()
    if (typing(e) && !(inFigure(e) && (key === 'c' || key === 'v'))) return
    if (done()) {
      const actions: Record<string, () => void> = { f: props.onFinish, p: printReceipt, c: () => again('buy'), v: () => again('sell') }
      if (actions[key]) {
        e.preventDefault()
        actions[key]()
      }
      return
    }
    if (key === 'c' || key === 'v') {
      e.preventDefault()
      setSide(key === 'c' ? 'buy' : 'sell')
      setManualRate(null)
    }
  }
  onMount(() => window.addEventListener('keydown', onKey))
  onCleanup(() => window.removeEventListener('keydown', onKey))

  const chooseCaja = (id: number) => {
    setCajaId(id)
    storeCaja(props.desk, id)
    setChoosingCaja(false)
    clearError('caja')
    queueMicrotask(() => amountField?.focus())
  }

  const field = (id: Field, label: JSX.Element, control: JSX.Element, hint?: JSX.Element) => (
    <div class="xfield" classList={{ invalid: !!errors()[id] }}>
      <label for={`x-${id}`}>{label}</label>
      {control}
      <Show when={errors()[id]} fallback={hint}>
        <p class="field-error" id={`x-${id}-error`} data-testid={`x-${id}-error`}>
          {errors()[id]}
        </p>
      </Show>
    </div>
  )
  const aria = (id: Field) => ({
    'aria-invalid': errors()[id] ? ('true' as const) : undefined,
    'aria-describedby': errors()[id] ? `x-${id}-error` : undefined,
  })

  const balanceOf = (box: Client, cur: string) => box.accounts.find((a) => a.currency_name === cur)?.balance

  return (
    <section class="exchange" aria-labelledby="x-title" data-testid="exchange">
      <header class="x-head">
        <h2 id="x-title">
          {SIDE_LABEL[side()]} de divisas <span class="muted">· {props.ticket.number}</span>
        </h2>
        <Show when={!choosingCaja() && caja()}>
          {(box) => (
            <div class="x-caja" data-testid="x-caja">
              <span>
                Caja: <strong>{box().name}</strong>
              </span>
              <Show when={tillOf(box().id)}>
                {(t) => (
                  <span class={`x-till ${t().till}`} data-testid="x-till">
                    {t().till === 'open'
                      ? `Abierta desde ${at(t().session?.opened_at)}${t().session?.opened_by_name ? ` (${t().session!.opened_by_name})` : ''}`
                      : t().till === 'closed'
                        ? `Cerrada${t().session?.closed_at ? ` el ${at(t().session!.closed_at)}` : ''}: no se puede operar`
                        : 'Sin apertura de caja'}
                  </span>
                )}
              </Show>
              <Show when={!done()}>
                <button type="button" onClick={() => setChoosingCaja(true)} data-testid="x-change-caja">
                  Cambiar caja
                </button>
              </Show>
            </div>
          )}
        </Show>
      </header>

      <Show when={loadError()}>
        <p class="error" role="alert" data-testid="x-load-error">
          {loadError()}
        </p>
      </Show>

      <Show when={!done()} fallback={<Done />}>
        <form class="x-form" onSubmit={submit} noValidate data-testid="exchange-form">
          <Show when={choosingCaja()}>
            {field(
              'caja',
              'Caja de este puesto (se recuerda en esta computadora)',
              <select
                ref={(el) => ((cajaField = el), (inputs.caja = el))}
                id="x-caja"
                name="caja"
                value={cajaId() ?? ''}
                onChange={(e) => e.currentTarget.value && chooseCaja(Number(e.currentTarget.value))}
                {...aria('caja')}
              >
                <option value="">Elegir…</option>
                <For each={cajas() ?? []}>
                  {(c) => (
                    // `selected` as well as the select's value: the value is set before these options exist.
                    <option value={c.id} selected={c.id === cajaId()}>
                      {c.name}
                      {tillOf(c.id)?.till === 'closed' ? ' (cerrada)' : tillOf(c.id)?.till === 'open' ? ' (abierta)' : ''}
                    </option>
                  )}
                </For>
              </select>,
            )}
          </Show>

          <div class="x-side" role="group" aria-label="Operación">
            <button type="button" aria-pressed={side() === 'buy'} onClick={() => (setSide('buy'), setManualRate(null))} data-testid="x-buy">
              Compra <kbd>C</kbd>
            </button>
            <button type="button" aria-pressed={side() === 'sell'} onClick={() => (setSide('sell'), setManualRate(null))} data-testid="x-sell">
              Venta <kbd>V</kbd>
            </button>
            <span class="muted x-side-hint">{side() === 'buy' ? 'El cliente entrega divisas y recibe pesos.' : 'El cliente paga en pesos y recibe divisas.'}</span>
          </div>

          <div class="x-grid">
            {field(
              'currency',
              'Moneda',
              <select
                ref={(el) => (inputs.currency = el)}
                id="x-currency"
                name="currency"
                value={currency()}
                onChange={(e) => (setCurrency(e.currentTarget.value), setManualRate(null), clearError('currency'))}
                {...aria('currency')}
              >
                <For each={tradable()}>{(r) => <option value={r.currency}>{r.currency}</option>}</For>
              </select>,
              <Show when={caja() && currency() && balanceOf(caja()!, currency())}>
                {(b) => <p class="hint muted">En caja: {currency()} {formatArs(b())}</p>}
              </Show>,
            )}
            {field(
              'amount',
              `Importe en ${currency() || 'divisas'}`,
              <input
                ref={(el) => ((amountField = el), (inputs.amount = el))}
                id="x-amount"
                name="amount"
                data-figure="true"
                inputmode="decimal"
                autocomplete="off"
                placeholder="100,00"
                value={amountText()}
                onInput={(e) => (setAmountText(e.currentTarget.value), clearError('amount'))}
                {...aria('amount')}
              />,
            )}
            {field(
              'rate',
              `Cotización (${local()} por ${currency() || 'unidad'})`,
              <input
                ref={(el) => (inputs.rate = el)}
                id="x-rate"
                name="rate"
                data-figure="true"
                inputmode="decimal"
                autocomplete="off"
                readOnly={!canRate}
                value={rateText()}
                onInput={(e) => (setManualRate(e.currentTarget.value), clearError('rate'))}
                {...aria('rate')}
              />,
              <p class="hint muted" data-testid="x-rate-source">
                {isManual() ? (
                  <>
                    Cotización manual; la del cartel es {boardRate() ? formatArs(boardRate()!) : '—'}.{' '}
                    <button type="button" class="link" onClick={() => setManualRate(null)}>
                      Usar la del cartel
                    </button>
                  </>
                ) : (
                  `Del cartel${canRate ? '; puede escribir otra' : ''}.`
                )}
              </p>,
            )}
          </div>

          <fieldset class="x-customer">
            <legend>Cliente</legend>
            <div class="x-grid">
              <div class="xfield">
                <label for="x-doctype">Documento</label>
                <select id="x-doctype" name="doctype" value={docType()} onChange={(e) => (setDocType(e.currentTarget.value as DocumentType), search())}>
                  <For each={Object.entries(DOCUMENT_LABEL)}>{([type, label]) => <option value={type}>{label}</option>}</For>
                </select>
              </div>
              {field(
                'document',
                'Número',
                <input
                  ref={(el) => (inputs.document = el)}
                  id="x-document"
                  name="document"
                  inputmode="text"
                  autocomplete="off"
                  value={docNumber()}
                  onInput={(e) => (setDocNumber(e.currentTarget.value), clearError('document'), search())}
                  {...aria('document')}
                />,
                <LookupNote lookup={lookup()} />,
              )}
              <Show when={asksCountry(docType())}>
                {field(
                  'country',
                  'País',
                  <input
                    ref={(el) => (inputs.country = el)}
                    id="x-country"
                    name="country"
                    maxlength="2"
                    autocomplete="off"
                    value={country()}
                    onInput={(e) => (setCountry(e.currentTarget.value), clearError('country'))}
                    {...aria('country')}
                  />,
                )}
              </Show>
              <Show
                when={lookup().state === 'found' && (lookup() as { client: Client }).client}
                fallback={field(
                  'name',
                  'Nombre y apellido',
                  <input
                    ref={(el) => (inputs.name = el)}
                    id="x-name"
                    name="name"
                    autocomplete="off"
                    maxlength="200"
                    value={name()}
                    onInput={(e) => (setName(e.currentTarget.value), clearError('name'))}
                    {...aria('name')}
                  />,
                )}
              >
                {(client) => (
                  <div class="xfield">
                    <span class="label-like">Nombre y apellido</span>
                    <p class="found" data-testid="x-found">
                      {client().name}
                    </p>
                  </div>
                )}
              </Show>
            </div>
          </fieldset>

          <div class="x-grid">
            {field(
              'commission',
              `Comisión en ${local()} (opcional)`,
              <input
                ref={(el) => (inputs.commission = el)}
                id="x-commission"
                name="commission"
                data-figure="true"
                inputmode="decimal"
                autocomplete="off"
                value={commissionText()}
                onInput={(e) => (setCommissionText(e.currentTarget.value), clearError('commission'))}
                {...aria('commission')}
              />,
            )}
            <div class="x-total" data-testid="x-total" aria-live="polite">
              <Show when={figures()} fallback={<p class="muted">El total aparece al escribir el importe.</p>}>
                {(f) => (
                  <>
                    <p>
                      Subtotal {local()} {formatArs(f().local)}
                      <Show when={!new Decimal(f().commission).isZero()}>
                        {' '}
                        {side() === 'buy' ? '−' : '+'} comisión {formatArs(f().commission)}
                      </Show>
                    </p>
                    <p class="x-total-line">
                      <span>{side() === 'buy' ? 'El cliente recibe' : 'El cliente paga'}</span>
                      <strong data-testid="x-total-value">
                        {local()} {formatArs(f().total)}
                      </strong>
                    </p>
                  </>
                )}
              </Show>
            </div>
          </div>

          <Show when={shortfall()}>
            {(s) => (
              <p class="warning" role="status" data-testid="x-shortfall">
                Atención: la caja no tiene {s().currency} suficiente; quedaría en {formatArs(s().after)}. Se puede registrar igual.
              </p>
            )}
          </Show>
          <Show when={errors().form}>
            <p class="error" role="alert" data-testid="x-form-error">
              {errors().form}
            </p>
          </Show>
          <div class="row">
            <button type="button" onClick={props.onClose} disabled={busy()}>
              Cancelar <kbd>Esc</kbd>
            </button>
            <button type="submit" class="primary" disabled={busy()} data-testid="x-confirm">
              {busy() ? 'Registrando…' : 'Confirmar'} <kbd>Enter</kbd>
            </button>
          </div>
        </form>
      </Show>
    </section>
  )

  function Done() {
    const d = done()!
    const r = d.receipt
    return (
      <div class="x-done" tabindex="-1" ref={receiptBox} role="region" aria-label={`Boleto ${r.number}`} data-testid="x-done">
        <p class="x-number">
          Boleto N.º <strong data-testid="x-receipt-number">{r.number}</strong>
        </p>
        <p>
          {SIDE_LABEL[r.side]} de {formatArs(r.amount)} {r.currency} a {formatArs(r.rate)}
          {d.exchange.rate_source === 'manual' ? ' (cotización manual)' : ''}
        </p>
        <p>
          Cliente: {r.customer.name ?? 'sin identificar'}
          <Show when={r.customer.document}>{(doc) => ` · ${DOCUMENT_LABEL[doc().type]} ${doc().number}`}</Show>
        </p>
        <p class="x-total-line">
          <span>{r.side === 'buy' ? 'Entregue al cliente' : 'Cobre al cliente'}</span>
          <strong data-testid="x-done-total">
            {local()} {formatArs(r.total)}
          </strong>
        </p>
        <Show when={d.operation.status === 'pending'}>
          <p class="muted">Queda pendiente de aprobación por un supervisor.</p>
        </Show>
        <Show when={d.warnings?.includes('CAJA_BELOW_ZERO')}>
          <p class="warning" role="status" data-testid="x-warning">
            Atención: con esta operación la caja queda con saldo negativo en {r.side === 'buy' ? local() : r.currency}. Quedó registrada; avise a su supervisor.
          </p>
        </Show>
        <div class="x-done-actions">
          <button type="button" class="primary" onClick={printReceipt} data-testid="x-print">
            Imprimir boleto <kbd>P</kbd>
          </button>
          <a href={`/receipts/${d.operation.id}`} target="_blank" rel="noopener" data-testid="x-receipt-link">
            Ver boleto
          </a>
          <a href={`/api/operations/${d.operation.id}/receipt?format=pdf`} target="_blank" rel="noopener">
            PDF
          </a>
          <button type="button" onClick={props.onFinish} data-testid="x-finish">
            Finalizar turno <kbd>F</kbd>
          </button>
          <button type="button" onClick={() => again('buy')}>
            Otra compra <kbd>C</kbd>
          </button>
          <button type="button" onClick={() => again('sell')}>
            Otra venta <kbd>V</kbd>
          </button>
          <button type="button" onClick={props.onClose}>
            Cerrar <kbd>Esc</kbd>
          </button>
        </div>
      </div>
    )
  }
}

/** What the document lookup found, under the number. */
function LookupNote(props: { lookup: Lookup }) {
  const l = () => props.lookup
  return (
    <p class="hint muted" data-testid="x-lookup" aria-live="polite">
      {l().state === 'searching'
        ? 'Buscando…'
        : l().state === 'found'
          ? 'Cliente registrado.'
          : l().state === 'missing'
            ? (() => {
                const other = (l() as { other: Client | null }).other
                return other?.document
                  ? `No hay cliente con ese documento; el número figura como ${DOCUMENT_LABEL[other.document.type]} de ${other.name}.`
                  : 'Cliente nuevo: escriba su nombre; queda registrado con esta operación.'
              })()
            : l().state === 'unavailable'
              ? 'No se pudo buscar: escriba el nombre; al confirmar se lo reconoce por el documento.'
              : ''}
    </p>
  )
}
