import type { AppContext } from '../../context'
import type { Caller } from '../../access/caller'
import { csvRecord, safeText } from './csv'
import { CSV_COLUMNS } from './model'
import { checkRowBound, claimExport, exportTx, statementRows } from './limits'
import { accountRows, clientForCaller, resolveRange, statementAccounts, type Reads } from './service'

const num = (value: { toString(): string }) => Number(value.toString())
/** Microsecond text from the database, cut to the millisecond precision of `toISOString()`. */
const millis = (instant: string | null) => instant && instant.replace(/(\.\d{3})\d*Z$/, '$1Z')

/**
 * One read-only snapshot, so the opening balances, the rows and the account balances agree with each other; on the
 * export pool, under one of the company's export slots and the row bound.
 */
export async function jsonStatement(app: AppContext, caller: Caller, clientId: number, from?: string, to?: string) {
  const release = claimExport(app, caller.companyId)
  try {
    return await snapshotStatement(app, caller, clientId, from, to)
  } finally {
    release()
  }
}

function snapshotStatement(app: AppContext, caller: Caller, clientId: number, from?: string, to?: string) {
  return exportTx(app, caller, 'snapshot', async (tx) => {
    const client = await clientForCaller(tx, caller, clientId)
    const range = await resolveRange(app.database, tx, caller.companyId, from, to)
    const accounts = await statementAccounts(app.database, tx, caller.companyId, clientId, range)
    checkRowBound(app, await statementRows(app.database, tx, accounts, range))
    const inSnapshot: Reads = (fn) => fn(tx)
    const out = []
    for (const account of accounts) {
      const transactions = []
      let closing = account.opening_balance
      for await (const batch of accountRows(app.database, inSnapshot, account, range)) {
        for (const row of batch) {
          transactions.push({
            id: row.transaction_id,
            operation_id: row.operation_id,
            completed_at: row.completed_at,
            description: row.description,
            amount: num(row.amount),
            running_balance: num(row.running_balance),
          })
          closing = row.running_balance
        }
      }
      out.push({
        id: account.id,
        name: account.name,
        currency_name: account.currency_name,
        balance: num(account.balance),
        opening_balance: num(account.opening_balance),
        closing_balance: num(closing),
        transactions,
      })
    }
    return {
      client: { id: client.id, name: client.name, type: client.type },
      timezone: range.timezone,
      from: millis(range.from),
      until: millis(range.until),
      accounts: out,
    }
  })
}

/**
 * Streams the CSV as rows are read, batch by batch, so a long range never sits in memory; access and the
 * range are checked before the first byte, so those failures are ordinary JSON errors. Each batch is its own
 * short read-only tenant transaction on the export pool: row-level security confines it, and no transaction stays
 * open while a slow reader drains the stream. The company's export slot is held until the stream ends or its reader
 * goes away.
 */
export async function csvStatement(app: AppContext, caller: Caller, clientId: number, from?: string, to?: string) {
  const release = claimExport(app, caller.companyId)
  let opened
  try {
    opened = await exportTx(app, caller, 'read', async (tx) => {
      await clientForCaller(tx, caller, clientId)
      const range = await resolveRange(app.database, tx, caller.companyId, from, to)
      const accounts = await statementAccounts(app.database, tx, caller.companyId, clientId, range)
      checkRowBound(app, await statementRows(app.database, tx, accounts, range))
      return { range, accounts }
    })
  } catch (e) {
    release()
    throw e
  }
  const { range, accounts } = opened
  const perBatch: Reads = (fn) => exportTx(app, caller, 'read', fn)
  const encoder = new TextEncoder()
  async function* chunks() {
    yield csvRecord([...CSV_COLUMNS])
    for (const account of accounts) {
      for await (const batch of accountRows(app.database, perBatch, account, range)) {
        yield batch
          .map((r) =>
            csvRecord([
              String(r.account_id),
              safeText(r.account_name),
              safeText(r.currency),
              String(r.transaction_id),
              String(r.operation_id),
              r.completed_at,
              safeText(r.description),
              r.amount.toFixed(),
              r.running_balance.toFixed(),
            ]),
          )
          .join('')
      }
    }
  }
  const source = chunks()
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      let next: IteratorResult<string>
      try {
        next = await source.next()
      } catch (e) {
        release()
        throw e
      }
      if (next.done) {
        release()
        controller.close()
      } else controller.enqueue(encoder.encode(next.value))
    },
    async cancel() {
      release()
      await source.return(undefined)
    },
  })
  return new Response(body, {
    status: 200,
    headers: {
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="statement-${clientId}.csv"`,
      'cache-control': 'no-store',
    },
  })
}
