import { readFileSync } from 'node:fs'
import PDFDocument from 'pdfkit'
import type { ReceiptView } from './service'
import { formatEsAr } from '../../lib/money'

/**
 * The receipt as a PDF sized for an 80 mm roll printer, made with pdfkit. The font is DejaVu Sans from the
 * `dejavu-fonts-ttf` package, embedded (subset) in every file, so "ñ" and "á" print on any machine: the PDF's
 * standard fonts cover only Latin-1 through a code page, and no system font is assumed.
 */

const MM = 72 / 25.4
const WIDTH = 80 * MM
const MARGIN = 4 * MM
const INNER = WIDTH - 2 * MARGIN

let fonts: { regular: Buffer; bold: Buffer } | undefined
const fontFiles = () =>
  (fonts ??= {
    regular: readFileSync(Bun.resolveSync('dejavu-fonts-ttf/ttf/DejaVuSans.ttf', import.meta.dir)),
    bold: readFileSync(Bun.resolveSync('dejavu-fonts-ttf/ttf/DejaVuSans-Bold.ttf', import.meta.dir)),
  })

const SIDE = { buy: 'Compra', sell: 'Venta' } as const

const DOCUMENT_WORDS: Record<string, string> = { DNI: 'DNI', PASAPORTE: 'Pasaporte', CUIT: 'CUIT', CUIL: 'CUIL', CI: 'CI', OTRO: 'Documento' }

/** Date and time of issue on the company's wall clock, as people in Argentina write it (24/11/2026 15:04). */
function issued(iso: string, timezone: string): string {
  const f = new Intl.DateTimeFormat('es-AR', { timeZone: timezone, day: '2-digit', month: '2-digit', year: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })
  return f.format(new Date(iso)).replace(',', '')
}

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
  centred(issued(r.issued_at, view.timezone), 8)
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
  const { regular, bold } = fontFiles()
  const doc = new PDFDocument({
    size: [WIDTH, height],
    margin: MARGIN,
    info: { Title: `Boleto ${view.receipt.number}`, Author: view.receipt.company.legal_name ?? view.companyName, CreationDate: new Date(view.receipt.issued_at) },
  })
  const chunks: Buffer[] = []
  doc.on('data', (c: Buffer) => chunks.push(c))
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on('end', () => resolve(Buffer.concat(chunks)))
    doc.on('error', reject)
  })
  doc.registerFont('regular', regular)
  doc.registerFont('bold', bold)
  draw(doc, view)
  return { doc, done }
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
