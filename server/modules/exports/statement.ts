import type { AppContext } from '../../context'
import { readSnapshot } from '../../lib/write'
import { csvRecord, safeText } from './csv'
import { CSV_COLUMNS } from './model'
import type { Tx } from '../../../db/client'
import { checkRowBound, claimExport, exportDb, statementRows } from './limits'
import { accountRows, resolveRange, statementAccounts, statementClient, type Range, type StatementAccount, type StatementReader } from './service'

const num = (value: { toString(): string }) => Number(value.toString())
/** Microsecond text from the database, cut to the millisecond precision of `toISOString()`. */
const millis = (instant: string | null) => instant && instant.replace(/(\.\d{3})\d*Z$/, '$1Z')

/** One read-only snapshot, so the opening balances, the rows and the account balances agree with each other. */
export async function jsonStatement(app: AppContext, reader: StatementReader, clientId: number, from?: string, to?: string) {
  const client = await statementClient(app.db, reader, clientId)
  const range = await resolveRange(app.database, reader.companyId, from, to)
  const release = claimExport(app, reader.companyId)
  try {
    return await readSnapshot(exportDb(app), reader.companyId, (tx) => jsonBody(app, tx, client, clientId, reader.companyId, range))
  } finally {
    release()
  }
}

async function jsonBody(app: AppContext, tx: Tx, client: { id: number; name: string; type: number }, clientId: number, companyId: number, range: Range) {
  const accounts = await statementAccounts(app.database, tx, companyId, clientId, range)
  checkRowBound(app, await statementRows(app.database, tx, accounts, range))
  const out = []
  for (const account of accounts) {
    const transactions = []
    let closing = account.opening_balance
    for await (const batch of accountRows(app.database, tx, account, range)) {
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
}

/**
 * Streams the CSV as rows are read, batch by batch, so a long range never sits in memory; access and the
 * range are checked before the first byte, so those failures are ordinary JSON errors.
 */
export async function csvStatement(app: AppContext, reader: StatementReader, clientId: number, from?: string, to?: string) {
  await statementClient(app.db, reader, clientId)
  const range = await resolveRange(app.database, reader.companyId, from, to)
  const release = claimExport(app, reader.companyId)
  const db = exportDb(app)
  let accounts: StatementAccount[]
  try {
    accounts = await statementAccounts(app.database, db, reader.companyId, clientId, range)
    checkRowBound(app, await statementRows(app.database, db, accounts, range))
  } catch (e) {
    release()
    throw e
  }
  const encoder = new TextEncoder()
  async function* chunks() {
    yield csvRecord([...CSV_COLUMNS])
    for (const account of accounts) {
      for await (const batch of accountRows(app.database, db, account, range)) {
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
