/**
 * EXPLAIN (ANALYZE, BUFFERS) of every query the hot read routes send, on the scale database, with the
 * parameters of a request of each benchmark mix; prints Markdown for bench/README.md. The statements are
 * captured from one real request (bench/lib/capture.ts), so the plans shown are those of the current code,
 * run inside the same transaction, role and settings as the route's.
 *
 *   bun bench/tools/explain.ts      (after bun bench/generate.ts; same env as the read bench)
 */
import postgres from 'postgres'
import { ensureScaleDatabase } from '../generate'
import { auditMix, clientMix } from '../read'
import { captureRoute } from '../lib/capture'

const { url } = await ensureScaleDatabase(() => {})
const sql = postgres(url, { max: 1, onnotice: () => {} })
const keys = (await sql`select company_id, key from bench_scale_keys order by company_id limit 10`) as unknown as { key: string }[]

const cases = [
  { route: '/api/clients', ...clientMix(keys)[0] },
  { route: '/api/audit-logs', ...auditMix(keys)[2 * keys.length] },
]
for (const c of cases) {
  const path = `${c.route}?${new URLSearchParams(Object.entries(c.query).map(([k, v]) => [k, String(v)]))}`
  const statements = await captureRoute(url, path, c.key)
  console.log(`### GET ${path}\n`)
  console.log(`Statements in order: ${statements.map(([t]) => `\`${t.slice(0, 30).replace(/\s+/g, ' ')}…\``).join(', ')}\n`)
  // On one connection, in order: the transaction and its settings (tenant role, row-level security) hold as in the route.
  const conn = await sql.reserve()
  for (const [text, params] of statements) {
    if (!/^\s*(select|with)/i.test(text) || /set_config/.test(text)) {
      await conn.unsafe(text, params as never[])
      continue
    }
    // Twice: the second run is the warm one the benchmark sees.
    await conn.unsafe(`explain (analyze, buffers) ${text}`, params as never[])
    const plan = await conn.unsafe(`explain (analyze, buffers) ${text}`, params as never[])
    const shown = params.map((p) => (typeof p === 'string' && /^[0-9a-f]{12}$/.test(p) ? '<key prefix>' : p))
    console.log('```sql')
    console.log(`${text}\n-- params: ${JSON.stringify(shown)}`)
    console.log('```\n```')
    for (const row of plan) console.log(String(row['QUERY PLAN']).replace(/'[0-9a-f]{12}'::text/g, "'<key prefix>'::text"))
    console.log('```\n')
  }
  conn.release()
}
await sql.end()
process.exit(0)
