/**
 * The statements one real request sends to the database, captured at the driver: the app is built on a
 * postgres.js client whose `unsafe` and `begin` record what passes through them, and the route is called once
 * through `app.handle`. Transaction boundaries are kept as `begin <options>` / `commit` entries.
 */
import postgres from 'postgres'
import { drizzle } from 'drizzle-orm/postgres-js'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as schema from '../../db/schema'
import { loadConfig } from '../../server/config'
import { createApp } from '../../server/app'
import type { AppContext } from '../../server/context'
import { rowsOf, type Database, type Db } from '../../db/client'
import { createStore } from '../../server/infra/storage'
import { DomainEvents } from '../../server/lib/events'

export type Statement = [text: string, params: unknown[]]

function recording<T extends object>(client: T, into: Statement[]): T {
  const sql = client as unknown as Record<string, (...args: unknown[]) => unknown>
  const unsafe = sql.unsafe.bind(client)
  sql.unsafe = (...args: unknown[]) => {
    // The driver's own transaction statements are represented by the begin/commit entries below.
    if (!/^(begin|commit|rollback)\b/i.test(args[0] as string)) into.push([args[0] as string, Array.isArray(args[1]) ? (args[1] as unknown[]) : []])
    return unsafe(...args)
  }
  const begin = sql.begin?.bind(client)
  if (begin)
    sql.begin = (...args: unknown[]) => {
      const fn = args.pop() as (inner: object) => Promise<unknown>
      into.push([`begin${typeof args[0] === 'string' ? ` ${args[0]}` : ''}`, []])
      return (begin(...args, (inner: object) => fn(recording(inner, into))) as Promise<unknown>).then((r) => {
        into.push(['commit', []])
        return r
      })
    }
  return client
}

/**
 * Calls `path` (GET, or `init.method` with a JSON body) with `key` on the app over `url`, once the app has served the
 * key; returns the statements in order. Throws unless 2xx.
 */
export async function captureRoute(url: string, path: string, key: string, init: { method?: string; body?: unknown } = {}): Promise<Statement[]> {
  const statements: Statement[] = []
  const client = recording(postgres(url, { max: 1, onnotice: () => {} }), statements)
  const db = drizzle(client, { schema }) as unknown as Db
  const dataDir = mkdtempSync(join(tmpdir(), 'fos-bench-capture-'))
  const config = { ...loadConfig({ DATA_DIR: dataDir, SIGNING_SECRET: 'bench-signing-secret-0123456789' }), databaseUrl: url, rateLimit: { perKey: 0, perIp: 0, perCompany: 0 } }
  const database = { kind: 'postgres', db, rows: async (q: Parameters<Db['execute']>[0], on: Db = db) => rowsOf(await on.execute(q)), listen: async () => async () => {}, close: async () => {} } as unknown as Database
  const ctx: AppContext = { config, database, db, store: createStore(config), clock: () => new Date(), log: () => {}, events: new DomainEvents() }
  try {
    const headers: Record<string, string> = { 'x-api-key': key }
    const app = createApp(ctx)
    // A server that has served the key before remembers its caller and sends no lookup of its own (server/access/
    // policy.ts): the statements of such a request are the ones every later request sends, so they are captured.
    const warm = await app.handle(new Request('http://localhost/api/tags', { headers }))
    if (warm.status !== 200) throw new Error(`warming the key: ${warm.status}`)
    statements.length = 0
    if (init.body !== undefined) headers['content-type'] = 'application/json'
    const body = init.body === undefined ? undefined : JSON.stringify(init.body)
    const res = await app.handle(new Request(`http://localhost${path}`, { method: init.method ?? 'GET', headers, body }))
    if (res.status < 200 || res.status > 299) throw new Error(`${path}: ${res.status} ${(await res.text()).slice(0, 200)}`)
    await res.arrayBuffer()
    return statements
  } finally {
    await client.end()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

/**
 * A pool to replay captured statements on: JSON parameters go out as the text they were captured as, as the app's
 * client sends them (its driver writes JSON itself and leaves the text alone); a plain client would encode that text
 * again as a JSON string.
 */
export function replayClient(url: string, max: number): postgres.Sql {
  const sql = postgres(url, { max, onnotice: () => {} })
  for (const type of [114, 3802]) sql.options.serializers[type] = (x: unknown) => x
  return sql
}

/**
 * Replays captured statements on a pool (`replayClient`), prepared, each transaction on one connection with its options:
 * the same work the route gives the database, minus everything the service does in between.
 */
export async function replay(sql: postgres.Sql, statements: Statement[]) {
  for (let i = 0; i < statements.length; i++) {
    const [text, params] = statements[i]
    if (!text.startsWith('begin')) {
      await sql.unsafe(text, params as never[], { prepare: params.length > 0 })
      continue
    }
    const end = statements.findIndex(([t], j) => j > i && t === 'commit')
    const inner = statements.slice(i + 1, end)
    const options = text.slice('begin'.length).trim()
    const body = async (tx: postgres.TransactionSql) => {
      for (const [t, p] of inner) await tx.unsafe(t, p as never[], { prepare: p.length > 0 })
    }
    await (options ? sql.begin(options, body) : sql.begin(body))
    i = end
  }
}

/**
 * Statements captured from a request about operation `captured`, made about operation `id`: the id swapped wherever
 * it was bound, as a number, as text and as the one-element array the blotter's probe takes. Capture with an id no
 * other parameter shares (the company's id, say), or that one is swapped too.
 */
export function aboutOperation(statements: Statement[], captured: number, id: number): Statement[] {
  const swap = new Map<unknown, unknown>([
    [captured, id],
    [String(captured), String(id)],
    [`{${captured}}`, `{${id}}`],
  ])
  return statements.map(([text, params]) => [text, params.map((p) => (swap.has(p) ? swap.get(p) : p))])
}
