import { can, session } from './session'
import { canHooks, isOwner } from './access'

export interface Section {
  path: string
  label: string
  allowed: () => boolean
}

/** The app's sections in menu order, each shown only to an employee whose permissions its API routes accept. */
export const SECTIONS: Section[] = [
  { path: '/cotizaciones', label: 'Cotizaciones', allowed: () => can('ventanilla.manage') },
  { path: '/pantalla', label: 'Pantalla', allowed: () => can('ventanilla.manage') },
  { path: '/servicios', label: 'Servicios', allowed: () => can('ventanilla.manage') },
  { path: '/enlaces', label: 'Pantallas y dispensadores', allowed: () => can('ventanilla.manage') },
  { path: '/personal', label: 'Personal', allowed: () => can('employees.manage') },
  // The queue and its stream are counter routes (`ventanilla.call`); a manager watches them with both.
  { path: '/monitor', label: 'Monitor', allowed: () => can('ventanilla.manage') && can('ventanilla.call') },
  { path: '/estadisticas', label: 'Estadísticas', allowed: () => can('ventanilla.manage') },
  // The back office: after the branch's sections, so an owner still opens on Cotizaciones; a supervisor without
  // the waiting room opens here.
  { path: '/operaciones', label: 'Operaciones', allowed: () => can('operations.view') },
  { path: '/posicion', label: 'Posición de caja', allowed: () => can('clients.view') },
  { path: '/clientes', label: 'Clientes y cajas', allowed: () => can('clients.view') },
  { path: '/etiquetas', label: 'Etiquetas', allowed: () => can('clients.view') },
  { path: '/tipos', label: 'Tipos', allowed: () => can('operations.view') || can('operations.create') },
  { path: '/nueva', label: 'Nueva operación', allowed: () => can('operations.create') },
  { path: '/resultado', label: 'Resultado', allowed: () => can('metrics.view') },
  { path: '/mesas', label: 'Mesas', allowed: () => can('mesas.view') || can('mesas.manage') },
  { path: '/centros-de-costo', label: 'Centros de costo', allowed: () => can('cost_centers.view') || can('cost_centers.edit') },
  { path: '/herramientas', label: 'Herramientas del bot', allowed: () => can('messaging.manage') },
  { path: '/integraciones', label: 'Integraciones', allowed: () => isOwner() || canHooks() },
  { path: '/auditoria', label: 'Auditoría', allowed: () => can('audit.view') },
  // Read by anyone who manages something (the counter alone does not); changed only by the owner.
  { path: '/empresa', label: 'Empresa', allowed: () => (session()?.employee.permissions ?? []).some((p) => p !== 'ventanilla.call') },
]
