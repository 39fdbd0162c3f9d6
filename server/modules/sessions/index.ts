import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { routePolicy } from '../../access/policy'
import { clearedCookie, endSession, isSession, sessionCookie, signIn, type SessionCaller } from '../../access/sessions'
import { configureHashing } from '../../access/passwords'
import { ACCOUNT_FREE_FAILURES, ACCOUNT_MAX_WAIT_MS, DEVICE_COOKIE_DAYS, DeviceCookies, PAIR_FREE_FAILURES } from '../../access/throttle'
import { clientAddress } from '../../access/address'
import type { Caller } from '../../access/caller'
import { ApiError, forbidden, unauthorized } from '../../lib/errors'
import { telemetryOf } from '../../infra/telemetry'
import { ErrorBody, JSON_BODY } from '../../lib/models'
import { bodyBounds } from '../../plugins/body-limit'
import { SessionModel } from './model'

const TAG = 'Sessions'
/** The most a sign-in body may hold (413 PAYLOAD_TOO_LARGE past it, before it is read). */
export const SIGN_IN_MAX_BYTES = 4096

function signedIn(caller: Caller): SessionCaller {
  if (!isSession(caller)) throw unauthorized('No session: sign in with POST /api/sessions')
  return caller
}

const sessionDto = (caller: SessionCaller) => ({
  employee: {
    id: caller.employee!.id,
    email: caller.employee!.email,
    name: caller.employee!.name,
    permissions: caller.employee!.permissions,
    client_ids: caller.employee!.clientIds,
  },
  company: { id: caller.companyId, ...caller.session.company },
  expires_at: caller.session.expiresAt.toISOString(),
})

/**
 * Employee sign-in for the counter apps. The cookie then authenticates every company route as that employee;
 * a write made with it needs this service's Origin.
 */
export const sessionsModule = (app: AppContext) => {
  configureHashing(app.config.passwordHashing)
  const devices = new DeviceCookies(app.config.signingSecret, app.config.publicBaseUrl)
  const refusals = telemetryOf(app)?.signInRefused
  /** A refused sign-in, counted by why (fos_sign_in_refusals_total); the refusal itself goes on as it was. */
  const counted = (e: unknown): never => {
    if (refusals && e instanceof ApiError && (e.status === 401 || e.status === 429)) refusals.inc({ reason: e.status === 401 ? 'bad_credentials' : 'throttled' })
    throw e
  }
  return new Elysia({ prefix: '/api/sessions' })
      .use(routePolicy(app))
      .post(
        '',
        async ({ body, request, server, set }) => {
          // A sign-in sent by a foreign page would plant that page's session in the browser.
          const origin = request.headers.get('origin')
          if (origin !== null && origin !== new URL(app.config.publicBaseUrl).origin) throw forbidden('Sign-in from another origin')
          const from = { address: clientAddress(request, server, app.config.trustProxy) ?? 'unknown', cookies: request.headers.get('cookie') }
          const { token, deviceCookie, session } = await signIn(app, devices, body, from).catch(counted)
          set.status = 201
          set.headers['set-cookie'] = [sessionCookie(token, app.config.publicBaseUrl), deviceCookie] as never
          set.headers['cache-control'] = 'no-store'
          return session
        },
        {
          // Anyone may send one: a company id, an e-mail and a password fit in a few hundred bytes.
          parse: [bodyBounds({ maxBytes: SIGN_IN_MAX_BYTES })],
          body: SessionModel.create,
          response: { 201: SessionModel.session, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 413: ErrorBody, 415: ErrorBody, 429: ErrorBody, 503: ErrorBody },
          detail: {
            tags: [TAG],
            summary: 'Sign in',
            security: [],
            [JSON_BODY]: SessionModel.create,
            description: [
              'Opens a 12-hour session for an employee with a password and sets the cookie `fos_session` (HttpOnly, SameSite=Strict, Path=/,',
              'Secure when `PUBLIC_BASE_URL` is https). A wrong e-mail or password is one answer: 401 `UNAUTHORIZED`.',
              `A success also sets a device cookie for that account (\`fos_device_…\`, HttpOnly, SameSite=Strict, Path=/api/sessions, ${DEVICE_COOKIE_DAYS} days),`,
              'signed by the service: OWASP\'s device cookies. Failed attempts slow further ones down, on every process, within 15 minutes.',
              'A browser that presents a valid device cookie for the account it names is held back only by its own cookie\'s failures:',
              `after ${PAIR_FREE_FAILURES} of them each further attempt waits 1 s, 2 s, 4 s… (up to 15 min) after the last failure. Any other browser backs off`,
              `per company and e-mail: after ${PAIR_FREE_FAILURES} failures from its client address, the same waits; after ${ACCOUNT_FREE_FAILURES} from anywhere, an`,
              `address that failed there itself waits at most ${ACCOUNT_MAX_WAIT_MS / 1000} s. Earlier than that: 429 \`RATE_LIMITED\` with \`Retry-After\`, whatever`,
              'the password. Failures from other browsers or addresses never delay one that has not failed; failures against other accounts, or',
              'naming a company that does not exist (written down nowhere), never delay anyone.',
              `A body over ${SIGN_IN_MAX_BYTES} bytes → 413 \`PAYLOAD_TOO_LARGE\`, unread.`,
              'When the server is checking as many passwords as it may at once and this one cannot start within a moment: 503',
              '`SERVICE_UNAVAILABLE` with `Retry-After`. An `Origin` other than this service’s → 403 `FORBIDDEN`.',
            ].join(' '),
          },
        },
      )
      .get('/current', ({ caller }) => sessionDto(signedIn(caller)), {
        policy: { tx: 'none' },
        response: { 200: SessionModel.session },
        detail: {
          tags: [TAG],
          summary: 'The signed-in employee',
          description: 'With the session cookie: the employee, the company (its name and time zone, for the apps\' dates) and when the session ends. Without one (or with only an API key) → 401 `UNAUTHORIZED`.',
        },
      })
      .delete(
        '/current',
        ({ run, set }) => run(async (tx, caller) => {
          await endSession(tx, signedIn(caller).session.id, app.clock())
          set.headers['set-cookie'] = clearedCookie(app.config.publicBaseUrl)
        }),
        {
          policy: { tx: 'write', status: 204 },
          // 403: a sign-out sent with the cookie from another origin.
          response: { 204: t.Void({ description: 'Signed out' }), 403: ErrorBody },
          detail: {
            tags: [TAG],
            summary: 'Sign out',
            description: 'Ends the session on every server process (the next request with the cookie is 401) and clears the cookie. Needs the `Origin` of this service.',
          },
        },
      )
}
