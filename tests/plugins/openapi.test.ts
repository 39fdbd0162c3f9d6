import { describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildTestApp, testApp } from '../helpers'
import { EVENT_TYPES } from '../../server/modules/webhooks/outbox'

const ROOT = join(import.meta.dir, '..', '..')

describe('OpenAPI document', () => {
  test('declares both security schemes, version 1.0.0, and public routes without security', async () => {
    const t = await testApp()
    const res = await t.request('GET', '/openapi.json')
    expect(res.status).toBe(200)
    const doc = res.body
    expect(doc.openapi).toMatch(/^3\.1/)
    expect(doc.info.version).toBe('1.0.0')
    expect(doc.components.securitySchemes.apiKey).toEqual({ type: 'apiKey', in: 'header', name: 'x-api-key' })
    expect(doc.components.securitySchemes.bearer.scheme).toBe('bearer')
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      if (!path.startsWith('/api/public/')) continue
      for (const op of Object.values(item)) expect(op.security).toEqual([])
    }
  })

  test('every operation under /api documents its 4xx answers with the error body', async () => {
    const t = await testApp()
    const doc = (await t.request('GET', '/openapi.json')).body
    const missing: string[] = []
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      if (!path.startsWith('/api/')) continue
      for (const [method, op] of Object.entries<any>(item)) {
        if (!Object.keys(op.responses ?? {}).some((s) => s.startsWith('4'))) missing.push(`${method.toUpperCase()} ${path}`)
      }
    }
    expect(missing).toEqual([])
  })

  test('every creating POST declares Idempotency-Key, except credential issuance (its secret is never stored to replay)', async () => {
    const t = await testApp()
    const doc = (await t.request('GET', '/openapi.json')).body
    // Keys, grants, screen and dispenser tokens, and the session cookie of a sign-in or of the first-run setup: only
    // their digests are kept.
    const issuing = /\/(api-keys|external-grants|tokens|dispenser-tokens|sessions|setup)$/
    const missing: string[] = []
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      const op = item.post
      if (!op?.responses?.['201'] || issuing.test(path)) continue
      if (!(op.parameters ?? []).some((p: any) => p.in === 'header' && p.name === 'Idempotency-Key')) missing.push(path)
    }
    expect(missing).toEqual([])
  })

  test('resources are named components, referenced from the operations', async () => {
    const t = await testApp()
    const doc = (await t.request('GET', '/openapi.json')).body
    for (const name of ['Client', 'Account', 'Operation', 'Transaction', 'Attachment', 'CostCenter', 'MessagingTool', 'Mesa', 'MesaLine', 'AuditEntry', 'Error', 'Pagination'])
      expect(doc.components.schemas[name]?.type).toBe('object')
    const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` })
    expect(doc.paths['/api/clients'].post.responses['201'].content['application/json'].schema).toEqual(ref('Client'))
    expect(doc.paths['/api/operations/{id}'].get.responses['200'].content['application/json'].schema).toEqual(ref('Operation'))
    expect(doc.paths['/api/clients'].get.responses['401'].content['application/json'].schema).toEqual(ref('Error'))
    expect(JSON.stringify(doc)).not.toContain('"$id"')
    // The client type is the integer it is, in requests and answers.
    expect(doc.paths['/api/clients'].post.requestBody.content['application/json'].schema.properties.type).toMatchObject({ type: 'integer', enum: [0, 1] })
    expect(doc.components.schemas.Client.properties.type).toMatchObject({ type: 'integer', enum: [0, 1] })
    // Signed downloads answer the stored type.
    const download = doc.paths['/files'].get.responses['200'].content
    expect(Object.keys(download)).toContain('application/pdf')
    expect(Object.keys(download)).toContain('application/octet-stream')
    expect(Object.keys(download)).not.toContain('text/html')
  })

  test('names every answer: 503 with Retry-After everywhere, 429 wherever the limits apply', async () => {
    const t = await testApp()
    const doc = (await t.request('GET', '/openapi.json')).body
    const lacking: string[] = []
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths))
      for (const [method, op] of Object.entries<any>(item)) {
        const r = op.responses
        if (!r['503']?.headers?.['Retry-After']) lacking.push(`503 ${method} ${path}`)
        // The probes are exempt from the rate limits.
        if (!['/health', '/health/ready', '/metrics'].includes(path) && !r['429']?.headers?.['Retry-After']) lacking.push(`429 ${method} ${path}`)
      }
    expect(lacking).toEqual([])
  })

  test('closed sets are enums; ids are integers and required where the route needs them; rates are not negative', async () => {
    const t = await testApp()
    const doc = (await t.request('GET', '/openapi.json')).body
    const constUnions: string[] = []
    const walk = (node: unknown, at: string) => {
      if (Array.isArray(node)) return node.forEach((v, i) => walk(v, `${at}/${i}`))
      if (!node || typeof node !== 'object') return
      const n = node as Record<string, any>
      if (Array.isArray(n.anyOf) && n.anyOf.length > 1 && n.anyOf.every((b: any) => 'const' in b || b.type === 'null')) constUnions.push(at)
      for (const [k, v] of Object.entries(n)) walk(v, `${at}/${k}`)
    }
    walk(doc, '#')
    expect(constUnions).toEqual([])
    expect(doc.paths['/api/operation-types'].post.requestBody.content['application/json'].schema.properties.kind).toMatchObject({
      type: 'string',
      enum: ['up_down', 'other', 'exchange', 'budget'],
    })

    const infer = doc.paths['/api/mesas/{id}/infer'].get.parameters.find((p: any) => p.name === 'operation_id')
    expect(infer).toMatchObject({ in: 'query', required: true, schema: { type: 'integer', minimum: 1, maximum: 2147483647 } })
    const c = await t.newCompany({ mesas: true })
    const missing = await t.request('GET', '/api/mesas/2147483647/infer', { key: c.key })
    expect([missing.status, missing.body.code]).toEqual([400, 'VALIDATION_ERROR'])

    const rate = doc.paths['/api/ventanilla/rates'].put.requestBody.content['application/json'].schema.properties.rates.items.properties.buy
    expect(rate.anyOf[0]).toMatchObject({ type: 'number', minimum: 0 })
    expect(new RegExp(rate.anyOf[1].pattern).test('-1')).toBe(false)
    expect(new RegExp(rate.anyOf[1].pattern).test('1050.25')).toBe(true)
  })

  test('money is a number in answers, documented with its string form; the MCP body is typed JSON-RPC; public routes take no credential', async () => {
    const t = await testApp()
    const doc = (await t.request('GET', '/openapi.json')).body
    const amount = doc.components.schemas.Transaction.properties.amount
    expect(amount.type).toBe('number')
    expect(amount.description).toContain('money=string')
    expect(doc.info.description).toContain('Accept: application/json; money=string')

    const body = doc.paths['/api/mcp'].post.requestBody
    expect(body.required).toBe(true)
    const call = doc.components.schemas.McpToolsCall
    expect(call.required).toEqual(['jsonrpc', 'id', 'method', 'params'])
    expect(call.properties.method.const).toBe('tools/call')
    expect(call.properties.params.required).toEqual(['name'])
    expect(call.properties.params.properties._meta.properties.requested_by.required).toEqual(['contact_id', 'phone'])
    expect(JSON.stringify(body.content['application/json'].schema)).toContain('#/components/schemas/McpToolsCall')

    for (const [method, path] of [
      ['get', '/health'],
      ['get', '/health/ready'],
      ['post', '/api/sessions'],
      ['get', '/files'],
      ['post', '/api/public/ventanilla/{token}/tickets'],
      ['get', '/api/public/ventanilla/{token}'],
    ])
      expect([method, path, doc.paths[path][method].security]).toEqual([method, path, []])
  })

  test('webhooks: every event type with its envelope and the resource it carries', async () => {
    const t = await testApp()
    const doc = (await t.request('GET', '/openapi.json')).body
    expect(Object.keys(doc.webhooks ?? {}).sort()).toEqual([...EVENT_TYPES].sort())
    const resolve = (node: any): any => (node?.$ref ? resolve(doc.components.schemas[node.$ref.split('/').pop()]) : node)
    const objects: Record<string, string> = {}
    for (const type of EVENT_TYPES) {
      const post = doc.webhooks[type].post
      expect(post.requestBody.required).toBe(true)
      const envelope = resolve(post.requestBody.content['application/json'].schema)
      expect(envelope.required).toEqual(['id', 'type', 'created_at', 'data'])
      expect(envelope.properties.type.const).toBe(type)
      expect(envelope.properties.created_at.format).toBe('date-time')
      expect(envelope.properties.data.required).toEqual(['object'])
      const ref = envelope.properties.data.properties.object.$ref as string
      expect(doc.components.schemas[ref.split('/').pop()!]?.type).toBe('object')
      objects[type] = ref.split('/').pop()!
      expect(post.parameters.map((p: any) => p.name)).toEqual(['webhook-id', 'webhook-timestamp', 'webhook-signature'])
    }
    expect(objects).toMatchObject({
      'client.deleted': 'Client',
      'account.created': 'Account',
      'operation.approved': 'Operation',
      'attachment.created': 'Attachment',
      'cost_center.updated': 'CostCenter',
      'messaging_tool.created': 'MessagingTool',
      'mesa_line.deleted': 'MesaLine',
      'ventanilla_ticket.transferred': 'VentanillaTicket',
      'webhook_endpoint.disabled': 'WebhookEndpoint',
      'webhook.test': 'WebhookEndpoint',
    })
    const attachment = resolve(doc.webhooks['attachment.deleted'].post.requestBody.content['application/json'].schema)
    expect(attachment.properties.data.properties.operation_id.type).toBe('integer')
    const operation = resolve(doc.webhooks['operation.created'].post.requestBody.content['application/json'].schema)
    expect(operation.properties.data.properties.channel.enum).toEqual(['messaging', 'twin'])
  })

  test('bodies that refuse unknown fields say so; audit bounds have a pattern; every answer declares the RateLimit headers it carries', async () => {
    const t = await testApp()
    const doc = (await t.request('GET', '/openapi.json')).body
    const body = (path: string, method: string) => doc.paths[path][method].requestBody.content['application/json'].schema
    expect(body('/api/ventanilla/settings', 'patch').additionalProperties).toBe(false)
    expect(body('/api/ventanilla/settings', 'put').additionalProperties).toBe(false)
    expect(body('/api/ventanilla/tickets/{id}', 'patch').additionalProperties).toBe(false)
    // Bodies whose unknown fields are ignored stay open.
    expect(body('/api/clients', 'post').additionalProperties).toBeUndefined()
    expect(JSON.stringify(doc)).not.toContain('x-unknown-fields')

    const bounds = doc.paths['/api/audit-logs'].get.parameters.filter((p: any) => p.name === 'from' || p.name === 'to')
    expect(bounds).toHaveLength(2)
    for (const bound of bounds) {
      const pattern = new RegExp(bound.schema.pattern)
      for (const ok of ['2024-01-01', '2024-01-01T03:00:00.000Z', '2024-01-01T00:00:00-03:00', '2024-01-01T00:00']) expect([ok, pattern.test(ok)]).toEqual([ok, true])
      for (const bad of ['yesterday', '1704078000000', '2024-1-1']) expect([bad, pattern.test(bad)]).toEqual([bad, false])
    }

    const lacking: string[] = []
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths))
      for (const [method, op] of Object.entries<any>(item)) {
        // The probes are exempt from the limits (a balancer probes every process from one address).
        if ((Array.isArray(op.security) && op.security.length === 0) || ['/health', '/health/ready', '/metrics'].includes(path)) continue
        for (const [status, r] of Object.entries<any>(op.responses))
          if (/^[245]/.test(status) && !(r.headers?.RateLimit && r.headers?.['RateLimit-Policy'])) lacking.push(`${status} ${method} ${path}`)
      }
    expect(lacking).toEqual([])
  })

  test('passes redocly lint with the recommended ruleset: no errors', async () => {
    const t = await testApp()
    const doc = (await t.request('GET', '/openapi.json')).body
    const dir = mkdtempSync(join(tmpdir(), 'fos-openapi-'))
    const file = join(dir, 'openapi.json')
    writeFileSync(file, JSON.stringify(doc))
    writeFileSync(join(dir, 'redocly.yaml'), 'extends:\n  - recommended\n')
    const proc = Bun.spawn([join(ROOT, 'node_modules/.bin/redocly'), 'lint', file, '--format=stylish'], {
      cwd: dir,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    if (code !== 0) console.log(out, err)
    expect(code).toBe(0)
  }, 120_000)

  test('passes Spectral\'s OWASP ruleset (.spectral.yaml): nothing but the exceptions docs/openapi-lint.md lists and explains', async () => {
    // Served as in production: over https.
    const t = await buildTestApp({ publicBaseUrl: 'https://cambio.example' })
    const doc = (await t.request('GET', '/openapi.json')).body
    const dir = mkdtempSync(join(tmpdir(), 'fos-spectral-'))
    const file = join(dir, 'openapi.json')
    writeFileSync(file, JSON.stringify(doc))
    const proc = Bun.spawn([join(ROOT, 'node_modules/.bin/spectral'), 'lint', file, '--ruleset', join(ROOT, '.spectral.yaml'), '--format', 'json', '--quiet'], {
      cwd: ROOT,
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    const results = (JSON.parse(out || '[]') as { code: string; path: string[]; message: string }[]).map((r) => `${r.code} ${r.path.join('/')}: ${r.message}`)
    if (err.trim()) console.log(err)
    expect(results).toEqual([])
    // Every rule the ruleset switches off or narrows is listed, with its reason, in the written list.
    const ruleset = readFileSync(join(ROOT, '.spectral.yaml'), 'utf8')
    const listed = readFileSync(join(ROOT, 'docs/openapi-lint.md'), 'utf8')
    const changed = [...new Set([...ruleset.matchAll(/^ +(owasp:[\w:-]+):/gm)].map((m) => m[1]))]
    expect(changed.length).toBeGreaterThan(0)
    for (const rule of changed) expect([rule, listed.includes(`\`${rule}\``)]).toEqual([rule, true])
  }, 120_000)
})
