import type { AppContext } from '../../context'
import type { Caller } from '../../access/caller'
import { csvField, csvRecord, safeText } from './csv'
import { CSV_COLUMNS } from './model'
import { asOf, checkRowBound, claimExport, exportTx } from './limits'
import { jsonText, toJson } from '../../lib/money'
import { accountChunks, clientForCaller, csvRows, jsonRows, resolveRange, statementAccounts, type Reads, type StatementAccount } from './service'

/** Microsecond text from the database, cut to the millisecond precision of `toISOString()`. */
const millis = (instant: string | null) => instant && instant.replace(/(\.\d{3})\d*Z$/, '$1Z')

/** `JSON.stringify` of an object whose last key holds `[]`, without its closing `[]}`: the array's items follow. */
const openArray = (value: object, moneyStrings: boolean) => jsonText(value, moneyStrings).slice(0, -2)

const totalRows = (accounts: StatementAccount[]) => accounts.reduce((n, a) => n + a.rows, 0)

/**
 * Read from DATABASE_READ_URL, a standby that may lag the primary: the answer then says as of when (`as_of` in the
 * JSON, the `As-Of` header on both). Read from the primary the statement is current, and says nothing more, so its
 * bytes (and ETag) stay the same while its data does.
 */
const fromReplica = (app: AppContext) => Boolean(app.config.databaseReadUrl)

const encoder = new TextEncoder()

/** A body sent part by part as the reader takes them. */
function partsStream(parts: Uint8Array[]) {
  let next = 0
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (next < parts.length) controller.enqueue(parts[next++])
      else controller.close()
    },
  })
}

/**
 * One read-only snapshot, so the opening balances, the rows and the account balances agree with each other; on the
 * export pool, under one of the company's export slots and the row bound. The database writes the transactions as
 * finished JSON text batch by batch; the server only adds each account's head and hashes the bytes as they come,
 * because the answer carries the `ETag` of its exact bytes (the etag plugin leaves a tagged answer unread).
 */
export async function jsonStatement(app: AppContext, caller: Caller, clientId: number, from?: string, to?: string, moneyStrings = false) {
  const release = claimExport(app, caller.companyId)
  try {
    const hash = new Bun.CryptoHasher('sha1')
    const parts: Uint8Array[] = []
    let replicaAsOf: string | undefined
    const add = (text: string) => {
      const bytes = encoder.encode(text)
      hash.update(bytes)
      parts.push(bytes)
    }
    await exportTx(app, caller, 'snapshot', async (tx) => {
      const client = await clientForCaller(tx, caller, clientId)
      const range = await resolveRange(app.database, tx, caller.companyId, from, to)
      const accounts = await statementAccounts(app.database, tx, caller.companyId, clientId, range)
      checkRowBound(app, totalRows(accounts))
      if (fromReplica(app)) replicaAsOf = await asOf(tx)
      add(
        openArray({
          client: { id: client.id, name: client.name, type: client.type },
          timezone: range.timezone,
          from: millis(range.from),
          until: millis(range.until),
          ...(replicaAsOf && { as_of: replicaAsOf }),
          accounts: [],
        }, moneyStrings),
      )
      const inSnapshot: Reads = (fn) => fn(tx)
      for (const [i, account] of accounts.entries()) {
        add(
          (i > 0 ? ',' : '') +
            openArray({
              id: account.id,
              name: account.name,
              currency_name: account.currency_name,
              balance: toJson(account.balance),
              opening_balance: toJson(account.opening),
              closing_balance: toJson(account.closing),
              transactions: [],
            }, moneyStrings),
        )
        let first = true
        for await (const chunk of accountChunks(app.database, inSnapshot, account, range, jsonRows(moneyStrings), app.config.exports.restPercent)) {
          add(first ? chunk : `,${chunk}`)
          first = false
        }
        add(']}')
      }
      add(']}')
    })
    return new Response(partsStream(parts), {
      status: 200,
      headers: { 'content-type': 'application/json; charset=utf-8', etag: `"${hash.digest('base64url')}"`, ...(replicaAsOf && { 'as-of': replicaAsOf }) },
    })
  } finally {
    release()
  }
}

/**
 * Streams the CSV as rows are read, batch by batch, so a long range never sits in memory; access and the
 * range are checked before the first byte, so those failures are ordinary JSON errors. Each batch is its own
 * short read-only tenant transaction on the export pool: row-level security confines it, and no transaction stays
 * open while a slow reader drains the stream. The database writes each batch as finished CSV text. The company's
 * export slot is held until the stream ends or its reader goes away.
 */
export async function csvStatement(app: AppContext, caller: Caller, clientId: number, from?: string, to?: string) {
  const release = claimExport(app, caller.companyId)
  let opened
  try {
    opened = await exportTx(app, caller, 'read', async (tx) => {
      await clientForCaller(tx, caller, clientId)
      const range = await resolveRange(app.database, tx, caller.companyId, from, to)
      const accounts = await statementAccounts(app.database, tx, caller.companyId, clientId, range)
      checkRowBound(app, totalRows(accounts))
      return { range, accounts, asOf: fromReplica(app) ? await asOf(tx) : undefined }
    })
  } catch (e) {
    release()
    throw e
  }
  const { range, accounts, asOf: replicaAsOf } = opened
  const perBatch: Reads = (fn) => exportTx(app, caller, 'read', fn)
  async function* chunks() {
    yield csvRecord([...CSV_COLUMNS])
    for (const account of accounts) {
      const prefix = `${account.id},${csvField(safeText(account.name))},${csvField(safeText(account.currency_name))},`
      yield* accountChunks(app.database, perBatch, account, range, csvRows(prefix), app.config.exports.restPercent)
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
      ...(replicaAsOf && { 'as-of': replicaAsOf }),
    },
  })
}
