/** What the console gets from the API; errors carry the contract's code so they can be put in words. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The fields the API blamed (`details` of the error body), so a form can put its words next to each. */
    readonly details: { field?: string; label?: string; message?: string; reason?: string }[] = [],
  ) {
    super(message)
  }
}

export interface Employee {
  id: number
  email: string
  name: string
  permissions: string[]
  client_ids: number[]
}

export interface Session {
  employee: Employee
  /** The company signed in to: its name, and the zone its times are shown in. */
  company: { id: number; name: string; timezone: string }
  expires_at: string
}

export interface Waiting {
  id: number
  number: string
  customer_name: string | null
  priority: boolean
  created_at: string
}

export interface QueueService {
  service_id: number
  name: string
  prefix: string
  waiting: Waiting[]
}

export interface Ticket {
  id: number
  number: string
  service_id: number
  customer_name: string | null
  status: 'waiting' | 'called' | 'finished' | 'no_show'
  priority: boolean
  desk: string | null
  called_at: string | null
  created_at: string
}

/** A desk's ticket called and not yet finished or no-show, as the queue and its stream list them. */
export interface Serving {
  desk: string
  ticket: { id: number; number: string; customer_name: string | null; service_id: number }
  employee: { id: number; name: string } | null
  called_at: string
}

/** Same-origin JSON request with the session cookie; the browser adds the Origin header writes need. */
export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  let res: Response
  try {
    res = await fetch(path, {
      method,
      credentials: 'same-origin',
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  } catch {
    throw new ApiFailure(0, 'NETWORK', 'Sin conexión con el servidor')
  }
  if (res.status === 204) return undefined as T
  const data = await res.json().catch(() => null)
  if (!res.ok) throw new ApiFailure(res.status, data?.code ?? 'INTERNAL_ERROR', data?.error ?? `HTTP ${res.status}`)
  return data as T
}

/** The words a person at the counter reads for each failure. */
export function explain(e: unknown): string {
  if (!(e instanceof ApiFailure)) return 'Ocurrió un error inesperado.'
  switch (e.code) {
    case 'NETWORK':
      return 'Sin conexión con el servidor. Revise la red e intente de nuevo.'
    case 'QUEUE_EMPTY':
      return 'No hay clientes esperando en sus servicios.'
    case 'UNAUTHORIZED':
      return 'La sesión terminó. Ingrese de nuevo.'
    case 'FORBIDDEN':
      return 'Su usuario no tiene permiso para atender en ventanilla.'
    case 'VENTANILLA_DISABLED':
      return 'La ventanilla no está habilitada para esta empresa.'
    case 'TICKET_CLOSED':
      return 'Ese turno ya fue finalizado o marcado como ausente.'
    case 'INVALID_TICKET_STATUS':
      return 'Ese turno ya no está en atención.'
    case 'NOT_FOUND':
      return 'El turno o el servicio ya no existe.'
    case 'RATE_LIMITED':
      return 'Demasiados intentos. Espere unos minutos e intente de nuevo.'
    case 'VALIDATION_ERROR':
      return 'Revise los datos ingresados.'
    default:
      return `No se pudo completar la acción (${e.message}).`
  }
}
