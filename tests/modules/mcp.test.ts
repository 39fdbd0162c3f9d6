import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { testApp, type TestApp } from '../helpers'

let t: TestApp
let server: ReturnType<typeof Bun.serve>
let base: string

// A real listening server: the SDK client talks HTTP to it exactly as an outside MCP client would.
beforeAll(async () => {
  t = await testApp()
  server = Bun.serve({ port: 0, fetch: (req) => t.app.handle(req) })
  base = `http://127.0.0.1:${server.port}`
}, 120_000)

afterAll(() => {
  server.stop(true)
})

async function connect(key: string, headers: Record<string, string> = {}) {
  const client = new Client({ name: 'fos-test-bot', version: '1.0.0' })
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/api/mcp`), { requestInit: { headers: { 'x-api-key': key, ...headers } } })
  await client.connect(transport)
  return client
}

async function world() {
  const c = await t.newCompany()
  const post = async (path: string, body: unknown) => {
    const r = await t.request('POST', path, { key: c.key, body })
    if (r.status !== 201) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`)
    return r.body
  }
  const types: Record<string, number> = {}
  for (const kind of ['up_down', 'exchange', 'budget', 'other']) types[kind] = (await post('/api/operation-types', { name: kind, kind })).id
  const client = async (name: string, type: 0 | 1, currencies: string[]) => {
    const body = await post('/api/clients', { name, type, accounts: currencies.map((currency_name) => ({ currency_name })) })
    return { id: body.id as number, acc: Object.fromEntries(body.accounts.map((a: { id: number; currency_name: string }) => [a.currency_name, a.id])) as Record<string, number> }
  }
  const caja = await client('Caja', 0, ['ARS', 'USD'])
  const juan = await client('Juan', 1, ['ARS', 'USD'])
  const payer = await client('Proveedor', 1, ['ARS'])
  const cc = await post('/api/cost-centers', { name: 'Sueldos', client_id: caja.id, default_currency: 'ARS' })
  const tool = (body: Record<string, unknown>) => post('/api/messaging/tools', body) as Promise<{ id: number; slug: string }>
  const upDown = await tool({
    name: 'Subida de saldo',
    description: 'Acredita en la cuenta del cliente',
    fixed_config: { toolKind: 'up_down', operationTypeId: types.up_down, clientId: juan.id, direction: 'up' },
    parameter_schema: {
      parameters: [
        { key: 'currency', label: 'Moneda', type: 'currency', required: true },
        { key: 'amount', label: 'Monto', type: 'amount', required: true },
      ],
    },
  })
  const exchange = await tool({
    name: 'Compra Dólar (MEP)',
    fixed_config: { toolKind: 'exchange', operationTypeId: types.exchange, localAccountId: caja.acc.ARS, quoteAccountId: caja.acc.USD, fx: 1000 },
    parameter_schema: {
      parameters: [
        { key: 'side', label: 'Compra o venta', type: 'side', required: true },
        { key: 'quoteAmount', label: 'Dólares', type: 'amount', required: true },
      ],
    },
  })
  const budget = await tool({
    name: 'Gasto',
    fixed_config: { toolKind: 'budget', operationTypeId: types.budget, costCenterId: cc.id, paymentSourceMode: 'external', payerClientId: payer.id },
    parameter_schema: { parameters: [{ key: 'amount', label: 'Monto', type: 'amount', required: true }] },
  })
  const other = await tool({
    name: 'Ajuste',
    fixed_config: { toolKind: 'other', operationTypeId: types.other, transactions: [{ accountId: juan.acc.USD, amount: 1 }] },
  })
  return { c, caja, juan, payer, cc, upDown, exchange, budget, other }
}

const requestedBy = { contact_id: 5, phone: '+5491100000000' }

describe('MCP server', () => {
  test('auth: no key 401, bad key 401, missing permission 403; GET is 405 for a stateless server', async () => {
    const w = await world()
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
    expect((await fetch(`${base}/api/mcp`, { method: 'POST', headers, body: JSON.stringify(init) })).status).toBe(401)
    expect((await fetch(`${base}/api/mcp`, { method: 'POST', headers: { ...headers, 'x-api-key': 'fos_bad_key' }, body: JSON.stringify(init) })).status).toBe(401)
    const viewer = await w.c.employee(['clients.view'])
    const denied = await fetch(`${base}/api/mcp`, { method: 'POST', headers: { ...headers, 'x-api-key': viewer.key }, body: JSON.stringify(init) })
    expect(denied.status).toBe(403)
    expect((await denied.json()).code).toBe('FORBIDDEN')
    const ok = await fetch(`${base}/api/mcp`, { method: 'POST', headers: { ...headers, 'x-api-key': w.c.key }, body: JSON.stringify(init) })
    expect(ok.status).toBe(200)
    expect((await ok.json()).result.capabilities.tools).toBeDefined()
    expect((await fetch(`${base}/api/mcp`, { headers: { 'x-api-key': w.c.key, accept: 'text/event-stream' } })).status).toBe(405)
    // Transport-level rejections keep the API's error shape.
    const garbage = await fetch(`${base}/api/mcp`, { method: 'POST', headers: { ...headers, 'x-api-key': w.c.key }, body: '{not json' })
    expect(garbage.status).toBe(400)
    expect((await garbage.json()).code).toBe('VALIDATION_ERROR')
    // Answers are always JSON, so a client that takes JSON is served whatever else its Accept lists.
    for (const accept of [undefined, '*/*', 'application/json']) {
      const res = await fetch(`${base}/api/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': w.c.key, ...(accept && { accept }) },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
      })
      expect({ accept, status: res.status, tools: Array.isArray((await res.json()).result?.tools) }).toEqual({ accept, status: 200, tools: true })
    }
    const noJson = await fetch(`${base}/api/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/html', 'x-api-key': w.c.key }, body: JSON.stringify(init) })
    expect(noJson.status).toBe(406)
    expect(Object.keys(await noJson.json()).sort()).toEqual(['code', 'error'])
    const text = await fetch(`${base}/api/mcp`, { method: 'POST', headers: { ...headers, 'content-type': 'text/plain', 'x-api-key': w.c.key }, body: 'hola' })
    expect([text.status, (await text.json()).code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE'])
    await expect(connect(viewer.key)).rejects.toThrow()
  })

  test('tools/list: enabled live tools, slug names, flat input schemas, nothing of fixed_config', async () => {
    const w = await world()
    const runner = await w.c.employee(['messaging.run'])
    const client = await connect(runner.key)
    const { tools } = await client.listTools()
    expect(tools.map((x) => x.name)).toEqual(['subida-de-saldo', 'compra-dolar-mep', 'gasto', 'ajuste'])
    const up = tools[0]
    expect(up.description).toBe('Acredita en la cuenta del cliente')
    expect(up.inputSchema).toEqual({
      type: 'object',
      properties: {
        currency: { title: 'Moneda', description: 'Moneda', type: 'string', enum: ['ARS', 'USD'] },
        amount: { title: 'Monto', description: 'Monto', type: 'number', minimum: 0.000001 },
      },
      required: ['currency', 'amount'],
    })
    expect(up.annotations).toMatchObject({ destructiveHint: false, idempotentHint: false })
    expect(tools[1].inputSchema.properties!.side).toMatchObject({ type: 'string', enum: ['buy', 'sell'] })
    expect(tools[3].inputSchema).toEqual({ type: 'object', properties: {} })
    const text = JSON.stringify(tools)
    for (const secret of ['operationTypeId', 'localAccountId', 'payerClientId', 'costCenterId', 'toolKind', 'fx'])
      expect(text).not.toContain(secret)

    // Disabled and deleted tools disappear at once.
    await t.request('PATCH', `/api/messaging/tools/${w.exchange.id}`, { key: w.c.key, body: { enabled: false } })
    await t.request('DELETE', `/api/messaging/tools/${w.other.id}`, { key: w.c.key })
    expect((await client.listTools()).tools.map((x) => x.name)).toEqual(['subida-de-saldo', 'gasto'])
    await client.close()

    const stranger = await t.newCompany()
    const theirs = await connect(stranger.key)
    expect((await theirs.listTools()).tools).toEqual([])
    const foreignCall = await theirs.callTool({ name: 'gasto', arguments: { amount: 1 } })
    expect(foreignCall.isError).toBe(true)
    await theirs.close()
  })

  test('tools/call runs each kind; the operation comes back as structured content with a Spanish summary', async () => {
    const w = await world()
    const client = await connect(w.c.key)
    const up = await client.callTool({ name: 'subida-de-saldo', arguments: { currency: 'USD', amount: 250.5 }, _meta: { requested_by: requestedBy } })
    expect(up.isError).toBeFalsy()
    const op = (up.structuredContent as { operation: { id: number; status: string; transactions: { account_id: number; amount: number }[] } }).operation
    expect(op.status).toBe('pending')
    expect(op.transactions.map((x) => [x.account_id, x.amount])).toEqual([[w.juan.acc.USD, 250.5]])
    const text = (up.content as { type: string; text: string }[])[0].text
    expect(text).toContain(`Operación #${op.id}`)
    expect(text).toContain('pendiente de aprobación')

    const ex = await client.callTool({ name: 'compra-dolar-mep', arguments: { side: 'buy', quoteAmount: 10, requested_by: requestedBy } })
    expect((ex.structuredContent as any).operation.transactions.map((x: any) => [x.account_id, x.amount])).toEqual([
      [w.caja.acc.USD, 10],
      [w.caja.acc.ARS, -10000],
    ])
    const budget = await client.callTool({ name: 'gasto', arguments: { amount: '99.99', requested_by: requestedBy } })
    const budgetOp = (budget.structuredContent as any).operation
    expect(budgetOp.cost_center_id).toBe(w.cc.id)
    expect(budgetOp.transactions.map((x: any) => [x.account_id, x.amount])).toEqual([[w.payer.acc.ARS, 99.99]])
    const other = await client.callTool({ name: 'ajuste', arguments: { requested_by: requestedBy } })
    const otherOp = (other.structuredContent as any).operation
    expect(otherOp.transactions).toHaveLength(1)

    for (const id of [op.id, budgetOp.id, otherOp.id]) expect((await t.request('POST', `/api/operations/${id}/approve`, { key: w.c.key })).status).toBe(200)
    const juan = await t.request('GET', `/api/clients/${w.juan.id}`, { key: w.c.key })
    expect(juan.body.accounts.find((a: any) => a.currency_name === 'USD').balance).toBe(251.5)
    const payer = await t.request('GET', `/api/clients/${w.payer.id}`, { key: w.c.key })
    expect(payer.body.accounts[0].balance).toBe(99.99)

    // Audit rows of the operation and its transactions carry the messaging channel and who asked.
    const logs = (await t.request('GET', '/api/audit-logs?table=operation&pageSize=100', { key: w.c.key })).body.data
    const mine = logs.filter((r: any) => r.entity_id === op.id)
    expect(mine.length).toBeGreaterThanOrEqual(2)
    for (const row of mine) {
      expect(row.channel).toBe('messaging')
      expect(row.channel_detail.requested_by).toEqual({ ...requestedBy, employee: null, client: null })
    }
    const txLogs = (await t.request('GET', '/api/audit-logs?table=transaction&pageSize=100', { key: w.c.key })).body.data
    const exTx = txLogs.filter((r: any) => r.after?.operation_id === (ex.structuredContent as any).operation.id)
    expect(exTx).toHaveLength(2)
    for (const row of exTx) expect(row.channel).toBe('messaging')
    const budgetRow = logs.find((r: any) => r.entity_id === budgetOp.id)
    expect(budgetRow.channel_detail.requested_by).toEqual({ ...requestedBy, employee: null, client: null })
    await client.close()
  })

  test('missing or invalid parameters: a tool error naming each field key and label; disabled tool is a tool error', async () => {
    const w = await world()
    const client = await connect(w.c.key)
    const missing = await client.callTool({ name: 'subida-de-saldo', arguments: {}, _meta: { requested_by: requestedBy } })
    expect(missing.isError).toBe(true)
    const text = (missing.content as { text: string }[])[0].text
    expect(text).toContain('currency (Moneda)')
    expect(text).toContain('amount (Monto)')
    expect((missing.structuredContent as any).error.code).toBe('INVALID_PARAMETERS')
    const invalid = await client.callTool({ name: 'compra-dolar-mep', arguments: { side: 'hold', quoteAmount: 'mucho' }, _meta: { requested_by: requestedBy } })
    expect(invalid.isError).toBe(true)
    const invalidText = (invalid.content as { text: string }[])[0].text
    expect(invalidText).toContain('side (Compra o venta)')
    expect(invalidText).toContain('quoteAmount (Dólares)')
    const badRequester = await client.callTool({ name: 'gasto', arguments: { amount: 1 }, _meta: { requested_by: { phone: 3 } } })
    expect(badRequester.isError).toBe(true)
    const unknown = await client.callTool({ name: 'no-existe', arguments: {} })
    expect(unknown.isError).toBe(true)

    await t.request('PATCH', `/api/messaging/tools/${w.budget.id}`, { key: w.c.key, body: { enabled: false } })
    const disabled = await client.callTool({ name: 'gasto', arguments: { amount: 1 }, _meta: { requested_by: requestedBy } })
    expect(disabled.isError).toBe(true)
    expect((disabled.structuredContent as any).error.code).toBe('TOOL_DISABLED')
    const ops = await t.request('GET', '/api/operations', { key: w.c.key })
    expect(ops.body.pagination.total).toBe(0)
    await client.close()
  })

  test('a 401 names the API key scheme; only deliverable capabilities are advertised', async () => {
    const w = await world()
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
    for (const key of [undefined, 'fos_bad_key']) {
      const res = await fetch(`${base}/api/mcp`, { method: 'POST', headers: { ...headers, ...(key && { 'x-api-key': key }) }, body: JSON.stringify(init) })
      expect([res.status, res.headers.get('www-authenticate'), (await res.json()).code]).toEqual([401, 'ApiKey header="x-api-key"', 'UNAUTHORIZED'])
    }
    // Other routes keep a plain 401.
    expect((await fetch(`${base}/api/clients`)).headers.get('www-authenticate')).toBeNull()
    const ok = await fetch(`${base}/api/mcp`, { method: 'POST', headers: { ...headers, 'x-api-key': w.c.key }, body: JSON.stringify(init) })
    const { capabilities } = (await ok.json()).result
    expect(capabilities.tools).toBeDefined()
    expect(capabilities.tools.listChanged).not.toBe(true)
    const doc = (await t.request('GET', '/openapi.json')).body
    expect(doc.paths['/api/mcp'].post.responses['401'].headers['WWW-Authenticate'].schema.const).toBe('ApiKey header="x-api-key"')
  })

  test('parameters filling closed sets or bounded fields carry them whatever their type; every bad field is named at once', async () => {
    const w = await world()
    const type = await t.request('POST', '/api/operation-types', { key: w.c.key, body: { name: 'Cambio', kind: 'exchange' } })
    const trade = await t.request('POST', '/api/messaging/tools', {
      key: w.c.key,
      body: {
        name: 'Cambio libre',
        fixed_config: { toolKind: 'exchange', operationTypeId: type.body.id, localAccountId: w.caja.acc.ARS, quoteAccountId: w.caja.acc.USD, quoteAmount: 10 },
        parameter_schema: {
          parameters: [
            { key: 'side', label: 'Operación', type: 'string', required: true },
            { key: 'fx', label: 'Cotización', type: 'number', required: true },
          ],
        },
      },
    })
    expect(trade.status).toBe(201)
    const client = await connect(w.c.key)
    const tool = (await client.listTools()).tools.find((x) => x.name === trade.body.slug)!
    expect(tool.inputSchema.properties).toEqual({
      side: { title: 'Operación', description: 'Operación', type: 'string', enum: ['buy', 'sell'] },
      fx: { title: 'Cotización', description: 'Cotización', type: 'number', exclusiveMinimum: 0 },
    })
    const bad = await client.callTool({ name: trade.body.slug, arguments: { side: 'maybe', fx: -1 }, _meta: { requested_by: requestedBy } })
    expect(bad.isError).toBe(true)
    const text = (bad.content as { text: string }[])[0].text
    expect(text).toContain('side (Operación)')
    expect(text).toContain('fx (Cotización)')
    expect((bad.structuredContent as any).error.details.map((d: { field: string }) => d.field).sort()).toEqual(['fx', 'side'])
    const rest = await t.request('POST', `/api/messaging/tools/${trade.body.id}/run`, { key: w.c.key, body: { parameters: { side: 'maybe', fx: 0 }, requested_by: requestedBy } })
    expect([rest.status, rest.body.code, rest.body.details.map((d: { field: string }) => d.field).sort()]).toEqual([422, 'INVALID_PARAMETERS', ['fx', 'side']])
    const good = await client.callTool({ name: trade.body.slug, arguments: { side: 'sell', fx: 1000 }, _meta: { requested_by: requestedBy } })
    expect(good.isError).toBeFalsy()
    await client.close()
  })

  test('an Idempotency-Key makes calls replayable and is announced by idempotentHint', async () => {
    const w = await world()
    const client = await connect(w.c.key, { 'idempotency-key': `mcp-${w.c.id}` })
    const { tools } = await client.listTools()
    expect(tools[0].annotations?.idempotentHint).toBe(true)
    const args = { name: 'gasto', arguments: { amount: 5, requested_by: requestedBy } }
    const first = await client.callTool(args)
    const again = await client.callTool(args)
    expect((again.structuredContent as any).operation.id).toBe((first.structuredContent as any).operation.id)
    const metaKey = await connect(w.c.key)
    const a = await metaKey.callTool({ ...args, _meta: { idempotency_key: 'k-1' } })
    const b = await metaKey.callTool({ ...args, _meta: { idempotency_key: 'k-1' } })
    const c = await metaKey.callTool({ ...args, _meta: { idempotency_key: 'k-2' } })
    expect((a.structuredContent as any).operation.id).toBe((b.structuredContent as any).operation.id)
    expect((c.structuredContent as any).operation.id).not.toBe((a.structuredContent as any).operation.id)
    await client.close()
    await metaKey.close()
  })
  test('requested_by is required by tools/call as by /run: one rule, refused alike and nothing written', async () => {
    const w = await world()
    const client = await connect(w.c.key)
    const before = (await t.request('GET', '/api/operations', { key: w.c.key })).body.pagination.total
    const call = await client.callTool({ name: 'gasto', arguments: { amount: 1 } })
    expect(call.isError).toBe(true)
    expect((call.structuredContent as any).error.code).toBe('VALIDATION_ERROR')
    expect((call.content as { text: string }[])[0].text).toContain('requested_by')
    const rest = await t.request('POST', `/api/messaging/tools/${w.budget.id}/run`, { key: w.c.key, body: { parameters: { amount: 1 } } })
    expect([rest.status, rest.body.code]).toEqual([400, 'VALIDATION_ERROR'])
    expect(JSON.stringify(rest.body.details)).toContain('requested_by')
    expect((await t.request('GET', '/api/operations', { key: w.c.key })).body.pagination.total).toBe(before)
    const meta = await client.callTool({ name: 'gasto', arguments: { amount: 1 }, _meta: { requested_by: requestedBy } })
    expect(meta.isError).toBeFalsy()
    await client.close()
  })
  test('money in MCP results keeps every digit, and comes as strings under money=string', async () => {
    const w = await world()
    const call = (accept: string, id: number) =>
      fetch(`${base}/api/mcp`, {
        method: 'POST',
        headers: { 'x-api-key': w.c.key, 'content-type': 'application/json', accept },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: { name: 'subida-de-saldo', arguments: { currency: 'USD', amount: '1234567890123.123457' }, _meta: { requested_by: requestedBy } },
        }),
      })
    const exact = await call('application/json, text/event-stream', 1)
    expect(exact.status).toBe(200)
    const text = await exact.text()
    expect(text).toContain('"amount":1234567890123.123457')
    expect(text).toContain('USD +1234567890123.123457')
    const strings = await (await call('application/json; money=string', 2)).text()
    expect(strings).toContain('"amount":"1234567890123.123457"')

    // Money sent as a JSON number literal is read without a binary float on the way, as every other route reads it.
    const literal = await fetch(`${base}/api/mcp`, {
      method: 'POST',
      headers: { 'x-api-key': w.c.key, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"compra-dolar-mep","arguments":{"side":"buy","quoteAmount":1234567890123.123457},"_meta":{"requested_by":{"contact_id":5,"phone":"+5491100000000"}}}}`,
    })
    expect(literal.status).toBe(200)
    const bought = await literal.text()
    expect(bought).toContain('USD +1234567890123.123457')
    const boughtId = JSON.parse(bought).result.structuredContent.operation.id
    const stored = await t.app.handle(new Request(`http://fos.test/api/operations/${boughtId}`, { headers: { 'x-api-key': w.c.key } }))
    expect(await stored.text()).toContain('"amount":1234567890123.123457')

    // A tool's fixed money comes back as stored, every digit.
    const types = (await t.request('GET', '/api/operation-types', { key: w.c.key })).body.data as { id: number; kind: string }[]
    const operationTypeId = types.find((x) => x.kind === 'other')!.id
    const tool = await t.request('POST', '/api/messaging/tools', {
      key: w.c.key,
      body: { name: 'Ajuste fino', fixed_config: { toolKind: 'other', operationTypeId, transactions: [{ accountId: w.juan.acc.USD, amount: '98765432109876543.123456' }] } },
    })
    expect(tool.status).toBe(201)
    const got = await t.app.handle(new Request(`http://fos.test/api/messaging/tools/${tool.body.id}`, { headers: { 'x-api-key': w.c.key } }))
    expect(await got.text()).toContain('"amount":98765432109876543.123456')
  })
})
