import { A } from '@solidjs/router'
import Decimal from 'decimal.js'
import { batch, createMemo, createSignal, For, Index, onMount, Show } from 'solid-js'
import { createStore, produce } from 'solid-js/store'
import { ApiFailure, explain, money } from './api'
import { formatArs, parseArs, type Parsed } from './decimal'
import { clearsError, Confirm, createFill, FieldError } from './forms'
import { allCajas, STATUS_LABEL, type Client, type Operation, type OperationType } from './ledger'
import { accountLabel, cajaAccounts, ClientPicker, currenciesOf } from './pickers'
import { can, session } from './session'
import { createAction, NoteLine } from './ui'
import './treasury.css'

/** Contract §5 and 2.4 of the interface, read with `money=string`. */
type Kind = 'up_down' | 'exchange' | 'budget' | 'other'
type ParamType = 'string' | 'number' | 'amount' | 'account' | 'client' | 'cost_center' | 'currency' | 'date' | 'side'

interface Parameter {
  key: string
  label: string
  type: ParamType
  required: boolean
}

interface Leg {
  accountId: number
  amount: string
  transactionTypeId?: number | null
  description?: string | null
}

interface Tool {
  id: number
  name: string
  slug: string
  description: string
  enabled: boolean
  company_operation_type_id: number
  fixed_config: { toolKind: Kind; operationTypeId?: number; transactions?: Leg[] | null } & Record<string, unknown>
  parameter_schema: { parameters: Parameter[] }
}

interface CostCenter {
  id: number
  name: string
}

interface TransactionType {
  id: number
  name: string
}

/** How a field's fixed value is typed on this screen. */
type Widget = 'enum' | 'caja' | 'account' | 'client' | 'cost_center' | 'currency' | 'amount' | 'text'

interface Field {
  key: string
  label: string
  widget: Widget
  /** The parameter type a bot question about this field gets by default. */
  type: ParamType
  options?: [string, string][]
}

const KIND: Record<Kind, string> = {
  up_down: 'Subir o bajar una cuenta',
  exchange: 'Compra o venta de moneda',
  budget: 'Gasto o ingreso de un centro de costo',
  other: 'Otra: movimientos fijos',
}

const TYPE_LABEL: Record<ParamType, string> = {
  string: 'Texto',
  number: 'Número',
  amount: 'Importe',
  account: 'Cuenta',
  client: 'Cliente',
  cost_center: 'Centro de costo',
  currency: 'Moneda',
  date: 'Fecha',
  side: 'Compra o venta',
}

/** The `fixed_config` fields of each kind (contract §5), with the words and the way of typing each. */
const FIELDS: Record<Kind, Field[]> = {
  up_down: [
    {
      key: 'mode',
      label: 'Modo',
      widget: 'enum',
      type: 'string',
      options: [
        ['standard', 'Estándar: sube o baja la cuenta de un cliente'],
        ['internal_transfer', 'Transferencia entre dos cajas'],
        ['third_party', 'De una cuenta a otra cualquiera'],
      ],
    },
    { key: 'direction', label: 'Dirección', widget: 'enum', type: 'string', options: [['up', 'Sube (acredita)'], ['down', 'Baja (debita)']] },
    { key: 'sourceAccountId', label: 'Cuenta de origen', widget: 'account', type: 'account' },
    { key: 'destinationAccountId', label: 'Cuenta de destino', widget: 'account', type: 'account' },
    { key: 'clientId', label: 'Cliente', widget: 'client', type: 'client' },
    { key: 'currency', label: 'Moneda', widget: 'currency', type: 'currency' },
    { key: 'amount', label: 'Monto', widget: 'amount', type: 'amount' },
    { key: 'description', label: 'Descripción', widget: 'text', type: 'string' },
  ],
  exchange: [
    { key: 'side', label: 'Compra o venta', widget: 'enum', type: 'side', options: [['buy', 'Compra (entra la moneda cotizada)'], ['sell', 'Venta (sale la moneda cotizada)']] },
    { key: 'localAccountId', label: 'Cuenta en moneda local', widget: 'caja', type: 'account' },
    { key: 'quoteAccountId', label: 'Cuenta en moneda cotizada', widget: 'caja', type: 'account' },
    { key: 'quoteAmount', label: 'Monto en moneda cotizada', widget: 'amount', type: 'amount' },
    { key: 'fx', label: 'Cotización', widget: 'amount', type: 'amount' },
  ],
  budget: [
    { key: 'costCenterId', label: 'Centro de costo', widget: 'cost_center', type: 'cost_center' },
    { key: 'direction', label: 'Gasto o ingreso', widget: 'enum', type: 'string', options: [['expense', 'Gasto'], ['income', 'Ingreso']] },
    {
      key: 'paymentSourceMode',
      label: 'Quién paga',
      widget: 'enum',
      type: 'string',
      options: [
        ['internal', 'Una caja de la casa'],
        ['external', 'Un cliente (no sale de caja)'],
      ],
    },
    { key: 'internalAccountId', label: 'Caja', widget: 'caja', type: 'account' },
    { key: 'payerClientId', label: 'Cliente que paga', widget: 'client', type: 'client' },
    { key: 'amount', label: 'Monto', widget: 'amount', type: 'amount' },
    { key: 'currency', label: 'Moneda', widget: 'currency', type: 'currency' },
    { key: 'description', label: 'Descripción', widget: 'text', type: 'string' },
  ],
  other: [{ key: 'description', label: 'Descripción', widget: 'text', type: 'string' }],
}

/** Every kind may let the bot say the operation's date (parameter key `date`, type `date`). */
const DATE_FIELD: Field = { key: 'date', label: 'Fecha de la operación', widget: 'text', type: 'date' }

const fieldsOf = (kind: Kind) => [...FIELDS[kind], DATE_FIELD]
const fieldOf = (kind: Kind, key: string) => fieldsOf(kind).find((f) => f.key === key)

/** The slug the API makes of a name when none is given (contract §5), shown before saving. */
export const slugOf = (name: string) =>
  name
    .toLowerCase()
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')

function describe(e: unknown): string {
  if (e instanceof ApiFailure)
    switch (e.code) {
      case 'SLUG_TAKEN':
        return 'Ya hay otra herramienta con ese identificador. Escriba otro.'
      case 'OPERATION_TYPE_NOT_FOUND':
        return 'Ese tipo de operación ya no existe. Actualice la página.'
      case 'OPERATION_TYPE_KIND_MISMATCH':
        return 'El tipo de operación elegido es de otra clase que la herramienta.'
      case 'TOOL_DISABLED':
        return 'La herramienta está desactivada: actívela para probarla.'
      case 'INVALID_PARAMETERS':
        return 'Faltan datos o hay datos no válidos: vea cada campo.'
      case 'UNKNOWN_ACCOUNT':
        return 'Una de las cuentas configuradas no existe o no sirve para esto. Revise la configuración.'
      case 'UNKNOWN_CLIENT':
        return 'El cliente configurado ya no existe. Revise la configuración.'
      case 'ACCOUNT_CURRENCY_MISMATCH':
        return 'Una cuenta configurada no está en la moneda indicada. Revise la configuración.'
      case 'ACCOUNT_NOT_INTERNAL':
        return 'Una de las cuentas configuradas tiene que ser de una caja.'
      case 'IDEMPOTENCY_KEY_REUSED':
        return 'Este formulario ya se envió con otros datos. Vuelva a enviarlo.'
      case 'AMOUNT_OUT_OF_RANGE':
        return 'Un saldo quedaría fuera del máximo que se puede registrar (22 cifras enteras y 6 decimales).'
    }
  return explain(e)
}

/** What the screen knows to name ids and fill lists. */
interface Directory {
  cajas: Client[]
  types: OperationType[]
  txTypes: TransactionType[]
  centers: CostCenter[]
}

/** Herramientas del bot (contract §5): the tools a messaging bot runs to create operations. */
export function Tools() {
  const [tools, setTools] = createSignal<Tool[] | null>(null)
  const [dir, setDir] = createStore<Directory>({ cajas: [], types: [], txTypes: [], centers: [] })
  const [editing, setEditing] = createSignal<Tool | 'new' | null>(null)
  const load = createAction(describe)
  const refresh = async () => setTools((await money<{ data: Tool[] }>('GET', '/api/messaging/tools')).data)
  onMount(() =>
    load.run(async () => {
      const [cajas, types, txTypes, centers] = await Promise.all([
        can('clients.view') ? allCajas() : [],
        money<{ data: OperationType[] }>('GET', '/api/operation-types').then((b) => b.data),
        money<{ data: TransactionType[] }>('GET', '/api/transaction-types').then((b) => b.data),
        can('cost_centers.view') || can('cost_centers.edit') ? money<{ data: CostCenter[] }>('GET', '/api/cost-centers').then((b) => b.data) : [],
        refresh(),
      ])
      setDir({ cajas, types, txTypes, centers })
    }),
  )
  const typeName = (id: number) => dir.types.find((t) => t.id === id)?.name ?? `Tipo ${id}`
  return (
    <section class="panel" data-testid="tools-section">
      <h1>Herramientas del bot</h1>
      <p class="muted">
        Lo que el bot de mensajería puede registrar cuando un cliente escribe: cada herramienta arma una operación con datos fijos y con los que el bot pregunta.
      </p>
      <NoteLine note={load.note()} testid="tools-message" />
      <Show when={tools()}>
        {(list) => (
          <>
            <Show when={list().length} fallback={<p class="muted">Todavía no hay herramientas.</p>}>
              <ul class="list" data-testid="tools">
                {/* By position: a refresh keeps each row's open panel and message. */}
                <Index each={list()}>
                  {(t) => (
                    <ToolRow
                      tool={t()}
                      dir={dir}
                      typeName={typeName}
                      onEdit={() => setEditing(t())}
                      onChanged={refresh}
                      onDeleted={(name) => load.run(async () => (await refresh(), `Herramienta «${name}» borrada: el bot ya no la ofrece.`))}
                    />
                  )}
                </Index>
              </ul>
            </Show>
            <Show
              when={editing()}
              keyed
              fallback={
                <div class="row">
                  <button type="button" class="primary" onClick={() => setEditing('new')} data-testid="tool-new">
                    Herramienta nueva
                  </button>
                </div>
              }
            >
              {(t) => (
                <ToolForm
                  tool={t === 'new' ? undefined : t}
                  dir={dir}
                  onDone={async (saved) => {
                    setEditing(null)
                    if (saved) await load.run(async () => (await refresh(), `Herramienta «${saved.name}» ${t === 'new' ? 'creada' : 'guardada'} (identificador ${saved.slug}).`))
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

function ToolRow(props: { tool: Tool; dir: Directory; typeName: (id: number) => string; onEdit: () => void; onChanged: () => Promise<unknown>; onDeleted: (name: string) => void }) {
  const t = () => props.tool
  const [trying, setTrying] = createSignal(false)
  const [deleting, setDeleting] = createSignal(false)
  const action = createAction(describe)
  const toggle = () =>
    action.run(async () => {
      const next = !t().enabled
      await money('PATCH', `/api/messaging/tools/${t().id}`, { enabled: next })
      await props.onChanged()
      return next ? `«${t().name}» activada: el bot la ofrece.` : `«${t().name}» desactivada: el bot deja de ofrecerla.`
    })
  const remove = () =>
    action.run(async () => {
      const name = t().name
      await money('DELETE', `/api/messaging/tools/${t().id}`)
      setDeleting(false)
      props.onDeleted(name)
    })
  const asks = () => t().parameter_schema.parameters
  return (
    <li class="item" data-testid="tool-row" data-id={t().id} data-slug={t().slug}>
      <div class="item-head">
        <div>
          <strong>{t().name}</strong> <code>{t().slug}</code>{' '}
          <span class={t().enabled ? 'badge ok' : 'badge off'} data-testid="tool-state">
            {t().enabled ? 'Activa' : 'Desactivada'}
          </span>
          <div class="muted small">
            {KIND[t().fixed_config.toolKind]} · {props.typeName(t().company_operation_type_id)} · {asks().length ? `el bot pregunta: ${asks().map((p) => p.label).join(', ')}` : 'todo fijo'}
          </div>
        </div>
        <div class="row">
          <button type="button" onClick={props.onEdit} data-testid="tool-edit">
            Editar
          </button>
          <button type="button" onClick={toggle} disabled={action.busy()} data-testid="tool-toggle">
            {t().enabled ? 'Desactivar' : 'Activar'}
          </button>
          <Show when={can('messaging.run') || can('messaging.manage')}>
            <button type="button" onClick={() => setTrying(!trying())} aria-expanded={trying()} data-testid="tool-try">
              Probar
            </button>
          </Show>
          <button type="button" class="danger" onClick={() => setDeleting(true)} data-testid="tool-delete">
            Borrar
          </button>
        </div>
      </div>
      <Show when={deleting()}>
        <Confirm
          question={<>¿Borrar «{t().name}»? El bot deja de ofrecerla; las operaciones que ya creó no cambian.</>}
          yes="Sí, borrar"
          busy={action.busy()}
          onYes={remove}
          onNo={() => setDeleting(false)}
          testid="tool-delete-confirm"
        />
      </Show>
      <NoteLine note={action.note()} testid="tool-message" />
      <Show when={trying()}>
        <TryTool tool={t()} dir={props.dir} />
      </Show>
    </li>
  )
}

interface FieldState {
  fixed: string
  ask: boolean
  label: string
  type: ParamType
  required: boolean
}

/** A fixed value as the form shows it: amounts in es-AR, ids as text. */
function shownValue(field: Field, raw: unknown): string {
  if (raw === undefined || raw === null) return ''
  if (field.widget === 'amount') return formatArs(String(raw))
  return String(raw)
}

function initialFields(kind: Kind, tool?: Tool): Record<string, FieldState> {
  const out: Record<string, FieldState> = {}
  for (const f of fieldsOf(kind)) {
    const p = tool?.parameter_schema.parameters.find((x) => x.key === f.key)
    out[f.key] = {
      fixed: tool && tool.fixed_config.toolKind === kind ? shownValue(f, tool.fixed_config[f.key]) : '',
      ask: Boolean(p),
      label: p?.label ?? f.label,
      type: p?.type ?? f.type,
      required: p?.required ?? true,
    }
  }
  return out
}

let nextLeg = 1

/** Create or edit a tool: name, slug, kind, operation type, each field fixed or asked by the bot, and the legs of `other`. */
function ToolForm(props: { tool?: Tool; dir: Directory; onDone: (saved: Tool | null) => void }) {
  const [kind, setKind] = createSignal<Kind>(props.tool?.fixed_config.toolKind ?? 'up_down')
  const [head, setHead] = createStore({
    name: props.tool?.name ?? '',
    slug: props.tool?.slug ?? '',
    description: props.tool?.description ?? '',
    enabled: props.tool?.enabled ?? true,
    type: props.tool ? String(props.tool.company_operation_type_id) : '',
  })
  const [fields, setFields] = createStore<Record<string, FieldState>>(initialFields(kind(), props.tool))
  const [legs, setLegs] = createStore(
    (props.tool?.fixed_config.transactions ?? []).map((l) => ({
      key: nextLeg++,
      account: String(l.accountId),
      amount: formatArs(String(l.amount)),
      txType: l.transactionTypeId ? String(l.transactionTypeId) : '',
      description: l.description ?? '',
    })),
  )
  const [errors, setErrors] = createStore<Record<string, string | undefined>>({})
  const action = createAction(describe)
  const fill = createFill()
  const types = () => props.dir.types.filter((t) => t.kind === kind())
  const chosenType = () => head.type || String(types()[0]?.id ?? '')
  // One batch: the rows of the new kind must never render before their state exists.
  const changeKind = (k: Kind) =>
    batch(() => {
      setFields(initialFields(k, props.tool))
      setKind(k)
      setHead('type', '')
      setErrors({})
    })
  const clear = (key: string) => errors[key] && setErrors(key, undefined)

  const build = (): { body: Record<string, unknown> } | null => {
    const found: Record<string, string> = {}
    if (!head.name.trim()) found.name = 'Escriba un nombre, por ejemplo «Compra Dólar (MEP)».'
    else if (head.name.trim().length > 100) found.name = 'El nombre puede tener hasta 100 caracteres.'
    if (head.slug.trim() && !slugOf(head.slug.trim())) found.slug = 'El identificador necesita letras o números.'
    if (!chosenType()) found.type = `No hay tipos de operación de la clase «${KIND[kind()]}». Créelo primero en Tipos.`
    const config: Record<string, unknown> = { toolKind: kind(), operationTypeId: Number(chosenType()) }
    for (const f of FIELDS[kind()]) {
      const text = fields[f.key].fixed.trim()
      if (!text) continue
      if (f.widget === 'amount') {
        const p = parseArs(text)
        if (!p.ok) found[f.key] = p.message
        else if (new Decimal(p.value).isZero()) found[f.key] = 'El importe no puede ser cero.'
        else config[f.key] = p.value
      } else if (['caja', 'account', 'client', 'cost_center'].includes(f.widget)) config[f.key] = Number(text)
      else config[f.key] = text
    }
    if (kind() === 'other') {
      const out: Leg[] = []
      legs.forEach((l, i) => {
        const p = parseSigned(l.amount)
        if (!l.account) found[`leg-${i}`] = 'Elija una cuenta.'
        else if (!p.ok) found[`leg-${i}`] = p.message
        else out.push({ accountId: Number(l.account), amount: p.value, ...(l.txType && { transactionTypeId: Number(l.txType) }), ...(l.description.trim() && { description: l.description.trim() }) })
      })
      config.transactions = out
    }
    const parameters: Parameter[] = []
    for (const f of fieldsOf(kind())) {
      const s = fields[f.key]
      if (!s.ask) continue
      parameters.push({ key: f.key, label: s.label.trim() || f.label, type: f.key === 'date' ? 'date' : s.type, required: s.required })
    }
    setErrors(produce((e) => {
      for (const k of Object.keys(e)) delete e[k]
      Object.assign(e, found)
    }))
    if (Object.keys(found).length) return null
    return {
      body: {
        name: head.name.trim(),
        ...(head.slug.trim() && { slug: head.slug.trim() }),
        description: head.description.trim(),
        enabled: head.enabled,
        fixed_config: config,
        parameter_schema: { parameters },
      },
    }
  }
  const submit = (e: Event) => {
    e.preventDefault()
    const built = build()
    if (!built) return action.setNote({ kind: 'error', text: 'Hay datos para corregir; no se envió nada.' })
    void action.run(async () => {
      try {
        const saved = props.tool
          ? await money<Tool>('PATCH', `/api/messaging/tools/${props.tool.id}`, built.body)
          : await money<Tool>('POST', '/api/messaging/tools', built.body, fill.headers(built.body))
        fill.done()
        props.onDone(saved)
      } catch (err) {
        if (err instanceof ApiFailure) {
          if (err.code === 'SLUG_TAKEN') setErrors('slug', `Ya hay otra herramienta con el identificador «${head.slug.trim() ? slugOf(head.slug) : slugOf(head.name)}». Escriba otro.`)
          if (err.code === 'OPERATION_TYPE_NOT_FOUND' || err.code === 'OPERATION_TYPE_KIND_MISMATCH') setErrors('type', describe(err))
          for (const d of err.details) {
            const key = d.field?.replace(/^fixed_config\./, '')
            if (key && fieldOf(kind(), key)) setErrors(key, describe(err))
          }
        }
        throw err
      }
    })
  }
  const title = props.tool ? `Editar «${props.tool.name}»` : 'Herramienta nueva'
  let first: HTMLInputElement | undefined
  // The form opens below the list: the focus takes the eye (and the keyboard) to it.
  onMount(() => first?.focus())
  return (
    <form class="sub stack" onSubmit={submit} aria-label={title} data-testid="tool-form" onInput={clearsError(action)} onChange={clearsError(action)} novalidate>
      <h2>{title}</h2>
      <div class="row top">
        <label class="grow">
          Nombre
          <input ref={first} name="name" maxlength="100" aria-invalid={errors.name ? 'true' : undefined} value={head.name} onInput={(e) => (setHead('name', e.currentTarget.value), clear('name'), clear('slug'))} />
          <FieldError text={errors.name} testid="error-name" />
        </label>
        <label>
          Identificador para el bot
          <input name="slug" maxlength="100" placeholder={slugOf(head.name) || 'compra-dolar'} aria-invalid={errors.slug ? 'true' : undefined} value={head.slug} onInput={(e) => (setHead('slug', e.currentTarget.value), clear('slug'))} />
          <span class="muted small">{head.slug.trim() ? `Queda «${slugOf(head.slug)}».` : `Vacío: «${slugOf(head.name) || '…'}», del nombre.`}</span>
          <FieldError text={errors.slug} testid="error-slug" />
        </label>
      </div>
      <label>
        Descripción (la lee el bot para saber cuándo usarla)
        <input name="description" maxlength="2000" value={head.description} onInput={(e) => setHead('description', e.currentTarget.value)} />
      </label>
      <div class="row">
        <label>
          Clase
          <select name="kind" onChange={(e) => changeKind(e.currentTarget.value as Kind)}>
            <For each={Object.keys(KIND) as Kind[]}>
              {(k) => (
                <option value={k} selected={k === kind()}>
                  {KIND[k]}
                </option>
              )}
            </For>
          </select>
        </label>
        <label>
          Tipo de operación que crea
          <select name="operation-type" aria-invalid={errors.type ? 'true' : undefined} onChange={(e) => (setHead('type', e.currentTarget.value), clear('type'))}>
            <For each={types()}>
              {(t) => (
                <option value={String(t.id)} selected={String(t.id) === chosenType()}>
                  {t.name}
                </option>
              )}
            </For>
          </select>
          <FieldError text={errors.type} testid="error-type" />
        </label>
        <label class="check">
          <input type="checkbox" name="enabled" checked={head.enabled} onChange={(e) => setHead('enabled', e.currentTarget.checked)} />
          Activa (el bot la ofrece)
        </label>
      </div>
      <div class="scroll-x">
        <table class="grid config" data-testid="tool-fields">
          <caption>Datos de la operación: fijos, o preguntados por el bot (lo que pregunta reemplaza al valor fijo)</caption>
          <thead>
            <tr>
              <th scope="col">Dato</th>
              <th scope="col">Valor fijo</th>
              <th scope="col">El bot lo pregunta</th>
              <th scope="col">Pregunta</th>
              <th scope="col">Tipo de respuesta</th>
              <th scope="col">Obligatoria</th>
            </tr>
          </thead>
          <tbody>
            <For each={fieldsOf(kind())}>
              {(f) => (
                <tr data-testid="tool-field" data-key={f.key}>
                  <th scope="row">
                    {f.label}
                    <div>
                      <code class="small muted">{f.key}</code>
                    </div>
                  </th>
                  <td>
                    <Show when={f.key !== 'date'} fallback={<span class="muted small">Vacío: el día en que se registra.</span>}>
                      <FixedValue field={f} value={fields[f.key].fixed} dir={props.dir} error={errors[f.key]} onChange={(v) => (setFields(f.key, 'fixed', v), clear(f.key))} />
                    </Show>
                    <FieldError text={errors[f.key]} testid={`error-${f.key}`} />
                  </td>
                  <td>
                    <input type="checkbox" class="box" name={`ask-${f.key}`} aria-label={`El bot pregunta ${f.label.toLowerCase()}`} checked={fields[f.key].ask} onChange={(e) => setFields(f.key, 'ask', e.currentTarget.checked)} />
                  </td>
                  <td>
                    <input name={`label-${f.key}`} maxlength="200" aria-label={`Pregunta del bot para ${f.label.toLowerCase()}`} disabled={!fields[f.key].ask} value={fields[f.key].label} onInput={(e) => setFields(f.key, 'label', e.currentTarget.value)} />
                  </td>
                  <td>
                    <select name={`type-${f.key}`} aria-label={`Tipo de respuesta para ${f.label.toLowerCase()}`} disabled={!fields[f.key].ask || f.key === 'date'} onChange={(e) => setFields(f.key, 'type', e.currentTarget.value as ParamType)}>
                      <For each={Object.keys(TYPE_LABEL) as ParamType[]}>
                        {(p) => (
                          <option value={p} selected={p === fields[f.key].type}>
                            {TYPE_LABEL[p]}
                          </option>
                        )}
                      </For>
                    </select>
                  </td>
                  <td>
                    <input type="checkbox" class="box" name={`required-${f.key}`} aria-label={`Respuesta obligatoria para ${f.label.toLowerCase()}`} disabled={!fields[f.key].ask} checked={fields[f.key].required} onChange={(e) => setFields(f.key, 'required', e.currentTarget.checked)} />
                  </td>
                </tr>
              )}
            </For>
          </tbody>
        </table>
      </div>
      <Show when={kind() === 'other'}>
        <fieldset>
          <legend>Movimientos fijos (un importe negativo debita la cuenta)</legend>
          <Index each={legs}>
            {(leg, i) => (
              <div class="row bottom" data-testid="tool-leg">
                <label>
                  Cuenta
                  <select name={`leg-account-${i}`} onChange={(e) => setLegs(i, 'account', e.currentTarget.value)}>
                    <option value="">— Elija —</option>
                    <For each={cajaAccounts(props.dir.cajas)}>
                      {(a) => (
                        <option value={String(a.id)} selected={String(a.id) === leg().account}>
                          {a.label}
                        </option>
                      )}
                    </For>
                    <Show when={leg().account && !cajaAccounts(props.dir.cajas).some((a) => String(a.id) === leg().account)}>
                      <option value={leg().account} selected>
                        Cuenta {leg().account}
                      </option>
                    </Show>
                  </select>
                </label>
                <label>
                  Importe
                  <input name={`leg-amount-${i}`} class="money" inputmode="decimal" value={leg().amount} onInput={(e) => (setLegs(i, 'amount', e.currentTarget.value), clear(`leg-${i}`))} />
                  <FieldError text={errors[`leg-${i}`]} />
                </label>
                <label>
                  Tipo de movimiento
                  <select name={`leg-type-${i}`} onChange={(e) => setLegs(i, 'txType', e.currentTarget.value)}>
                    <option value="">—</option>
                    <For each={props.dir.txTypes}>
                      {(t) => (
                        <option value={String(t.id)} selected={String(t.id) === leg().txType}>
                          {t.name}
                        </option>
                      )}
                    </For>
                  </select>
                </label>
                <button type="button" onClick={() => setLegs(produce((l) => void l.splice(i, 1)))}>
                  Quitar movimiento
                </button>
              </div>
            )}
          </Index>
          <button type="button" onClick={() => setLegs(legs.length, { key: nextLeg++, account: '', amount: '', txType: '', description: '' })}>
            Agregar movimiento
          </button>
        </fieldset>
      </Show>
      <div class="row">
        <button type="submit" class="primary" disabled={action.busy()} data-testid="tool-save">
          {action.busy() ? 'Guardando…' : props.tool ? 'Guardar cambios' : 'Crear herramienta'}
        </button>
        <button type="button" onClick={() => props.onDone(null)}>
          Cancelar
        </button>
      </div>
      <NoteLine note={action.note()} testid="tool-form-message" />
    </form>
  )
}

/** es-AR text with an optional leading minus: a fixed leg debits with a negative amount (contract §3). */
function parseSigned(input: string): Parsed {
  const text = input.trim()
  const negative = text.startsWith('-')
  const parsed = parseArs(negative ? text.slice(1) : text)
  if (!parsed.ok) return parsed
  if (new Decimal(parsed.value).isZero()) return { ok: false, message: 'El importe no puede ser cero.' }
  return { ok: true, value: negative ? `-${parsed.value}` : parsed.value }
}

/** One fixed value, typed the way its field takes it; empty means «not fixed». */
function FixedValue(props: { field: Field; value: string; dir: Directory; error?: string; onChange: (v: string) => void }) {
  const f = props.field
  const label = `${f.label}: valor fijo`
  const invalid = () => (props.error ? 'true' : undefined)
  switch (f.widget) {
    case 'enum':
      return (
        <select name={`fixed-${f.key}`} aria-label={label} onChange={(e) => props.onChange(e.currentTarget.value)}>
          <option value="" selected={props.value === ''}>
            — (por defecto: {f.options![0][1].split(':')[0].split(' (')[0]})
          </option>
          <For each={f.options}>
            {([v, l]) => (
              <option value={v} selected={v === props.value}>
                {l}
              </option>
            )}
          </For>
        </select>
      )
    case 'caja':
    case 'account':
      return <AccountField name={`fixed-${f.key}`} label={label} value={props.value} cajas={props.dir.cajas} clients={f.widget === 'account'} onChange={props.onChange} />
    case 'client':
      return <ClientPicker label="Cliente" name={`fixed-${f.key}`} value={props.value ? Number(props.value) : null} optional="— Sin valor fijo —" onChange={(c) => props.onChange(c ? String(c.id) : '')} />
    case 'cost_center':
      return (
        <select name={`fixed-${f.key}`} aria-label={label} onChange={(e) => props.onChange(e.currentTarget.value)}>
          <option value="">— Sin valor fijo —</option>
          <For each={props.dir.centers}>
            {(c) => (
              <option value={String(c.id)} selected={String(c.id) === props.value}>
                {c.name}
              </option>
            )}
          </For>
        </select>
      )
    case 'currency':
      return (
        <select name={`fixed-${f.key}`} aria-label={label} onChange={(e) => props.onChange(e.currentTarget.value)}>
          <option value="">— Sin valor fijo —</option>
          <For each={[...new Set([...currenciesOf(props.dir.cajas), ...(props.value ? [props.value] : [])])]}>
            {(c) => (
              <option value={c} selected={c === props.value}>
                {c}
              </option>
            )}
          </For>
        </select>
      )
    case 'amount':
      return <input name={`fixed-${f.key}`} aria-label={label} aria-invalid={invalid()} class="money" inputmode="decimal" placeholder="—" value={props.value} onInput={(e) => props.onChange(e.currentTarget.value)} />
    default:
      return <input name={`fixed-${f.key}`} aria-label={label} maxlength="2000" value={props.value} onInput={(e) => props.onChange(e.currentTarget.value)} />
  }
}

/**
 * An account: any caja's, or (with `clients`) an account of a client found by search. A value that is neither
 * (a client's account saved earlier) stays listed by its number.
 */
function AccountField(props: { name: string; label: string; value: string; cajas: Client[]; clients: boolean; onChange: (v: string) => void; optional?: string }) {
  const [other, setOther] = createSignal<Client | null>(null)
  const [searching, setSearching] = createSignal(false)
  const cajas = () => cajaAccounts(props.cajas)
  const known = () => cajas().some((a) => String(a.id) === props.value) || (other()?.accounts ?? []).some((a) => String(a.id) === props.value)
  return (
    <div class="stack tight">
      <select name={props.name} aria-label={props.label} onChange={(e) => props.onChange(e.currentTarget.value)}>
        <option value="" selected={props.value === ''}>
          {props.optional ?? '— Sin valor fijo —'}
        </option>
        <optgroup label="Cajas">
          <For each={cajas()}>
            {(a) => (
              <option value={String(a.id)} selected={String(a.id) === props.value}>
                {a.label}
              </option>
            )}
          </For>
        </optgroup>
        <Show when={other()}>
          {(c) => (
            <optgroup label={c().name}>
              <For each={c().accounts}>
                {(a) => (
                  <option value={String(a.id)} selected={String(a.id) === props.value}>
                    {accountLabel(c(), a)}
                  </option>
                )}
              </For>
            </optgroup>
          )}
        </Show>
        <Show when={props.value && !known()}>
          <option value={props.value} selected>
            Cuenta {props.value}
          </option>
        </Show>
      </select>
      <Show when={props.clients}>
        <Show
          when={searching()}
          fallback={
            <button type="button" class="link" onClick={() => setSearching(true)}>
              Cuenta de un cliente…
            </button>
          }
        >
          <ClientPicker
            label="Cliente"
            name={`${props.name}-client`}
            type={1}
            value={other()?.id ?? null}
            onChange={(c) => {
              setOther(c)
              if (c?.accounts.length === 1) props.onChange(String(c.accounts[0].id))
            }}
          />
        </Show>
      </Show>
    </div>
  )
}

/** A value the bot would send, typed here: the form of each parameter follows its type (or its field's closed set). */
function TryTool(props: { tool: Tool; dir: Directory }) {
  const kind = () => props.tool.fixed_config.toolKind
  const params = () => props.tool.parameter_schema.parameters
  const [values, setValues] = createStore<Record<string, string>>({})
  const [phone, setPhone] = createSignal('')
  const [errors, setErrors] = createStore<Record<string, string | undefined>>({})
  const [made, setMade] = createSignal<Operation | null>(null)
  /** Fields the run needs that the tool neither fixes nor asks: the tool's configuration is what to fix. */
  let unasked: string[] = []
  const action = createAction((e) => (unasked.length ? `A la herramienta le falta ${unasked.join(', ')}: ni tiene valor fijo ni lo pregunta el bot. Edítela y vuelva a probar.` : describe(e)))
  const cancel = createAction(describe)
  const fill = createFill()
  const accounts = createMemo(() => new Map(cajaAccounts(props.dir.cajas).map((a) => [a.id, a.label])))
  /** Words for a value the API refused, by the parameter's type. */
  const hint = (p: Parameter, reason?: string) => {
    if (reason === 'missing') return 'Falta este dato.'
    const field = fieldOf(kind(), p.key)
    if (field?.options) return `Elija una opción: ${field.options.map(([, l]) => l.split(':')[0].split(' (')[0]).join(', ')}.`
    switch (p.type) {
      case 'amount':
        return 'Escriba un importe mayor que cero, por ejemplo 1.165,50.'
      case 'number':
        return 'Escriba un número, por ejemplo 1.165,50.'
      case 'currency':
        return 'Elija una de las monedas de la empresa.'
      case 'date':
        return 'Elija una fecha.'
      case 'side':
        return 'Elija compra o venta.'
      case 'account':
      case 'client':
      case 'cost_center':
        return 'Elija uno de la lista (uno de esta empresa, que sirva para esta herramienta).'
      default:
        return 'Valor no válido.'
    }
  }
  const submit = (e: Event) => {
    e.preventDefault()
    setMade(null)
    const parameters: Record<string, unknown> = {}
    const found: Record<string, string> = {}
    for (const p of params()) {
      const text = (values[p.key] ?? '').trim()
      if (!text) {
        if (p.required) found[p.key] = 'Falta este dato.'
        continue
      }
      if (p.type === 'amount' || p.type === 'number') {
        const parsed = p.type === 'number' ? parseSigned(text) : parseArs(text)
        if (!parsed.ok) found[p.key] = parsed.message
        else parameters[p.key] = parsed.value
      } else if (['account', 'client', 'cost_center'].includes(p.type) && /^\d+$/.test(text)) parameters[p.key] = Number(text)
      else parameters[p.key] = text
    }
    setErrors(produce((s) => {
      for (const k of Object.keys(s)) delete s[k]
      Object.assign(s, found)
    }))
    if (Object.keys(found).length) return action.setNote({ kind: 'error', text: 'Hay datos para corregir; no se envió nada.' })
    const me = session()?.employee.id
    const body = { parameters, channel: 'twin', requested_by: { contact_id: 0, phone: phone().trim(), ...(me && { employee_id: me }) } }
    void action.run(async () => {
      try {
        const result = await money<{ operation: Operation }>('POST', `/api/messaging/tools/${props.tool.id}/run`, body, fill.headers(body))
        fill.done()
        setMade(result.operation)
        return `Operación ${result.operation.id} creada, pendiente de aprobación.`
      } catch (err) {
        unasked = []
        if (err instanceof ApiFailure && err.code === 'INVALID_PARAMETERS')
          for (const d of err.details) {
            const p = params().find((x) => x.key === d.field)
            if (p) setErrors(p.key, hint(p, d.reason))
            else unasked.push(`«${fieldOf(kind(), d.field ?? '')?.label ?? d.label ?? d.field}»`)
          }
        throw err
      }
    })
  }
  const cancelMade = () =>
    cancel.run(async () => {
      const op = made()!
      await money('POST', `/api/operations/${op.id}/cancel`)
      setMade({ ...op, status: 'cancelled' })
      return `Operación ${op.id} cancelada: no cuenta en ningún saldo.`
    })
  return (
    <form class="card-lite stack try" onSubmit={submit} aria-label={`Probar ${props.tool.name}`} data-testid="tool-try-form" onInput={clearsError(action)} onChange={clearsError(action)} novalidate>
      <p class="warning" data-testid="try-warning">
        <strong>Probar crea una operación real</strong>, igual que si la pidiera el bot: queda <strong>pendiente de aprobación</strong> y no mueve ningún saldo hasta
        que alguien la apruebe. Si era solo una prueba, cancélela después (aquí o en Operaciones).
      </p>
      <Show when={params().length} fallback={<p class="muted">Esta herramienta tiene todo fijo: el bot no pregunta nada.</p>}>
        <div class="row">
          <For each={params()}>
            {(p) => (
              <div class="param" data-testid="try-param" data-key={p.key}>
                <ParamInput param={p} kind={kind()} value={values[p.key] ?? ''} dir={props.dir} invalid={Boolean(errors[p.key])} onChange={(v) => (setValues(p.key, v), setErrors(p.key, undefined))} />
                <FieldError text={errors[p.key]} testid={`try-error-${p.key}`} />
              </div>
            )}
          </For>
        </div>
      </Show>
      <label class="narrow">
        Teléfono de quien pide (opcional)
        <input name="phone" type="tel" maxlength="50" value={phone()} onInput={(e) => setPhone(e.currentTarget.value)} />
      </label>
      <div class="row">
        <button type="submit" class="primary" disabled={action.busy() || !props.tool.enabled} data-testid="try-submit">
          Probar: crear la operación
        </button>
        <Show when={!props.tool.enabled}>
          <span class="muted">Desactivada: actívela para probarla.</span>
        </Show>
      </div>
      <NoteLine note={action.note()} testid="try-message" />
      <Show when={made()}>
        {(op) => (
          <div class="made" data-testid="try-result" data-operation={op().id}>
            <p>
              <A href={`/operaciones/${op().id}`}>Operación {op().id}</A> · <span data-testid="try-status">{STATUS_LABEL[op().status]}</span>
            </p>
            <ul class="legs">
              <For each={op().transactions}>
                {(t) => (
                  <li>
                    <span class="num">
                      {t.currency} {formatArs(t.amount)}
                    </span>{' '}
                    <span class="muted">{accounts().get(t.account_id) ?? `Cuenta ${t.account_id}`}</span>
                  </li>
                )}
              </For>
            </ul>
            <Show when={op().status === 'pending' && can('operations.approve')}>
              <button type="button" class="danger" disabled={cancel.busy()} onClick={cancelMade} data-testid="try-cancel">
                Cancelar esta operación de prueba
              </button>
            </Show>
            <NoteLine note={cancel.note()} testid="try-cancel-message" />
          </div>
        )}
      </Show>
    </form>
  )
}

function ParamInput(props: { param: Parameter; kind: Kind; value: string; dir: Directory; invalid: boolean; onChange: (v: string) => void }) {
  const p = props.param
  const field = fieldOf(props.kind, p.key)
  const label = `${p.label}${p.required ? '' : ' (opcional)'}`
  const invalid = () => (props.invalid ? 'true' : undefined)
  const choose = (options: [string, string][]) => (
    <label>
      {label}
      <select name={`param-${p.key}`} aria-invalid={invalid()} onChange={(e) => props.onChange(e.currentTarget.value)}>
        <option value="">— Elija —</option>
        <For each={options}>
          {([v, l]) => (
            <option value={v} selected={v === props.value}>
              {l}
            </option>
          )}
        </For>
      </select>
    </label>
  )
  if (field?.options) return choose(field.options)
  switch (p.type) {
    case 'side':
      return choose([
        ['buy', 'Compra'],
        ['sell', 'Venta'],
      ])
    case 'currency':
      return choose(currenciesOf(props.dir.cajas).map((c) => [c, c]))
    case 'cost_center':
      return choose(props.dir.centers.map((c) => [String(c.id), c.name]))
    case 'account':
      return (
        <div class="labelled">
          <span aria-hidden="true">{label}</span>
          <AccountField name={`param-${p.key}`} label={label} value={props.value} cajas={props.dir.cajas} clients optional="— Elija —" onChange={props.onChange} />
        </div>
      )
    case 'client':
      return <ClientPicker label={label} name={`param-${p.key}`} value={props.value ? Number(props.value) : null} onChange={(c) => props.onChange(c ? String(c.id) : '')} />
    case 'date':
      return (
        <label>
          {label}
          <input name={`param-${p.key}`} type="date" aria-invalid={invalid()} value={props.value} onInput={(e) => props.onChange(e.currentTarget.value)} />
        </label>
      )
    case 'amount':
    case 'number':
      return (
        <label>
          {label}
          <input name={`param-${p.key}`} class="money" inputmode="decimal" placeholder="1.165,50" aria-invalid={invalid()} value={props.value} onInput={(e) => props.onChange(e.currentTarget.value)} />
        </label>
      )
    default:
      return (
        <label>
          {label}
          <input name={`param-${p.key}`} maxlength="2000" aria-invalid={invalid()} value={props.value} onInput={(e) => props.onChange(e.currentTarget.value)} />
        </label>
      )
  }
}
