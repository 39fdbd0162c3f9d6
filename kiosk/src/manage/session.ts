import { createSignal } from 'solid-js'
import type { Session } from './api'
import { companyFromLink, lastCompany, rememberCompany as remember } from '../company'

export const [session, setSession] = createSignal<Session | null>(null)

const [company, setCompany] = createSignal(lastCompany())

export function rememberCompany(id: number | string) {
  setCompany(String(id))
  remember(id)
}

// Read once at load: moving between sections drops the query string, and the links handed out still need it.
const fromLink = companyFromLink()
if (fromLink) rememberCompany(fromLink)

/** The company signed in to: the `?empresa=` of the link that opened the app, else the one last used here. */
export const companyId = company

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
