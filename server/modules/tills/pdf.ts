import { pdfDocument } from '../../lib/pdf'
import type { TillReport } from './model'
import { currenciesOf, EVENT_WORDS, headingOf, MOMENT_WORDS, movementIn, shown, SIDE_WORDS, STATUS_WORDS, when } from './report'

/**
 * The day report as a landscape A4 PDF for the supervisor to sign (a column per currency of the caja): the heading, then opening, operations, summary, net
 * movement, closing and differences as tables, and a line to sign. Fonts and the document as for receipts
 * (server/lib/pdf.ts); pdfkit's own tables carry the rows over to new pages.
 */

const MM = 72 / 25.4
const MARGIN = 15 * MM

type Row = (string | PDFKit.Mixins.CellOptions)[]

const right = (text: string): PDFKit.Mixins.CellOptions => ({ text, align: { x: 'right' } })

/** Roughly how tall a table of `rows` one-line rows is, with its title: a short table starts on a new page rather than split. */
const ROW_HEIGHT = 15

function table(doc: PDFKit.PDFDocument, title: string, header: (string | PDFKit.Mixins.CellOptions)[], rows: Row[], widths: (number | string)[], empty = 'Sin registros') {
  doc.moveDown(0.8)
  const short = rows.length <= 12
  if (short && doc.y + (rows.length + 3) * ROW_HEIGHT > doc.page.height - MARGIN) doc.addPage()
  doc.font('bold').fontSize(11).text(title, MARGIN)
  doc.moveDown(0.3)
  const data: Row[] = [
    header.map((h) => ({ ...(typeof h === 'string' ? { text: h } : h), font: { src: 'bold' }, backgroundColor: '#e8e8e8' })),
    ...(rows.length ? rows : [[{ text: empty, colSpan: header.length }]]),
  ]
  doc.font('regular').fontSize(8)
  doc.table({
    position: { x: MARGIN },
    columnStyles: widths,
    defaultStyle: { border: 0.5, borderColor: '#999999', padding: 3 },
    data,
  })
}

function counts(doc: PDFKit.PDFDocument, title: string, rows: TillReport['opening'] | null) {
  table(
    doc,
    title,
    ['Moneda', right('Esperado'), right('Contado'), right('Diferencia'), 'Billetes y monedas'],
    (rows ?? []).map((c) => [
      c.currency,
      right(shown(c.expected)),
      right(shown(c.counted)),
      right(shown(c.difference)),
      (c.denominations ?? []).map((d) => `${d.count} × ${shown(d.value)}`).join(' + '),
    ]),
    [60, 110, 110, 110, '*'],
    rows ? 'Sin monedas' : 'La caja sigue abierta',
  )
}

function draw(doc: PDFKit.PDFDocument, r: TillReport) {
  const tz = r.company.timezone
  doc.font('bold').fontSize(16).text(`Reporte de caja: ${r.session.caja_name}`, MARGIN, MARGIN)
  doc.moveDown(0.4)
  for (const [label, value] of headingOf(r)) {
    doc.font('bold').fontSize(9).text(`${label}: `, { continued: true })
    doc.font('regular').text(value)
  }
  counts(doc, 'Conteo de apertura', r.opening)

  const currencies = currenciesOf(r)
  table(
    doc,
    'Operaciones de la sesión',
    ['Hora', 'N.º', 'Boleto', 'Operación', 'Cliente', 'Estado', ...currencies.map((c) => right(c))],
    r.operations.map((o) => [
      when(o.at, tz).split(' ')[1] ?? '',
      String(o.operation_id),
      o.receipt_number ?? '',
      o.exchange ? `${SIDE_WORDS[o.exchange.side]} de ${shown(o.exchange.amount)} ${o.exchange.currency} a ${shown(o.exchange.rate)}` : `${o.type}: ${o.description}`,
      o.client?.name ?? '',
      `${STATUS_WORDS[o.status]} (${o.events.map((e) => EVENT_WORDS[e.event]).join(', ')})`,
      ...currencies.map((c) => {
        const m = movementIn(o, c)
        return right(m ? shown(m) : '')
      }),
    ]),
    [32, 32, 78, '*', 120, 96, ...currencies.map(() => 66)],
  )

  table(
    doc,
    'Resumen',
    ['Moneda', right('Compras'), right('Ventas'), right('Operaciones'), right('Comisiones')],
    r.summary.map((s) => [s.currency, right(shown(s.bought)), right(shown(s.sold)), right(String(s.operations)), right(shown(s.commissions))]),
    [60, 150, 150, 100, 150],
  )
  table(doc, 'Movimiento neto de la sesión', ['Moneda', right('Movimiento')], r.movements.map((m) => [m.currency, right(shown(m.amount))]), [60, 150])
  counts(doc, 'Conteo de cierre', r.closing)
  table(
    doc,
    'Diferencias',
    ['Momento', 'Moneda', right('Esperado'), right('Contado'), right('Diferencia'), right('Ajuste (operación N.º)')],
    r.differences.map((d) => [MOMENT_WORDS[d.moment], d.currency, right(shown(d.expected)), right(shown(d.counted)), right(shown(d.difference)), right(String(d.adjustment_operation_id))]),
    [70, 60, 110, 110, 110, 130],
    'Sin diferencias',
  )

  doc.moveDown(3)
  if (doc.y + 3 * ROW_HEIGHT > doc.page.height - MARGIN) doc.addPage()
  doc.font('regular').fontSize(9)
  const y = doc.y
  doc.moveTo(MARGIN, y).lineTo(MARGIN + 70 * MM, y).lineWidth(0.5).stroke()
  doc.text('Firma del supervisor', MARGIN, y + 4)
}

/** The PDF bytes of the report. */
export async function reportPdf(r: TillReport): Promise<Uint8Array<ArrayBuffer>> {
  const { doc, done } = pdfDocument({
    size: 'A4',
    layout: 'landscape',
    bufferPages: true,
    margin: MARGIN,
    info: { Title: `Reporte de caja ${r.session.caja_name}, sesión ${r.session.id}`, Author: r.company.legal_name ?? r.company.name, CreationDate: new Date(r.generated_at) },
  })
  draw(doc, r)
  // Every page says whose report it is and where it stands, written once all pages exist.
  const { start, count } = doc.bufferedPageRange()
  for (let i = start; i < start + count; i++) {
    doc.switchToPage(i)
    const bottom = doc.page.margins.bottom
    doc.page.margins.bottom = 0
    doc.font('regular').fontSize(7).fillColor('#555555')
    doc.text(`${r.session.caja_name}, sesión ${r.session.id} · página ${i + 1} de ${count}`, MARGIN, doc.page.height - MARGIN / 2, { width: doc.page.width - 2 * MARGIN, align: 'right', lineBreak: false })
    doc.page.margins.bottom = bottom
  }
  doc.end()
  return new Uint8Array(await done)
}
