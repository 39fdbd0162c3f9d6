import { expect } from 'bun:test'
import type { Company, TestApp } from '../helpers'

/**
 * A branch ready to trade: the starter set's caja, operation and transaction types (made over the API, as a company
 * without the starter set would make them), a board with USD and EUR, and a waiting room to serve tickets from.
 */
export interface Branch {
  c: Company
  caja: { id: number; accounts: { id: number; currency_name: string }[] }
  account(currency: string): number
  serviceId: number
}

export async function branch(t: TestApp, opts: { rates?: { currency: string; buy: string; sell: string }[]; commissionType?: boolean; funded?: boolean } = {}): Promise<Branch> {
  const c = await t.newCompany({ ventanilla: true })
  const ok = async (method: string, path: string, body?: unknown) => {
    const r = await t.request(method, path, { key: c.key, body })
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`)
    return r.body
  }
  const caja = await ok('POST', '/api/clients', {
    name: 'Caja principal',
    type: 0,
    accounts: ['ARS', 'USD', 'EUR', 'BRL'].map((currency_name) => ({ currency_name })),
  })
  for (const [name, kind] of [
    ['Compra de divisas', 'exchange'],
    ['Venta de divisas', 'exchange'],
    ['Ingreso', 'up_down'],
  ])
    await ok('POST', '/api/operation-types', { name, kind })
  await ok('POST', '/api/transaction-types', { name: 'Capital', is_commission: false })
  if (opts.commissionType !== false) await ok('POST', '/api/transaction-types', { name: 'Comisión', is_commission: true })
  await ok('PUT', '/api/ventanilla/rates', {
    rates: opts.rates ?? [
      { currency: 'USD', buy: '1165.5', sell: '1185.5' },
      { currency: 'EUR', buy: '1250.25', sell: '1290.75' },
    ],
  })
  const service = await ok('POST', '/api/ventanilla/services', { name: 'Cambio', prefix: 'A' })
  const account = (currency: string) => caja.accounts.find((a: { currency_name: string }) => a.currency_name === currency)!.id
  if (opts.funded !== false) {
    const types = await ok('GET', '/api/operation-types')
    const ingreso = types.data.find((o: { name: string }) => o.name === 'Ingreso').id
    await ok('POST', '/api/operations', {
      operation_type_id: ingreso,
      status: 'completed',
      description: 'Fondo inicial',
      transactions: [
        { account_id: account('ARS'), amount: FUNDS.ARS },
        { account_id: account('USD'), amount: FUNDS.USD },
        { account_id: account('EUR'), amount: FUNDS.EUR },
      ],
    })
  }
  return { c, caja, account, serviceId: service.id }
}

/** What the caja holds before the first exchange. */
export const FUNDS = { ARS: '10000000', USD: '10000', EUR: '10000' }

/** A ticket called at a desk, ready to be served. */
export async function calledTicket(t: TestApp, b: Branch): Promise<number> {
  const taken = await t.request('POST', '/api/ventanilla/tickets', { key: b.c.key, body: { service_id: b.serviceId } })
  expect(taken.status).toBe(201)
  const called = await t.request('POST', `/api/ventanilla/tickets/${taken.body.id}/call`, { key: b.c.key, body: { desk: 'Caja 1' } })
  expect(called.status).toBe(200)
  return taken.body.id
}

export const balanceOf = async (t: TestApp, b: Branch, currency: string) => {
  const caja = await t.request('GET', `/api/clients/${b.caja.id}`, { key: b.c.key, headers: { accept: 'application/json; money=string' } })
  return caja.body.accounts.find((a: { currency_name: string }) => a.currency_name === currency).balance as string
}
