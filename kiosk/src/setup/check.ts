/** What the setup form sends (POST /api/setup). */
export interface SetupBody {
  token: string
  company: { name: string; timezone: string; modules: { mesas: boolean; ventanilla: boolean } }
  owner: { email: string; name: string; password: string }
  starter: boolean
}

export interface Fields {
  companyName: string
  timezone: string
  mesas: boolean
  ventanilla: boolean
  ownerName: string
  email: string
  password: string
  repeat: string
  starter: boolean
}

export type Problems = Partial<Record<keyof Fields, string>>

/** The same limits the API holds, checked first so that a person reads what to fix next to the field. */
/** Whether the browser knows the zone: the same IANA names the server accepts, aliases such as America/Cordoba included. */
export function knownZone(zone: string): boolean {
  if (!zone.trim()) return false
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone })
    return true
  } catch {
    return false
  }
}

export function check(f: Fields): Problems {
  const p: Problems = {}
  if (!f.companyName.trim()) p.companyName = 'Escribí el nombre de la empresa.'
  else if (f.companyName.length > 200) p.companyName = 'El nombre puede tener hasta 200 caracteres.'
  if (!knownZone(f.timezone)) p.timezone = 'Elegí una zona horaria válida de la lista, como America/Argentina/Buenos_Aires.'
  if (!f.ownerName.trim()) p.ownerName = 'Escribí tu nombre.'
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(f.email.trim())) p.email = 'Escribí un e-mail válido, como nombre@empresa.com.'
  if (f.password.length < 12) p.password = 'La contraseña necesita al menos 12 caracteres.'
  else if (f.password.length > 200) p.password = 'La contraseña puede tener hasta 200 caracteres.'
  if (!p.password && f.repeat !== f.password) p.repeat = 'Las dos contraseñas no coinciden.'
  return p
}

export function body(token: string, f: Fields): SetupBody {
  return {
    token,
    company: { name: f.companyName.trim(), timezone: f.timezone, modules: { mesas: f.mesas, ventanilla: f.ventanilla } },
    owner: { email: f.email.trim(), name: f.ownerName.trim(), password: f.password },
    starter: f.starter,
  }
}

/** The token is the part of the link after `#`: browsers never send it to the server, so only this page sees it. */
export const tokenOf = (hash: string) => decodeURIComponent(hash.replace(/^#/, '')).trim()
