/**
 * A first integration, typed from the service's own OpenAPI document:
 *
 *   npx openapi-typescript https://fos.example/openapi.json -o api.d.ts
 *
 * then create a client with two accounts, record an operation (safe to retry: it carries an Idempotency-Key),
 * approve it, and list the clients with their balances.
 */
import createClient from 'openapi-fetch'
import type { components, paths } from './api'

type Client = components['schemas']['Client']
type Operation = components['schemas']['Operation']

export async function firstSteps(baseUrl: string, apiKey: string, fetch: (request: Request) => Promise<Response> = globalThis.fetch) {
  const api = createClient<paths>({ baseUrl, headers: { 'x-api-key': apiKey }, fetch })

  const created = await api.POST('/api/clients', {
    params: { header: { 'Idempotency-Key': crypto.randomUUID() } },
    body: { name: 'Juan Pérez', type: 1, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] },
  })
  if (!created.data) throw new Error(`client: ${created.error?.code} ${created.error?.error}`)
  const client: Client = created.data
  const [ars, usd] = client.accounts

  const type = await api.POST('/api/operation-types', { body: { name: 'Compra USD', kind: 'exchange' } })
  if (!type.data) throw new Error(`operation type: ${type.error?.code}`)

  // Generate the key once per business operation and reuse it on every retry of that same operation.
  const operationKey = crypto.randomUUID()
  const recorded = await api.POST('/api/operations', {
    params: { header: { 'Idempotency-Key': operationKey } },
    body: {
      operation_type_id: type.data.id,
      client_id: client.id,
      description: 'Compra de 100 USD a 1180',
      transactions: [
        { account_id: usd.id, amount: '100' },
        { account_id: ars.id, amount: '-118000' },
      ],
    },
  })
  if (!recorded.data) throw new Error(`operation: ${recorded.error?.code} ${recorded.error?.error}`)
  const operation: Operation = recorded.data

  const approved = await api.POST('/api/operations/{id}/approve', { params: { path: { id: operation.id } } })
  if (!approved.data) throw new Error(`approve: ${approved.error?.code}`)

  const listed = await api.GET('/api/clients', { params: { query: { page: 1, pageSize: 50, type: 1 } } })
  if (!listed.data) throw new Error(`list: ${listed.error?.code}`)
  const balances = listed.data.data.flatMap((c) => c.accounts.map((a) => `${c.name} ${a.currency_name} ${a.balance}`))

  return { client, operation, approvedTransactions: approved.data.approved_transactions, count: listed.data.count, balances }
}
