import { Elysia } from 'elysia'
import { resolve, sep } from 'node:path'
import type { AppContext } from '../../context'
import { appPage, APPS_DIST, notBuilt, pageNotFound as notFound, securityHeaders } from '../../lib/app-pages'

/** Where `bun run kiosk:build` writes the apps (vite base `/kiosk/`). */
export const KIOSK_DIST = APPS_DIST

/**
 * `GET /kiosk/{token}`: the waiting-room app for TVs (public; the token is checked by the snapshot API the app
 * calls, so this page reveals nothing about it). `GET /kiosk/assets/*`: the build's hashed files, cached for a year.
 * Files are read per request so a rebuild shows up without a restart.
 */
export const kioskModule = (_app: AppContext, dist = KIOSK_DIST) => {
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
    .get('/kiosk/:token', () => appPage(dist, 'index.html'), { detail: { hide: true } })
}
