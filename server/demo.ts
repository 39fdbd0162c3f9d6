import { sql } from 'drizzle-orm'
import { companies } from '../db/schema'
import type { AppContext } from './context'
import type { App } from './app'
import { issueKey } from './access/keys'
import { createCompany } from './modules/superadmin/service'

/**
 * `bun run demo`: on an empty database, a demo exchange house made through the public API itself
 * (so it passes every validation a client would), then its key and kiosk link are printed.
 */
export async function seedDemo(ctx: AppContext, app: App): Promise<void> {
  const [{ count }] = await ctx.db.select({ count: sql<number>`count(*)::int` }).from(companies)
  if (count > 0) {
    console.log('Demo: the database already has data; nothing seeded.')
    return
  }
  const { company, key } = await ctx.db.transaction(async (tx) => {
    const company = await createCompany(tx, { name: 'Cambio Demo' })
    await tx.execute(sql`update companies set mesas_enabled = true, ventanilla_enabled = true where id = ${company.id}`)
    return { company, key: await issueKey(tx, company.id, null, 'demo') }
  })
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await app.handle(
      new Request(`${ctx.config.publicBaseUrl}${path}`, {
        method,
        headers: { 'x-api-key': key.key, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    )
    const json = await res.json()
    if (res.status >= 300) throw new Error(`demo seed: ${method} ${path} → ${res.status} ${JSON.stringify(json)}`)
    return json as any
  }

  const caja = await call('POST', '/api/clients', {
    name: 'Caja Central',
    description: 'Caja principal de la casa',
    type: 0,
    accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }, { currency_name: 'EUR' }],
  })
  const cliente = await call('POST', '/api/clients', {
    name: 'Juan Pérez',
    description: 'Cliente mayorista',
    type: 1,
    accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }],
  })
  const acc = (client: any, currency: string) => client.accounts.find((a: any) => a.currency_name === currency).id
  const ingreso = await call('POST', '/api/operation-types', { name: 'Ingreso de caja', kind: 'up_down' })
  const cambio = await call('POST', '/api/operation-types', { name: 'Compra de dólares', kind: 'exchange' })
  await call('POST', '/api/operations', {
    operation_type_id: ingreso.id,
    description: 'Fondeo inicial',
    status: 'completed',
    transactions: [
      { account_id: acc(caja, 'ARS'), amount: '25000000' },
      { account_id: acc(caja, 'USD'), amount: '20000' },
    ],
  })
  const compra = await call('POST', '/api/operations', {
    operation_type_id: cambio.id,
    client_id: cliente.id,
    description: 'Compra USD 1.000 a 1.180',
    transactions: [
      { account_id: acc(caja, 'USD'), amount: '1000' },
      { account_id: acc(caja, 'ARS'), amount: '-1180000' },
    ],
  })
  await call('POST', `/api/operations/${compra.id}/approve`)
  const mesa = await call('POST', '/api/mesas', {
    name: 'Mesa USD',
    local_currency: 'ARS',
    quote_currency: 'USD',
    costing_method: 'fifo',
    account_ids: [acc(caja, 'ARS'), acc(caja, 'USD')],
  })
  await call('POST', `/api/mesas/${mesa.id}/lines`, { operation_id: compra.id })
  await call('POST', `/api/mesas/${mesa.id}/lines`, { side: 'sell', local_amount: '240000', quote_amount: '200' })
  await call('PUT', '/api/ventanilla/settings', {
    displayName: 'Cambio Demo',
    logoUrl: '',
    showLogo: false,
    timezone: 'America/Argentina/Buenos_Aires',
    tickerText: 'Cotizaciones sujetas a cambio sin previo aviso · Horario: lunes a viernes de 10 a 17',
    announceSound: true,
    announceTts: true,
    privacyMode: 'first_last_initial',
  })
  await call('PUT', '/api/ventanilla/rates', {
    rates: [
      { currency: 'USD', buy: '1160', sell: '1200' },
      { currency: 'EUR', buy: '1250', sell: '1310' },
      { currency: 'BRL', buy: '205', sell: '225' },
    ],
  })
  const service = await call('POST', '/api/ventanilla/services', { name: 'Cambio', prefix: 'A' })
  await call('POST', '/api/ventanilla/tickets', { service_id: service.id, customer_name: 'María González' })
  await call('POST', '/api/ventanilla/tickets', { service_id: service.id, customer_name: 'Carlos Díaz' })
  await call('POST', '/api/ventanilla/calls', { desk: 'Caja 1' })
  const token = await call('POST', '/api/ventanilla/tokens', { name: 'TV sala de espera' })

  console.log(
    [
      '',
      `Demo company: ${company.name} (id ${company.id})`,
      `API key:      ${key.key}`,
      `Kiosk:        ${token.kiosk_url}`,
      `Try:          curl -H 'x-api-key: ${key.key}' ${ctx.config.publicBaseUrl}/api/clients`,
      '',
    ].join('\n'),
  )
}
