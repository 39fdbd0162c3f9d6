import { Elysia } from 'elysia'
import { sql } from 'drizzle-orm'
import type { AppContext } from '../../context'
import { issueKey, KeyModel } from '../../access/keys'
import { eventTransaction } from '../../lib/events'
import { errors, IdempotencyHeaders, IdParams, JSON_BODY } from '../../lib/models'
import { claimOnce, PLATFORM_SCOPE } from '../../lib/write'
import { CompanyModel } from './model'
import { notFound } from '../../lib/errors'
import { requestLimits } from '../../plugins/rate-limit'
import { createCompany, getCompany, superadminVerifier, updateCompany } from './service'

/** Platform operators; the per-company module flags change only here. */
export const superadmin = (app: AppContext) => {
  const verify = superadminVerifier(app.config.superadmin)
  // Platform transactions run as the owner (a company's own row is not a tenant row) and still announce to listeners.
  const inTx = <T>(email: string, fn: Parameters<typeof app.db.transaction<T>>[0]) =>
    eventTransaction(app.db, app.events, async (tx) => {
      await tx.execute(sql`select set_config('app.actor_email', ${email}, true)`)
      return fn(tx)
    })
  const detail = { tags: ['Superadmin'], security: [{ bearer: [] }] }
  const operators = new WeakMap<Request, Promise<string>>()
  const limits = requestLimits(app)
  const operatorOf = (request: Request, headers: Record<string, string | number>) => {
    let operator = operators.get(request)
    if (!operator) {
      const authorization = request.headers.get('authorization') ?? undefined
      operator = verify(authorization).then(async (email) => {
        // A verified token is a credential of its own for the rate limits, as a company's key is.
        await limits.authenticated(request, { kind: 'bearer', value: authorization!.replace(/^Bearer\s+/i, '') }, null, headers)
        return email
      })
      operators.set(request, operator)
    }
    return operator
  }
  return new Elysia({ prefix: '/api/superadmin' })
    // The token is checked in the parse stage, before a body is read (a body-less route checks it in derive).
    .onParse(async ({ request, set }) => {
      await operatorOf(request, set.headers)
    })
    .derive(async ({ request, set }) => ({ operator: await operatorOf(request, set.headers) }))
    .post(
      '/companies',
      ({ operator, body, headers, set }) =>
        claimOnce(
          app,
          PLATFORM_SCOPE,
          (fn) => inTx(operator, fn),
          { key: headers['idempotency-key'], method: 'POST', path: '/api/superadmin/companies', fingerprint: body },
          set,
          (tx) => createCompany(tx, body),
        ),
      {
        body: CompanyModel.create,
        headers: IdempotencyHeaders,
        response: { 201: CompanyModel.company, ...errors(400, 401, 409) },
        detail: {
          ...detail,
          [JSON_BODY]: CompanyModel.create,
          summary: 'Create a company',
          description:
            'Accepts `Idempotency-Key`: the same key and body within 24 h answer the first company again; the same key with another body is 409 IDEMPOTENCY_KEY_REUSED.',
        },
      },
    )
    .patch(
      '/companies/:id',
      ({ operator, params, body }) => inTx(operator, (tx) => updateCompany(tx, params.id, body)),
      {
        params: IdParams,
        body: CompanyModel.update,
        response: { 200: CompanyModel.company, ...errors(400, 401, 404) },
        detail: { ...detail, [JSON_BODY]: CompanyModel.update, summary: 'Update a company, including its module flags' },
      },
    )
    .post(
      '/companies/:id/api-keys',
      async ({ operator, params, body, set }) => {
        const key = await inTx(operator, async (tx) => {
          await getCompany(tx, params.id)
          return issueKey(tx, params.id, null, body.name, app.config.maxApiKeysPerCompany)
        })
        set.status = 201
        return key
      },
      {
        params: IdParams,
        body: KeyModel.create,
        response: { 201: KeyModel.issued, ...errors(400, 401, 404, 409) },
        detail: {
          ...detail,
          [JSON_BODY]: KeyModel.create,
          summary: 'Issue a company API key (the secret is shown only once)',
          description: 'Within the company\'s total of live keys (`MAX_API_KEYS_PER_COMPANY`, default 200): one more is 409 `API_KEY_LIMIT_REACHED`. The operator CLI (`key create`) issues past it.',
        },
      },
    )
    // Any other superadmin path still checks the token first: without a valid one it is 401, never a hint of what exists.
    .all('/*', () => {
      throw notFound()
    }, { detail: { hide: true } })
}
