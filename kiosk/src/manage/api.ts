import { parse } from 'lossless-json'
import { api, ApiFailure } from '../staff/api'

export { api, ApiFailure }
export type { Employee, Session } from '../staff/api'

/**
 * GET whose JSON numbers are kept as the exact text the server sent: rates are money, and JSON.parse would turn
 * "1165.123456" into the nearest float.
 */
export async function apiExact<T>(path: string): Promise<T> {
  let res: Response
  try {
    res = await fetch(path, { credentials: 'same-origin' })
  } catch {
    throw new ApiFailure(0, 'NETWORK', 'Sin conexión con el servidor')
  }
  const text = await res.text()
  const data = (() => {
    try {
      return parse(text, null, (n) => n) as T
    } catch {
      return null
    }
  })()
  if (!res.ok) {
    const body = data as { code?: string; error?: string } | null
    throw new ApiFailure(res.status, body?.code ?? 'INTERNAL_ERROR', body?.error ?? `HTTP ${res.status}`)
  }
  return data as T
}

/** The words a manager reads for each failure the API can answer. */
export function explain(e: unknown): string {
  if (!(e instanceof ApiFailure)) return 'Ocurrió un error inesperado.'
  switch (e.code) {
    case 'NETWORK':
      return 'Sin conexión con el servidor. Revise la red e intente de nuevo.'
    case 'UNAUTHORIZED':
      return 'La sesión terminó. Ingrese de nuevo.'
    case 'FORBIDDEN':
      return 'Su usuario no tiene permiso para esta acción.'
    case 'VENTANILLA_DISABLED':
      return 'La ventanilla no está habilitada para esta empresa.'
    case 'PREFIX_TAKEN':
      return 'Ya hay otro servicio con ese prefijo. Elija otro.'
    case 'CONFLICT':
      return 'Ya existe un registro con esos datos (por ejemplo, el mismo correo).'
    case 'NOT_FOUND':
      return 'Ya no existe: otra persona pudo haberlo borrado o revocado. Actualice la página.'
    case 'RATE_LIMITED':
      return 'Demasiados intentos. Espere unos minutos e intente de nuevo.'
    case 'VALIDATION_ERROR':
      return `Revise los datos ingresados (${e.message}).`
    default:
      return `No se pudo completar la acción (${e.message}).`
  }
}

/** What `apiMoney` answers: the body, or `null` on a 304 (nothing changed since `etag`). */
export interface MoneyAnswer<T> {
  data: T | null
  etag: string | null
}

/**
 * A request whose money comes as decimal strings (`Accept: application/json; money=string`, contract §1): JSON.parse
 * then keeps every digit, and the app never holds an amount as a float. `etag` makes it conditional (§13): a 304
 * answers `data: null`. The browser cache is bypassed so that the 304 comes from the server, not from a stored copy.
 */
export async function apiMoney<T>(method: string, path: string, options: { body?: unknown; etag?: string | null; headers?: Record<string, string> } = {}): Promise<MoneyAnswer<T>> {
  const headers: Record<string, string> = { accept: 'application/json; money=string', ...options.headers }
  if (options.body !== undefined && !(options.body instanceof FormData)) headers['content-type'] = 'application/json'
  if (options.etag) headers['if-none-match'] = options.etag
  let res: Response
  try {
    res = await fetch(path, {
      method,
      credentials: 'same-origin',
      cache: 'no-store',
      headers,
      body: options.body === undefined ? undefined : options.body instanceof FormData ? options.body : JSON.stringify(options.body),
    })
  } catch {
    throw new ApiFailure(0, 'NETWORK', 'Sin conexión con el servidor')
  }
  if (res.status === 304) return { data: null, etag: options.etag ?? null }
  const data = res.status === 204 ? null : await res.json().catch(() => null)
  if (!res.ok) throw new ApiFailure(res.status, data?.code ?? 'INTERNAL_ERROR', data?.error ?? `HTTP ${res.status}`, Array.isArray(data?.details) ? data.details : [])
  return { data: data as T, etag: res.headers.get('etag') }
}

/** `apiMoney` for a plain read or write whose answer is always a body. */
export const money = async <T>(method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
  (await apiMoney<T>(method, path, { body, headers })).data as T
