import type { Snapshot } from './src/types'

const LOGO = `data:image/svg+xml,${encodeURIComponent(
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 96 96"><circle cx="48" cy="48" r="46" fill="#ffc53d"/><path d="M26 60 L48 28 L70 60 Z" fill="#0a1a2f"/><rect x="26" y="64" width="44" height="6" rx="3" fill="#0a1a2f"/></svg>',
)}`

/** A believable waiting room at `now`, for the screenshot and for trying the layout without a database. */
export function demoSnapshot(now: Date): Snapshot {
  const ago = (minutes: number) => new Date(now.getTime() - minutes * 60_000).toISOString()
  const call = (ticket: string, name: string, desk: string, service: string, minutes: number) => ({ ticket, name, desk, service, calledAt: ago(minutes) })
  return {
    companyName: 'Cambios Del Plata',
    date: now.toISOString().slice(0, 10),
    rates: [
      { currency: 'USD', buy: 1185, sell: 1205, mid: 1195 },
      { currency: 'EUR', buy: 1290.5, sell: 1335, mid: 1312.75 },
      { currency: 'BRL', buy: 205.4, sell: 219.8, mid: 212.6 },
      { currency: 'UYU', buy: 27.15, sell: 31.9, mid: 29.525 },
    ],
    services: [
      { id: 1, name: 'Cambio de divisas', prefix: 'A', waiting: 7 },
      { id: 2, name: 'Transferencias', prefix: 'B', waiting: 3 },
      { id: 3, name: 'Empresas', prefix: 'C', waiting: 1 },
    ],
    currentCall: call('A-042', 'Juan P.', 'Caja 2', 'Cambio de divisas', 0),
    recentCalls: [
      call('B-017', 'María G.', 'Caja 1', 'Transferencias', 2),
      call('A-041', 'Carlos R.', 'Caja 3', 'Cambio de divisas', 3),
      call('C-008', 'Lucía F.', 'Caja 4', 'Empresas', 5),
      call('A-040', 'Jorge M.', 'Caja 2', 'Cambio de divisas', 6),
      call('B-016', 'Ana S.', 'Caja 1', 'Transferencias', 9),
      call('A-039', 'Pablo D.', 'Caja 3', 'Cambio de divisas', 11),
    ],
    logoUrl: LOGO,
    showLogo: true,
    timezone: 'America/Argentina/Buenos_Aires',
    tickerText:
      'Horario de atención: lunes a viernes de 9 a 17 h  ·  Las cotizaciones pueden variar sin previo aviso  ·  Consulte por transferencias al exterior  ·  Recuerde traer su DNI',
    announceSound: true,
    announceTts: true,
    privacyMode: 'first_last_initial',
    updatedAt: now.toISOString(),
  }
}
