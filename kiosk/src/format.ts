const DEFAULT_ZONE = 'America/Argentina/Buenos_Aires'
const cache = new Map<string, Intl.DateTimeFormat>()

/** A cached es-AR formatter in `timeZone`, falling back to Buenos Aires for a zone this browser does not know. */
function formatter(timeZone: string, options: Intl.DateTimeFormatOptions): Intl.DateTimeFormat {
  const key = `${timeZone}|${JSON.stringify(options)}`
  let f = cache.get(key)
  if (!f) {
    try {
      f = new Intl.DateTimeFormat('es-AR', { ...options, timeZone })
    } catch {
      f = new Intl.DateTimeFormat('es-AR', { ...options, timeZone: DEFAULT_ZONE })
    }
    cache.set(key, f)
  }
  return f
}

export const clockTime = (at: Date, zone: string) => formatter(zone, { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(at)

export function longDate(at: Date, zone: string) {
  const text = formatter(zone, { weekday: 'long', day: 'numeric', month: 'long' }).format(at)
  return text.charAt(0).toUpperCase() + text.slice(1)
}

export const callTime = (iso: string, zone: string) => {
  const at = new Date(iso)
  return Number.isNaN(at.getTime()) ? '' : clockTime(at, zone)
}

const rateFormat = new Intl.NumberFormat('es-AR', { minimumFractionDigits: 2, maximumFractionDigits: 4 })
export const rate = (value: number) => rateFormat.format(value)

const CURRENCY_NAMES: Record<string, string> = {
  ARS: 'Peso argentino',
  USD: 'Dólar estadounidense',
  EUR: 'Euro',
  BRL: 'Real brasileño',
  UYU: 'Peso uruguayo',
  CLP: 'Peso chileno',
  PYG: 'Guaraní',
  BOB: 'Boliviano',
  PEN: 'Sol peruano',
  MXN: 'Peso mexicano',
  COP: 'Peso colombiano',
  GBP: 'Libra esterlina',
  CHF: 'Franco suizo',
  JPY: 'Yen',
  CNY: 'Yuan',
  CAD: 'Dólar canadiense',
  AUD: 'Dólar australiano',
  USDT: 'Tether',
}

export const currencyName = (code: string) => CURRENCY_NAMES[code.toUpperCase()] ?? ''
