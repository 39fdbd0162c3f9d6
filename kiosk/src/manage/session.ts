import { createSignal } from 'solid-js'
import type { Session } from './api'

const COMPANY_KEY = 'fos.manage.company'

export const [session, setSession] = createSignal<Session | null>(null)

/** The company signed in to: the `?empresa=` of the link, else the one last used on this browser. */
export function companyId(): string {
  const fromLink = new URLSearchParams(location.search).get('empresa')
  if (fromLink) return fromLink
  try {
    return localStorage.getItem(COMPANY_KEY) ?? ''
  } catch {
    return ''
  }
}

export function rememberCompany(id: number) {
  try {
    localStorage.setItem(COMPANY_KEY, String(id))
  } catch {
    // A browser without storage asks for the company again next time.
  }
}

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
