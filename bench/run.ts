/**
 * `bun run bench [-- name …]`: runs every benchmark under bench/ as its own child process, one after another,
 * and prints one table of every figure: ours, the ceiling measured in the same run, the ratio and the goal.
 *
 * Protocol: a bench script ends its output with one line `BENCH_JSON [{ figure, ours, ceiling, ratio, unit, goal }]`
 * (see bench/lib/common.ts); `goal` is null or `ratio >= x`, `ratio <= x`, `>= x`, `<= x` (the last two on `ours`).
 * A script that ends without that line shows up as a failed row.
 *
 * Names pick a subset: a script name (`read`, `approve`, `sse`, …, or `generate` alone) or a part of the read
 * bench (`clients`, `audit`, `start`). Each script is stopped after BENCH_TIMEOUT_MINUTES (default 30).
 */
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { envNumber, ROOT, type Figure } from './lib/common'

const TIMEOUT_MS = envNumber('BENCH_TIMEOUT_MINUTES', 30) * 60_000
/** Parts of bench/read.ts that can run alone. */
const READ_PARTS = ['clients', 'audit', 'start']
/** The data set first, so its time is its own row and not hidden in the first read figures. */
const FIRST = ['generate', 'read']

const scripts = readdirSync(import.meta.dir)
  .filter((f) => f.endsWith('.ts') && f !== 'run.ts')
  .map((f) => f.slice(0, -3))
  .sort((a, b) => (FIRST.indexOf(a) + 1 || 99) - (FIRST.indexOf(b) + 1 || 99) || a.localeCompare(b))

const asked = process.argv.slice(2).filter((a) => a !== '--')
const unknown = asked.filter((a) => !scripts.includes(a) && !READ_PARTS.includes(a))
if (unknown.length) {
  console.error(`unknown bench ${unknown.join(', ')}; choose from ${[...scripts, ...READ_PARTS].join(', ')}`)
  process.exit(2)
}
const parts = asked.filter((a) => READ_PARTS.includes(a))
const selected = asked.length === 0 ? scripts : scripts.filter((s) => asked.includes(s) || (s === 'read' && parts.length > 0))

interface Row extends Figure {
  bench: string
}

async function runOne(name: string): Promise<{ rows: Row[]; ok: boolean }> {
  const started = performance.now()
  console.log(`\n=== ${name} ===`)
  const env = { ...process.env, ...(name === 'read' && parts.length > 0 && { BENCH_PARTS: parts.join(',') }) }
  const proc = Bun.spawn([process.execPath, join('bench', `${name}.ts`)], { cwd: ROOT, env, stdout: 'pipe', stderr: 'inherit' })
  const killer = setTimeout(() => {
    console.log(`${name}: stopped after ${TIMEOUT_MS / 60_000} minutes`)
    proc.kill('SIGKILL')
  }, TIMEOUT_MS)
  let last: Figure[] | null = null
  let pending = ''
  const decoder = new TextDecoder()
  for await (const chunk of proc.stdout) {
    pending += decoder.decode(chunk, { stream: true })
    const lines = pending.split('\n')
    pending = lines.pop()!
    for (const line of lines) {
      if (line.startsWith('BENCH_JSON ')) last = JSON.parse(line.slice('BENCH_JSON '.length)) as Figure[]
      else console.log(`  ${line}`)
    }
  }
  if (pending.startsWith('BENCH_JSON ')) last = JSON.parse(pending.slice('BENCH_JSON '.length)) as Figure[]
  await proc.exited
  clearTimeout(killer)
  console.log(`${name}: exit ${proc.exitCode} after ${((performance.now() - started) / 1000).toFixed(0)} s`)
  if (!last) return { rows: [{ bench: name, figure: `FAILED: no BENCH_JSON line (exit ${proc.exitCode})`, ours: NaN, ceiling: null, ratio: null, unit: '', goal: null }], ok: false }
  return { rows: last.map((f) => ({ bench: name, ...f })), ok: proc.exitCode === 0 }
}

/** true / false for a goal this table understands, null when there is none. */
export function met(f: Figure): boolean | null {
  if (!f.goal) return null
  const m = /^(ratio\s*)?(>=|<=|≥|≤)\s*(-?[\d.]+)$/.exec(f.goal.trim())
  if (!m) return false
  // The ratio from the two figures rather than the printed one, rounded to two places: 0.945 is not ≥ 0.95.
  const value = m[1] ? (f.ceiling ? f.ours / f.ceiling : f.ratio) : f.ours
  if (value == null || !Number.isFinite(value)) return false
  return m[2] === '>=' || m[2] === '≥' ? value >= Number(m[3]) : value <= Number(m[3])
}

const fmt = (n: number | null) => (n == null ? '–' : Number.isFinite(n) ? String(n) : 'n/a')

function table(rows: Row[]): string {
  const head = ['bench', 'figure', 'ours', 'ceiling', 'ratio', 'unit', 'goal', 'met']
  const body = rows.map((r) => {
    const ok = met(r)
    return [r.bench, r.figure, fmt(r.ours), fmt(r.ceiling), fmt(r.ratio), r.unit, r.goal ?? '–', ok == null ? '–' : ok ? 'yes' : 'NO']
  })
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`
  return [line(head), line(head.map(() => '---')), ...body.map(line)].join('\n')
}

if (import.meta.main) {
  const rows: Row[] = []
  let failed = 0
  for (const name of selected) {
    const result = await runOne(name)
    rows.push(...result.rows)
    if (!result.ok) failed++
  }
  console.log(`\n${table(rows)}`)
  console.log(`\n${rows.filter((r) => met(r) === true).length} goals met, ${rows.filter((r) => met(r) === false).length} missed; ${failed} bench scripts failed`)
  process.exit(failed > 0 ? 1 : 0)
}
