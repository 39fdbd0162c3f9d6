import { formatEsAr } from '../../lib/money'
import { localDateTime, pdfDocument } from '../../lib/pdf'
import type { ReceiptView } from './service'

/** The receipt as a PDF sized for an 80 mm roll printer (fonts: server/lib/pdf.ts). */

const MM = 72 / 25.4
const WIDTH = 80 * MM
const MARGIN = 4 * MM
const INNER = WIDTH - 2 * MARGIN

const SIDE = { buy: 'Compra', sell: 'Venta' } as const

const DOCUMENT_WORDS: Record<string, string> = { DNI: 'DNI', PASAPORTE: 'Pasaporte', CUIT: 'CUIT', CUIL: 'CUIL', CI: 'CI', OTRO: 'Documento' }

const money = (value: { rawJSON: string }) => formatEsAr(value.rawJSON)

/** Draws the whole receipt from the top of the page; the caller sizes the page to where it ends. */
function draw(doc: PDFKit.PDFDocument, view: ReceiptView) {
  const r = view.receipt
  const local = view.localCurrency
  const line = () => {
    doc.moveDown(0.3)
    doc.moveTo(MARGIN, doc.y).lineTo(WIDTH - MARGIN, doc.y).lineWidth(0.5).dash(2, { space: 2 }).stroke().undash()
    doc.moveDown(0.4)
  }
  const row = (label: string, value: string, bold = false) => {
    const y = doc.y
    doc.font('regular').fontSize(8).text(label, MARGIN, y, { width: INNER * 0.3 })
    const after = doc.y
    doc.font(bold ? 'bold' : 'regular').fontSize(bold ? 9 : 8).text(value, MARGIN + INNER * 0.3, y, { width: INNER * 0.7, align: 'right' })
    doc.y = Math.max(after, doc.y)
  }
  const centred = (text: string, size: number, bold = false) => doc.font(bold ? 'bold' : 'regular').fontSize(size).text(text, MARGIN, doc.y, { width: INNER, align: 'center' })
  const voided = () => {
    doc.fillColor('#b00020')
    centred('ANULADO', 18, true)
    doc.fillColor('black')
  }

  if (r.status === 'void') voided()
  centred(r.company.legal_name ?? view.companyName, 10, true)
  if (r.company.tax_id) centred(`CUIT ${r.company.tax_id}`, 8)
  if (r.company.address) centred(r.company.address, 8)
  if (r.company.license) centred(r.company.license, 8)
  line()
  centred(`Boleto de ${SIDE[r.side].toLowerCase()} de divisas`, 9, true)
  centred(`N.º ${r.number}`, 10, true)
  centred(localDateTime(r.issued_at, view.timezone), 8)
  line()
  row('Cliente', r.customer.name ?? 'Sin identificar')
  if (r.customer.document) row(DOCUMENT_WORDS[r.customer.document.type] ?? r.customer.document.type, `${r.customer.document.number} (${r.customer.document.country})`)
  line()
  row('Operación', SIDE[r.side], true)
  row('Moneda', r.currency)
  row('Importe', `${money(r.amount)} ${r.currency}`)
  row('Cotización', `${money(r.rate)} ${local}`)
  row('Subtotal', `${money(r.local_amount)} ${local}`)
  row('Comisión', `${money(r.commission)} ${local}`)
  line()
  doc.font('regular').fontSize(8).text(r.side === 'buy' ? 'Total a pagar al cliente' : 'Total a cobrar al cliente', MARGIN, doc.y, { width: INNER })
  doc.font('bold').fontSize(12).text(`${money(r.total)} ${local}`, MARGIN, doc.y, { width: INNER, align: 'right' })
  if (r.status === 'void') {
    line()
    voided()
  }
}

function render(view: ReceiptView, height: number): { doc: PDFKit.PDFDocument; done: Promise<Buffer> } {
  const made = pdfDocument({
    size: [WIDTH, height],
    margin: MARGIN,
    info: { Title: `Boleto ${view.receipt.number}`, Author: view.receipt.company.legal_name ?? view.companyName, CreationDate: new Date(view.receipt.issued_at) },
  })
  draw(made.doc, view)
  return made
}

/** The PDF bytes: drawn once on a long page to learn its height, then on a page that ends where the receipt does. */
export async function receiptPdf(view: ReceiptView): Promise<Uint8Array<ArrayBuffer>> {
  const probe = render(view, 2000 * MM)
  // The last line must end above the bottom margin, or pdfkit moves it to a page of its own.
  const height = probe.doc.y + 2 * MARGIN
  probe.doc.end()
  await probe.done
  const final = render(view, height)
  final.doc.end()
  return new Uint8Array(await final.done)
}
