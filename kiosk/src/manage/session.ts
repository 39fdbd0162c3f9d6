import { createSignal } from 'solid-js'
import type { Session } from './api'

const COMPANY_KEY = 'fos.manage.company'

export const [session, setSession] = createSignal<Session | null>(null)

let company = ''
try {
  company = localStorage.getItem(COMPANY_KEY) ?? ''
} catch {
  // A browser without storage asks for the company each time.
}

export function rememberCompany(id: number | string) {
  company = String(id)
  try {
    localStorage.setItem(COMPANY_KEY, company)
  } catch {
    // Kept for this page only.
  }
}

// Read once at load: moving between sections drops the query string, and the staff link still needs the company.
const fromLink = new URLSearchParams(location.search).get('empresa')
if (fromLink && /^[1-9]\d{0,9}$/.test(fromLink)) rememberCompany(fromLink)

/** The company signed in to: the `?empresa=` of the link that opened the app, else the one last used here. */
export const companyId = () => company

/** An owner (`company.admin`) counts as holding every permission, as the API treats it. */
export function can(permission: string): boolean {
  const p = session()?.employee.permissions ?? []
  return p.includes('company.admin') || p.includes(permission)
}

export const [notice, setNotice] = createSignal<string | null>(null)

/** Any 401 a section meets means the session is over: back to the sign-in with a word why. */
export function sessionEnded() {
  setSession(null)
  setNotice('La sesión terminó. Ingrese de nuevo.')
}
