import { openapi } from '@elysiajs/openapi'

export const docs = () =>
  openapi({
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
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        },
      },
      security: [{ apiKey: [] }],
    },
  })
