/**
 * The company number this browser last used, shared by the setup page, the manager app and the counter console
 * (one origin, one localStorage): whoever set up or signed in here once never types the number again, in either app.
 */
const KEY = 'fos.company'
/** Where each app kept it before they shared one key: read once, so an upgraded browser still remembers. */
const EARLIER = ['fos.manage.company', 'fos.staff.company']
const NUMBER = /^[1-9]\d{0,9}$/

export function lastCompany(): string {
  try {
    for (const key of [KEY, ...EARLIER]) {
      const value = (localStorage.getItem(key) ?? '').replace(/"/g, '')
      if (NUMBER.test(value)) return value
    }
  } catch {
    // A browser without storage asks for the number each time.
  }
  return ''
}

export function rememberCompany(id: number | string) {
  if (!NUMBER.test(String(id))) return
  try {
    localStorage.setItem(KEY, String(id))
  } catch {
    // Kept for this page only.
  }
}

/** `?empresa=` of the address that opened the page, when it is a company number. */
export function companyFromLink(): string | null {
  const value = new URLSearchParams(location.search).get('empresa')
  return value && NUMBER.test(value) ? value : null
}

/** A link of this service that opens `path` with the company number filled in. */
export const linkFor = (path: string, company: string | number) => `${location.origin}${path}${company ? `?empresa=${encodeURIComponent(String(company))}` : ''}`

/** What the setup page leaves for the manager app's welcome: the company just made, read once by `takeWelcome`. */
export interface Welcome {
  company: number
  name: string
  starter: boolean
}

/**
 * Kept for this tab only (sessionStorage): the setup page opens `/manage` in the same tab, which shows the welcome
 * once and forgets it, so neither a reload nor another tab shows it again.
 */
const WELCOME = 'fos.welcome'

export function leaveWelcome(welcome: Welcome) {
  try {
    sessionStorage.setItem(WELCOME, JSON.stringify(welcome))
  } catch {
    // No storage: the manager app opens without its welcome; the number is in its header all the same.
  }
}

export function takeWelcome(): Welcome | null {
  try {
    const text = sessionStorage.getItem(WELCOME)
    sessionStorage.removeItem(WELCOME)
    const w = text ? (JSON.parse(text) as Welcome) : null
    return w && NUMBER.test(String(w.company)) && typeof w.name === 'string' ? { company: w.company, name: w.name, starter: w.starter === true } : null
  } catch {
    return null
  }
}
