/**
 * The closed list of event types (contract §11) in the words of the screens. The API publishes the list only in
 * its OpenAPI text, so the app keeps its own copy; tests/kiosk/integrations.e2e.test.ts checks it against the
 * server's `EVENT_TYPES`, so a type added there and not here fails a test instead of going unnamed.
 */
export const EVENT_LABELS: Record<string, string> = {
  'client.created': 'Cliente creado',
  'client.updated': 'Cliente modificado',
  'client.deleted': 'Cliente borrado',
  'account.created': 'Cuenta creada',
  'operation.created': 'Operación creada',
  'operation.approved': 'Operación aprobada',
  'operation.reverted': 'Operación revertida',
  'operation.cancelled': 'Operación cancelada',
  'attachment.created': 'Adjunto agregado',
  'attachment.deleted': 'Adjunto quitado',
  'cost_center.created': 'Centro de costo creado',
  'cost_center.updated': 'Centro de costo modificado',
  'messaging_tool.created': 'Herramienta del bot creada',
  'messaging_tool.updated': 'Herramienta del bot modificada',
  'messaging_tool.deleted': 'Herramienta del bot borrada',
  'mesa_line.created': 'Línea de mesa agregada',
  'mesa_line.deleted': 'Línea de mesa borrada',
  'ventanilla_ticket.created': 'Turno emitido',
  'ventanilla_ticket.called': 'Turno llamado',
  'ventanilla_ticket.finished': 'Turno atendido',
  'ventanilla_ticket.no_show': 'Turno ausente',
  'ventanilla_ticket.transferred': 'Turno transferido',
  'till_session.opened': 'Caja abierta',
  'till_session.closed': 'Caja cerrada',
  'webhook_endpoint.disabled': 'Destino de avisos desactivado',
  'webhook.test': 'Aviso de prueba',
}

export const EVENT_TYPES = Object.keys(EVENT_LABELS)

/** Families (`operation.*`) in list order, with their words. */
export const EVENT_FAMILIES: [string, string][] = [
  ['client', 'Clientes'],
  ['account', 'Cuentas'],
  ['operation', 'Operaciones'],
  ['attachment', 'Adjuntos'],
  ['cost_center', 'Centros de costo'],
  ['messaging_tool', 'Herramientas del bot'],
  ['mesa_line', 'Mesas'],
  ['ventanilla_ticket', 'Turnos'],
  ['till_session', 'Cajas'],
  ['webhook_endpoint', 'Destinos de avisos'],
  ['webhook', 'Pruebas'],
]

export const typesOf = (family: string) => EVENT_TYPES.filter((t) => t.split('.')[0] === family)

/** An endpoint's filter (`*`, `operation.*`, `operation.approved`) in words. */
export const filterLabel = (filter: string) =>
  filter === '*' ? 'Todos los eventos' : filter.endsWith('.*') ? `${EVENT_FAMILIES.find(([f]) => `${f}.*` === filter)?.[1] ?? filter}: todos` : (EVENT_LABELS[filter] ?? filter)
