import { dirname, join } from 'node:path'
import { Elysia } from 'elysia'
import { openapi } from '@elysiajs/openapi'
import { ErrorBody } from '../lib/models'
import { notFound } from '../lib/errors'
import { JSON_BODY } from '../access/policy'

const isCoercedString = (b: unknown) =>
  !!b && typeof b === 'object' && (b as { type?: unknown }).type === 'string' &&
  ['integer', 'numeric'].includes((b as { format?: string }).format ?? '')

/**
 * Schema-level fixes to the generated document: OpenAPI 3.1 has no `nullable` (the schemas already say it with a
 * `null` branch); a nullable enum must list `null` among its values or no validator accepts the null it allows;
 * numbers the framework also accepts as numeric strings appear as "string or number" — documented here as the
 * number they are (in a path or query they travel as text anyway).
 */
function tidy(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(tidy)
  if (!node || typeof node !== 'object') return
  const schema = node as Record<string, unknown>
  delete schema.nullable
  const branches = schema.anyOf
  if (Array.isArray(branches) && branches.length === 2 && branches.some(isCoercedString)) {
    const numeric = branches.find((b) => !isCoercedString(b)) as Record<string, unknown> | undefined
    if (numeric && (numeric.type === 'integer' || numeric.type === 'number')) {
      delete schema.anyOf
      Object.assign(schema, numeric, { ...schema, type: numeric.type })
    }
  }
  if (Array.isArray(schema.enum) && Array.isArray(schema.type) && schema.type.includes('null') && !schema.enum.includes(null))
    schema.enum = [...schema.enum, null]
  for (const value of Object.values(schema)) tidy(value)
}

type Json = Record<string, any>

const ERROR_REF = { $ref: '#/components/schemas/Error' }
const errorResponse = (description: string, headers?: Json) => ({
  description,
  ...(headers && { headers }),
  content: { 'application/json': { schema: ERROR_REF } },
})
const header = (description: string, schema: Json = { type: 'integer', minimum: 0 }) => ({ description, schema })
const RATE_HEADERS = {
  'RateLimit-Limit': header('Requests allowed per minute to this credential'),
  'RateLimit-Remaining': header('Requests left in the current window'),
  'RateLimit-Reset': header('Seconds until the window resets'),
}
/** A path id as integrators should type it: an integer (it travels as decimal text in the path). */
const PATH_ID = { type: 'integer', minimum: 1, maximum: 2147483647, description: 'Positive integer id, 1 to 2147483647 (anything else: 400 INVALID_ID)' }
const sameAsError = (schema: unknown) =>
  !!schema && typeof schema === 'object' && (schema as Json).type === 'object' &&
  JSON.stringify(Object.keys((schema as Json).properties ?? {}).sort()) === '["code","details","error"]'

/**
 * Operation-level fixes, so the document says what the service does: only JSON request bodies (the routes parse
 * JSON; the form encodings the generator adds cannot carry their integer fields); error bodies as the named `Error`
 * schema; 413 on every route with a body and 500 on every route; the rate-limit headers on authenticated answers
 * and `Retry-After` on 429; path ids as bounded integers; a `servers` entry; and the 3.1.0 version string that
 * common parsers accept.
 */
export function finish(doc: Json, serverUrl: string) {
  doc.openapi = '3.1.0'
  doc.servers = [{ url: serverUrl, description: 'This service' }]
  for (const item of Object.values<Json>(doc.paths ?? {})) {
    for (const op of Object.values<Json>(item)) {
      const carried = op[JSON_BODY]
      delete op[JSON_BODY]
      if (carried && op.requestBody && Object.keys(op.requestBody.content ?? {}).length === 0)
        op.requestBody.content = { 'application/json': { schema: JSON.parse(JSON.stringify(carried)) } }
      const content = op.requestBody?.content as Json | undefined
      if (content?.['application/json']) for (const type of Object.keys(content)) if (type !== 'application/json') delete content[type]
      for (const p of op.parameters ?? []) if (p.in === 'path' && /^(id|[a-z]+Id)$/.test(p.name) && p.schema?.type === 'string' && p.schema.pattern) p.schema = { ...PATH_ID }
      const responses = (op.responses ??= {}) as Json
      for (const [status, r] of Object.entries<Json>(responses)) {
        // A body-less answer (204) comes out of the generator as a bare schema where media types belong.
        if (r?.content && typeof r.content.type === 'string') delete r.content
        const json = r?.content?.['application/json']
        if (/^[45]/.test(status) && json && sameAsError(json.schema)) {
          json.schema = ERROR_REF
          if (r.description === 'Every error: a human message and a stable code.') r.description = 'Error: `{ error, code, details? }`'
        }
      }
      const authenticated = !Array.isArray(op.security) || op.security.length > 0
      if (op.requestBody && !responses['413']) responses['413'] = errorResponse('Body larger than the limit: `PAYLOAD_TOO_LARGE` (uploads: `FILE_TOO_LARGE`)')
      responses['500'] ??= errorResponse('Unexpected failure: `INTERNAL_ERROR`, logged with the request id; no detail leaves the server')
      if (responses['429']) responses['429'] = errorResponse('Rate limit reached: `RATE_LIMITED`', { 'Retry-After': header('Seconds to wait before retrying') })
      if (authenticated)
        for (const [status, r] of Object.entries<Json>(responses)) if (/^2/.test(status)) r.headers = { ...RATE_HEADERS, ...r.headers }
    }
  }
  tidy(doc)
}

/**
 * The docs page: Swagger UI from the installed swagger-ui-dist, started by a served script rather than an inline
 * one, so the page needs no third-party origin and its policy allows nothing but its own files.
 */
const SWAGGER_DIST = dirname(require.resolve('swagger-ui-dist/package.json'))
const INIT = `window.addEventListener('load', () => {
  window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true })
})
`
const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <title>Financial Operations Service API</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css" />
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/assets/init.js"></script>
</body>
</html>
`
export const DOCS_ASSETS: Record<string, { body: () => BodyInit; type: string }> = {
  '/docs/assets/swagger-ui-bundle.js': { body: () => Bun.file(join(SWAGGER_DIST, 'swagger-ui-bundle.js')), type: 'text/javascript; charset=utf-8' },
  '/docs/assets/swagger-ui.css': { body: () => Bun.file(join(SWAGGER_DIST, 'swagger-ui.css')), type: 'text/css; charset=utf-8' },
  '/docs/assets/init.js': { body: () => INIT, type: 'text/javascript; charset=utf-8' },
}
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')
/** The JSON document is data, never a page. */
const SPEC_CSP = "default-src 'none'; frame-ancestors 'none'"

const hardened = (csp: string, type: string, extra: Record<string, string> = {}) => ({
  'content-type': type,
  'content-security-policy': csp,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  ...extra,
})

export const docs = (serverUrl: string) =>
  new Elysia({ name: 'docs' })
    .onAfterHandle({ as: 'global' }, ({ route, responseValue, set }) => {
      if (route !== '/openapi.json') return
      finish(responseValue as Json, serverUrl)
      Object.assign(set.headers, hardened(SPEC_CSP, 'application/json; charset=utf-8'))
    })
    .get('/docs', () => new Response(PAGE, { headers: hardened(DOCS_CSP, 'text/html; charset=utf-8') }), { detail: { hide: true } })
    .get(
      '/docs/assets/*',
      ({ path }) => {
        const asset = DOCS_ASSETS[path]
        if (!asset) throw notFound('Asset')
        return new Response(asset.body(), { headers: hardened(DOCS_CSP, asset.type, { 'cache-control': 'public, max-age=3600' }) })
      },
      { detail: { hide: true } },
    )
    .use(openapi({
    path: '/docs',
    specPath: '/openapi.json',
    provider: null,
    documentation: {
      info: {
        title: 'Financial Operations Service',
        version: '1.0.0',
        description: [
          'Multi-tenant back office for currency-exchange houses.',
          '',
          'Conventions: errors are `{ error, code, details? }`; path ids are positive integers up to 2^31−1 (else 400 `INVALID_ID`);',
          'a record of another company is 404 `NOT_FOUND`; money is accepted as a JSON number or decimal string, stored exactly with 6 decimals',
          '(half away from zero) and answered as a JSON number; times are ISO 8601 UTC.',
          'Every creating POST accepts `Idempotency-Key` (same key and body within 24 h replays the first answer; a different body is 409',
          '`IDEMPOTENCY_KEY_REUSED`), except credential issuance, whose secrets are never stored and so cannot be replayed.',
        ].join('\n'),
      },
      components: {
        schemas: { Error: JSON.parse(JSON.stringify(ErrorBody)) },
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
          session: {
            type: 'apiKey',
            in: 'cookie',
            name: 'fos_session',
            description:
              'A signed-in employee (`POST /api/sessions`), acting as that employee. A POST, PUT, PATCH or DELETE made with it needs an `Origin` equal to this service (else 403 `FORBIDDEN`); `x-api-key` wins when both are sent.',
          },
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description: 'Superadmin routes: a JWT from the identity provider. External statements: an external access grant token.',
          },
        },
      },
      security: [{ apiKey: [] }, { session: [] }],
    },
  }))
