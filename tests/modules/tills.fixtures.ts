import { expect } from 'bun:test'
import Decimal from 'decimal.js'
import type { TestApp } from '../helpers'
import { branch, type Branch } from './exchanges.fixtures'

/** A branch ready to trade (exchanges.fixtures) whose company also has the "Ajuste de caja" type, unless told not to. */
export async function tillBranch(t: TestApp, opts: { adjustmentType?: boolean } = {}): Promise<Branch & { adjustmentTypeId: number | null; ingresoTypeId: number }> {
  const b = await branch(t)
  const adjustment =
    opts.adjustmentType === false ? null : await t.request('POST', '/api/operation-types', { key: b.c.key, body: { name: 'Ajuste de caja', kind: 'other' } })
  if (adjustment) expect(adjustment.status).toBe(201)
  const types = await t.request('GET', '/api/operation-types', { key: b.c.key })
  const ingreso = types.body.data.find((o: { name: string }) => o.name === 'Ingreso').id as number
  return { ...b, adjustmentTypeId: adjustment?.body.id ?? null, ingresoTypeId: ingreso }
}

/** Exact decimal text of every balance of the caja, by currency. */
export async function balances(t: TestApp, b: Branch): Promise<Record<string, string>> {
  const caja = await t.request('GET', `/api/clients/${b.caja.id}`, { key: b.c.key, headers: { accept: 'application/json; money=string' } })
  return Object.fromEntries(caja.body.accounts.map((a: { currency_name: string; balance: string }) => [a.currency_name, a.balance]))
}

/** A count per currency equal to `of` (the balances), with `change` added to some currencies. */
export const countOf = (of: Record<string, string>, change: Record<string, string> = {}) =>
  Object.entries(of).map(([currency, amount]) => ({ currency, amount: change[currency] ? new Decimal(amount).plus(change[currency]).toFixed() : amount }))

export const moneyStrings = { accept: 'application/json; money=string' }
