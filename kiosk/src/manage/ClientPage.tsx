import { A, useNavigate, useParams } from '@solidjs/router'
import Decimal from 'decimal.js'
import { renderSVG } from 'uqr'
import { saveFile } from '../download'
import { createEffect, createSignal, For, on, onMount, Show, type JSX } from 'solid-js'
import { ApiFailure, explain, money } from './api'
import { accountProblems, balanceText, CURRENCIES, describeSave, Flash, setFlash, TYPE_LABEL, type ClientRecord } from './Clients'
import { CopyField, createFill, FieldError, invalid, TextField } from './forms'
import type { Account } from './ledger'
import { can } from './session'
import { documentBody, DocumentFields, documentProblems, documentText, draftOf, isTaken, takenWords, type DocumentErrors } from './Document'
import { loadTags, TagChip, type Tag } from './Tags'
import { createAction, NoteLine, when } from './ui'
import './records.css'

/**
 * One client or caja: its balances, the statement to download, external access, and (with clients.edit) its data,
 * tags and deletion.
 */

export function ClientPage() {
  const params = useParams()
  const navigate = useNavigate()
  const [client, setClient] = createSignal<ClientRecord | null>(null)
  const [missing, setMissing] = createSignal(false)
  const loader = createAction((e) => (e instanceof ApiFailure && e.code === 'NOT_FOUND' ? 'No existe o fue eliminado.' : explain(e)))
  const load = () =>
    loader.run(async () => {
      try {
        setClient(await money<ClientRecord>('GET', `/api/clients/${encodeURIComponent(params.id ?? '')}`))
      } catch (e) {
        if (e instanceof ApiFailure && (e.code === 'NOT_FOUND' || e.code === 'INVALID_ID')) return void setMissing(true)
        throw e
      }
    })
  createEffect(on(() => params.id, load))
  const deleted = (name: string) => {
    setFlash(`«${name}» eliminado. Ya no aparece en los listados ni en las posiciones; sus movimientos siguen en la auditoría.`)
    navigate('/clientes')
  }
  return (
    <section class="panel" data-testid="client-page">
      <Show
        when={client()}
        fallback={
          <>
            <h1>{missing() ? 'Cliente no encontrado' : 'Cliente'}</h1>
            <Show when={missing()} fallback={<p class="muted">Cargando…</p>}>
              <p>Este cliente o caja no existe o fue eliminado.</p>
            </Show>
            <NoteLine note={loader.note()} />
            <p>
              <A href="/clientes">Volver a clientes y cajas</A>
            </p>
          </>
        }
      >
        {(c) => (
          <>
            <h1>
              {c().name} <span class="muted kind">· {TYPE_LABEL[c().type]}</span>
            </h1>
            <Show when={c().document}>
              <p class="muted" data-testid="client-document">
                {documentText(c().document)}
              </p>
            </Show>
            <p>
              <A href="/clientes">Volver a clientes y cajas</A>
            </p>
            <Flash />
            <NoteLine note={loader.note()} />
            <div class="client-grid">
              <div class="stack">
                <Balances client={c()} onChanged={load} />
                <Statement client={c()} />
                <Show when={can('clients.edit')}>
                  <Grants client={c()} />
                </Show>
              </div>
              <div class="stack">
                <Show when={can('clients.edit')} fallback={<Facts client={c()} />}>
                  <EditClient client={c()} onSaved={setClient} />
                  <ClientTags client={c()} onChanged={load} />
                  <DeleteClient client={c()} onDeleted={deleted} onRefresh={load} />
                </Show>
              </div>
            </div>
          </>
        )}
      </Show>
    </section>
  )
}

function Card(props: { title: string; id: string; testid: string; children: JSX.Element }) {
  return (
    <section class="sub" aria-labelledby={props.id} data-testid={props.testid}>
      <h2 id={props.id}>{props.title}</h2>
      {props.children}
    </section>
  )
}

/** What a person without clients.edit sees instead of the forms. */
function Facts(props: { client: ClientRecord }) {
  return (
    <Card title="Datos" id="facts-title" testid="client-facts">
      <dl class="facts">
        <dt>Tipo</dt>
        <dd>{TYPE_LABEL[props.client.type]}</dd>
        <dt>Documento</dt>
        <dd>{documentText(props.client.document) || '—'}</dd>
        <dt>Descripción</dt>
        <dd>{props.client.description || '—'}</dd>
        <dt>Etiquetas</dt>
        <dd>
          <span class="chips">
            <For each={props.client.client_tags} fallback="—">
              {(ct) => <TagChip tag={ct.tag} />}
            </For>
          </span>
        </dd>
      </dl>
    </Card>
  )
}

function Balances(props: { client: ClientRecord; onChanged: () => void }) {
  const [currency, setCurrency] = createSignal('')
  const [name, setName] = createSignal('')
  const [error, setError] = createSignal<string | null>(null)
  const action = createAction(describeSave)
  const fill = createFill()
  const add = (e: Event) => {
    e.preventDefault()
    const problem = accountProblems([
      ...props.client.accounts.map((a, i) => ({ key: -1 - i, currency: a.currency_name, name: a.name })),
      { key: 0, currency: currency(), name: name() },
    ])[0]
    setError(problem ?? null)
    if (problem) return
    const code = currency().trim().toUpperCase()
    const body = { currency_name: code, ...(name().trim() && { name: name().trim() }) }
    void action.run(async () => {
      await money<Account>('POST', `/api/clients/${props.client.id}/accounts`, body, fill.headers(body))
      fill.done()
      setCurrency('')
      setName('')
      props.onChanged()
      return `Cuenta en ${code} abierta con saldo 0,00.`
    })
  }
  return (
    <Card title="Cuentas y saldos" id="balances-title" testid="client-balances">
      <Show when={props.client.accounts.length} fallback={<p class="muted">Sin cuentas.</p>}>
        <table class="grid">
          <caption class="visually-hidden">Saldo de cada cuenta</caption>
          <thead>
            <tr>
              <th scope="col">Cuenta</th>
              <th scope="col">Moneda</th>
              <th scope="col" class="num">
                Saldo
              </th>
            </tr>
          </thead>
          <tbody>
            <For each={props.client.accounts}>
              {(a) => (
                <tr data-testid="balance-row" data-currency={a.currency_name}>
                  <td>{a.name || a.currency_name}</td>
                  <td>{a.currency_name}</td>
                  <td class="num" data-testid="balance">
                    {balanceText(a)}
                  </td>
                </tr>
              )}
            </For>
          </tbody>
        </table>
      </Show>
      <Show when={can('clients.edit')}>
        <form class="inline fields top-gap" onSubmit={add} novalidate data-testid="account-add">
          <label>
            Moneda nueva
            <input
              name="currency"
              class="code"
              list="currencies-add"
              maxlength="10"
              value={currency()}
              {...invalid('account-add-currency', error())}
              onInput={(e) => {
                setCurrency(e.currentTarget.value)
                setError(null)
              }}
            />
            <datalist id="currencies-add">
              <For each={CURRENCIES}>{(c) => <option value={c} />}</For>
            </datalist>
            <FieldError id="account-add-currency" text={error()} />
          </label>
          <label>
            Nombre (opcional)
            <input name="account-name" maxlength="200" value={name()} onInput={(e) => setName(e.currentTarget.value)} />
          </label>
          <button type="submit" disabled={action.busy()} data-testid="account-add-save">
            Abrir cuenta
          </button>
        </form>
        <NoteLine note={action.note()} testid="account-message" />
      </Show>
    </Card>
  )
}

function EditClient(props: { client: ClientRecord; onSaved: (c: ClientRecord) => void }) {
  const [name, setName] = createSignal(props.client.name)
  const [description, setDescription] = createSignal(props.client.description)
  const [type, setType] = createSignal<0 | 1>(props.client.type)
  const [doc, setDoc] = createSignal(draftOf(props.client.document))
  const [docErrors, setDocErrors] = createSignal<DocumentErrors>({})
  const [errors, setErrors] = createSignal<{ name?: string; description?: string }>({})
  const action = createAction(describeSave)
  const save = (e: Event) => {
    e.preventDefault()
    const found: { name?: string; description?: string } = {}
    if (!name().trim()) found.name = 'El nombre no puede quedar vacío.'
    else if (name().trim().length > 200) found.name = 'El nombre tiene como máximo 200 caracteres.'
    if (description().length > 2000) found.description = 'La descripción tiene como máximo 2000 caracteres.'
    setErrors(found)
    const docFound = documentProblems(doc())
    setDocErrors(docFound)
    if (found.name || found.description || docFound.number || docFound.country) return
    const body = { name: name().trim(), description: description().trim(), type: type(), document: documentBody(doc()) }
    void action.run(async () => {
      const saved = await money<ClientRecord>('PATCH', `/api/clients/${props.client.id}`, body).catch(async (e) => {
        if (isTaken(e)) setDocErrors({ number: await takenWords(doc()) })
        throw e
      })
      props.onSaved(saved)
      // The number as stored (without dots or dashes), so the form shows what the receipts will print.
      setDoc(draftOf(saved.document))
      return 'Cambios guardados.'
    })
  }
  return (
    <Card title="Datos" id="edit-title" testid="client-edit">
      <form class="stack" onSubmit={save} novalidate>
        <TextField label="Nombre" name="name" id="edit-name" maxlength={200} value={name()} error={errors().name} onInput={(v) => (setName(v), setErrors({ ...errors(), name: undefined }))} />
        <TextField
          label="Descripción"
          name="description"
          id="edit-description"
          rows={2}
          maxlength={2000}
          value={description()}
          error={errors().description}
          onInput={(v) => (setDescription(v), setErrors({ ...errors(), description: undefined }))}
        />
        <fieldset class="row">
          <legend>Tipo</legend>
          <label class="choice">
            <input type="radio" name="edit-type" value="0" checked={type() === 0} onChange={() => setType(0)} /> Caja
          </label>
          <label class="choice">
            <input type="radio" name="edit-type" value="1" checked={type() === 1} onChange={() => setType(1)} /> Cliente externo
          </label>
        </fieldset>
        <DocumentFields
          id="edit-document"
          draft={doc()}
          errors={docErrors()}
          onChange={(d) => {
            setDoc(d)
            setDocErrors({})
          }}
        />
        <div class="row">
          <button type="submit" class="primary" disabled={action.busy()} data-testid="client-edit-save">
            Guardar cambios
          </button>
        </div>
        <NoteLine note={action.note()} testid="client-edit-message" />
      </form>
    </Card>
  )
}

function ClientTags(props: { client: ClientRecord; onChanged: () => void }) {
  const [tags, setTags] = createSignal<Tag[] | null>(null)
  const action = createAction(describeSave)
  onMount(() => action.run(async () => void setTags(await loadTags())))
  const has = (id: number) => props.client.client_tags.some((ct) => ct.tag_id === id)
  const toggle = (t: Tag, wanted: boolean) =>
    action.run(async () => {
      // Putting on a tag that is already there answers 200 and changes nothing, so a repeat is harmless.
      if (wanted) await money('POST', `/api/clients/${props.client.id}/tags`, { tag_id: t.id })
      else await money('DELETE', `/api/clients/${props.client.id}/tags/${t.id}`)
      props.onChanged()
      return wanted ? `Etiqueta «${t.name}» asignada.` : `Etiqueta «${t.name}» quitada.`
    })
  return (
    <Card title="Etiquetas" id="client-tags-title" testid="client-tags">
      <Show when={tags()} fallback={<p class="muted">Cargando…</p>}>
        {(all) => (
          <Show
            when={all().length}
            fallback={
              <p class="muted">
                No hay etiquetas todavía; se crean en <A href="/etiquetas">Etiquetas</A>.
              </p>
            }
          >
            <div class="checks">
              <For each={all()}>
                {(t) => (
                  <label class="check">
                    <input type="checkbox" checked={has(t.id)} disabled={action.busy()} onChange={(e) => void toggle(t, e.currentTarget.checked)} />
                    <TagChip tag={t} />
                  </label>
                )}
              </For>
            </div>
          </Show>
        )}
      </Show>
      <NoteLine note={action.note()} testid="client-tags-message" />
    </Card>
  )
}

function DeleteClient(props: { client: ClientRecord; onDeleted: (name: string) => void; onRefresh: () => void }) {
  const [confirming, setConfirming] = createSignal(false)
  // The balances at the moment of the refusal: the words name the accounts that keep the client alive.
  const describe = (e: unknown) => {
    if (e instanceof ApiFailure && e.code === 'BALANCE_NOT_ZERO') {
      const open = props.client.accounts.filter((a) => !new Decimal(a.balance).isZero())
      const which = open.map((a) => (a.name && a.name !== a.currency_name ? `${a.name}: ${balanceText(a)}` : balanceText(a))).join('; ')
      return `No se puede eliminar «${props.client.name}» porque tiene saldo${which ? ` (${which})` : ' en una de sus cuentas'}. Solo se elimina con todas sus cuentas en cero: registre una operación que las salde y vuelva a intentar.`
    }
    return explain(e)
  }
  const action = createAction(describe)
  const remove = () =>
    action.run(async () => {
      try {
        await money('DELETE', `/api/clients/${props.client.id}`)
      } catch (e) {
        setConfirming(false)
        // Someone may have moved money since the page opened: show the balances the refusal is about.
        if (e instanceof ApiFailure && e.code === 'BALANCE_NOT_ZERO') props.onRefresh()
        throw e
      }
      props.onDeleted(props.client.name)
    })
  return (
    <Card title="Eliminar" id="delete-title" testid="client-delete">
      <p class="muted small">Se puede eliminar cuando todas sus cuentas están en cero. Sus operaciones pasadas quedan registradas.</p>
      <Show
        when={confirming()}
        fallback={
          <button type="button" class="danger" onClick={() => setConfirming(true)} data-testid="client-delete-start">
            Eliminar {props.client.type === 0 ? 'caja' : 'cliente'}
          </button>
        }
      >
        <p class="confirm" role="group" aria-label={`Confirmar eliminar ${props.client.name}`}>
          ¿Eliminar «{props.client.name}»?
          <button type="button" class="danger" ref={(el) => queueMicrotask(() => el.focus())} disabled={action.busy()} onClick={remove} data-testid="client-delete-confirm">
            Sí, eliminar
          </button>
          <button type="button" onClick={() => setConfirming(false)}>
            No
          </button>
        </p>
      </Show>
      <NoteLine note={action.note()} testid="client-delete-message" />
    </Card>
  )
}

// ───────────────────────────── statement and external access ─────────────────────────────

function describeExport(e: unknown): string {
  if (e instanceof ApiFailure) {
    if (e.status === 400) return 'Revise las fechas: «desde» no puede ser posterior a «hasta», y cada una es un día válido.'
    if (e.status === 429) return 'Ya hay otras descargas de estados de cuenta en curso. Espere un momento y vuelva a intentar.'
    if (e.status === 503) return 'El servidor está ocupado con otros estados de cuenta. Intente de nuevo en unos segundos.'
  }
  return explain(e)
}

function Statement(props: { client: ClientRecord }) {
  const [from, setFrom] = createSignal('')
  const [to, setTo] = createSignal('')
  const [error, setError] = createSignal<string | null>(null)
  const action = createAction(describeExport)
  const download = (format: 'csv' | 'json') => {
    if (from() && to() && from() > to()) return setError('«Desde» es posterior a «hasta».')
    setError(null)
    void action.run(async () => {
      const q = new URLSearchParams({ format })
      if (from()) q.set('from', from())
      if (to()) q.set('to', to())
      let res: Response
      try {
        res = await fetch(`/api/external/clients/${props.client.id}/statement?${q}`, { credentials: 'same-origin' })
      } catch {
        throw new ApiFailure(0, 'NETWORK', 'Sin conexión con el servidor')
      }
      if (!res.ok) {
        const body = await res.json().catch(() => null)
        throw new ApiFailure(res.status, body?.code ?? 'INTERNAL_ERROR', body?.error ?? `HTTP ${res.status}`)
      }
      // The file keeps the server's text as it came: every digit of every amount.
      saveFile(`estado-de-cuenta-${props.client.id}.${format}`, await res.blob())
      return `Estado de cuenta descargado (${format.toUpperCase()}).`
    })
  }
  return (
    <Card title="Estado de cuenta" id="statement-title" testid="client-statement">
      <p class="muted small">Cada cuenta con sus movimientos aprobados y el saldo después de cada uno. Sin fechas, desde el primer movimiento hasta hoy.</p>
      <div class="inline fields">
        <label>
          Desde
          <input type="date" name="from" value={from()} {...invalid('statement-range', error())} onInput={(e) => setFrom(e.currentTarget.value)} />
        </label>
        <label>
          Hasta
          <input type="date" name="to" value={to()} {...invalid('statement-range', error())} onInput={(e) => setTo(e.currentTarget.value)} />
        </label>
      </div>
      <FieldError id="statement-range" text={error()} />
      <div class="row">
        <button type="button" disabled={action.busy()} onClick={() => download('csv')} data-testid="statement-csv">
          Descargar CSV
        </button>
        <button type="button" disabled={action.busy()} onClick={() => download('json')} data-testid="statement-json">
          Descargar JSON
        </button>
      </div>
      <NoteLine note={action.note()} testid="statement-message" />
    </Card>
  )
}

interface Grant {
  id: number
  token: string
  expires_at: string
}

function describeGrant(e: unknown): string {
  if (e instanceof ApiFailure && e.code === 'NOT_FOUND') return 'Ese acceso no existe, es de otro cliente o ya estaba revocado.'
  return explain(e)
}

function Grants(props: { client: ClientRecord }) {
  const [days, setDays] = createSignal('30')
  const [daysError, setDaysError] = createSignal<string | null>(null)
  const [made, setMade] = createSignal<Grant[]>([])
  const [revokeId, setRevokeId] = createSignal('')
  const [revokeError, setRevokeError] = createSignal<string | null>(null)
  const action = createAction(describeGrant)
  /** The page the customer opens (`/estado-de-cuenta/<id>`), the key after «#»: browsers never send that part. */
  const page = (g: Grant) => `${location.origin}/estado-de-cuenta/${props.client.id}#${g.token}`
  const api = () => `${location.origin}/api/external/clients/${props.client.id}/statement?format=csv`
  const give = (e: Event) => {
    e.preventDefault()
    const n = Number(days())
    if (!/^\d{1,3}$/.test(days().trim()) || n < 1 || n > 365) return setDaysError('Entre 1 y 365 días.')
    setDaysError(null)
    // Not retried with an Idempotency-Key: the token is never stored, so a replay could not show it again. The
    // button stays disabled while the request is out, so a double click makes one grant.
    void action.run(async () => {
      const grant = await money<Grant>('POST', `/api/clients/${props.client.id}/external-grants`, { expires_in_days: n })
      setMade([grant, ...made()])
      return `Acceso n.º ${grant.id} creado; vence el ${when(grant.expires_at)}.`
    })
  }
  const revoke = (id: number) =>
    action.run(async () => {
      await money('DELETE', `/api/clients/${props.client.id}/external-grants/${id}`)
      setMade(made().filter((g) => g.id !== id))
      setRevokeId('')
      return `Acceso n.º ${id} revocado: su clave ya no abre el estado de cuenta.`
    })
  const revokeTyped = (e: Event) => {
    e.preventDefault()
    if (!/^[1-9]\d{0,9}$/.test(revokeId().trim())) return setRevokeError('Escriba el número del acceso, por ejemplo 12.')
    setRevokeError(null)
    void revoke(Number(revokeId().trim()))
  }
  return (
    <Card title="Acceso externo al estado de cuenta" id="grants-title" testid="client-grants">
      <p class="muted small">
        Un enlace para que {props.client.name} (o su contador, o su sistema) consulte su propio estado de cuenta, y nada más. Se muestra una sola vez; se puede revocar
        en cualquier momento.
      </p>
      <form class="inline fields" onSubmit={give} novalidate>
        <label>
          Vence en (días)
          <input
            name="days"
            inputmode="numeric"
            class="days"
            value={days()}
            {...invalid('grant-days', daysError())}
            onInput={(e) => {
              setDays(e.currentTarget.value)
              setDaysError(null)
            }}
          />
          <FieldError id="grant-days" text={daysError()} />
        </label>
        <button type="submit" class="primary" disabled={action.busy()} data-testid="grant-create">
          Dar acceso
        </button>
      </form>
      <For each={made()}>
        {(g) => (
          <div class="new-grant" role="region" aria-label={`Acceso n.º ${g.id}`} data-testid="grant" data-id={g.id}>
            <p>
              <strong>Acceso n.º {g.id}</strong>, vence el {when(g.expires_at)}. El enlace lleva la clave y se muestra <strong>solo ahora</strong>: cópielo y
              envíeselo al cliente, o que escanee el código con el teléfono. Con él ve sus cuentas, sus movimientos y descarga el CSV, sin usuario ni contraseña.
            </p>
            <div class="grant-link">
              <div class="qr" role="img" aria-label={`Código QR del enlace del acceso n.º ${g.id}`} innerHTML={renderSVG(page(g), { border: 2 })} />
              <div class="stack">
                <CopyField label="Enlace del estado de cuenta para el cliente" value={page(g)} testid="grant-link" />
                <a href={page(g)} target="_blank" rel="noopener noreferrer" data-testid="grant-open">
                  Abrir el estado de cuenta (pestaña nueva)
                </a>
              </div>
            </div>
            <details class="grant-api">
              <summary>Para un sistema: la clave y la dirección de la API</summary>
              <CopyField label="Clave de acceso (va en el encabezado Authorization: Bearer)" value={g.token} testid="grant-token" />
              <CopyField label="Orden lista para usar" value={`curl -H "Authorization: Bearer ${g.token}" "${api()}"`} testid="grant-command" />
            </details>
            <div class="row">
              <button type="button" class="danger" disabled={action.busy()} onClick={() => void revoke(g.id)} data-testid="grant-revoke">
                Revocar este acceso
              </button>
            </div>
          </div>
        )}
      </For>
      <form class="inline fields top-gap" onSubmit={revokeTyped} novalidate>
        <label>
          Revocar un acceso dado antes (n.º)
          <input
            name="grant-id"
            inputmode="numeric"
            class="days"
            value={revokeId()}
            {...invalid('grant-revoke-id', revokeError())}
            onInput={(e) => {
              setRevokeId(e.currentTarget.value)
              setRevokeError(null)
            }}
          />
          <FieldError id="grant-revoke-id" text={revokeError()} />
        </label>
        <button type="submit" class="danger" disabled={action.busy()} data-testid="grant-revoke-typed">
          Revocar
        </button>
      </form>
      <NoteLine note={action.note()} testid="grant-message" />
    </Card>
  )
}
