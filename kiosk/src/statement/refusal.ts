/** The day a grant ended, as the reader writes dates (in the branch's zone, where the grant was given). */
const shownDay = (iso: string) =>
  new Intl.DateTimeFormat('es-AR', { timeZone: 'America/Argentina/Buenos_Aires', day: '2-digit', month: '2-digit', year: 'numeric' }).format(new Date(iso))

/**
 * Why the statement could not be read, in the reader's words. A grant that worked once says whether it was revoked
 * or expired, and when (the API's 401 `details`, server/access/caller.ts); any other 401 is a key that was never right.
 */
export function refusal(status: number, body: { details?: { reason?: string; at?: string } } | null): string {
  const at = body?.details?.at ? ` el ${shownDay(body.details.at)}` : ''
  if (status === 401 && body?.details?.reason === 'revoked') return `La casa de cambio revocó este enlace${at}: ya no muestra el estado de cuenta. Pídale uno nuevo.`
  if (status === 401 && body?.details?.reason === 'expired') return `Este enlace venció${at}. Pida uno nuevo a la casa de cambio.`
  if (status === 401) return 'La clave de este enlace no es válida. Revise que lo copió completo, incluida la parte que sigue a «#».'
  if (status === 404) return 'Este enlace no corresponde a ninguna cuenta: puede que la cuenta ya no exista. Consulte a la casa de cambio.'
  if (status === 400) return 'Revise las fechas: «Desde» no puede ser posterior a «Hasta».'
  if (status === 429 || status === 503) return 'Hay muchas consultas en este momento. Intente de nuevo en unos segundos.'
  return 'No se pudo leer el estado de cuenta. Revise la conexión e intente de nuevo.'
}
