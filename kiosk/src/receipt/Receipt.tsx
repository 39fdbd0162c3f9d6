import { createEffect, createSignal, For, Match, onMount, Show, Switch } from 'solid-js'
import { ApiFailure, explain, money } from '../manage/api'
import { formatArs } from '../manage/decimal'
import { SignIn } from '../staff/Console'
import type { Session } from '../staff/api'
import { documentLabel, issuedAt, RECEIPT_TITLE, SIDE_LABEL, TOTAL_LABEL, type CompanyProfile, type Receipt } from '../exchange'

/** The two papers a receipt is printed on: an 80 mm roll (the counter's printer) or an A4 sheet. */
export type Paper = 'roll' | 'a4'

const PAPER_KEY = 'fos.receipt.paper'
const MM = 96 / 25.4

/** `?formato=a4|80mm` from the link, else the paper last chosen in this browser, else the roll. */
function initialPaper(): Paper {
  const asked = new URLSearchParams(location.search).get('formato')
  if (asked === 'a4') return 'a4'
  if (asked === '80mm') return 'roll'
  try {
    return localStorage.getItem(PAPER_KEY) === 'a4' ? 'a4' : 'roll'
  } catch {
    return 'roll'
  }
}

/** The `@page roll` rule `sizeRoll` last added, replaced when the receipt is drawn again. */
let sized: CSSRule | null = null

/**
 * A roll has no fixed length: the printed page is made as long as the receipt, so the printer cuts where it ends
 * instead of feeding a blank A4's worth of paper. The stylesheet names the page `roll`; its length is set here, once
 * the receipt is drawn, through the CSSOM (which the page's CSP allows, unlike an inline style element).
 */
function sizeRoll(receipt: HTMLElement) {
  const sheet = [...document.styleSheets].find((s) => {
    try {
      return [...s.cssRules].some((r) => r instanceof CSSPageRule && r.selectorText === 'roll')
    } catch {
      return false
    }
  })
  if (!sheet) return
  const length = Math.ceil(receipt.getBoundingClientRect().height / MM) + 2
  const before = sized ? [...sheet.cssRules].indexOf(sized) : -1
  if (before >= 0) sheet.deleteRule(before)
  // Last in the sheet, so it wins over the stylesheet's own `@page roll`.
  sized = sheet.cssRules[sheet.insertRule(`@page roll { size: 80mm ${length}mm; margin: 0; }`, sheet.cssRules.length)]
}

function ReceiptView(props: { receipt: Receipt; company: CompanyProfile; operationId: number; paper: Paper }) {
  const r = () => props.receipt
  const local = () => props.company.local_currency
  const money = (value: string, currency: string) => `${formatArs(value)} ${currency}`
  const voided = () => r().status === 'void'
  let article: HTMLElement | undefined
  createEffect(() => {
    // Tracks the paper and the receipt: either changes the drawn length.
    void props.paper
    void r()
    if (article && props.paper === 'roll') requestAnimationFrame(() => article && sizeRoll(article))
  })
  const rows = () => [
    { label: 'Operación', value: SIDE_LABEL[r().side], strong: true },
    { label: 'Moneda', value: r().currency },
    { label: 'Importe', value: money(r().amount, r().currency), testid: 'receipt-amount' },
    { label: 'Cotización', value: money(r().rate, local()), testid: 'receipt-rate' },
    { label: 'Subtotal', value: money(r().local_amount, local()), testid: 'receipt-local' },
    { label: 'Comisión', value: money(r().commission, local()), testid: 'receipt-commission' },
  ]
  return (
    <article
      ref={article}
      class={`receipt ${props.paper}`}
      classList={{ void: voided() }}
      aria-labelledby="receipt-title"
      data-testid="receipt"
      data-status={r().status}
    >
      <Show when={voided()}>
        <p class="void-mark" data-testid="receipt-void">
          ANULADO
        </p>
      </Show>
      <header class="issuer">
        <p class="legal-name">{r().company.legal_name ?? props.company.name}</p>
        <Show when={r().company.tax_id}>{(v) => <p>CUIT {v()}</p>}</Show>
        <Show when={r().company.address}>{(v) => <p>{v()}</p>}</Show>
        <Show when={r().company.license}>{(v) => <p>{v()}</p>}</Show>
      </header>
      <div class="heading">
        <h1 id="receipt-title">{RECEIPT_TITLE[r().side]}</h1>
        <p class="number" data-testid="receipt-number">
          N.º {r().number}
        </p>
        <p class="issued">{issuedAt(r().issued_at, props.company.timezone)}</p>
      </div>
      <dl class="rows customer">
        <div>
          <dt>Cliente</dt>
          <dd data-testid="receipt-customer">{r().customer.name ?? 'Sin identificar'}</dd>
        </div>
        <Show when={r().customer.document}>
          {(d) => (
            <div>
              <dt>{documentLabel(d().type)}</dt>
              <dd data-testid="receipt-document">
                {d().number} ({d().country})
              </dd>
            </div>
          )}
        </Show>
      </dl>
      <dl class="rows deal">
        <For each={rows()}>
          {(row) => (
            <div>
              <dt>{row.label}</dt>
              <dd classList={{ strong: !!row.strong }} data-testid={row.testid}>
                {row.value}
              </dd>
            </div>
          )}
        </For>
      </dl>
      <div class="total">
        <span>{TOTAL_LABEL[r().side]}</span>
        <strong data-testid="receipt-total">{money(r().total, local())}</strong>
      </div>
      <Show when={props.paper === 'a4'}>
        <div class="signatures" aria-hidden="true">
          <span>Firma del cliente</span>
          <span>Aclaración</span>
        </div>
      </Show>
      <Show when={voided()}>
        <p class="void-mark">ANULADO</p>
      </Show>
      <p class="footnote">Operación N.º {props.operationId}</p>
    </article>
  )
}

type State =
  | { kind: 'loading' }
  | { kind: 'signin'; notice: string | null }
  | { kind: 'ready'; receipt: Receipt; company: CompanyProfile }
  | { kind: 'failed'; text: string }

/** Words for a receipt that cannot be shown; the API decides (404 also covers another company and the client scope). */
function describe(e: unknown, id: string): string {
  if (e instanceof ApiFailure && (e.code === 'NOT_FOUND' || e.code === 'INVALID_ID'))
    return `No hay boleto para la operación ${id}: no existe, no es una compra o venta de divisas, o no está a su alcance.`
  if (e instanceof ApiFailure && e.code === 'FORBIDDEN') return 'Su usuario no tiene permiso para ver operaciones (operations.view). Pídaselo a un gerente.'
  return explain(e)
}

/**
 * `GET /receipts/{operation id}`: one receipt, on screen and ready to print on an 80 mm roll or an A4 sheet, in
 * Spanish. Without a session it asks for one and then shows the receipt it was opened for. `?imprimir=1` opens the
 * print dialog as soon as the receipt is drawn (the counter console opens it so).
 */
export function ReceiptApp() {
  const id = location.pathname.split('/').filter(Boolean).pop() ?? ''
  const [state, setState] = createSignal<State>({ kind: 'loading' })
  const [paper, setPaper] = createSignal<Paper>(initialPaper())
  const autoPrint = new URLSearchParams(location.search).get('imprimir') === '1'

  const load = async () => {
    try {
      const [receipt, company] = await Promise.all([
        money<Receipt>('GET', `/api/operations/${encodeURIComponent(id)}/receipt`),
        money<CompanyProfile>('GET', '/api/company'),
      ])
      setState({ kind: 'ready', receipt, company })
      document.title = `Boleto ${receipt.number}`
      if (autoPrint) {
        await document.fonts.ready
        requestAnimationFrame(() => requestAnimationFrame(() => window.print()))
      }
    } catch (e) {
      if (e instanceof ApiFailure && e.status === 401) return setState({ kind: 'signin', notice: 'La sesión terminó. Ingrese de nuevo.' })
      setState({ kind: 'failed', text: describe(e, id) })
    }
  }

  onMount(async () => {
    try {
      await money<Session>('GET', '/api/sessions/current')
    } catch (e) {
      if (e instanceof ApiFailure && e.status === 401) return setState({ kind: 'signin', notice: 'Ingrese para ver el boleto.' })
    }
    await load()
  })

  const choose = (p: Paper) => {
    setPaper(p)
    try {
      localStorage.setItem(PAPER_KEY, p)
    } catch {
      // Kept for this page only.
    }
  }
  return (
    <Switch>
      <Match when={state().kind === 'loading'}>
        <main class="signin">
          <h1 class="muted loading">Cargando el boleto…</h1>
        </main>
      </Match>
      <Match when={state().kind === 'signin' && (state() as { notice: string | null })}>
        {(s) => <SignIn title="Boleto" notice={s().notice} onSignedIn={() => (setState({ kind: 'loading' }), void load())} />}
      </Match>
      <Match when={state().kind === 'failed' && (state() as { text: string })}>
        {(s) => (
          <main class="signin">
            <div class="card">
              <h1>Boleto</h1>
              <p class="error" role="alert" data-testid="receipt-error">
                {s().text}
              </p>
            </div>
          </main>
        )}
      </Match>
      <Match when={state().kind === 'ready' && (state() as Extract<State, { kind: 'ready' }>)}>
        {(s) => (
          <main class="receipt-page">
            <nav class="toolbar" aria-label="Boleto">
              <div class="papers" role="group" aria-label="Papel">
                <button type="button" aria-pressed={paper() === 'roll'} onClick={() => choose('roll')} data-testid="paper-roll">
                  Rollo 80 mm
                </button>
                <button type="button" aria-pressed={paper() === 'a4'} onClick={() => choose('a4')} data-testid="paper-a4">
                  Hoja A4
                </button>
              </div>
              <button type="button" class="primary" onClick={() => window.print()} data-testid="print">
                Imprimir
              </button>
              <a href={`/api/operations/${encodeURIComponent(id)}/receipt?format=pdf`} data-testid="receipt-pdf">
                PDF
              </a>
            </nav>
            <ReceiptView receipt={s().receipt} company={s().company} operationId={Number(id)} paper={paper()} />
          </main>
        )}
      </Match>
    </Switch>
  )
}
