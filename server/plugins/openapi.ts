import { dirname, join } from 'node:path'
import { Elysia } from 'elysia'
import { openapi } from '@elysiajs/openapi'
import { notFound } from '../lib/errors'
import { ID_PATTERN, JSON_BODY, UNKNOWN_FIELDS } from '../lib/models'

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
  // Equivalent to saying nothing, and present only on routes whose validator has been compiled.
  if (schema.additionalProperties === true) delete schema.additionalProperties
  const branches = schema.anyOf
  if (Array.isArray(branches) && branches.length === 2 && branches.some(isCoercedString)) {
    const numeric = branches.find((b) => !isCoercedString(b)) as Record<string, unknown> | undefined
    if (numeric && (numeric.type === 'integer' || numeric.type === 'number')) {
      delete schema.anyOf
      Object.assign(schema, numeric, { ...schema, type: numeric.type })
    }
  }
  // A whole number is what JSON Schema calls an integer.
  if (schema.type === 'number' && schema.multipleOf === 1) {
    schema.type = 'integer'
    delete schema.multipleOf
  }
  // The generator renders every union of literals as a string enum, numbers included.
  if (schema.type === 'string' && Array.isArray(schema.enum) && schema.enum.length && schema.enum.every((v) => typeof v === 'number'))
    schema.type = schema.enum.every(Number.isInteger) ? 'integer' : 'number'
  // A closed set of values is an enum (what generators turn into a union type), not a choice among constants.
  const consts = schema.anyOf
  if (Array.isArray(consts) && consts.length > 1 && consts.every(isConstOrNull) && consts.some((b) => 'const' in b)) {
    const types = [...new Set(consts.map((b) => ('const' in b ? b.type ?? jsonType(b.const) : 'null')))]
    delete schema.anyOf
    schema.type = types.length === 1 ? types[0] : types
    schema.enum = consts.map((b) => ('const' in b ? b.const : null))
  }
  if (Array.isArray(schema.enum) && Array.isArray(schema.type) && schema.type.includes('null') && !schema.enum.includes(null))
    schema.enum = [...schema.enum, null]
  if (isInteger(schema) && schema.format === undefined) schema.format = fitsInt32(schema) ? 'int32' : 'int64'
  for (const value of Object.values(schema)) tidy(value)
}

type Json = Record<string, any>

const isInteger = (schema: Json) => schema.type === 'integer' || (Array.isArray(schema.type) && schema.type.includes('integer'))
const INT32 = 2 ** 31
/**
 * Whether an integer's bounds keep it within 32 bits: every id is an `int4` column bounded so, and so is every other
 * integer the schemas bound that tightly; an unbounded one (a count, a sequence number) is written as int64.
 */
function fitsInt32(schema: Json): boolean {
  const low = schema.minimum ?? schema.exclusiveMinimum
  const high = schema.maximum ?? schema.exclusiveMaximum
  return typeof low === 'number' && typeof high === 'number' && low >= -INT32 && high < INT32
}

/** A branch that is one constant (`{ const, type? }`) or the null type, and nothing else. */
const isConstOrNull = (b: unknown): b is Json =>
  !!b && typeof b === 'object' &&
  (('const' in b && Object.keys(b).every((k) => k === 'const' || k === 'type')) || (Object.keys(b).length === 1 && (b as Json).type === 'null'))
const jsonType = (v: unknown) => (v === null ? 'null' : typeof v === 'number' ? (Number.isInteger(v) ? 'integer' : 'number') : typeof v)

const COMPONENT_NAME = /^[A-Z][A-Za-z0-9]*$/

/**
 * Resource schemas carry their component name as their TypeBox `$id` (`Client`, `Operation`, …): each is moved,
 * once, to `components.schemas` and every place it appeared becomes a `$ref`, nested ones included, so integrators
 * get the named types. Two different schemas under one name is a mistake in the models, and fails loudly.
 */
function hoist(doc: Json) {
  const schemas: Json = ((doc.components ??= {}).schemas ??= {})
  const seen = new Map<string, string>()
  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(visit)
    if (!node || typeof node !== 'object') return node
    const out: Json = {}
    for (const [k, v] of Object.entries(node)) if (k !== '$id') out[k] = visit(v)
    const name = (node as Json).$id
    if (typeof name !== 'string' || !COMPONENT_NAME.test(name)) return out
    const text = JSON.stringify(out)
    const prior = seen.get(name)
    if (prior !== undefined && prior !== text) throw new Error(`Two different schemas are named ${name}`)
    seen.set(name, text)
    schemas[name] = out
    return { $ref: `#/components/schemas/${name}` }
  }
  doc.paths = visit(doc.paths)
  for (const [name, schema] of Object.entries<Json>({ ...schemas })) if (!seen.has(name)) schemas[name] = visit(schema)
}

/** The probes (server/modules/monitoring): no rate limit applies to them, so no 429 and no budget headers. */
const PROBES = new Set(['/health', '/health/ready', '/metrics'])

/**
 * The response headers the plugins add, each defined once under `components.headers` and referenced from every
 * answer that carries it. Integers are bounded by what the service writes into them (the rate-limit figures by the
 * configuration's bounds, a wait by the longest the service ever asks for).
 */
const seconds = (maximum: number) => ({ type: 'integer', format: 'int32', minimum: 0, maximum })
const budget = { type: 'integer', format: 'int32', minimum: 0, maximum: 1_000_000 }
const deprecated = (description: string, schema: Json) => ({
  description: `${description}. Deprecated: kept for one release; read \`RateLimit\` instead`,
  schema,
  deprecated: true,
})
const HEADERS: Json = {
  ETag: {
    description: 'Tag of this answer; send it back in If-None-Match',
    schema: { type: 'string', maxLength: 100, pattern: '^(W/)?"[^"]*"$' },
  },
  'Retry-After': { description: 'Seconds to wait before retrying', schema: { ...seconds(86_400), minimum: 1 } },
  'RateLimit-Policy': {
    description:
      'The quota, as the IETF RateLimit draft writes it: `"per-credential";q=<burst>;w=60` for the credential sent, or `"per-address";q=<burst>;w=60` for a request without one (refilled over 60 s)',
    schema: { type: 'string', maxLength: 60, pattern: '^"per-(credential|address)";q=[0-9]+;w=60$' },
  },
  RateLimit: {
    description: 'What is left of it: `"per-credential";r=<requests left>;t=<seconds until full>` (on a 429, t equals Retry-After)',
    schema: { type: 'string', maxLength: 60, pattern: '^"per-(credential|address)";r=[0-9]+;t=[0-9]+$' },
  },
  'RateLimit-Limit': deprecated('Requests allowed per minute to this credential (the q of RateLimit-Policy)', budget),
  'RateLimit-Remaining': deprecated('Requests left (the r of RateLimit)', budget),
  'RateLimit-Reset': deprecated('Seconds until the budget is full again, or on a 429 until a retry may succeed (the t of RateLimit)', seconds(60)),
  'Access-Control-Allow-Origin': {
    description: 'The request\'s `Origin`, on every answer to an origin `CORS_ORIGINS` names (never `*`); absent otherwise',
    schema: { type: 'string', format: 'uri', maxLength: 2000 },
  },
}
const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` })
const refs = (...names: string[]) => Object.fromEntries(names.map((n) => [n, headerRef(n)]))
/** An answer to a credential carries its budget (the draft's two fields and the earlier draft's three). */
const CREDENTIAL_BUDGET = refs('RateLimit-Policy', 'RateLimit', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset')
/** An answer to a request without one carries its address's budget, in the draft's two fields only. */
const ADDRESS_BUDGET = refs('RateLimit-Policy', 'RateLimit')

const ERROR_REF = { $ref: '#/components/schemas/Error' }
const errorResponse = (description: string, headers?: Json) => ({
  description,
  ...(headers && { headers }),
  content: { 'application/json': { schema: ERROR_REF } },
})
/** A path id as integrators should type it: an integer (it travels as decimal text in the path). */
const PATH_ID = { type: 'integer', format: 'int32', minimum: 1, maximum: 2147483647, description: 'Positive integer id, 1 to 2147483647 (anything else: 400 INVALID_ID)' }
const sameAsError = (schema: unknown) =>
  !!schema && typeof schema === 'object' && (schema as Json).type === 'object' &&
  JSON.stringify(Object.keys((schema as Json).properties ?? {}).sort()) === '["code","details","error"]'

/**
 * Objects are documented open. The framework drops the fields a schema does not name before it validates a request
 * (so no request is refused for an extra field), and closes a response schema (`additionalProperties: false`)
 * only when it first compiles the route, so a closed schema would be both untrue of requests and dependent on
 * which routes have served a request. Integrators should read answers the same way: new fields may appear.
 * The exception is a body marked `closed` (server/lib/models.ts), whose route does refuse unknown fields.
 */
function openObjects(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(openObjects)
  if (!node || typeof node !== 'object') return
  const schema = node as Json
  if (schema[UNKNOWN_FIELDS] === 'refused') delete schema[UNKNOWN_FIELDS]
  else if (schema.additionalProperties === false) delete schema.additionalProperties
  for (const value of Object.values(node)) openObjects(value)
}

/**
 * Operation-level fixes, so the document says what the service does: only JSON request bodies (the routes parse
 * JSON; the form encodings the generator adds cannot carry their integer fields), which the route policy hands over
 * in `x-json-body` (JSON_BODY); binary answers under their media types; 304 and the ETag headers on JSON GETs; error bodies as the named `Error`
 * schema; 413 and 415 on every route with a body, 4XX, 500 and 503 on every route; the rate-limit and CORS headers
 * on every answer and `Retry-After` on 429 and 503; path ids as bounded integers; a `servers` entry; and the 3.1.0
 * version string that common parsers accept.
 */
export function finish(doc: Json, serverUrl: string) {
  openObjects(doc.paths)
  tidy(doc)
  hoist(doc)
  doc.openapi = '3.1.0'
  const local = /^https?:\/\/(localhost|127\.[0-9.]+|\[::1\])(:|\/|$)/.test(serverUrl)
  doc.servers = [
    { url: serverUrl, description: local ? 'This service, running locally' : 'This service, as deployed (production)', 'x-internal': false },
  ]
  doc.components.headers = HEADERS
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const [method, op] of Object.entries<Json>(item)) {
      const carried = op[JSON_BODY]
      delete op[JSON_BODY]
      if (carried && op.requestBody && Object.keys(op.requestBody.content ?? {}).length === 0)
        op.requestBody.content = { 'application/json': { schema: JSON.parse(JSON.stringify(carried)) } }
      // A body none of whose fields is required may be left out altogether.
      const schema = op.requestBody?.content?.['application/json']?.schema
      if (schema?.type === 'object' && !schema.required?.length) op.requestBody.required = false
      const content = op.requestBody?.content as Json | undefined
      if (content?.['application/json']) for (const type of Object.keys(content)) if (type !== 'application/json') delete content[type]
      for (const p of op.parameters ?? []) if (p.in === 'path' && /^(id|[a-z]+Id)$/.test(p.name) && p.schema?.type === 'string' && p.schema.pattern) p.schema = { ...PATH_ID }
      // An id in a query (`operation_id`) is the same decimal id as in a path: an integer like every other id.
      for (const p of op.parameters ?? [])
        if (p.in === 'query' && /(^|_)id$/.test(p.name) && p.schema?.type === 'string' && p.schema.pattern === ID_PATTERN) p.schema = { ...PATH_ID }
      const responses = (op.responses ??= {}) as Json
      // A binary answer names the media types it can carry (`x-media-types` on its schema); the generator calls
      // any string answer text/plain.
      for (const r of Object.values<Json>(responses)) {
        const plain = r?.content?.['text/plain']?.schema
        if (!plain || plain.format !== 'binary') continue
        const { 'x-media-types': types = ['application/octet-stream'], default: _file, ...schema } = plain
        r.content = Object.fromEntries((types as string[]).map((type) => [type, { schema }]))
      }
      // An answer without a body (`t.Void`, `t.Undefined`) comes out as content named after its type.
      for (const r of Object.values<Json>(responses)) if (r?.content && Object.keys(r.content).some((k) => !k.includes('/'))) delete r.content
      for (const p of op.parameters ?? []) if (p.in === 'header' && p.name === 'idempotency-key') p.name = 'Idempotency-Key'
      // The ETag plugin: every 200 JSON answer of a GET is tagged, and a matching If-None-Match is a bare 304.
      if (method === 'get' && responses['200']?.content?.['application/json']) {
        responses['200'].headers = { ETag: headerRef('ETag'), ...responses['200'].headers }
        responses['304'] ??= { description: 'Not modified: `If-None-Match` holds the ETag of the answer as it stands; no body' }
        op.parameters = [
          ...(op.parameters ?? []),
          {
            name: 'If-None-Match',
            in: 'header',
            required: false,
            description: 'ETag of an earlier answer (or several, comma-separated, or `*`): 304 while the answer is unchanged',
            schema: { type: 'string', maxLength: 1000, pattern: '^(\\*|(W/)?"[^"]*"( *, *(W/)?"[^"]*")*)$' },
          },
        ]
      }
      for (const [status, r] of Object.entries<Json>(responses)) {
        // A body-less answer (204) comes out of the generator as a bare schema where media types belong.
        if (r?.content && typeof r.content.type === 'string') delete r.content
        const json = r?.content?.['application/json']
        if (/^[45]/.test(status) && json && (sameAsError(json.schema) || json.schema?.$ref === ERROR_REF.$ref)) {
          json.schema = ERROR_REF
          if (r.description === 'Every error: a human message and a stable code.') r.description = 'Error: `{ error, code, details? }`'
        }
      }
      const authenticated = !Array.isArray(op.security) || op.security.length > 0
      if (op.requestBody && !responses['413']) responses['413'] = errorResponse('Body larger than the limit: `PAYLOAD_TOO_LARGE` (uploads: `FILE_TOO_LARGE`)')
      if (op.requestBody && !responses['415'])
        responses['415'] = errorResponse('A body other than `application/json` (`multipart/form-data` on uploads), or none named: `UNSUPPORTED_MEDIA_TYPE`')
      responses['500'] ??= errorResponse('Unexpected failure: `INTERNAL_ERROR`, logged with the request id; no detail leaves the server')
      // Every route reads the database, and every one waits its turn for it: a full queue or a database that is
      // away for a moment is 503 with Retry-After, on any of them.
      responses['503'] = errorResponse('Busy or the database is briefly unreachable: `SERVICE_UNAVAILABLE`; retry after `Retry-After` seconds', refs('Retry-After'))
      // The limits apply to every route, per credential or, without one, per address; only the probes are exempt.
      if (!PROBES.has(path)) responses['429'] = errorResponse('Rate limit reached: `RATE_LIMITED`', refs('Retry-After'))
      // Any route may refuse a request before its own checks: a method it does not take (405), a head too large (431).
      responses['4XX'] ??= errorResponse('Any other refusal (`METHOD_NOT_ALLOWED`, `HEADERS_TOO_LARGE`, …): `{ error, code }`')
      // A request is counted before anything else answers it, so every answer carries the budget it was counted
      // against, a refusal or a failure as much as a success: the credential's, or without one the address's.
      const counted = PROBES.has(path) ? {} : authenticated ? CREDENTIAL_BUDGET : ADDRESS_BUDGET
      for (const r of Object.values<Json>(responses)) r.headers = { ...counted, ...r.headers, ...refs('Access-Control-Allow-Origin') }
    }
  }
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

const finished = new WeakMap<Json, Json>()

/** Parts of the document no route describes: the `webhooks` the service sends, and the schemas they name. */
export interface DocumentExtras {
  webhooks: Json
  schemas: Json
}

export const docs = (serverUrl: string, extras: DocumentExtras) =>
  new Elysia({ name: 'docs' })
    .onAfterHandle({ as: 'global' }, ({ route, responseValue, set }) => {
      if (route !== '/openapi.json') return
      Object.assign(set.headers, hardened(SPEC_CSP, 'application/json; charset=utf-8'))
      // The generated document holds the live route schemas the validators use: it is finished as a copy (once
      // per generated document, which the generator caches until the routes change).
      const generated = responseValue as Json
      let done = finished.get(generated)
      if (!done) {
        done = JSON.parse(JSON.stringify(generated)) as Json
        finish(done, serverUrl)
        finished.set(generated, done)
      }
      return done
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
          '(half away from zero) and answered as a JSON number carrying every digit of the stored value (`1234567890123.123457`, trailing zeros',
          'trimmed), never rounded through a float. A request with `Accept: application/json; money=string` gets every money value as a decimal',
          'string instead (`"1234567890123.123457"`): for clients whose JSON parser reads numbers into doubles (JavaScript\'s `JSON.parse` keeps',
          'about 15 significant digits; a lossless parser such as lossless-json is the other way). Times are ISO 8601 UTC.',
          'Every creating POST accepts `Idempotency-Key` (same key and body within 24 h replays the first answer; a different body is 409',
          '`IDEMPOTENCY_KEY_REUSED`), except credential issuance, whose secrets are never stored and so cannot be replayed.',
        ].join('\n'),
      },
      webhooks: extras.webhooks,
      components: {
        schemas: extras.schemas,
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
          metricsToken: {
            type: 'http',
            scheme: 'bearer',
            description: '`GET /metrics` only: the `METRICS_TOKEN` the service was started with. No key, grant or session is accepted there.',
          },
        },
      },
      security: [{ apiKey: [] }, { session: [] }],
    },
  }))
