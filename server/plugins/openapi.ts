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

export const docs = () =>
  new Elysia({ name: 'docs' })
    .onAfterHandle({ as: 'global' }, ({ route, responseValue }) => {
      if (route === '/openapi.json') dropNullable(responseValue)
    })
    .use(openapi({
    path: '/docs',
    specPath: '/openapi.json',
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
