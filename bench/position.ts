/**
 * Cost of recomputing a mesa's position from its blotter, at 10,000 and 100,000 lines.
 * 1. The pure costing engine (fifo and wac) on generated trades: time per recomputation, lines per second,
 *    and the 100k/10k time ratio (about 10 when the cost grows linearly).
 * 2. The same through `GET /api/mesas/{id}/position` on Postgres (in-process `app.handle`, no port), which adds
 *    reading the lines and the JSON answer. Runs on a throwaway database it creates and drops; skipped when no
 *    Postgres answers.
 *
 *   bun bench/position.ts     (env: BENCH_ADMIN_URL, BENCH_REPEAT)
 */
import postgres from 'postgres'
import { sql } from 'drizzle-orm'
import { computePosition, type CostingMethod, type Trade } from '../server/modules/mesas/costing'
import { D } from '../server/lib/money'
import { loadConfig } from '../server/config'
import { createApp } from '../server/app'
import type { AppContext } from '../server/context'
import { openDatabase } from '../db/client'
import { createStore } from '../server/infra/storage'
import { issueKey } from '../server/access/keys'
import { figure, printFigures, type Figure } from './lib/common'
import { DomainEvents } from '../server/lib/events'

const ADMIN_URL = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const REPEAT = Number(process.env.BENCH_REPEAT ?? 7)
const SIZES = [10_000, 100_000]

/** Deterministic trades: about 60% buys, amounts with six decimals, rates drifting around 1000. */
function generate(n: number): Trade[] {
  let state = 0x2545f491
  const next = () => {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0
    return state / 2 ** 32
  }
  const out: Trade[] = new Array(n)
  for (let i = 0; i < n; i++) {
    const quote = new D(Math.floor(next() * 1e9) + 1).dividedBy(1e6)
    const fx = new D(900 + Math.floor(next() * 200_000) / 1000)
    out[i] = { id: i + 1, side: next() < 0.6 ? 'buy' : 'sell', quoteAmount: quote, localAmount: quote.times(fx).toDecimalPlaces(6) }
  }
  return out
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

async function time(fn: () => unknown | Promise<unknown>) {
  await fn()
  const samples: number[] = []
  for (let i = 0; i < REPEAT; i++) {
    const started = performance.now()
    await fn()
    samples.push(performance.now() - started)
  }
  return median(samples)
}

const reported: Record<string, Record<number, number>> = {}

function report(label: string, ms: Record<number, number>) {
  reported[label] = ms
  for (const n of SIZES)
    console.log(`${label.padEnd(28)} ${String(n).padStart(7)} lines  ${ms[n].toFixed(1).padStart(9)} ms  ${Math.round((n / ms[n]) * 1000).toLocaleString('en-US').padStart(11)} lines/s`)
  console.log(`${label.padEnd(28)} ratio 100k/10k: ${(ms[SIZES[1]] / ms[SIZES[0]]).toFixed(2)}`)
}

async function pureEngine() {
  for (const method of ['fifo', 'wac'] as CostingMethod[]) {
    const ms: Record<number, number> = {}
    for (const n of SIZES) {
      const trades = generate(n)
      ms[n] = await time(() => computePosition(method, trades))
    }
    report(`engine ${method}`, ms)
  }
}

async function throughHttp() {
  const probe = postgres(ADMIN_URL, { max: 1, connect_timeout: 3, onnotice: () => {} })
  try {
    await probe`select 1`
  } catch {
    console.log('http: skipped, no Postgres at BENCH_ADMIN_URL')
    await probe.end({ timeout: 1 })
    return
  }
  const name = `fos_bench_position_${process.pid}`
  await probe.unsafe(`create database ${name}`)
  const url = new URL(ADMIN_URL)
  url.pathname = `/${name}`
  const database = await openDatabase({ url: url.toString(), poolMax: 4 })
  try {
    const config = {
      ...loadConfig({ DATA_DIR: `/tmp/fos-bench-${process.pid}`, SIGNING_SECRET: 'bench-signing-secret-0123456789' }),
      databaseUrl: url.toString(),
      rateLimit: { perKey: 0, perIp: 0 },
    }
    const ctx: AppContext = { config, database, db: database.db, store: createStore(config), clock: () => new Date(), log: () => {}, events: new DomainEvents() }
    const app = createApp(ctx)
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await app.handle(
        new Request(`http://bench${path}`, {
          method,
          headers: { 'x-api-key': key, ...(body !== undefined && { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
      )
      const json = (await res.json()) as any
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`)
      return json
    }
    const [{ id: companyId }] = await database.rows<{ id: number }>(sql`insert into companies (name, mesas_enabled) values ('Bench', true) returning id`)
    const { key } = await database.db.transaction((tx) => issueKey(tx, companyId, null, 'bench'))
    const ms: Record<number, Record<string, number>> = {}
    for (const n of SIZES) {
      const caja = await call('POST', '/api/clients', { name: `Caja ${n}`, type: 0, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] })
      const mesa = await call('POST', '/api/mesas', {
        name: `Mesa ${n}`,
        local_currency: 'ARS',
        quote_currency: 'USD',
        costing_method: 'fifo',
        account_ids: caja.accounts.map((a: { id: number }) => a.id),
      })
      // Seeded in one statement; the blotter's shape, not how it was typed in, is what is measured.
      await database.rows(sql`
        insert into mesa_lines (company_id, mesa_id, side, local_amount, quote_amount, fx, source, traded_at)
        select ${companyId}, ${mesa.id},
               case when (g * 7919) % 10 < 6 then 'buy' else 'sell' end,
               round((1 + (g * 104729) % 100000 / 100.0) * (900 + (g * 31) % 200), 6),
               1 + (g * 104729) % 100000 / 100.0,
               900 + (g * 31) % 200,
               'fabricated',
               timestamptz '2030-01-01' + g * interval '1 second'
        from generate_series(1::bigint, ${n}::bigint) g`)
      await database.rows(sql`analyze mesa_lines`)
      ms[n] = {}
      for (const method of ['fifo', 'wac']) {
        await call('PATCH', `/api/mesas/${mesa.id}`, { costing_method: method })
        ms[n][method] = await time(() => call('GET', `/api/mesas/${mesa.id}/position`))
      }
    }
    for (const method of ['fifo', 'wac']) report(`http GET position ${method}`, Object.fromEntries(SIZES.map((n) => [n, ms[n][method]])))
  } finally {
    await database.close()
    await probe.unsafe(`drop database if exists ${name} with (force)`)
    await probe.end({ timeout: 1 })
  }
}

console.log(`median of ${REPEAT} recomputations after one warm-up`)
await pureEngine()
await throughHttp()

// For bun run bench: the engine against linear growth from 10k lines, the route against the bare engine.
const [small, big] = SIZES
const figures: Figure[] = []
for (const method of ['fifo', 'wac']) {
  const engine = reported[`engine ${method}`]
  figures.push(figure(`position engine ${method} ${big / 1000}k lines vs 10 × ${small / 1000}k`, engine[big], (engine[small] * big) / small, 'ms'))
  const http = reported[`http GET position ${method}`]
  if (http) figures.push(figure(`GET /api/mesas/{id}/position ${method} ${big / 1000}k lines vs engine alone`, http[big], engine[big], 'ms'))
}
printFigures(figures)
