import { can, session } from './session'
import { canHooks, isOwner } from './access'

export interface Section {
  path: string
  label: string
  allowed: () => boolean
}

export interface SectionGroup {
  /** The heading the menu shows above the group's sections. */
  label: string
  sections: Section[]
}

/**
 * The app's sections under four headings, in menu order, each section shown only to an employee whose permissions its
 * API routes accept, and a heading only when one of its sections is shown: a cashier who records operations sees
 * «Dinero» (and what it may read of «Configuración»), not the waiting room's screens nor the integrations.
 *
 * - Ventanilla: the waiting room and its screens, what a branch manager sets up and watches through the day.
 * - Dinero: the money's daily work, from recording an operation to the desks and cost centers.
 * - Control: what a supervisor or the owner reads afterwards: the day's result and the audit trail.
 * - Configuración: the company's own data and what the other sections are built from (people, types, tags, bot
 *   tools, integrations).
 *
 * An owner still opens on Cotizaciones, the first section; a supervisor without the waiting room on Operaciones.
 */
export const GROUPS: SectionGroup[] = [
  {
    label: 'Ventanilla',
    sections: [
      { path: '/cotizaciones', label: 'Cotizaciones', allowed: () => can('ventanilla.manage') },
      { path: '/pantalla', label: 'Pantalla', allowed: () => can('ventanilla.manage') },
      { path: '/servicios', label: 'Servicios', allowed: () => can('ventanilla.manage') },
      { path: '/enlaces', label: 'Pantallas y dispensadores', allowed: () => can('ventanilla.manage') },
      // The queue and its stream are counter routes (`ventanilla.call`); a manager watches them with both.
      { path: '/monitor', label: 'Monitor', allowed: () => can('ventanilla.manage') && can('ventanilla.call') },
      { path: '/estadisticas', label: 'Estadísticas', allowed: () => can('ventanilla.manage') },
    ],
  },
  {
    label: 'Dinero',
    sections: [
      { path: '/nueva', label: 'Nueva operación', allowed: () => can('operations.create') },
      { path: '/operaciones', label: 'Operaciones', allowed: () => can('operations.view') },
      { path: '/posicion', label: 'Posición de caja', allowed: () => can('clients.view') },
      { path: '/cajas', label: 'Cajas', allowed: () => can('tills.operate') || can('operations.view') },
      { path: '/clientes', label: 'Clientes y cajas', allowed: () => can('clients.view') },
      { path: '/mesas', label: 'Mesas', allowed: () => can('mesas.view') || can('mesas.manage') },
      { path: '/centros-de-costo', label: 'Centros de costo', allowed: () => can('cost_centers.view') || can('cost_centers.edit') },
    ],
  },
  {
    label: 'Control',
    sections: [
      { path: '/resultado', label: 'Resultado', allowed: () => can('metrics.view') },
      { path: '/auditoria', label: 'Auditoría', allowed: () => can('audit.view') },
    ],
  },
  {
    label: 'Configuración',
    sections: [
      // Read by anyone who manages something (the counter alone does not); changed only by the owner.
      { path: '/empresa', label: 'Empresa', allowed: () => (session()?.employee.permissions ?? []).some((p) => p !== 'ventanilla.call') },
      { path: '/personal', label: 'Personal', allowed: () => can('employees.manage') },
      { path: '/tipos', label: 'Tipos', allowed: () => can('operations.view') || can('operations.create') },
      { path: '/etiquetas', label: 'Etiquetas', allowed: () => can('clients.view') },
      { path: '/herramientas', label: 'Herramientas del bot', allowed: () => can('messaging.manage') },
      { path: '/integraciones', label: 'Integraciones', allowed: () => isOwner() || canHooks() },
    ],
  },
]

/** Every section, in menu order. */
export const SECTIONS: Section[] = GROUPS.flatMap((g) => g.sections)
