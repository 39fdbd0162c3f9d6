import { readFileSync } from 'node:fs'
import PDFDocument from 'pdfkit'

/**
 * What every PDF of the service shares (receipts, till day reports): pdfkit with DejaVu Sans from the
 * `dejavu-fonts-ttf` package, embedded (subset) in every file, so "ñ" and "á" print on any machine: the PDF's
 * standard fonts cover only Latin-1 through a code page, and no system font is assumed.
 */

let fonts: { regular: Buffer; bold: Buffer } | undefined
const fontFiles = () =>
  (fonts ??= {
    regular: readFileSync(Bun.resolveSync('dejavu-fonts-ttf/ttf/DejaVuSans.ttf', import.meta.dir)),
    bold: readFileSync(Bun.resolveSync('dejavu-fonts-ttf/ttf/DejaVuSans-Bold.ttf', import.meta.dir)),
  })

/** A document with the fonts registered as `regular` and `bold`, and the promise of its bytes once `end()` is called. */
export function pdfDocument(options: PDFKit.PDFDocumentOptions): { doc: PDFKit.PDFDocument; done: Promise<Buffer> } {
  const { regular, bold } = fontFiles()
  const doc = new PDFDocument(options)
  const chunks: Buffer[] = []
  doc.on('data', (c: Buffer) => chunks.push(c))
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on('end', () => resolve(Buffer.concat(chunks)))
    doc.on('error', reject)
  })
  doc.registerFont('regular', regular)
  doc.registerFont('bold', bold)
  return { doc, done }
}

/** Date and time on the company's wall clock, as people in Argentina write it (24/11/2026 15:04). */
export function localDateTime(iso: string, timezone: string): string {
  const f = new Intl.DateTimeFormat('es-AR', { timeZone: timezone, day: '2-digit', month: '2-digit', year: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })
  return f.format(new Date(iso)).replace(',', '')
}
