import { Elysia } from 'elysia'
import { resolve, sep } from 'node:path'
import type { AppContext } from '../../context'
import { APPS_DIST, appPage, notBuilt, pageNotFound as notFound, securityHeaders } from '../../lib/app-pages'
import { ID_PATTERN } from '../../lib/models'

/** Where `bun run kiosk:build` writes the apps (vite base `/kiosk/`). */
export const KIOSK_DIST = APPS_DIST

const CLIENT_ID = new RegExp(ID_PATTERN)

/**
 * `GET /kiosk/assets/*`: the hashed files of the screen apps' build, cached for a year. Files are read per request
 * so a rebuild shows up without a restart. The pages themselves check their tokens, so the ventanilla serves them.
 *
 * `GET /estado-de-cuenta/{client id}`: the page an external customer opens from the link of an access grant
 * (`…/estado-de-cuenta/<id>#<token>`). The token travels in the fragment, which a browser never sends, so it stays out
 * of this server's and any proxy's logs; the page reads the statement with it as a bearer header. The page is the
 * same for every id: whether the client exists is for the statement's answer to say, to the token's holder only.
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
    .get('/estado-de-cuenta/:id', ({ params }) => (CLIENT_ID.test(params.id) ? appPage(dist, 'statement.html') : notFound()), { detail: { hide: true } })
}
