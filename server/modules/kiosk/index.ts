import { Elysia } from 'elysia'
import { resolve, sep } from 'node:path'
import type { AppContext } from '../../context'

/** Where `bun run kiosk:build` writes the app (vite base `/kiosk/`). */
export const KIOSK_DIST = resolve(import.meta.dir, '../../../kiosk/dist')

/**
 * The kiosk needs its own scripts and styles, the public snapshot API and stream on this origin, and a logo that
 * may live on any https host; nothing else. Styles set from script (Solid's style bindings) go through the CSSOM,
 * which `style-src 'self'` allows. Web Audio and speech need no media source.
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

const securityHeaders = {
  'content-security-policy': CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
}

const notBuilt = () =>
  new Response(
    JSON.stringify({ error: 'The kiosk app is not built; run `bun run kiosk:build` (the start command does it)', code: 'KIOSK_NOT_BUILT' }),
    { status: 503, headers: { 'content-type': 'application/json; charset=utf-8', 'retry-after': '30', ...securityHeaders } },
  )

const notFound = () =>
  new Response(JSON.stringify({ error: 'Not found', code: 'NOT_FOUND' }), {
    status: 404,
    headers: { 'content-type': 'application/json; charset=utf-8', ...securityHeaders },
  })

/**
 * `GET /kiosk/{token}`: the waiting-room app for TVs (public; 404 for a token `tokenLive` does not know, with the
 * same page, so the app shows its disabled screen). `GET /kiosk/assets/*`: the build's hashed files, cached for a year.
 * Files are read per request so a rebuild shows up without a restart.
 */
export const kioskModule = (_app: AppContext, dist = KIOSK_DIST, tokenLive?: (token: string) => Promise<boolean>) => {
  const assets = resolve(dist, 'assets')
  return new Elysia({ name: 'kiosk' })
    .get(
      '/kiosk/assets/*',
      async ({ params }) => {
        let relative: string
        try {
          relative = decodeURIComponent(params['*'])
        } catch {
          return notFound()
        }
        const path = resolve(assets, relative)
        if (relative.includes('\0') || !path.startsWith(assets + sep)) return notFound()
        const file = Bun.file(path)
        if (!(await file.exists())) return (await Bun.file(resolve(dist, 'index.html')).exists()) ? notFound() : notBuilt()
        return new Response(file, {
          headers: {
            'content-type': file.type,
            'cache-control': 'public, max-age=31536000, immutable',
            ...securityHeaders,
          },
        })
      },
      { detail: { hide: true } },
    )
    .get(
      '/kiosk/:token',
      async ({ params }) => {
        const index = Bun.file(resolve(dist, 'index.html'))
        if (!(await index.exists())) return notBuilt()
        // An unknown or revoked token is 404, still with the app, which then shows its disabled page. When the
        // check itself fails (database away) the page is served: the app keeps its last snapshot while offline.
        const known = tokenLive ? await tokenLive(params.token).catch(() => true) : true
        return new Response(index, {
          status: known ? 200 : 404,
          headers: {
            'content-type': 'text/html; charset=utf-8',
            // The page names the current asset hashes, so it must be revalidated after every deploy.
            'cache-control': 'no-cache',
            ...securityHeaders,
          },
        })
      },
      { detail: { hide: true } },
    )
}
