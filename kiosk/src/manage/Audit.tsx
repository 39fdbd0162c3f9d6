import { createSignal, For, onMount, Show } from 'solid-js'
import { saveFile } from '../download'
import { apiExact, money } from './api'
import { AUDIT_ACTION_LABEL, describeChanges, type Page } from './ledger'
import { session } from './session'
import { createAction, NoteLine, when } from './ui'

/** Read with lossless-json: snapshots hold amounts as JSON numbers, kept here as the text the server wrote. */
interface Entry {
  id: string
  entity: string
  entity_id: string
  action: string
  actor: { name: string | null; email: string | null }
  channel: string | null
  channel_detail: { dispenser?: { id: number; name: string } }
  timestamp: string
  changes: { field: string; before: unknown; after: unknown }[]
  seq: string | null
}

interface Verify {
  verified: boolean
  rows: number
  first_seq: number | null
  last_seq: number | null
  head: { seq: number; hash: string } | null
  broken: { seq: number; reason: 'hash_mismatch' | 'gap' | 'prev_mismatch' } | null
}

interface Digest {
  date: string
  seq: number
  hash: string
  signature: string
}

/** Every audited table in the words of the screens: one record, and the filter's plural. */
const RECORDS: Record<string, [one: string, many: string]> = {
  accounts: ['Cuenta', 'Cuentas'],
  api_keys: ['Clave de API', 'Claves de API'],
  client_tags: ['Etiqueta de cliente', 'Etiquetas de clientes'],
  clients: ['Cliente', 'Clientes'],
  companies: ['Empresa', 'Empresa'],
  cost_center_budgets: ['Presupuesto', 'Presupuestos'],
  cost_centers: ['Centro de costos', 'Centros de costos'],
  employee_sessions: ['Sesión de empleado', 'Sesiones de empleados'],
  employees: ['Empleado', 'Personal'],
  events: ['Evento', 'Eventos'],
  external_grants: ['Acceso externo', 'Accesos externos'],
  mesa_accounts: ['Cuenta de mesa', 'Cuentas de mesas'],
  mesa_lines: ['Línea de mesa', 'Líneas de mesas'],
  mesas: ['Mesa', 'Mesas'],
  messaging_drafts: ['Pedido por mensajería', 'Pedidos por mensajería'],
  messaging_tools: ['Herramienta de mensajería', 'Herramientas de mensajería'],
  operation_attachments: ['Adjunto', 'Adjuntos'],
  operation_types: ['Tipo de operación', 'Tipos de operación'],
  operations: ['Operación', 'Operaciones'],
  sign_in_failures: ['Ingreso fallido', 'Ingresos fallidos'],
  tags: ['Etiqueta', 'Etiquetas'],
  till_sessions: ['Sesión de caja', 'Sesiones de caja'],
  transaction_types: ['Tipo de movimiento', 'Tipos de movimiento'],
  transactions: ['Movimiento', 'Movimientos'],
  ventanilla_dispenser_tokens: ['Dispensador', 'Dispensadores'],
  ventanilla_rates: ['Cotización', 'Cotizaciones'],
  ventanilla_services: ['Servicio', 'Servicios'],
  ventanilla_settings: ['Configuración de pantalla', 'Configuración de pantallas'],
  ventanilla_tickets: ['Turno', 'Turnos'],
  ventanilla_tokens: ['Enlace de pantalla', 'Enlaces de pantallas'],
  webhook_attempts: ['Intento de webhook', 'Intentos de webhooks'],
  webhook_deliveries: ['Entrega de webhook', 'Entregas de webhooks'],
  webhook_endpoints: ['Webhook', 'Webhooks'],
}
const TABLES: [string, string][] = [['', 'Todas'], ...Object.entries(RECORDS).map(([table, [, many]]): [string, string] => [table, many]).sort(([, a], [, b]) => a.localeCompare(b, 'es'))]
/** A table this screen does not know yet still reads as words. */
const recordOf = (table: string) => RECORDS[table]?.[0] ?? table.replace(/_/g, ' ')
const ACTIONS: [string, string][] = [['', 'Todas'], ...Object.entries(AUDIT_ACTION_LABEL)]
const CHANNEL_LABEL: Record<string, string> = {
  messaging: 'Mensajería',
  twin: 'Gemelo de mensajería',
  cli: 'Consola del operador',
  setup: 'Configuración inicial',
  dispenser: 'Dispensador de turnos',
}
const CHANNELS: [string, string][] = [['', 'Todos'], ...Object.entries(CHANNEL_LABEL)]

/** Who made a change: the employee, a dispenser by its name, else a key of the company. */
const actorOf = (r: Entry) =>
  r.channel === 'dispenser' && r.channel_detail.dispenser
    ? `Dispensador «${r.channel_detail.dispenser.name}»`
    : (r.actor.name ?? r.actor.email ?? 'una clave de la empresa')
const REASON: Record<string, string> = {
  hash_mismatch: 'un registro fue modificado después de sellado',
  gap: 'falta un registro en la secuencia',
  prev_mismatch: 'un registro fue insertado o reordenado',
}

export function Audit() {
  const [table, setTable] = createSignal('')
  const [action, setAction] = createSignal('')
  const [channel, setChannel] = createSignal('')
  const [from, setFrom] = createSignal('')
  const [to, setTo] = createSignal('')
  const [page, setPage] = createSignal(1)
  const [rows, setRows] = createSignal<Page<Entry> | null>(null)
  const [check, setCheck] = createSignal<Verify | null>(null)
  const list = createAction()
  const verifying = createAction()
  const digests = createAction()
  // Verification and digests are company-wide; the API refuses them to an employee limited to clients.
  const companyWide = () => (session()?.employee.client_ids ?? []).length === 0

  const load = (p = 1) =>
    list.run(async () => {
      const q = new URLSearchParams({ page: String(p), pageSize: '50' })
      for (const [k, v] of [
        ['table', table()],
        ['action', action()],
        ['channel', channel()],
        ['from', from()],
        ['to', to()],
      ])
        if (v) q.set(k, v)
      const body = await apiExact<Page<Entry>>(`/api/audit-logs?${q}`)
      setRows(body)
      setPage(p)
    })
  onMount(() => load())

  const verify = () =>
    verifying.run(async () => {
      setCheck(await money<Verify>('GET', '/api/audit-logs/verify'))
    })

  /** Every digest and the key that signs them, in one file a company can keep elsewhere (contract §14). */
  const download = () =>
    digests.run(async () => {
      const all: Digest[] = []
      for (let p = 1; ; p++) {
        const body = await money<Page<Digest>>('GET', `/api/audit-logs/digests?page=${p}&pageSize=100`)
        all.push(...body.data)
        if (p >= body.pagination.totalPages) break
      }
      const key = await money<{ alg: string; public_key: string }>('GET', '/api/audit-logs/digest-key')
      const file = new Blob([JSON.stringify({ alg: key.alg, public_key: key.public_key, digests: all }, null, 2)], { type: 'application/json' })
      saveFile('auditoria-resumenes-firmados.json', file)
      return all.length
        ? `Se descargaron ${all.length} resúmenes diarios firmados y la clave pública para comprobarlos.`
        : 'Todavía no hay resúmenes: se firma uno al terminar cada día. Se descargó la clave pública.'
    })

  const total = () => Number(rows()?.pagination.total ?? 0)
  const pages = () => Math.max(1, Number(rows()?.pagination.totalPages ?? 1))

  return (
    <section class="panel" data-testid="audit-section">
      <h1>Auditoría</h1>
      <Show when={companyWide()}>
        <section class="sub" aria-labelledby="integrity-title">
          <h2 id="integrity-title">Integridad del registro</h2>
          <p class="muted">Cada cambio queda encadenado al anterior con un sello (SHA-256); verificar recalcula toda la cadena.</p>
          <div class="row">
            <button type="button" class="primary" onClick={verify} disabled={verifying.busy()} data-testid="audit-verify">
              {verifying.busy() ? 'Verificando…' : 'Verificar la cadena'}
            </button>
            <button type="button" onClick={download} disabled={digests.busy()} data-testid="audit-digests">
              Descargar resúmenes diarios firmados
            </button>
          </div>
          <NoteLine note={verifying.note()} />
          <Show when={check()}>
            {(c) => (
              <p class={`note ${c().verified ? 'info' : 'error'}`} role={c().verified ? 'status' : 'alert'} data-testid="audit-verdict">
                <Show
                  when={c().verified}
                  fallback={`La cadena NO está íntegra: a partir del registro ${c().broken?.seq}, ${REASON[c().broken?.reason ?? ''] ?? c().broken?.reason}.`}
                >
                  {c().rows
                    ? `La cadena está íntegra: ${c().rows} registros verificados (del ${c().first_seq} al ${c().last_seq}). Último sello: ${c().head?.hash.slice(0, 16)}…`
                    : 'Todavía no hay registros sellados para verificar.'}
                </Show>
              </p>
            )}
          </Show>
          <NoteLine note={digests.note()} testid="digests-message" />
        </section>
      </Show>

      <section class="sub" aria-labelledby="log-title">
        <h2 id="log-title">Registro de cambios</h2>
        <form
          class="inline filters"
          onSubmit={(e) => {
            e.preventDefault()
            void load(1)
          }}
        >
          <label>
            Tabla
            <select name="table" value={table()} onChange={(e) => setTable(e.currentTarget.value)}>
              <For each={TABLES}>{([v, l]) => <option value={v}>{l}</option>}</For>
            </select>
          </label>
          <label>
            Acción
            <select name="action" value={action()} onChange={(e) => setAction(e.currentTarget.value)}>
              <For each={ACTIONS}>{([v, l]) => <option value={v}>{l}</option>}</For>
            </select>
          </label>
          <label>
            Canal
            <select name="channel" value={channel()} onChange={(e) => setChannel(e.currentTarget.value)}>
              <For each={CHANNELS}>{([v, l]) => <option value={v}>{l}</option>}</For>
            </select>
          </label>
          <label>
            Desde
            <input type="date" name="from" value={from()} onInput={(e) => setFrom(e.currentTarget.value)} />
          </label>
          <label>
            Hasta
            <input type="date" name="to" value={to()} onInput={(e) => setTo(e.currentTarget.value)} />
          </label>
          <button type="submit" class="primary" disabled={list.busy()}>
            Buscar
          </button>
        </form>
        <NoteLine note={list.note()} />
        <p class="muted" data-testid="audit-total">
          {total()} registros · página {page()} de {pages()}
        </p>
        <Show when={rows()?.data.length}>
          <div class="scroll-x">
            <table class="grid audit" data-testid="audit-table">
              <caption class="visually-hidden">Cambios registrados, los más recientes primero</caption>
              <thead>
                <tr>
                  <th scope="col">Sello</th>
                  <th scope="col">Cuándo</th>
                  <th scope="col">Quién</th>
                  <th scope="col">Qué</th>
                  <th scope="col">Cambios</th>
                </tr>
              </thead>
              <tbody>
                <For each={rows()!.data}>
                  {(r) => (
                    <tr data-testid="audit-entry">
                      <td>{r.seq ?? '—'}</td>
                      <td>{when(r.timestamp)}</td>
                      <td>{actorOf(r)}</td>
                      <td>
                        {AUDIT_ACTION_LABEL[r.action] ?? r.action} · {recordOf(r.entity)} {r.entity_id}
                        {r.channel && r.channel !== 'dispenser' ? ` · ${CHANNEL_LABEL[r.channel] ?? r.channel}` : ''}
                      </td>
                      <td>
                        {describeChanges(r.changes)}
                      </td>
                    </tr>
                  )}
                </For>
              </tbody>
            </table>
          </div>
        </Show>
        <div class="row">
          <button type="button" disabled={page() <= 1 || list.busy()} onClick={() => load(page() - 1)}>
            Anterior
          </button>
          <button type="button" disabled={page() >= pages() || list.busy()} onClick={() => load(page() + 1)}>
            Siguiente
          </button>
        </div>
      </section>
    </section>
  )
}
