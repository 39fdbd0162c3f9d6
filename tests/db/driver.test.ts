import { describe, expect } from 'bun:test'
import { sql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import { unpipelined, type Db } from '../../db/client'
import { registerPool, transaction } from '../../db/driver'
import { fixedStatement } from '../../db/statement'
import { postgresTest } from '../helpers'

/*
 * The adapter in db/driver.ts and the one in db/client.ts (`unpipelined`) exist for behaviours of Drizzle and
 * postgres.js as released today. Each test below pins one of them: when a release changes it, the test fails and the
 * adapter can be reconsidered.
 */

const url = () => process.env.TEST_DATABASE_URL!
/** Statements the session has prepared (postgres.js's own start-up type query is turned off in these clients). */
const preparedCount = async (db: Db) => ((await db.execute(sql`select count(*)::int as n from pg_prepared_statements`)) as unknown as { n: number }[])[0]
const noTypeFetch = { fetch_types: false, onnotice: () => {} }

describe('database driver adapters', () => {
  postgresTest('Drizzle leaves a raw statement unprepared; a fixed statement run through the adapter is prepared', async () => {
    const client = postgres(url(), { max: 1, ...noTypeFetch })
    try {
      const db = drizzle(client) as unknown as Db
      await db.execute(sql`select ${1}::int as one`)
      await db.execute(sql`select ${2}::int as two`)
      // If this fails, Drizzle now prepares raw statements itself and runCompiled's postgres.js path may go.
      expect((await preparedCount(db)).n).toBe(0)

      registerPool(db, client)
      const FIXED = fixedStatement<{ v: number }>((p) => sql`select ${p.v}::int as v`)
      expect(await FIXED(db, { v: 7 })).toEqual([{ v: 7 }])
      expect(await FIXED(db, { v: 8 })).toEqual([{ v: 8 }])
      expect((await preparedCount(db)).n).toBe(1)
    } finally {
      await client.end({ timeout: 1 })
    }
  })

  postgresTest('behind transaction pooling a fixed statement carries its values as literals, read back exactly', async () => {
    const sent: { text: string; params: unknown[] }[] = []
    const client = postgres(url(), { max: 1, prepare: false, ...noTypeFetch, debug: (_: number, text: string, params: unknown[]) => sent.push({ text, params }) })
    try {
      const db = drizzle(client) as unknown as Db
      registerPool(db, client, { inlineValues: true })
      const ECHO = fixedStatement<{ s: string; n: number; b: boolean; z: string | null }>((p) => sql`select ${p.s}::text as s, ${p.n}::numeric as n, ${p.b}::boolean as b, ${p.z}::text as z`)
      const hostile = `it's \\'; drop table clients; -- $1 \u00e9 "q"`
      const [row] = (await transaction(db, async (tx) => ECHO(tx, { s: hostile, n: 1234567.125, b: true, z: null }))) as { s: string; n: string; b: boolean; z: null }[]
      expect(row).toEqual({ s: hostile, n: '1234567.125', b: true, z: null })
      // Sent as one text without parameters: the values are in it.
      const echo = sent.find((q) => q.text.includes('as s,'))!
      expect(echo.params).toEqual([])
      expect(echo.text).toContain(`'it''s`)
      expect((await preparedCount(db)).n).toBe(0)
    } finally {
      await client.end({ timeout: 1 })
    }
  })

  postgresTest('a transaction opened by the adapter commits, rolls back, nests and takes its isolation as Drizzle would', async () => {
    const client = postgres(url(), { max: 2, ...noTypeFetch })
    try {
      const db = drizzle(client) as unknown as Db
      registerPool(db, client)
      await db.execute(sql`create table if not exists driver_probe (v int)`)
      await db.execute(sql`truncate driver_probe`)
      await transaction(db, async (tx) => {
        await tx.execute(sql`insert into driver_probe values (1)`)
        await tx.transaction(async (inner) => {
          await inner.execute(sql`insert into driver_probe values (2)`)
        })
        await tx
          .transaction(async (inner) => {
            await inner.execute(sql`insert into driver_probe values (3)`)
            throw new Error('rolled back to the savepoint')
          })
          .catch(() => {})
      })
      await expect(
        transaction(db, async (tx) => {
          await tx.execute(sql`insert into driver_probe values (4)`)
          throw new Error('whole transaction rolled back')
        }),
      ).rejects.toThrow('whole transaction rolled back')
      const rows = (await db.execute(sql`select v from driver_probe order by v`)) as unknown as { v: number }[]
      expect(rows.map((r) => r.v)).toEqual([1, 2])
      const level = await transaction(db, async (tx) => ((await tx.execute(sql`show transaction_isolation`)) as unknown as object[])[0], {
        isolationLevel: 'repeatable read',
        accessMode: 'read only',
      })
      expect(level).toEqual({ transaction_isolation: 'repeatable read' })
      await db.execute(sql`drop table driver_probe`)
    } finally {
      await client.end({ timeout: 1 })
    }
  })

  postgresTest('postgres.js pipelines onto a busy connection; the adapter for transaction pooling never does', async () => {
    const written: string[] = []
    const options = { max: 1, ...noTypeFetch, debug: (_: number, text: string) => written.push(text) }
    const bare = postgres(url(), options)
    const gated = unpipelined(postgres(url(), options), 1)
    try {
      const race = async (client: typeof bare) => {
        written.length = 0
        const slow = client.unsafe('select pg_sleep(0.2)')
        const quick = client.unsafe('select 1 as quick')
        let seenWhileSlow = 0
        const first = slow.then(() => {
          seenWhileSlow = written.length
        })
        await Promise.all([first, quick])
        return seenWhileSlow
      }
      // Both statements were written before the first answered: pipelined (PgBouncer 1.18 loses the second).
      expect(await race(bare)).toBe(2)
      // Through the adapter the second is written only once the first has answered.
      expect(await race(gated)).toBe(1)
    } finally {
      await Promise.all([bare.end({ timeout: 1 }), gated.end({ timeout: 1 })])
    }
  })
})
