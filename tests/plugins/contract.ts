import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020'
import addFormats from 'ajv-formats'
import type { RecordedPair } from '../helpers'

type Json = Record<string, any>

/** Routes that are not part of the API and so not in the document. */
const UNDOCUMENTED = [/^\/openapi\.json$/, /^\/docs(\/|$)/]

const pointer = (...segments: string[]) =>
  `openapi.json#/${segments.map((s) => encodeURIComponent(s.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/')}`

function mediaMatch(content: Json, type: string): string | undefined {
  if (content[type]) return type
  const wildcard = `${type.split('/')[0]}/*`
  if (content[wildcard]) return wildcard
  if (content['*/*']) return '*/*'
}

const isJson = (type: string) => type === 'application/json' || type.endsWith('+json')

/**
 * Checks recorded request/answer pairs against an OpenAPI 3.1 document with a JSON Schema 2020-12 validator:
 * the route and method are documented, the status is one of the operation's responses, the content type is one
 * it lists and a JSON body satisfies its schema; for an accepted request (2xx) its JSON body, path and query
 * parameters satisfy theirs too. Returns one line per violation.
 */
export function violations(doc: Json, pairs: RecordedPair[]) {
  const make = (coerceTypes: boolean) => {
    const ajv = new Ajv2020({ strict: false, allErrors: true, coerceTypes })
    addFormats(ajv)
    ajv.addFormat('binary', true)
    ajv.addSchema(doc, 'openapi.json')
    return ajv
  }
  const strict = make(false)
  const coercing = make(true)
  const cache = new Map<string, ValidateFunction>()
  const validator = (ajv: Ajv2020, ref: string) => {
    const key = `${ajv === coercing}:${ref}`
    let v = cache.get(key)
    if (!v) cache.set(key, (v = ajv.compile({ $ref: ref })))
    return v
  }
  const errorsOf = (v: ValidateFunction) =>
    (v.errors ?? []).slice(0, 3).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ')

  const templates = Object.keys(doc.paths)
    .map((path) => ({
      path,
      names: [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]),
      re: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '([^/]+)')}$`),
    }))
    .sort((a, b) => a.names.length - b.names.length)

  const found: string[] = []
  for (const pair of pairs) {
    const url = new URL(pair.path, 'http://fos.test')
    const where = `${pair.method} ${pair.path} → ${pair.status}`
    if (UNDOCUMENTED.some((re) => re.test(url.pathname))) continue
    const template = templates.find((t) => t.re.test(url.pathname))
    const method = pair.method.toLowerCase() === 'head' ? 'get' : pair.method.toLowerCase()
    const op = template && (doc.paths[template.path][method] as Json | undefined)
    // The document promises nothing about routes it does not list, except that they do not succeed.
    if (!template || !op) {
      if (pair.status < 400) found.push(`${where}: ${template ? `method not in the document for ${template.path}` : 'path not in the document'}`)
      continue
    }
    const status = String(pair.status)
    const statusKey = [status, `${status[0]}XX`, 'default'].find((s) => op.responses?.[s])
    if (!statusKey) {
      found.push(`${where}: status not documented for ${method.toUpperCase()} ${template.path}`)
      continue
    }
    const response = op.responses[statusKey] as Json
    const type = (pair.responseType ?? '').split(';')[0].trim().toLowerCase()
    if (pair.status === 204 || pair.status === 304 || pair.method === 'HEAD') {
      if (pair.responseBody) found.push(`${where}: a body where none is documented`)
    } else if (!response.content) {
      if (pair.responseBody) found.push(`${where}: a ${type} body where none is documented`)
    } else {
      const media = mediaMatch(response.content, type)
      if (!media) found.push(`${where}: content type ${type || '(none)'} not among ${Object.keys(response.content).join(', ')}`)
      else if (isJson(type) && response.content[media].schema && response.content[media].schema.format !== 'binary') {
        const v = validator(strict, pointer('paths', template.path, method, 'responses', statusKey, 'content', media, 'schema'))
        if (!v(JSON.parse(pair.responseBody))) found.push(`${where}: answer body ${errorsOf(v)}`)
      }
    }
    if (pair.status < 200 || pair.status >= 300) continue

    // The service accepted the request: the document must accept it too.
    const params = (op.parameters ?? []) as Json[]
    const values = template.re.exec(url.pathname)!.slice(1)
    template.names.forEach((name, i) => {
      const index = params.findIndex((p) => p.in === 'path' && p.name === name)
      if (index < 0) return found.push(`${where}: path parameter ${name} not documented`)
      const v = validator(coercing, pointer('paths', template.path, method, 'parameters', String(index), 'schema'))
      if (!v(decodeURIComponent(values[i]))) found.push(`${where}: path parameter ${name} ${errorsOf(v)}`)
    })
    for (const [name, value] of url.searchParams) {
      const index = params.findIndex((p) => p.in === 'query' && p.name === name)
      if (index < 0) continue
      const v = validator(coercing, pointer('paths', template.path, method, 'parameters', String(index), 'schema'))
      if (!v(value)) found.push(`${where}: query parameter ${name} ${errorsOf(v)}`)
    }
    const requestType = (pair.requestType ?? '').split(';')[0].trim().toLowerCase()
    if (pair.requestBody !== null && isJson(requestType)) {
      const media = op.requestBody?.content && mediaMatch(op.requestBody.content, requestType)
      if (!media) found.push(`${where}: request body ${requestType} not documented`)
      else if (op.requestBody.content[media].schema) {
        const v = validator(strict, pointer('paths', template.path, method, 'requestBody', 'content', media, 'schema'))
        if (!v(JSON.parse(pair.requestBody))) found.push(`${where}: request body ${errorsOf(v)}`)
      }
    }
  }
  return found
}
