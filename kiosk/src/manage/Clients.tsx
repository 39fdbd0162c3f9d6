import { A, useNavigate, useSearchParams } from '@solidjs/router'
import { createEffect, createSignal, For, on, onCleanup, onMount, Show } from 'solid-js'
import { createStore, produce } from 'solid-js/store'
import { ApiFailure, explain, money } from './api'
import { formatArs } from './decimal'
import { createFill, FieldError, invalid, TextField } from './forms'
import type { Account } from './ledger'
import { can, sessionEnded } from './session'
import { documentBody, DocumentFields, documentProblems, documentText, emptyDocument, isTaken, takenWords, type ClientDocument, type DocumentErrors } from './Document'
import { loadTags, TagChip, type Tag } from './Tags'
import { createAction, NoteLine } from './ui'
import './records.css'

/** A client as `GET /api/clients` answers it with `money=string` (contract §2, interface 2.7). */
export interface ClientRecord {
  id: number
  name: string
  description: string
  type: 0 | 1
  document: ClientDocument | null
  accounts: Account[]
  client_tags: { id: number; tag_id: number; tag: Tag }[]
}

interface ClientList {
  data: ClientRecord[]
  count: number
}

export const TYPE_LABEL = { 0: 'Caja', 1: 'Cliente externo' } as const

/** Rows per page: a page a person reads without scrolling far, and cheap to answer however many clients there are. */
const PAGE_SIZE = 50
/** Typing pauses this long before the list asks again, so a word typed is one request, not one per letter. */
const SEARCH_PAUSE_MS = 300
/** What the currency field takes: a code such as ARS, USD or USDT (the API takes up to 50 characters of any kind). */
const CURRENCY = /^[A-Z][A-Z0-9]{1,9}$/
export const CURRENCIES = ['ARS', 'USD', 'EUR', 'BRL', 'UYU', 'CLP', 'PYG', 'GBP', 'CHF', 'JPY', 'CNY', 'MXN', 'USDT']

/** A message carried from one screen of the section to the next (a creation, a deletion). */
export const [flash, setFlash] = createSignal<string | null>(null)

export const balanceText = (a: Account) => `${a.currency_name} ${formatArs(a.balance)}`

/** Shows the carried message once: it is taken when shown, so a later visit does not repeat it. */
export function Flash() {
  const text = flash()
  setFlash(null)
  return <NoteLine note={text ? { kind: 'info', text } : null} testid="client-flash" />
}

// ───────────────────────────── the list ─────────────────────────────

export function Clients() {
  const [params, setParams] = useSearchParams()
  const page = () => Math.max(1, Math.floor(Number(params.pagina)) || 1)
  const type = () => (params.tipo === '0' || params.tipo === '1' ? params.tipo : '')
  const search = () => (typeof params.buscar === 'string' ? params.buscar : '')
  const byDocument = () => (typeof params.documento === 'string' ? params.documento : '')
  const [text, setText] = createSignal(search())
  const [docText, setDocText] = createSignal(byDocument())
  // The page an answer is for travels with it: the counts say what is on screen, not what was just asked.
  const [result, setResult] = createSignal<(ClientList & { page: number }) | null>(null)
  const [loading, setLoading] = createSignal(false)
  const list = createAction()
  // Only the newest answer is shown: an older one arriving late must not overwrite what was asked since.
  let asked = 0
  createEffect(
    on([page, type, search, byDocument], ([p, t, s, d]) => {
      const mine = ++asked
      setLoading(true)
      const q = new URLSearchParams({ page: String(p), pageSize: String(PAGE_SIZE) })
      if (t) q.set('type', t)
      if (s.trim()) q.set('search', s.trim())
      if (d.trim()) q.set('document', d.trim())
      money<ClientList>('GET', `/api/clients?${q}`)
        .then((body) => {
          if (mine !== asked) return
          // A page past the end (an old bookmark, a narrower search) turns into the last page there is.
          const last = Math.max(1, Math.ceil(body.count / PAGE_SIZE))
          if (p > last) return setParams({ pagina: last > 1 ? String(last) : undefined }, { replace: true })
          setResult({ ...body, page: p })
          list.setNote(null)
        })
        .catch((e) => {
          if (mine !== asked) return
          if (e instanceof ApiFailure && e.status === 401) return sessionEnded()
          list.setNote({ kind: 'error', text: explain(e) })
        })
        .finally(() => mine === asked && setLoading(false))
    }),
  )
  let timer: ReturnType<typeof setTimeout> | undefined
  onCleanup(() => clearTimeout(timer))
  /** Both search fields as typed so far, for the address. */
  const typedFilters = () => ({ buscar: text().trim() || undefined, documento: docText().trim() || undefined, pagina: undefined })
  const typed = (set: (v: string) => void, value: string) => {
    set(value)
    clearTimeout(timer)
    timer = setTimeout(() => setParams(typedFilters(), { replace: true }), SEARCH_PAUSE_MS)
  }
  const pages = () => Math.max(1, Math.ceil((result()?.count ?? 0) / PAGE_SIZE))
  const go = (p: number) => setParams({ pagina: p > 1 ? String(p) : undefined })
  const filtered = () => Boolean(search().trim() || type() || byDocument().trim())

  return (
    <section class="panel" data-testid="clients-section">
      <h1>Clientes y cajas</h1>
      <Flash />
      <div class="toolbar">
        <form class="inline" role="search" aria-label="Buscar clientes" onSubmit={(e) => {
          e.preventDefault()
          clearTimeout(timer)
          setParams(typedFilters())
        }}>
          <label>
            Buscar por nombre o descripción
            <input name="buscar" type="search" maxlength="200" value={text()} onInput={(e) => typed(setText, e.currentTarget.value)} placeholder="por ejemplo: Gómez o mayorista" />
          </label>
          <label>
            Documento (número exacto)
            <input name="documento" type="search" class="document-search" maxlength="60" value={docText()} onInput={(e) => typed(setDocText, e.currentTarget.value)} placeholder="por ejemplo: 20.123.456" />
          </label>
          <label>
            Tipo
            <select
              name="tipo"
              value={type()}
              onChange={(e) => {
                // What is typed in the search goes with the choice, even before its pause is over.
                clearTimeout(timer)
                setParams({ tipo: e.currentTarget.value || undefined, ...typedFilters() })
              }}
            >
              <option value="">Cajas y clientes</option>
              <option value="0">Solo cajas</option>
              <option value="1">Solo clientes externos</option>
            </select>
          </label>
        </form>
        <Show when={can('clients.edit')}>
          <div class="row">
            <A class="button" href="/clientes/nuevo?tipo=0" data-testid="new-caja">
              Nueva caja
            </A>
            <A class="button primary" href="/clientes/nuevo?tipo=1" data-testid="new-client">
              Nuevo cliente
            </A>
          </div>
        </Show>
      </div>
      <NoteLine note={list.note()} />
      <Show when={result()} fallback={<p class="muted">Cargando…</p>}>
        {(r) => (
          <>
            <p class="muted" aria-live="polite" data-testid="clients-count">
              {r().count === 0
                ? filtered()
                  ? 'Nada coincide con la búsqueda.'
                  : 'Todavía no hay clientes ni cajas.'
                : `${r().count.toLocaleString('es-AR')} ${r().count === 1 ? 'resultado' : 'resultados'} · página ${r().page.toLocaleString('es-AR')} de ${pages().toLocaleString('es-AR')}`}
            </p>
            <Show when={r().data.length}>
              <table class="grid clients" aria-busy={loading()} data-testid="clients-table">
                <caption class="visually-hidden">Clientes y cajas, ordenados por nombre</caption>
                <thead>
                  <tr>
                    <th scope="col">Nombre</th>
                    <th scope="col">Tipo</th>
                    <th scope="col">Descripción</th>
                    <th scope="col">Etiquetas</th>
                    <th scope="col" class="num">
                      Saldos
                    </th>
                  </tr>
                </thead>
                <tbody>
                  <For each={r().data}>
                    {(c) => (
                      <tr data-testid="client-row" data-id={c.id}>
                        <th scope="row">
                          <A href={`/clientes/${c.id}`}>{c.name}</A>
                          <Show when={c.document}>
                            <div class="muted small" data-testid="row-document">
                              {documentText(c.document)}
                            </div>
                          </Show>
                        </th>
                        <td>{TYPE_LABEL[c.type]}</td>
                        <td class="wrap">{c.description || <span class="muted">—</span>}</td>
                        <td>
                          <span class="chips">
                            <For each={c.client_tags}>{(ct) => <TagChip tag={ct.tag} />}</For>
                          </span>
                        </td>
                        <td class="num">
                          <For each={c.accounts} fallback={<span class="muted">Sin cuentas</span>}>
                            {(a) => (
                              <div data-testid="row-balance">
                                <span class="muted small">{a.name && a.name !== a.currency_name ? `${a.name} · ` : ''}</span>
                                {balanceText(a)}
                              </div>
                            )}
                          </For>
                        </td>
                      </tr>
                    )}
                  </For>
                </tbody>
              </table>
            </Show>
            <Show when={pages() > 1}>
              <nav class="row pager" aria-label="Páginas">
                <button type="button" disabled={page() <= 1 || loading()} onClick={() => go(1)}>
                  Primera
                </button>
                <button type="button" disabled={page() <= 1 || loading()} onClick={() => go(page() - 1)} data-testid="page-prev">
                  Anterior
                </button>
                <span>
                  Página {r().page.toLocaleString('es-AR')} de {pages().toLocaleString('es-AR')}
                </span>
                <button type="button" disabled={page() >= pages() || loading()} onClick={() => go(page() + 1)} data-testid="page-next">
                  Siguiente
                </button>
                <button type="button" disabled={page() >= pages() || loading()} onClick={() => go(pages())} data-testid="page-last">
                  Última
                </button>
              </nav>
            </Show>
          </>
        )}
      </Show>
    </section>
  )
}

// ───────────────────────────── creating ─────────────────────────────

interface AccountRow {
  key: number
  currency: string
  name: string
}

let nextRow = 1

/** The account rows' problems, by row key: a currency code, and no two accounts alike. */
export function accountProblems(rows: AccountRow[]): Record<number, string> {
  const found: Record<number, string> = {}
  const seen = new Set<string>()
  for (const r of rows) {
    const currency = r.currency.trim().toUpperCase()
    if (!CURRENCY.test(currency)) found[r.key] = currency ? 'La moneda es un código de 2 a 10 letras o números, por ejemplo USD.' : 'Escriba la moneda, por ejemplo USD.'
    else if (r.name.trim().length > 200) found[r.key] = 'El nombre de la cuenta tiene como máximo 200 caracteres.'
    else {
      const same = `${currency}\0${(r.name.trim() || currency).toLowerCase()}`
      if (seen.has(same)) found[r.key] = `Ya hay otra cuenta en ${currency} con ese nombre: póngale un nombre distinto o quítela.`
      seen.add(same)
    }
  }
  return found
}

export function describeSave(e: unknown): string {
  if (e instanceof ApiFailure && e.code === 'UNKNOWN_TAG') return 'Una de las etiquetas elegidas ya no existe. Actualice la página.'
  if (e instanceof ApiFailure && e.code === 'IDEMPOTENCY_KEY_REUSED') return 'Este formulario ya se envió con otros datos. Vuelva a enviarlo.'
  if (isTaken(e)) return 'El documento ya está registrado en otro cliente: no se guardó nada.'
  return explain(e)
}

export function ClientNew() {
  const [params] = useSearchParams()
  const navigate = useNavigate()
  const [type, setType] = createSignal<0 | 1>(params.tipo === '0' ? 0 : 1)
  const [name, setName] = createSignal('')
  const [description, setDescription] = createSignal('')
  const [rows, setRows] = createStore<AccountRow[]>([
    { key: nextRow++, currency: 'ARS', name: '' },
    { key: nextRow++, currency: 'USD', name: '' },
  ])
  const [tags, setTags] = createSignal<Tag[]>([])
  const [chosen, setChosen] = createSignal<number[]>([])
  const [doc, setDoc] = createSignal(emptyDocument())
  const [docErrors, setDocErrors] = createSignal<DocumentErrors>({})
  const [errors, setErrors] = createSignal<{ name?: string; description?: string; rows: Record<number, string> }>({ rows: {} })
  const action = createAction(describeSave)
  const fill = createFill()
  let nameField: HTMLInputElement | undefined
  onMount(() => {
    nameField?.focus()
    void loadTags().then(setTags, () => setTags([]))
  })

  const submit = (e: Event) => {
    e.preventDefault()
    const found: { name?: string; description?: string; rows: Record<number, string> } = { rows: accountProblems(rows) }
    if (!name().trim()) found.name = type() === 0 ? 'Escriba el nombre de la caja, por ejemplo «Caja 2».' : 'Escriba el nombre del cliente.'
    else if (name().trim().length > 200) found.name = 'El nombre tiene como máximo 200 caracteres.'
    if (description().length > 2000) found.description = 'La descripción tiene como máximo 2000 caracteres.'
    setErrors(found)
    const docFound = documentProblems(doc())
    setDocErrors(docFound)
    if (found.name || found.description || Object.keys(found.rows).length || docFound.number || docFound.country) {
      action.setNote({ kind: 'error', text: 'Hay datos para corregir; no se envió nada.' })
      return
    }
    const body = {
      name: name().trim(),
      type: type(),
      ...(description().trim() && { description: description().trim() }),
      ...(doc().type && { document: documentBody(doc()) }),
      accounts: rows.map((r) => ({ currency_name: r.currency.trim().toUpperCase(), ...(r.name.trim() && { name: r.name.trim() }) })),
      ...(chosen().length && { tag_ids: chosen() }),
    }
    void action.run(async () => {
      const made = await money<ClientRecord>('POST', '/api/clients', body, fill.headers(body)).catch(async (e) => {
        if (isTaken(e)) setDocErrors({ number: await takenWords(doc()) })
        throw e
      })
      fill.done()
      const accounts = made.accounts.length === 1 ? 'una cuenta' : `${made.accounts.length} cuentas`
      setFlash(made.type === 0 ? `Caja «${made.name}» creada con ${accounts}.` : `Cliente «${made.name}» creado con ${accounts}.`)
      navigate(`/clientes/${made.id}`)
    })
  }

  const rowError = (key: number) => errors().rows[key]
  const clearRow = (key: number) => {
    if (!errors().rows[key]) return
    const { [key]: _, ...rest } = errors().rows
    setErrors({ ...errors(), rows: rest })
  }

  return (
    <section class="panel" data-testid="client-new">
      <h1>{type() === 0 ? 'Nueva caja' : 'Nuevo cliente'}</h1>
      <p>
        <A href="/clientes">Volver a clientes y cajas</A>
      </p>
      <form class="stack card-lite" onSubmit={submit} novalidate data-testid="client-form">
        <fieldset class="row">
          <legend>Es…</legend>
          <label class="choice">
            <input type="radio" name="type" value="0" checked={type() === 0} onChange={() => setType(0)} /> Una caja de la casa (efectivo en una sucursal o ventanilla)
          </label>
          <label class="choice">
            <input type="radio" name="type" value="1" checked={type() === 1} onChange={() => setType(1)} /> Un cliente externo (con cuenta corriente)
          </label>
        </fieldset>
        <div class="pair">
          <TextField
            ref={(el) => (nameField = el)}
            label="Nombre"
            name="name"
            id="client-name"
            maxlength={200}
            autocomplete="off"
            value={name()}
            error={errors().name}
            onInput={(v) => (setName(v), setErrors({ ...errors(), name: undefined }))}
          />
          <TextField
            label="Descripción (opcional; el listado la busca junto con el nombre)"
            name="description"
            id="client-description"
            maxlength={2000}
            autocomplete="off"
            value={description()}
            error={errors().description}
            onInput={(v) => (setDescription(v), setErrors({ ...errors(), description: undefined }))}
          />
        </div>
        <DocumentFields
          id="client-document"
          draft={doc()}
          errors={docErrors()}
          onChange={(d) => {
            setDoc(d)
            setDocErrors({})
          }}
        />
        <fieldset>
          <legend>Cuentas, una por moneda</legend>
          <p class="muted small">
            {type() === 0 ? 'Para comprar y vender, la caja necesita una cuenta en ARS y una en cada moneda que opera.' : 'El saldo de cada cuenta muestra quién debe a quién en esa moneda.'}
          </p>
          <datalist id="currencies">
            <For each={CURRENCIES}>{(c) => <option value={c} />}</For>
          </datalist>
          <table class="grid compact">
            <caption class="visually-hidden">Cuentas del cliente nuevo</caption>
            <thead>
              <tr>
                <th scope="col">Moneda</th>
                <th scope="col">Nombre de la cuenta (opcional)</th>
                <th scope="col">
                  <span class="visually-hidden">Quitar</span>
                </th>
              </tr>
            </thead>
            <tbody>
              <For each={rows}>
                {(row, i) => (
                  <tr data-testid="account-row">
                    <td>
                      <input
                        class="code"
                        list="currencies"
                        maxlength="10"
                        aria-label={`Moneda de la cuenta ${i() + 1}`}
                        value={row.currency}
                        {...invalid(`account-${row.key}`, rowError(row.key))}
                        onInput={(e) => {
                          setRows(i(), 'currency', e.currentTarget.value)
                          clearRow(row.key)
                        }}
                      />
                      <FieldError id={`account-${row.key}`} text={rowError(row.key)} />
                    </td>
                    <td>
                      <input
                        maxlength="200"
                        aria-label={`Nombre de la cuenta ${i() + 1}`}
                        value={row.name}
                        placeholder={row.currency.trim().toUpperCase() || 'USD'}
                        onInput={(e) => {
                          setRows(i(), 'name', e.currentTarget.value)
                          clearRow(row.key)
                        }}
                      />
                    </td>
                    <td>
                      <button type="button" onClick={() => setRows(produce((r) => void r.splice(i(), 1)))} aria-label={`Quitar la cuenta ${i() + 1}`}>
                        Quitar
                      </button>
                    </td>
                  </tr>
                )}
              </For>
            </tbody>
          </table>
          <div class="row">
            <button type="button" onClick={() => setRows(rows.length, { key: nextRow++, currency: '', name: '' })} data-testid="add-account-row">
              Agregar otra moneda
            </button>
          </div>
        </fieldset>
        <fieldset>
          <legend>Etiquetas</legend>
          <Show
            when={tags().length}
            fallback={
              <p class="muted small">
                No hay etiquetas todavía. <Show when={can('clients.edit')}>Se crean en <A href="/etiquetas">Etiquetas</A>.</Show>
              </p>
            }
          >
            <div class="checks">
              <For each={tags()}>
                {(t) => (
                  <label class="check">
                    <input
                      type="checkbox"
                      value={t.id}
                      checked={chosen().includes(t.id)}
                      onChange={(e) => setChosen(e.currentTarget.checked ? [...chosen(), t.id] : chosen().filter((x) => x !== t.id))}
                    />
                    <TagChip tag={t} />
                  </label>
                )}
              </For>
            </div>
          </Show>
        </fieldset>
        <div class="row">
          <button type="submit" class="primary" disabled={action.busy()} data-testid="client-save">
            {action.busy() ? 'Guardando…' : type() === 0 ? 'Crear caja' : 'Crear cliente'}
          </button>
        </div>
        <NoteLine note={action.note()} testid="client-message" />
      </form>
    </section>
  )
}
