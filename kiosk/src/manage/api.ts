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
