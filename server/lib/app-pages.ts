import { resolve } from 'node:path'

/**
 * Where `bun run kiosk:build` writes the screen apps (vite base `/kiosk/`): `index.html` the waiting-room kiosk,
 * `staff.html` the counter console, `manage.html` the manager app, `dispenser.html` the ticket dispenser, `setup.html`
 * the first-run setup, `receipt.html` the printable receipt, `statement.html` an external customer's statement, and
 * their hashed files under `assets/`.
 */
export const APPS_DIST = resolve(import.meta.dir, '../../kiosk/dist')

/**
 * The apps need their own scripts and styles, the API and streams on this origin, and a logo that may live on any
 * https host; nothing else. Styles set from script (Solid's style bindings) go through the CSSOM, which
 * `style-src 'self'` allows. Web Audio and speech need no media source.
 */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' https: data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

export const securityHeaders = {
  'content-security-policy': CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
}

export const notBuilt = () =>
  new Response(
    JSON.stringify({ error: 'The kiosk app is not built; run `bun run kiosk:build` (the start command does it)', code: 'KIOSK_NOT_BUILT' }),
    { status: 503, headers: { 'content-type': 'application/json; charset=utf-8', 'retry-after': '30', ...securityHeaders } },
  )

export const pageNotFound = () =>
  new Response(JSON.stringify({ error: 'Not found', code: 'NOT_FOUND' }), {
    status: 404,
    headers: { 'content-type': 'application/json; charset=utf-8', ...securityHeaders },
  })

/**
 * One of the built app pages. Read per request so a rebuild shows up without a restart; the page names the
 * current asset hashes, so it must be revalidated after every deploy. `status` lets a page for an unknown token
 * answer 404 while still showing the app's own "disabled" screen to a person.
 */
export async function appPage(dist: string, file: string, status = 200): Promise<Response> {
  const page = Bun.file(resolve(dist, file))
  if (!(await page.exists())) return notBuilt()
  return new Response(page, {
    status,
    headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache', ...securityHeaders },
  })
}
