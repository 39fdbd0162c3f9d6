import { A, useParams } from '@solidjs/router'
import { createMemo, createSignal, For, onMount, Show } from 'solid-js'
import { ApiFailure, apiExact, explain, money } from './api'
import { formatArs } from './decimal'
import {
  allCajas,
  AUDIT_ACTION_LABEL,
  balancesAfter,
  clientsNamed,
  describeChanges,
  STATUS_LABEL,
  today,
  TX_STATUS_LABEL,
  type Account,
  type Attachment,
  type Client,
  type Move,
  type Operation,
  type OperationStatus,
  type OperationType,
  type Page,
} from './ledger'
import { ClientPicker } from './pickers'
import { can } from './session'
import { createAction, NoteLine, when } from './ui'
import { exchangesOf, ExchangesTable } from './Exchanges'
import type { CompanyProfile, ExchangeListItem } from '../exchange'

/** What names are needed for: an operation (its client and the accounts it moves), or an exchange (its client). */
type Named = Pick<Operation, 'client_id'> & { transactions?: Pick<Operation['transactions'][number], 'account_id'>[] }

/**
 * Names for the ids of the operations on screen, never the whole list of clients: every caja (a branch has a few, and
 * most legs move one), then, for the operations shown, the clients they name and the owners of the accounts they
 * move that are not known yet, asked by id (`GET /api/clients?ids=…`, `?account_ids=…`). A client-scoped employee is
 * answered only its own; the rest show as «Cliente N» or «Cuenta N».
 */
function createDirectory() {
  const [clients, setClients] = createSignal(new Map<number, Client>())
  const [types, setTypes] = createSignal<OperationType[]>([])
  const accounts = createMemo(() => new Map<number, Account>([...clients().values()].flatMap((c) => c.accounts.map((a) => [a.id, a] as const))))
  const clientName = (id: number | null) => (id === null ? '—' : (clients().get(id)?.name ?? `Cliente ${id}`))
  const typeName = (id: number) => types().find((t) => t.id === id)?.name ?? `Tipo ${id}`
  const accountLabel = (id: number) => {
    const a = accounts().get(id)
    return a ? `${clientName(a.client_id)} · ${a.name || a.currency_name}` : `Cuenta ${id}`
  }
  let cajas: Promise<void> | undefined
  // Reads under way: a balance preview asked for meanwhile says it is coming rather than that there is none.
  const [reading, setReading] = createSignal(0)
  const keep = (found: Client[]) => {
    if (!found.length) return
    const next = new Map(clients())
    for (const c of found) next.set(c.id, c)
    setClients(next)
  }
  /** The names `ops` need that are not known yet; `fresh` asks again for theirs (balances after a move). */
  const know = async (ops: Named[], fresh = false) => {
    if (!can('clients.view')) return
    setReading((n) => n + 1)
    try {
      await read(ops, fresh)
    } finally {
      setReading((n) => n - 1)
    }
  }
  // Ids asked for once and not answered (deleted, outside a client scope) are not asked for again.
  const unanswered = { clients: new Set<number>(), accounts: new Set<number>() }
  const read = async (ops: Named[], fresh: boolean) => {
    await (cajas ??= allCajas().then(keep))
    const named = ops.map((o) => o.client_id).filter((id): id is number => id !== null && (fresh || (!clients().has(id) && !unanswered.clients.has(id))))
    const moved = ops.flatMap((o) => (o.transactions ?? []).map((t) => t.account_id))
    const [byId, byAccount] = await Promise.all([
      named.length ? clientsNamed('ids', named) : [],
      fresh ? clientsNamed('account_ids', moved) : [],
    ])
    keep([...byId, ...byAccount])
    for (const id of named) if (!clients().has(id)) unanswered.clients.add(id)
    const unknown = moved.filter((id) => !accounts().has(id) && !unanswered.accounts.has(id))
    if (unknown.length) keep(await clientsNamed('account_ids', unknown))
    for (const id of unknown) if (!accounts().has(id)) unanswered.accounts.add(id)
  }
  const load = async (ops: Named[]) => {
    const [t] = await Promise.all([money<{ data: OperationType[] }>('GET', '/api/operation-types').then((b) => b.data), know(ops)])
    setTypes(t)
  }
  return { types, accounts, clientName, typeName, accountLabel, load, know, reading: () => reading() > 0 }
}
type Directory = ReturnType<typeof createDirectory>

const MOVE = {
  approve: { label: 'Aprobar', done: 'aprobada', question: '¿Aprobar la operación', path: 'approve' },
  revert: { label: 'Revertir', done: 'revertida (vuelve a pendiente)', question: '¿Revertir la operación', path: 'revert' },
  cancel: { label: 'Cancelar', done: 'cancelada', question: '¿Cancelar la operación', path: 'cancel' },
} as const

/** What each move can be asked of an operation in this status (contract §3). */
const movesFor = (status: OperationStatus): Move[] =>
  status === 'pending' ? ['approve', 'cancel'] : status === 'completed' ? ['revert', 'cancel'] : status === 'mixed' ? ['cancel'] : []

/** A 409 means someone else moved the operation first: said in words, and the caller reloads. */
function describeMove(e: unknown): string {
  if (e instanceof ApiFailure)
    switch (e.code) {
      case 'NOT_ALL_PENDING':
        return 'La operación ya no está pendiente: otra persona la aprobó o la canceló hace un momento. Se actualizó la lista.'
      case 'NOT_ALL_COMPLETED':
        return 'La operación ya no está aprobada: otra persona la revirtió o la canceló hace un momento. Se actualizó la lista.'
      case 'ALREADY_CANCELLED':
        return 'La operación ya estaba cancelada: otra persona la canceló hace un momento. Se actualizó la lista.'
      case 'AMOUNT_OUT_OF_RANGE':
        return 'No se pudo: un saldo quedaría fuera del máximo que se puede registrar.'
      case 'NOT_FOUND':
        return 'La operación ya no existe o no está a su alcance. Se actualizó la lista.'
    }
  return explain(e)
}

const amount = (value: string, currency: string) => `${currency} ${formatArs(value)}`

type MoveAction = ReturnType<typeof createAction>

/**
 * Aprobar / Revertir / Cancelar, each after a confirmation that shows the balances the move leaves. The outcome is
 * the section's `action` note: a moved operation leaves the queue, and its message must outlive its row.
 */
function Moves(props: { op: Operation; dir: Directory; action: MoveAction; onChanged: () => Promise<unknown> }) {
  const [asking, setAsking] = createSignal<Move | null>(null)
  const action = props.action
  const preview = createMemo(() => {
    const m = asking()
    return m ? balancesAfter(props.op, m, props.dir.accounts()) : []
  })
  const go = (move: Move) =>
    action
      .run(async () => {
        try {
          await money('POST', `/api/operations/${props.op.id}/${MOVE[move].path}`)
        } catch (e) {
          setAsking(null)
          if (e instanceof ApiFailure && e.status === 409) await props.onChanged()
          throw e
        }
        setAsking(null)
        const ids = new Set(props.op.transactions.map((t) => t.account_id))
        await props.dir.know([props.op], true)
        const now = [...ids].map((id) => props.dir.accounts().get(id)).filter((a): a is Account => !!a)
        await props.onChanged()
        const balances = now.map((a) => `${props.dir.accountLabel(a.id)}: ${amount(a.balance, a.currency_name)}`).join('; ')
        return `Operación ${props.op.id} ${MOVE[move].done}.${balances ? ` Saldos: ${balances}.` : ''}`
      })
  return (
    <div class="moves">
      <Show
        when={asking()}
        fallback={
          <div class="row">
            <For each={movesFor(props.op.status)}>
              {(m) => (
                <button type="button" class={m === 'approve' ? 'primary' : m === 'cancel' ? 'danger' : ''} onClick={() => (setAsking(m), void props.dir.know([props.op]))} data-testid={`op-${m}`}>
                  {MOVE[m].label}
                </button>
              )}
            </For>
          </div>
        }
      >
        {(m) => (
          <div role="group" aria-label={`Confirmar: ${MOVE[m()].label} operación ${props.op.id}`} class="confirm stack" data-testid="op-confirm">
            <p>
              {MOVE[m()].question} {props.op.id}?
            </p>
            <Show when={preview().length} fallback={<p class="muted">{props.dir.reading() ? 'Leyendo los saldos…' : 'Sin acceso a los saldos de sus cuentas.'}</p>}>
              <table class="grid">
                <caption class="visually-hidden">Saldos antes y después</caption>
                <thead>
                  <tr>
                    <th scope="col">Cuenta</th>
                    <th scope="col">Saldo actual</th>
                    <th scope="col">Saldo resultante</th>
                  </tr>
                </thead>
                <tbody>
                  <For each={preview()}>
                    {(b) => (
                      <tr>
                        <td>{props.dir.accountLabel(b.account.id)}</td>
                        <td class="num">{amount(b.before, b.account.currency_name)}</td>
                        <td class="num" data-testid="balance-after">
                          {amount(b.after, b.account.currency_name)}
                        </td>
                      </tr>
                    )}
                  </For>
                </tbody>
              </table>
            </Show>
            <div class="row">
              <button type="button" class={m() === 'approve' ? 'primary' : 'danger'} ref={(el) => queueMicrotask(() => el.focus())} disabled={action.busy()} onClick={() => go(m())} data-testid="op-confirm-yes">
                Sí, {MOVE[m()].label.toLowerCase()}
              </button>
              <button type="button" onClick={() => setAsking(null)}>
                No
              </button>
            </div>
          </div>
        )}
      </Show>
    </div>
  )
}

function Legs(props: { op: Operation; dir: Directory }) {
  return (
    <ul class="legs">
      <For each={props.op.transactions}>
        {(t) => (
          <li>
            <span class="num">{amount(t.amount, t.currency)}</span> <span class="muted">{props.dir.accountLabel(t.account_id)}</span>
          </li>
        )}
      </For>
    </ul>
  )
}

async function allOperations(query: URLSearchParams): Promise<Operation[]> {
  const out: Operation[] = []
  // A day of a busy house fits in a few pages; ten bound what one screen asks of the API.
  for (let page = 1; page <= 10; page++) {
    query.set('page', String(page))
    query.set('pageSize', '200')
    const body = await money<Page<Operation>>('GET', `/api/operations?${query}`)
    out.push(...body.data)
    if (page >= body.pagination.totalPages) break
  }
  return out
}

/** The type filter's value for «Cambios»: no operation type id looks like it. */
const EXCHANGES = 'cambios'

export function Operations() {
  const dir = createDirectory()
  const [from, setFrom] = createSignal(today())
  const [to, setTo] = createSignal(today())
  const [status, setStatus] = createSignal('')
  const [type, setType] = createSignal('')
  const [client, setClient] = createSignal<number | null>(null)
  const [ops, setOps] = createSignal<Operation[]>([])
  // «Cambios» in the type filter lists the exchanges with their receipts instead (GET /api/exchanges).
  const [exchanges, setExchanges] = createSignal<ExchangeListItem[] | null>(null)
  const [localCurrency, setLocalCurrency] = createSignal('ARS')
  const [pending, setPending] = createSignal<Operation[]>([])
  const list = createAction()
  const moves = createAction(describeMove)

  const readPending = async () => {
    if (!can('operations.approve')) return []
    const found = await allOperations(new URLSearchParams({ status: 'pending' }))
    setPending(found)
    return found
  }
  const readList = async (): Promise<Named[]> => {
    if (type() === EXCHANGES) {
      const found = await exchangesOf({ from: from(), to: to(), client_id: client() === null ? undefined : String(client()) })
      // The API filters exchanges by date and client; the status is narrowed here.
      const shown = status() ? found.filter((x) => x.status === status()) : found
      setExchanges(shown)
      return shown
    }
    setExchanges(null)
    const q = new URLSearchParams()
    if (from()) q.set('from', from())
    if (to()) q.set('to', to())
    if (status()) q.set('status', status())
    if (client() !== null) q.set('client_id', String(client()))
    const found = await allOperations(q)
    // The API filters by status, client and date; the type is narrowed here.
    setOps(type() ? found.filter((o) => String(o.operation_type_id) === type()) : found)
    return found
  }
  // Both lists first, then the names both need in one round of requests.
  const refresh = async () => dir.know((await Promise.all([readPending(), readList()])).flat())
  const loadCompany = async () => setLocalCurrency((await money<CompanyProfile>('GET', '/api/company')).local_currency)
  onMount(() =>
    list.run(async () => {
      await Promise.all([loadCompany(), Promise.all([readPending(), readList()]).then((lists) => dir.load(lists.flat()))])
    }),
  )

  const submit = (e: Event) => {
    e.preventDefault()
    void list.run(async () => dir.know(await readList()))
  }

  return (
    <section class="panel" data-testid="operations-section">
      <h1>Operaciones</h1>
      <NoteLine note={list.note()} />
      <Show when={can('operations.approve')}>
        <section class="sub" aria-labelledby="pending-title" data-testid="pending-queue">
          <h2 id="pending-title">Pendientes de aprobación ({pending().length})</h2>
          <NoteLine note={moves.note()} testid="op-message" />
          <Show when={pending().length} fallback={<p class="muted">No hay operaciones pendientes.</p>}>
            <ul class="list">
              <For each={pending()}>
                {(op) => (
                  <li class="item" data-testid="pending-op" data-id={op.id}>
                    <div class="item-head">
                      <A href={`/operaciones/${op.id}`}>
                        Operación {op.id} · {dir.typeName(op.operation_type_id)}
                      </A>
                      <span class="muted">
                        {dir.clientName(op.client_id)} · {when(op.date)}
                      </span>
                    </div>
                    <Legs op={op} dir={dir} />
                    <Moves op={op} dir={dir} action={moves} onChanged={refresh} />
                  </li>
                )}
              </For>
            </ul>
          </Show>
        </section>
      </Show>

      <section class="sub" aria-labelledby="list-title">
        <h2 id="list-title">Operaciones del período</h2>
        <form class="inline filters" onSubmit={submit} data-testid="operations-filters">
          <label>
            Desde
            <input type="date" name="from" value={from()} onInput={(e) => setFrom(e.currentTarget.value)} />
          </label>
          <label>
            Hasta
            <input type="date" name="to" value={to()} onInput={(e) => setTo(e.currentTarget.value)} />
          </label>
          <label>
            Estado
            <select name="status" value={status()} onChange={(e) => setStatus(e.currentTarget.value)}>
              <option value="">Todos</option>
              <For each={Object.entries(STATUS_LABEL)}>{([v, l]) => <option value={v}>{l}</option>}</For>
            </select>
          </label>
          <label>
            Tipo
            <select name="type" value={type()} onChange={(e) => setType(e.currentTarget.value)}>
              <option value="">Todos</option>
              <option value={EXCHANGES}>Cambios (compra y venta), con boleto</option>
              <For each={dir.types()}>{(t) => <option value={String(t.id)}>{t.name}</option>}</For>
            </select>
          </label>
          <Show when={can('clients.view')}>
            <ClientPicker label="Cliente" name="client" value={client()} optional="Todos" onChange={(c) => setClient(c?.id ?? null)} />
          </Show>
          <button type="submit" class="primary" disabled={list.busy()}>
            Buscar
          </button>
        </form>
        <Show when={exchanges()}>
          {(rows) => <ExchangesTable rows={rows()} clientName={dir.clientName} localCurrency={localCurrency()} />}
        </Show>
        <Show when={!exchanges() && ops().length} fallback={<Show when={!exchanges()}><p class="muted">No hay operaciones con esos filtros.</p></Show>}>
          <div class="scroll-x">
          <table class="grid" data-testid="operations-table">
            <caption class="visually-hidden">Operaciones encontradas</caption>
            <thead>
              <tr>
                <th scope="col">N.º</th>
                <th scope="col">Fecha</th>
                <th scope="col">Tipo</th>
                <th scope="col">Cliente</th>
                <th scope="col">Estado</th>
                <th scope="col">Boleto</th>
                <th scope="col">Movimientos</th>
              </tr>
            </thead>
            <tbody>
              <For each={ops()}>
                {(op) => (
                  <tr data-testid="operation-row" data-id={op.id}>
                    <td>
                      <A href={`/operaciones/${op.id}`}>{op.id}</A>
                    </td>
                    <td>{when(op.date)}</td>
                    <td>{dir.typeName(op.operation_type_id)}</td>
                    <td>{dir.clientName(op.client_id)}</td>
                    <td data-testid="operation-status">{STATUS_LABEL[op.status]}</td>
                    <td>
                      <Show when={op.receipt_number} fallback="—">
                        {(n) => (
                          <a href={`/receipts/${op.id}`} target="_blank" rel="noopener" data-testid="operation-receipt">
                            {n()}
                          </a>
                        )}
                      </Show>
                    </td>
                    <td>
                      <Legs op={op} dir={dir} />
                    </td>
                  </tr>
                )}
              </For>
            </tbody>
          </table>
          </div>
        </Show>
      </section>
    </section>
  )
}

interface AuditEntry {
  id: number
  entity: string
  entity_id: number
  action: string
  actor: { name: string | null; email: string | null }
  timestamp: string
  changes: { field: string; before: unknown; after: unknown }[]
}

/**
 * The audit rows of one operation and its transactions. The API filters by table and date, not by record, so the
 * rows since the operation was made are read and kept when they name it (a few pages at most for one day's work).
 */
async function auditOf(op: Operation): Promise<AuditEntry[]> {
  const txIds = new Set(op.transactions.map((t) => t.id))
  const mine = (e: AuditEntry) => (e.entity === 'operations' && e.entity_id === op.id) || (e.entity === 'transactions' && txIds.has(e.entity_id))
  const out: AuditEntry[] = []
  const since = new Intl.DateTimeFormat('en-CA', { timeZone: 'America/Argentina/Buenos_Aires' }).format(new Date(op.created_at))
  for (const table of ['operations', 'transactions']) {
    for (let page = 1; page <= 10; page++) {
      const q = new URLSearchParams({ table, from: since, page: String(page), pageSize: '100' })
      // Snapshots hold amounts as JSON numbers: read with every number kept as its text, so none passes a float.
      const body = await apiExact<Page<AuditEntry>>(`/api/audit-logs?${q}`)
      for (const e of body.data) e.entity_id = Number(e.entity_id)
      out.push(...body.data.filter(mine))
      if (page >= Number(body.pagination.totalPages)) break
    }
  }
  return out.sort((a, b) => b.timestamp.localeCompare(a.timestamp) || Number(b.id) - Number(a.id))
}

function Attachments(props: { op: Operation; onChanged: () => Promise<unknown> }) {
  const action = createAction((e) =>
    e instanceof ApiFailure && e.code === 'UNSUPPORTED_MEDIA_TYPE'
      ? 'Ese tipo de archivo no se acepta: use PDF, imagen u hoja de cálculo.'
      : e instanceof ApiFailure && e.code === 'FILE_TOO_LARGE'
        ? 'El archivo es demasiado grande.'
        : explain(e),
  )
  const [removing, setRemoving] = createSignal<number | null>(null)
  let file: HTMLInputElement | undefined
  const upload = (e: Event) => {
    e.preventDefault()
    const chosen = file?.files?.[0]
    if (!chosen) return action.setNote({ kind: 'error', text: 'Elija un archivo.' })
    void action.run(async () => {
      const form = new FormData()
      form.set('file', chosen)
      await money('POST', `/api/operations/${props.op.id}/attachments`, form)
      if (file) file.value = ''
      await props.onChanged()
      return `Se adjuntó «${chosen.name}».`
    })
  }
  const remove = (a: Attachment) =>
    action.run(async () => {
      await money('DELETE', `/api/operations/${props.op.id}/attachments/${a.id}`)
      setRemoving(null)
      await props.onChanged()
      return `Se quitó «${a.file_name}».`
    })
  return (
    <section class="sub" aria-labelledby="att-title" data-testid="attachments">
      <h2 id="att-title">Adjuntos</h2>
      <Show when={props.op.attachments.length} fallback={<p class="muted">Sin adjuntos.</p>}>
        <ul class="list">
          <For each={props.op.attachments}>
            {(a) => (
              <li class="item row" data-testid="attachment">
                <Show when={a.signed_url} fallback={<span>{a.file_name}</span>}>
                  <a href={a.signed_url!} target="_blank" rel="noopener">
                    {a.file_name}
                  </a>
                </Show>
                <span class="muted">
                  {a.uploaded_by.name ?? 'una clave de la empresa'} · {when(a.created_at)}
                </span>
                <Show when={can('attachments.edit')}>
                  <Show
                    when={removing() === a.id}
                    fallback={
                      <button type="button" class="danger" onClick={() => setRemoving(a.id)}>
                        Quitar
                      </button>
                    }
                  >
                    <span role="group" aria-label={`Confirmar: quitar ${a.file_name}`} class="confirm">
                      ¿Quitar «{a.file_name}»?
                      <button type="button" class="danger" onClick={() => remove(a)} data-testid="attachment-remove-confirm">
                        Sí, quitar
                      </button>
                      <button type="button" onClick={() => setRemoving(null)}>
                        No
                      </button>
                    </span>
                  </Show>
                </Show>
              </li>
            )}
          </For>
        </ul>
      </Show>
      <Show when={can('attachments.edit')}>
        <form class="inline" onSubmit={upload}>
          <label>
            Archivo
            <input ref={file} type="file" name="file" data-testid="attachment-file" />
          </label>
          <button type="submit" disabled={action.busy()}>
            Adjuntar
          </button>
        </form>
      </Show>
      <NoteLine note={action.note()} testid="attachment-message" />
    </section>
  )
}

export function OperationPage() {
  const params = useParams()
  const dir = createDirectory()
  const [op, setOp] = createSignal<Operation | null>(null)
  const [audit, setAudit] = createSignal<AuditEntry[] | null>(null)
  const action = createAction()
  const moves = createAction(describeMove)
  const load = async () => {
    const found = await money<Operation>('GET', `/api/operations/${encodeURIComponent(params.id ?? '')}`)
    setOp(found)
    if (can('audit.view')) setAudit(await auditOf(found))
    return found
  }
  onMount(() => action.run(async () => dir.load([await load()])))
  return (
    <section class="panel" data-testid="operation-page">
      <h1>Operación {params.id}</h1>
      <p>
        <A href="/operaciones">Volver a Operaciones</A>
      </p>
      <NoteLine note={action.note()} />
      <Show when={op()}>
        {(o) => (
          <>
            <dl class="facts">
              <dt>Estado</dt>
              <dd data-testid="operation-status">{STATUS_LABEL[o().status]}</dd>
              <dt>Tipo</dt>
              <dd>{dir.typeName(o().operation_type_id)}</dd>
              <dt>Cliente</dt>
              <dd>{dir.clientName(o().client_id)}</dd>
              <dt>Fecha</dt>
              <dd>{when(o().date)}</dd>
              <dt>Descripción</dt>
              <dd>{o().description || '—'}</dd>
            </dl>
            <Show when={can('operations.approve')}>
              <Moves op={o()} dir={dir} action={moves} onChanged={load} />
              <NoteLine note={moves.note()} testid="op-message" />
            </Show>
            <section class="sub" aria-labelledby="tx-title">
              <h2 id="tx-title">Movimientos</h2>
              <table class="grid" data-testid="transactions">
                <caption class="visually-hidden">Movimientos de la operación</caption>
                <thead>
                  <tr>
                    <th scope="col">Cuenta</th>
                    <th scope="col">Importe</th>
                    <th scope="col">Estado</th>
                    <th scope="col">Comisión</th>
                    <th scope="col">Detalle</th>
                  </tr>
                </thead>
                <tbody>
                  <For each={o().transactions}>
                    {(t) => (
                      <tr>
                        <td>{dir.accountLabel(t.account_id)}</td>
                        <td class="num">{amount(t.amount, t.currency)}</td>
                        <td>{TX_STATUS_LABEL[t.status]}</td>
                        <td>{t.is_commission ? 'Sí' : 'No'}</td>
                        <td>{t.description || '—'}</td>
                      </tr>
                    )}
                  </For>
                </tbody>
              </table>
            </section>
            <Attachments op={o()} onChanged={() => action.run(async () => void (await load()))} />
            <Show when={audit()}>
              {(rows) => (
                <section class="sub" aria-labelledby="audit-title" data-testid="operation-audit">
                  <h2 id="audit-title">Historial</h2>
                  <Show when={rows().length} fallback={<p class="muted">Sin registros todavía.</p>}>
                    <table class="grid">
                      <caption class="visually-hidden">Cambios registrados de la operación y sus movimientos</caption>
                      <thead>
                        <tr>
                          <th scope="col">Cuándo</th>
                          <th scope="col">Quién</th>
                          <th scope="col">Qué</th>
                          <th scope="col">Cambios</th>
                        </tr>
                      </thead>
                      <tbody>
                        <For each={rows()}>
                          {(r) => (
                            <tr data-testid="audit-row">
                              <td>{when(r.timestamp)}</td>
                              <td>{r.actor.name ?? r.actor.email ?? 'una clave de la empresa'}</td>
                              <td>
                                {AUDIT_ACTION_LABEL[r.action] ?? r.action} de {r.entity === 'operations' ? 'la operación' : `el movimiento ${r.entity_id}`}
                              </td>
                              <td>
                                {describeChanges(r.changes)}
                              </td>
                            </tr>
                          )}
                        </For>
                      </tbody>
                    </table>
                  </Show>
                </section>
              )}
            </Show>
          </>
        )}
      </Show>
    </section>
  )
}
