/**
 * Tenant isolation matrix, generated from the routes of /openapi.json.
 * Every route with a path parameter must have an entry in CASES (the test fails on a route without one), so a new
 * route is covered as soon as it is documented. Each tenant route is called with company A's ids by:
 * company B's key (404), B's key with B's parent and A's child id (404), a revoked key of A and the key of a deleted
 * employee of A (401), and, on operation routes, an employee of A whose clients exclude the operation (404).
 * A's data (every company table, audit trail included) and A's answers are compared before and after.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { testApp, type Company, type TestApp } from './helpers'

beforeAll(async () => {
  await testApp()
}, 120_000)

const ALL_PERMISSIONS = [
  'clients.view', 'clients.edit', 'operations.view', 'operations.create', 'operations.approve', 'attachments.edit',
  'cost_centers.view', 'cost_centers.edit', 'messaging.manage', 'messaging.run', 'mesas.view', 'mesas.manage',
  'audit.view', 'metrics.view', 'ventanilla.manage', 'ventanilla.call', 'webhooks.manage', 'tills.operate', 'tills.supervise',
]

async function fixtures(t: TestApp, c: Company) {
  const call = async (method: string, path: string, body?: unknown, ok = [200, 201]) => {
    const r = await t.request(method, path, { key: c.key, body })
    if (!ok.includes(r.status)) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`)
    return r.body
  }
  const otherType = (await call('POST', '/api/operation-types', { name: 'Otro', kind: 'other' })).id as number
  const client = async (name: string, type: 0 | 1, currencies: string[]) => {
    const body = await call('POST', '/api/clients', { name, type, accounts: currencies.map((currency_name) => ({ currency_name })) })
    return { id: body.id as number, acc: Object.fromEntries(body.accounts.map((a: any) => [a.currency_name, a.id])) as Record<string, number> }
  }
  const caja = await client('Caja', 0, ['ARS', 'USD'])
  const outside = await client('Cliente fuera', 1, ['ARS'])
  const bare = await client('Sin saldo', 1, ['ARS'])
  const tag = (await call('POST', '/api/tags', { name: 'VIP', color: '#112233' })).id as number
  const spareTag = (await call('POST', '/api/tags', { name: 'Nuevo', color: '#445566' })).id as number
  await call('POST', `/api/clients/${caja.id}/tags`, { tag_id: tag })

  const employee = (await call('POST', '/api/employees', { email: `spare.${c.id}@fos.test`, name: 'Repuesto', permissions: ['clients.view'] })).id as number
  const apiKey = (await call('POST', `/api/employees/${employee}/api-keys`, { name: 'repuesto' })).id as number

  const legs = [{ account_id: caja.acc.ARS, amount: '1000' }, { account_id: caja.acc.USD, amount: -1 }]
  const operation = async (status: 'pending' | 'completed') =>
    (await call('POST', '/api/operations', { operation_type_id: otherType, client_id: caja.id, status, transactions: legs })).id as number
  const opPending = await operation('pending')
  const opCompleted = await operation('completed')
  const opCancel = await operation('pending')
  const opTrade = await operation('completed')
  const form = new FormData()
  form.append('file', new File(['comprobante'], 'recibo.txt', { type: 'text/plain' }))
  const attached = await t.request('POST', `/api/operations/${opPending}/attachments`, { key: c.key, raw: form })
  if (attached.status !== 201) throw new Error(`attachment: ${attached.status} ${JSON.stringify(attached.body)}`)

  // An exchange with its receipt, on the caja and without a customer: outside the scoped employee's clients.
  await call('POST', '/api/operation-types', { name: 'Compra de divisas', kind: 'exchange' })
  await call('PUT', '/api/ventanilla/rates', { rates: [{ currency: 'USD', buy: '1000', sell: '1100' }] })
  const opExchange = (await call('POST', '/api/exchanges', { side: 'buy', currency: 'USD', amount: '0.5', caja_id: caja.id })).operation.id as number
  const costCenter = (await call('POST', '/api/cost-centers', { name: 'Sueldos', client_id: outside.id, default_currency: 'ARS' })).id as number
  const tool = (
    await call('POST', '/api/messaging/tools', {
      name: 'Ajuste',
      fixed_config: { toolKind: 'other', operationTypeId: otherType, transactions: [{ accountId: caja.acc.ARS, amount: 5 }, { accountId: outside.acc.ARS, amount: -5 }] },
    })
  ).id as number
  const mesa = (
    await call('POST', '/api/mesas', { name: 'Mesa USD', local_currency: 'ARS', quote_currency: 'USD', costing_method: 'fifo', account_ids: [caja.acc.ARS, caja.acc.USD] })
  ).id as number
  const line = (await call('POST', `/api/mesas/${mesa}/lines`, { side: 'buy', local_amount: 1000, quote_amount: 1 })).id as number

  const service = (await call('POST', '/api/ventanilla/services', { name: 'Cambio', prefix: 'A' })).id as number
  const ticket = (await call('POST', '/api/ventanilla/tickets', { service_id: service, customer_name: 'Juan Pérez' })).id as number
  const calledTicket = (await call('POST', '/api/ventanilla/tickets', { service_id: service })).id as number
  await call('POST', `/api/ventanilla/tickets/${calledTicket}/call`, { desk: 'Caja 1' })
  const movingTicket = (await call('POST', '/api/ventanilla/tickets', { service_id: service })).id as number
  const kiosk = await call('POST', '/api/ventanilla/tokens', { name: 'Pantalla' })
  const revokedKiosk = await call('POST', '/api/ventanilla/tokens', { name: 'Vieja' })
  await call('DELETE', `/api/ventanilla/tokens/${revokedKiosk.id}`)
  const dispenser = await call('POST', '/api/ventanilla/dispenser-tokens', { name: 'Tablet' })
  const revokedDispenser = await call('POST', '/api/ventanilla/dispenser-tokens', { name: 'Tablet vieja' })
  await call('DELETE', `/api/ventanilla/dispenser-tokens/${revokedDispenser.id}`)
  const grant = await call('POST', `/api/clients/${caja.id}/external-grants`, {})
  const endpoint = (await call('POST', '/api/webhook-endpoints', { url: 'https://93.184.215.14/hook' })).id as number
  const event = (await call('GET', '/api/events?limit=1')).data[0].id as string
  // A caja of its own for the till routes, opened and closed once, so the first caja's operations stay unrestricted.
  const till = await client('Caja 2', 0, ['ARS'])
  await call('POST', `/api/cajas/${till.id}/open`, { counted: [{ currency: 'ARS', amount: 0 }] })
  const tillSession = (await call('POST', `/api/cajas/${till.id}/close`, { counted: [{ currency: 'ARS', amount: 0 }] })).id as number

  return {
    company: c, caja, outside, bare, tag, spareTag, employee, apiKey, opPending, opCompleted, opCancel, opTrade, opExchange,
    attachment: attached.body.id as number, costCenter, tool, mesa, line, service, ticket, calledTicket, movingTicket,
    kiosk: { id: kiosk.id as number, token: kiosk.token as string }, revokedKioskToken: revokedKiosk.token as string,
    dispenser: { id: dispenser.id as number, token: dispenser.token as string }, revokedDispenserToken: revokedDispenser.token as string,
    grant: { id: grant.id as number, token: grant.token as string }, endpoint, event, till, tillSession,
  }
}
type Fx = Awaited<ReturnType<typeof fixtures>>

interface Call {
  path: string
  body?: unknown
  /** A fresh multipart body per request. */
  form?: () => FormData
}
/**
 * tenant: company data, 404 for anyone else; operation: also client-scoped (404 outside the employee's clients);
 * platform: superadmin routes (bearer only, a company key is 401); credential: the path carries a secret
 * (kiosk token), not an id, so a revoked one is 404 and a live one is the credential itself.
 */
type Kind = 'tenant' | 'operation' | 'platform' | 'credential'
interface Case {
  kind: Kind
  /** Employee keys are refused (403 FORBIDDEN) before any record is looked up, whoever's the id is. */
  companyKeyOnly?: true
  /** `t`: the company whose record is named; `own`: the caller's company (body references); `parent`: owner of the first id. */
  call: (x: { t: Fx; own: Fx; parent: Fx }) => Call
}

const upload = () => {
  const f = new FormData()
  f.append('file', new File(['otro comprobante'], 'otro.txt', { type: 'text/plain' }))
  return f
}
const requestedBy = { contact_id: 1, phone: '+5491100000000' }

const CASES: Record<string, Case> = {
  'PATCH /api/superadmin/companies/{id}': { kind: 'platform', call: ({ t }) => ({ path: `/api/superadmin/companies/${t.company.id}`, body: { name: 'x' } }) },
  'POST /api/superadmin/companies/{id}/api-keys': { kind: 'platform', call: ({ t }) => ({ path: `/api/superadmin/companies/${t.company.id}/api-keys`, body: { name: 'x' } }) },

  'GET /api/employees/{id}': { kind: 'tenant', companyKeyOnly: true, call: ({ t }) => ({ path: `/api/employees/${t.employee}` }) },
  'PATCH /api/employees/{id}': { kind: 'tenant', companyKeyOnly: true, call: ({ t }) => ({ path: `/api/employees/${t.employee}`, body: { name: 'Cambiado' } }) },
  'DELETE /api/employees/{id}': { kind: 'tenant', companyKeyOnly: true, call: ({ t }) => ({ path: `/api/employees/${t.employee}` }) },
  'POST /api/employees/{id}/api-keys': { kind: 'tenant', companyKeyOnly: true, call: ({ t }) => ({ path: `/api/employees/${t.employee}/api-keys`, body: { name: 'intruso' } }) },
  'DELETE /api/api-keys/{id}': { kind: 'tenant', companyKeyOnly: true, call: ({ t }) => ({ path: `/api/api-keys/${t.apiKey}` }) },

  'GET /api/clients/{id}': { kind: 'tenant', call: ({ t }) => ({ path: `/api/clients/${t.caja.id}` }) },
  'PATCH /api/clients/{id}': { kind: 'tenant', call: ({ t }) => ({ path: `/api/clients/${t.caja.id}`, body: { name: 'Cambiado' } }) },
  'DELETE /api/clients/{id}': { kind: 'tenant', call: ({ t }) => ({ path: `/api/clients/${t.bare.id}` }) },
  'POST /api/clients/{id}/accounts': { kind: 'tenant', call: ({ t }) => ({ path: `/api/clients/${t.caja.id}/accounts`, body: { currency_name: 'EUR' } }) },
  'POST /api/clients/{id}/tags': { kind: 'tenant', call: ({ t, own }) => ({ path: `/api/clients/${t.caja.id}/tags`, body: { tag_id: own.spareTag } }) },
  'DELETE /api/clients/{id}/tags/{tagId}': { kind: 'tenant', call: ({ t, parent }) => ({ path: `/api/clients/${parent.caja.id}/tags/${t.tag}` }) },

  'GET /api/operations/{id}': { kind: 'operation', call: ({ t }) => ({ path: `/api/operations/${t.opPending}` }) },
  'POST /api/operations/{id}/approve': { kind: 'operation', call: ({ t }) => ({ path: `/api/operations/${t.opPending}/approve` }) },
  'POST /api/operations/{id}/revert': { kind: 'operation', call: ({ t }) => ({ path: `/api/operations/${t.opCompleted}/revert` }) },
  'POST /api/operations/{id}/cancel': { kind: 'operation', call: ({ t }) => ({ path: `/api/operations/${t.opCancel}/cancel` }) },
  'GET /api/operations/{id}/receipt': { kind: 'operation', call: ({ t }) => ({ path: `/api/operations/${t.opExchange}/receipt` }) },
  'GET /api/operations/{id}/attachments': { kind: 'operation', call: ({ t }) => ({ path: `/api/operations/${t.opPending}/attachments` }) },
  'POST /api/operations/{id}/attachments': { kind: 'operation', call: ({ t }) => ({ path: `/api/operations/${t.opPending}/attachments`, form: upload }) },
  'DELETE /api/operations/{id}/attachments/{attachmentId}': {
    kind: 'operation',
    call: ({ t, parent }) => ({ path: `/api/operations/${parent.opPending}/attachments/${t.attachment}` }),
  },

  'POST /api/cajas/{id}/open': { kind: 'operation', call: ({ t }) => ({ path: `/api/cajas/${t.till.id}/open`, body: { counted: [{ currency: 'ARS', amount: 0 }] } }) },
  'POST /api/cajas/{id}/close': { kind: 'operation', call: ({ t }) => ({ path: `/api/cajas/${t.till.id}/close`, body: { counted: [{ currency: 'ARS', amount: 0 }] } }) },
  'GET /api/cajas/{id}/sessions': { kind: 'operation', call: ({ t }) => ({ path: `/api/cajas/${t.till.id}/sessions` }) },
  'GET /api/till-sessions/{id}': { kind: 'operation', call: ({ t }) => ({ path: `/api/till-sessions/${t.tillSession}` }) },
  'GET /api/till-sessions/{id}/report': { kind: 'operation', call: ({ t }) => ({ path: `/api/till-sessions/${t.tillSession}/report?format=csv` }) },

  'GET /api/mesas/{id}': { kind: 'tenant', call: ({ t }) => ({ path: `/api/mesas/${t.mesa}` }) },
  'PATCH /api/mesas/{id}': { kind: 'tenant', call: ({ t }) => ({ path: `/api/mesas/${t.mesa}`, body: { name: 'Cambiada' } }) },
  'DELETE /api/mesas/{id}': { kind: 'tenant', call: ({ t }) => ({ path: `/api/mesas/${t.mesa}` }) },
  'GET /api/mesas/{id}/infer': { kind: 'tenant', call: ({ t, own }) => ({ path: `/api/mesas/${t.mesa}/infer?operation_id=${own.opTrade}` }) },
  'POST /api/mesas/{id}/infer': { kind: 'tenant', call: ({ t, own }) => ({ path: `/api/mesas/${t.mesa}/infer`, body: { operation_id: own.opTrade } }) },
  'GET /api/mesas/{id}/suggestions': { kind: 'tenant', call: ({ t }) => ({ path: `/api/mesas/${t.mesa}/suggestions` }) },
  'GET /api/mesas/{id}/lines': { kind: 'tenant', call: ({ t }) => ({ path: `/api/mesas/${t.mesa}/lines` }) },
  'POST /api/mesas/{id}/lines': {
    kind: 'tenant',
    call: ({ t }) => ({ path: `/api/mesas/${t.mesa}/lines`, body: { side: 'sell', local_amount: 1100, quote_amount: 1 } }),
  },
  'DELETE /api/mesas/{id}/lines/{lineId}': { kind: 'tenant', call: ({ t, parent }) => ({ path: `/api/mesas/${parent.mesa}/lines/${t.line}` }) },
  'GET /api/mesas/{id}/position': { kind: 'tenant', call: ({ t }) => ({ path: `/api/mesas/${t.mesa}/position` }) },

  'POST /api/cost-centers/{id}/budgets': {
    kind: 'tenant',
    call: ({ t }) => ({ path: `/api/cost-centers/${t.costCenter}/budgets`, body: { currency: 'ARS', year: 2026, period: 1, amount: 100, kind: 'expense' } }),
  },

  'GET /api/messaging/tools/{id}': { kind: 'tenant', call: ({ t }) => ({ path: `/api/messaging/tools/${t.tool}` }) },
  'PATCH /api/messaging/tools/{id}': { kind: 'tenant', call: ({ t }) => ({ path: `/api/messaging/tools/${t.tool}`, body: { name: 'Cambiada' } }) },
  'DELETE /api/messaging/tools/{id}': { kind: 'tenant', call: ({ t }) => ({ path: `/api/messaging/tools/${t.tool}` }) },
  'POST /api/messaging/tools/{id}/run': { kind: 'tenant', call: ({ t }) => ({ path: `/api/messaging/tools/${t.tool}/run`, body: { parameters: {}, requested_by: requestedBy } }) },

  'POST /api/clients/{id}/external-grants': { kind: 'tenant', call: ({ t }) => ({ path: `/api/clients/${t.caja.id}/external-grants`, body: {} }) },
  'DELETE /api/clients/{id}/external-grants/{grantId}': {
    kind: 'tenant',
    call: ({ t, parent }) => ({ path: `/api/clients/${parent.caja.id}/external-grants/${t.grant.id}` }),
  },
  'GET /api/external/clients/{id}/statement': { kind: 'tenant', call: ({ t }) => ({ path: `/api/external/clients/${t.caja.id}/statement` }) },

  'GET /api/public/ventanilla/{token}': { kind: 'credential', call: ({ t }) => ({ path: `/api/public/ventanilla/${t.kiosk.token}` }) },
  'GET /api/public/ventanilla/{token}/events': { kind: 'credential', call: ({ t }) => ({ path: `/api/public/ventanilla/${t.kiosk.token}/events` }) },
  'GET /api/events/{id}': { kind: 'tenant', call: ({ t }) => ({ path: `/api/events/${t.event}` }) },
  'POST /api/events/{id}/resend': { kind: 'tenant', call: ({ t }) => ({ path: `/api/events/${t.event}/resend`, body: {} }) },
  'GET /api/webhook-endpoints/{id}': { kind: 'tenant', call: ({ t }) => ({ path: `/api/webhook-endpoints/${t.endpoint}` }) },
  'PATCH /api/webhook-endpoints/{id}': { kind: 'tenant', call: ({ t }) => ({ path: `/api/webhook-endpoints/${t.endpoint}`, body: { description: 'Cambiado' } }) },
  'DELETE /api/webhook-endpoints/{id}': { kind: 'tenant', call: ({ t }) => ({ path: `/api/webhook-endpoints/${t.endpoint}` }) },
  'POST /api/webhook-endpoints/{id}/rotate-secret': { kind: 'tenant', call: ({ t }) => ({ path: `/api/webhook-endpoints/${t.endpoint}/rotate-secret` }) },
  'POST /api/webhook-endpoints/{id}/test': { kind: 'tenant', call: ({ t }) => ({ path: `/api/webhook-endpoints/${t.endpoint}/test` }) },
  'GET /api/webhook-endpoints/{id}/attempts': { kind: 'tenant', call: ({ t }) => ({ path: `/api/webhook-endpoints/${t.endpoint}/attempts` }) },
  'PATCH /api/ventanilla/services/{id}': { kind: 'tenant', call: ({ t }) => ({ path: `/api/ventanilla/services/${t.service}`, body: { name: 'Cambiado' } }) },
  'DELETE /api/ventanilla/services/{id}': { kind: 'tenant', call: ({ t }) => ({ path: `/api/ventanilla/services/${t.service}` }) },
  'DELETE /api/ventanilla/tokens/{id}': { kind: 'tenant', call: ({ t }) => ({ path: `/api/ventanilla/tokens/${t.kiosk.id}` }) },
  'DELETE /api/ventanilla/dispenser-tokens/{id}': { kind: 'tenant', call: ({ t }) => ({ path: `/api/ventanilla/dispenser-tokens/${t.dispenser.id}` }) },
  'POST /api/ventanilla/tickets/{id}/transfer': { kind: 'tenant', call: ({ t, own }) => ({ path: `/api/ventanilla/tickets/${t.movingTicket}/transfer`, body: { service_id: own.service } }) },
  'GET /api/public/ventanilla/{token}/services': { kind: 'credential', call: ({ t }) => ({ path: `/api/public/ventanilla/${t.dispenser.token}/services` }) },
  'POST /api/public/ventanilla/{token}/tickets': {
    kind: 'credential',
    call: ({ t }) => ({ path: `/api/public/ventanilla/${t.dispenser.token}/tickets`, body: { service_id: t.service } }),
  },
  'POST /api/ventanilla/tickets/{id}/call': { kind: 'tenant', call: ({ t }) => ({ path: `/api/ventanilla/tickets/${t.ticket}/call`, body: { desk: 'Caja 9' } }) },
  'POST /api/ventanilla/tickets/{id}/finish': { kind: 'tenant', call: ({ t }) => ({ path: `/api/ventanilla/tickets/${t.calledTicket}/finish` }) },
  'POST /api/ventanilla/tickets/{id}/no-show': { kind: 'tenant', call: ({ t }) => ({ path: `/api/ventanilla/tickets/${t.ticket}/no-show` }) },
  'PATCH /api/ventanilla/tickets/{id}': { kind: 'tenant', call: ({ t }) => ({ path: `/api/ventanilla/tickets/${t.movingTicket}`, body: { customer_name: 'Otro nombre' } }) },
}

/** Routes that take no path id but read lists of tenant data, compared before and after as A's visible state. */
const A_VIEWS = (a: Fx) => [
  '/api/employees', '/api/clients', `/api/clients/${a.caja.id}`, `/api/clients/${a.bare.id}`, '/api/tags', '/api/balances',
  '/api/operations?pageSize=200', `/api/operations/${a.opPending}/attachments`, '/api/mesas', `/api/mesas/${a.mesa}/lines`,
  '/api/cost-centers', '/api/messaging/tools', '/api/ventanilla/services', '/api/ventanilla/tokens', '/api/ventanilla/dispenser-tokens', '/api/ventanilla/queue',
  `/api/employees/${a.employee}`, '/api/webhook-endpoints', '/api/events?limit=500', '/api/cajas', `/api/till-sessions/${a.tillSession}`,
]

interface Route {
  method: string
  path: string
  params: string[]
}

/** Every row of company A in every company table (the audit trail included), as one comparable fingerprint. */
async function companyFingerprint(t: TestApp, companyId: number) {
  const tables = await t.ctx.database.rows<{ table_name: string; col: string }>(sql`
    select table_name, case when table_name = 'companies' then 'id' else 'company_id' end as col
      from information_schema.tables tb
     where table_schema = current_schema() and table_type = 'BASE TABLE'
       and (table_name = 'companies' or exists (select 1 from information_schema.columns c
             where c.table_schema = tb.table_schema and c.table_name = tb.table_name and c.column_name = 'company_id'))
     order by table_name`)
  const out: Record<string, { count: number; digest: string }> = {}
  for (const { table_name, col } of tables) {
    const [row] = await t.ctx.database.rows<{ count: number; digest: string }>(
      sql`select count(*)::int as count, md5(coalesce(string_agg(x::text, '|' order by x::text), '')) as digest
            from ${sql.identifier(table_name)} x where ${sql.identifier(col)} = ${companyId}`,
    )
    out[table_name] = row
  }
  return out
}

describe('tenant isolation matrix', () => {
  test('every route with a path id, called with company A ids by other identities, is 404/401 and changes nothing', async () => {
    const t = await testApp()
    const doc = (await t.request('GET', '/openapi.json')).body
    const routes: Route[] = []
    for (const [path, item] of Object.entries<Record<string, unknown>>(doc.paths)) {
      const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])
      if (params.length === 0) continue
      for (const method of Object.keys(item)) routes.push({ method: method.toUpperCase(), path, params })
    }
    const names = routes.map((r) => `${r.method} ${r.path}`)
    // A documented route with a path id and no entry here fails the suite: its author adds the fixture mapping.
    expect(names.filter((n) => !CASES[n])).toEqual([])
    expect(Object.keys(CASES).filter((n) => !names.includes(n))).toEqual([])

    const A = await fixtures(t, await t.newCompany({ mesas: true, ventanilla: true }))
    const B = await fixtures(t, await t.newCompany({ mesas: true, ventanilla: true }))
    const a = A.company
    const super_ = await t.superToken()
    const revokedKey = (await t.request('POST', `/api/superadmin/companies/${a.id}/api-keys`, { bearer: super_, body: { name: 'revocada' } })).body
    expect((await t.request('DELETE', `/api/api-keys/${revokedKey.id}`, { key: a.key })).status).toBe(200)
    const gone = await a.employee(ALL_PERMISSIONS)
    expect((await t.request('DELETE', `/api/employees/${gone.id}`, { key: a.key })).status).toBe(200)
    const scoped = await a.employee(ALL_PERMISSIONS, [A.outside.id])
    const bEmployee = await B.company.employee(ALL_PERMISSIONS)

    const send = (method: string, c: Call, auth: { key?: string; bearer?: string }) =>
      t.request(method, c.path, { ...auth, body: c.body, raw: c.form?.() })

    const viewsBefore = await Promise.all(A_VIEWS(A).map((p) => t.request('GET', p, { key: a.key })))
    const dataBefore = await companyFingerprint(t, a.id)

    const checked: string[] = []
    const failures: string[] = []
    const expectStatus = async (name: string, identity: string, method: string, c: Call, auth: { key?: string; bearer?: string }, status: number, code: string) => {
      const r = await send(method, c, auth)
      checked.push(`${name} × ${identity}`)
      if (r.status !== status || r.body?.code !== code) failures.push(`${name} × ${identity}: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`)
    }

    for (const route of routes) {
      const name = `${route.method} ${route.path}`
      const { kind, call, companyKeyOnly } = CASES[name]
      const onA = call({ t: A, own: B, parent: A })
      if (kind === 'platform') {
        await expectStatus(name, 'company B key', route.method, onA, { key: B.company.key }, 401, 'UNAUTHORIZED')
        continue
      }
      if (kind === 'credential') {
        const revoked = { path: onA.path.replace(A.kiosk.token, A.revokedKioskToken).replace(A.dispenser.token, A.revokedDispenserToken), body: onA.body }
        await expectStatus(name, 'revoked kiosk or dispenser token of A', route.method, revoked, {}, 404, 'NOT_FOUND')
        await expectStatus(name, 'revoked token of A + company B key', route.method, revoked, { key: B.company.key }, 404, 'NOT_FOUND')
        continue
      }
      await expectStatus(name, 'company B key', route.method, onA, { key: B.company.key }, 404, 'NOT_FOUND')
      if (companyKeyOnly) await expectStatus(name, 'employee of B (all permissions)', route.method, onA, { key: bEmployee.key }, 403, 'FORBIDDEN')
      else await expectStatus(name, 'employee of B (all permissions)', route.method, onA, { key: bEmployee.key }, 404, 'NOT_FOUND')
      if (route.params.length > 1)
        await expectStatus(name, 'company B key, B parent + A child', route.method, call({ t: A, own: B, parent: B }), { key: B.company.key }, 404, 'NOT_FOUND')
      await expectStatus(name, 'revoked key of A', route.method, onA, { key: revokedKey.key }, 401, 'UNAUTHORIZED')
      await expectStatus(name, 'deleted employee of A', route.method, onA, { key: gone.key }, 401, 'UNAUTHORIZED')
      if (kind === 'operation') await expectStatus(name, 'employee of A scoped to other clients', route.method, onA, { key: scoped.key }, 404, 'NOT_FOUND')
      if (name === 'GET /api/external/clients/{id}/statement') {
        await expectStatus(name, 'external grant of B', route.method, onA, { bearer: B.grant.token }, 404, 'NOT_FOUND')
        const otherClient = { path: `/api/external/clients/${A.outside.id}/statement` }
        await expectStatus(name, 'external grant of A for another client', route.method, otherClient, { bearer: A.grant.token }, 404, 'NOT_FOUND')
      }
    }

    // Audit rows of A's operations are invisible to the scoped employee; B's trail holds exactly B's rows.
    const auditIds = async (key: string, table: string) => {
      const r = await t.request('GET', `/api/audit-logs?table=${table}&pageSize=100`, { key })
      expect(r.status).toBe(200)
      return r.body.data as { entity: string; entity_id: number }[]
    }
    const aOps = [A.opPending, A.opCompleted, A.opCancel]
    expect((await auditIds(a.key, 'operations')).filter((row) => aOps.includes(row.entity_id)).length).toBeGreaterThan(0)
    expect((await auditIds(scoped.key, 'operations')).filter((row) => aOps.includes(row.entity_id))).toEqual([])
    expect(await auditIds(scoped.key, 'transactions')).toEqual([])
    expect(await auditIds(scoped.key, 'operation_attachments')).toEqual([])
    checked.push('GET /api/audit-logs × employee of A scoped to other clients')
    const bTrail = await t.request('GET', '/api/audit-logs?pageSize=1', { key: B.company.key })
    const [bRows] = await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from audit_logs where company_id = ${B.company.id}`)
    expect(bTrail.body.pagination.total).toBe(bRows.n)
    checked.push('GET /api/audit-logs × company B key')

    expect(failures).toEqual([])
    expect(await companyFingerprint(t, a.id)).toEqual(dataBefore)
    const viewsAfter = await Promise.all(A_VIEWS(A).map((p) => t.request('GET', p, { key: a.key })))
    // Signed download links carry their own expiry, so they differ between two reads of the same attachment.
    const stable = (replies: typeof viewsBefore) => replies.map((r) => [r.status, JSON.parse(JSON.stringify(r.body, (k, v) => (k === 'signed_url' ? null : v)))])
    expect(stable(viewsAfter)).toEqual(stable(viewsBefore))

    // Control: the same calls on B's own records with B's key succeed, so each 404 above came from tenancy alone.
    // Deletions run last, children before parents, so each control finds its record.
    const order = [...routes].sort((x, y) => Number(x.method === 'DELETE') - Number(y.method === 'DELETE') || (x.method === 'DELETE' ? y.params.length - x.params.length : 0))
    for (const route of order) {
      const name = `${route.method} ${route.path}`
      const { kind, call } = CASES[name]
      if (kind === 'platform' || route.path.endsWith('/events')) continue
      const r = await send(route.method, call({ t: B, own: B, parent: B }), { key: B.company.key })
      if (![200, 201, 202].includes(r.status)) failures.push(`control ${name}: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`)
    }
    expect(failures).toEqual([])

    console.log(`[isolation] ${routes.length} routes with path ids, ${checked.length} route × identity checks, all 404/401; company A unchanged`)
    expect(checked.length).toBeGreaterThan(routes.length * 2)
  }, 120_000)
})
