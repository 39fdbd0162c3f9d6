import { dirname, join } from 'node:path'
import { Elysia } from 'elysia'
import { openapi } from '@elysiajs/openapi'
import { ErrorBody } from '../lib/models'
import { notFound } from '../lib/errors'

const isCoercedString = (b: unknown) =>
  !!b && typeof b === 'object' && (b as { type?: unknown }).type === 'string' &&
  ['integer', 'numeric'].includes((b as { format?: string }).format ?? '')

/**
 * Two fixes to the generated document: OpenAPI 3.1 has no `nullable` (the schemas already say it with a `null`
 * branch), and numbers the framework also accepts as numeric strings appear as "string or number" — documented
 * here as the number they are (in a path or query they travel as text anyway).
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
  for (const value of Object.values(schema)) tidy(value)
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

export const docs = () =>
  new Elysia({ name: 'docs' })
    .onAfterHandle({ as: 'global' }, ({ route, responseValue, set }) => {
      if (route !== '/openapi.json') return
      tidy(responseValue)
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
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description: 'Superadmin routes: a JWT from the identity provider. External statements: an external access grant token.',
          },
        },
      },
      security: [{ apiKey: [] }],
    },
  }))
