import { Elysia } from 'elysia'
import { openapi } from '@elysiajs/openapi'
import { ErrorBody } from '../lib/models'

/** OpenAPI 3.1 has no `nullable`; the schemas already say it with a `null` branch, so the keyword goes. */
function dropNullable(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(dropNullable)
  if (!node || typeof node !== 'object') return
  delete (node as Record<string, unknown>).nullable
  for (const value of Object.values(node)) dropNullable(value)
}

/** The one origin the docs page loads code from: the Scalar bundle the OpenAPI plugin links to. */
export const DOCS_SCRIPT_ORIGIN = 'https://cdn.jsdelivr.net'
/**
 * The page's `<script id="api-reference" data-configuration=…>` holds only whitespace; its hash lets that element
 * through without allowing inline code. tests/plugins/docs-headers.test.ts checks it against the served page.
 */
const CONFIG_SCRIPT_HASH = "'sha256-TcUB1mzXiQO4GxpTRZ0EMpOXKMU3u+n/q1WrgVIcs1I='"

/**
 * Scalar styles itself at run time (inline styles) and calls this same origin for the document and "try it";
 * nothing else is allowed, and the page may not be framed.
 */
const DOCS_CSP = [
  "default-src 'none'",
  `script-src ${DOCS_SCRIPT_ORIGIN} ${CONFIG_SCRIPT_HASH}`,
  "style-src 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')
/** The JSON document is data, never a page. */
const SPEC_CSP = "default-src 'none'; frame-ancestors 'none'"

const DOC_PATHS: Record<string, string> = { '/docs': DOCS_CSP, '/docs/': DOCS_CSP, '/openapi.json': SPEC_CSP }

export const docs = () =>
  new Elysia({ name: 'docs' })
    .onRequest(({ request, set }) => {
      const start = request.url.indexOf('/', request.url.indexOf('//') + 2)
      const end = request.url.indexOf('?', start)
      const csp = DOC_PATHS[request.url.slice(start, end < 0 ? undefined : end)]
      if (!csp) return
      set.headers['content-security-policy'] = csp
      set.headers['x-content-type-options'] = 'nosniff'
      set.headers['referrer-policy'] = 'no-referrer'
    })
    .onAfterHandle({ as: 'global' }, ({ route, responseValue }) => {
      if (route === '/openapi.json') dropNullable(responseValue)
    })
    .use(openapi({
    path: '/docs',
    specPath: '/openapi.json',
    // Scalar's default fonts come from a second origin; the system fonts keep the CSP to the one script origin.
    scalar: { withDefaultFonts: false },
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
