import { describe, expect, test } from 'bun:test'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { testApp } from '../helpers'

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
})
