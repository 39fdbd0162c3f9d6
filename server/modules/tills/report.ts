import Decimal from 'decimal.js'
import { formatEsAr } from '../../lib/money'
import { localDateTime } from '../../lib/pdf'
import { csvRecord, safeText } from '../exports/csv'
import type { TillReport } from './model'

/** The day report's words and figures in Spanish (es-AR), shared by its CSV and its PDF. */

export const STATUS_WORDS = { pending: 'Pendiente', completed: 'Completada', cancelled: 'Anulada' } as const
export const EVENT_WORDS = { created: 'creada', approved: 'aprobada', reverted: 'revertida', cancelled: 'anulada' } as const
export const SIDE_WORDS = { buy: 'Compra', sell: 'Venta' } as const
export const MOMENT_WORDS = { opening: 'Apertura', closing: 'Cierre' } as const

type Money = { rawJSON: string }

/** A figure for a spreadsheet set to Spanish: decimal comma, no thousands mark, at least two decimals (-116550,00). */
export function csvNumber(value: Money | string): string {
  const d = new Decimal(typeof value === 'string' ? value : value.rawJSON)
  return d.toFixed(Math.max(2, d.decimalPlaces())).replace('.', ',')
}

/** A figure for people: es-AR with thousands marks (1.165,50). */
export const shown = (value: Money) => formatEsAr(value.rawJSON)

export const when = (iso: string | null, timezone: string) => (iso ? localDateTime(iso, timezone) : '')

export const person = (id: number | null, name: string | null) => name ?? (id === null ? 'Clave de la empresa' : `Empleado ${id}`)

/** The caja's currencies in the report's order, for the movement columns. */
export const currenciesOf = (r: TillReport) => r.movements.map((m) => m.currency)

/** The operation's movement in `currency` on the caja (zero when it did not move it). */
export const movementIn = (op: TillReport['operations'][number], currency: string): Money | null => op.movements.find((m) => m.currency === currency)?.amount ?? null

/** The heading lines: who, which caja, which session, when. */
export function headingOf(r: TillReport): [string, string][] {
  const s = r.session
  const tz = r.company.timezone
  const lines: [string, string][] = [
    ['Empresa', r.company.legal_name ?? r.company.name],
    ...(r.company.tax_id ? [['CUIT', r.company.tax_id] as [string, string]] : []),
    ['Caja', s.caja_name],
    ['Sesión', String(s.id)],
    ['Estado', s.status === 'open' ? 'Abierta (reporte parcial)' : 'Cerrada'],
    ['Apertura', `${when(s.opened_at, tz)}, ${person(s.opened_by, s.opened_by_name)}`],
  ]
  if (s.closed_at) lines.push(['Cierre', `${when(s.closed_at, tz)}, ${person(s.closed_by, s.closed_by_name)}`])
  if (s.note) lines.push(['Nota', s.note])
  lines.push(['Generado', when(r.generated_at, tz)])
  return lines
}

/**
 * The report as CSV for a spreadsheet in Spanish: `;` between fields, decimal comma, Spanish headings, UTF-8 with a
 * byte order mark (without it Excel reads the file as Windows-1252 and "Sesión" comes out garbled), CRLF lines. One
 * block per part (heading, opening, operations, summary, net movement, closing, differences), each with its own
 * header row, separated by an empty line.
 */
export function reportCsv(r: TillReport): string {
  const line = (fields: string[]) => csvRecord(fields, ';')
  const tz = r.company.timezone
  const currencies = currenciesOf(r)
  const count = (rows: TillReport['opening']) => [
    line(['Moneda', 'Esperado', 'Contado', 'Diferencia', 'Detalle por billetes y monedas']),
    ...rows.map((c) =>
      line([c.currency, csvNumber(c.expected), csvNumber(c.counted), csvNumber(c.difference), (c.denominations ?? []).map((d) => `${d.count} × ${csvNumber(d.value)}`).join(' + ')]),
    ),
  ]
  const blocks: string[][] = [
    [line(['Reporte de caja', '']), ...headingOf(r).map(([k, v]) => line([k, safeText(v)]))],
    [line(['Conteo de apertura']), ...count(r.opening)],
    [
      line(['Operaciones de la sesión']),
      line(['Fecha y hora', 'Operación', 'Boleto', 'Tipo', 'Descripción', 'Cliente', 'Cargada por', 'Estado', 'Cambios en la sesión', 'Compra/Venta', 'Moneda', 'Importe', 'Cotización', 'Importe en moneda local', 'Comisión', ...currencies]),
      ...r.operations.map((o) =>
        line([
          when(o.at, tz),
          String(o.operation_id),
          o.receipt_number ?? '',
          safeText(o.type),
          safeText(o.description),
          safeText(o.client?.name ?? ''),
          safeText(person(o.created_by, o.created_by_name)),
          STATUS_WORDS[o.status],
          o.events.map((e) => EVENT_WORDS[e.event]).join(', '),
          o.exchange ? SIDE_WORDS[o.exchange.side] : '',
          o.exchange?.currency ?? '',
          o.exchange ? csvNumber(o.exchange.amount) : '',
          o.exchange ? csvNumber(o.exchange.rate) : '',
          o.exchange ? csvNumber(o.exchange.local_amount) : '',
          o.exchange ? csvNumber(o.exchange.commission) : '',
          ...currencies.map((c) => {
            const m = movementIn(o, c)
            return m ? csvNumber(m) : ''
          }),
        ]),
      ),
    ],
    [
      line(['Resumen']),
      line(['Moneda', 'Compras', 'Ventas', 'Operaciones', 'Comisiones']),
      ...r.summary.map((s) => line([s.currency, csvNumber(s.bought), csvNumber(s.sold), String(s.operations), csvNumber(s.commissions)])),
    ],
    [line(['Movimiento neto']), line(['Moneda', 'Movimiento']), ...r.movements.map((m) => line([m.currency, csvNumber(m.amount)]))],
    [line(['Conteo de cierre']), ...(r.closing ? count(r.closing) : [line(['La caja sigue abierta'])])],
    [
      line(['Diferencias']),
      line(['Momento', 'Moneda', 'Esperado', 'Contado', 'Diferencia', 'Operación de ajuste']),
      ...r.differences.map((d) => line([MOMENT_WORDS[d.moment], d.currency, csvNumber(d.expected), csvNumber(d.counted), csvNumber(d.difference), String(d.adjustment_operation_id)])),
    ],
  ]
  return `\uFEFF${blocks.map((b) => b.join('')).join('\r\n')}`
}
