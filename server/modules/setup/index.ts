import { Elysia } from 'elysia'
import type { AppContext } from '../../context'
import { openSession, sessionCookie } from '../../access/sessions'
import { appPage, APPS_DIST } from '../../lib/app-pages'
import { eventTransaction } from '../../lib/events'
import { forbidden, notFound } from '../../lib/errors'
import { ErrorBody, JSON_BODY } from '../../lib/models'
import { SetupModel } from './model'
import { anyCompany, runSetup } from './service'

/**
 * The first run: while the database holds no company, `GET /setup` serves the setup page and `POST /api/setup` makes
 * the company and its owner with the token printed at start. Once a company exists both are 404, for good; a person
 * who opens an old or used link gets that 404 as a page in Spanish that sends them to the manager app.
 */
export const setupModule = (app: AppContext, dist = APPS_DIST) =>
  new Elysia()
    .get('/setup', async () => ((await anyCompany(app.db)) ? appPage(dist, 'setup-done.html', 404) : appPage(dist, 'setup.html')), { detail: { hide: true } })
    .post(
      '/api/setup',
      async ({ body, set }) => {
        const now = app.clock()
        const { token, result } = await eventTransaction(app.db, app.events, async (tx) => {
          const result = await runSetup(tx, body.token, body, now)
          const { token } = await openSession(tx, result.company.id, result.employee.id, now)
          return { token, result }
        })
        set.status = 201
        set.headers['set-cookie'] = sessionCookie(token, app.config.publicBaseUrl)
        set.headers['cache-control'] = 'no-store'
        return result
      },
      {
        // Before the body is validated: once a company exists the route is as absent as its page, whatever is sent.
        async transform({ request }) {
          if (await anyCompany(app.db)) throw notFound()
          // The answer plants the owner's session; a foreign page must not be able to plant one.
          const origin = request.headers.get('origin')
          if (origin !== null && origin !== new URL(app.config.publicBaseUrl).origin) throw forbidden('Setup from another origin')
        },
        body: SetupModel.create,
        response: { 201: SetupModel.created, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 429: ErrorBody },
        detail: {
          tags: ['Setup'],
          summary: 'First run: create the company and its owner',
          security: [],
          [JSON_BODY]: SetupModel.create,
          description: [
            'Only while the database holds no company. `token` is the one of the link the service prints at every start while it has none',
            '(`Set up this service: <PUBLIC_BASE_URL>/setup#<token>`, valid 24 h). Creates the company (modules off unless asked) and its owner',
            '(an employee with `company.admin`, who acts as the company key) and signs the owner in: the answer sets `fos_session` as',
            '`POST /api/sessions` does. A wrong or expired token → 401 `UNAUTHORIZED`; once a company exists → 404 `NOT_FOUND` (of two racing',
            'setups exactly one wins); an `Origin` other than this service’s → 403. Not replayable by `Idempotency-Key`: the session it',
            'opens is kept only as a digest, so a second answer could not repeat its cookie. With `starter: true` the same transaction also',
            'creates the starter set (described at `starter`), audited and announced as if the owner had made it.',
          ].join(' '),
        },
      },
    )
