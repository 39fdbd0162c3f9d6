/** Shared pieces of the bench scripts: the result line protocol, child processes, memory, load runs. */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

export const ROOT = join(import.meta.dir, '..', '..')

/**
 * One figure of a benchmark. `ratio` is ours ÷ ceiling. `goal` is null or a condition run.ts checks:
 * `ratio >= 0.5`, `ratio <= 2`, `<= 25`, `>= 100` (on `ours` when it does not start with "ratio").
 */
export interface Figure {
  figure: string
  ours: number
  ceiling: number | null
  ratio: number | null
  unit: string
  goal: string | null
}

export const round = (n: number, digits = 1) => (Number.isFinite(n) ? +n.toFixed(digits) : n)

export function figure(name: string, ours: number, ceiling: number | null, unit: string, goal: string | null = null): Figure {
  return {
    figure: name,
    ours: round(ours, 2),
    ceiling: ceiling == null ? null : round(ceiling, 2),
    ratio: ceiling ? round(ours / ceiling, 2) : null,
    unit,
    goal,
  }
}

/** The last line of every bench script; run.ts reads it from the child's output. */
export function printFigures(figures: Figure[]) {
  console.log(`BENCH_JSON ${JSON.stringify(figures)}`)
}

export function rssMiB(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m ? Number(m[1]) / 1024 : NaN
  } catch {
    return NaN
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Polls `url` until it answers 200; resolves to the milliseconds since `since`, or throws after `timeoutMs`. */
export async function waitHealthy(url: string, since: number, timeoutMs = 60_000, alive?: () => boolean): Promise<number> {
  const deadline = since + timeoutMs
  while (performance.now() < deadline) {
    if (alive && !alive()) throw new Error(`process behind ${url} exited before answering`)
    try {
      const res = await fetch(url)
      await res.arrayBuffer()
      if (res.status === 200) return performance.now() - since
    } catch {
      // not listening yet
    }
    await sleep(20)
  }
  throw new Error(`${url} not healthy after ${timeoutMs} ms`)
}

/** A loopback port nothing listens on right now. */
export function freePort(): number {
  const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = server.port!
  server.stop(true)
  return port
}

export interface LoadResult {
  requests: number
  seconds: number
  rps: number
  p50: number
  p95: number
  p99: number
  max: number
  non2xx: number
  errors: number
  timeouts: number
  bytesPerResponse: number
  latencies: number[]
}

export interface LoadSpec {
  url: string
  connections: number
  duration: number
  requests: { method?: string; path: string; headers?: Record<string, string>; body?: string }[]
}

/** Runs autocannon in its own Node process (bench/lib/load.mjs), bounded by the spec's duration plus a margin. */
export async function load(spec: LoadSpec): Promise<LoadResult> {
  const proc = Bun.spawn(['node', join(ROOT, 'bench', 'lib', 'load.mjs'), JSON.stringify(spec)], { cwd: ROOT, stdout: 'pipe', stderr: 'inherit' })
  const killer = setTimeout(() => proc.kill(), (spec.duration + 30) * 1000)
  const out = await new Response(proc.stdout).text()
  clearTimeout(killer)
  await proc.exited
  const line = out.trim().split('\n').pop()
  if (proc.exitCode !== 0 || !line) throw new Error(`load generator failed (exit ${proc.exitCode})`)
  return JSON.parse(line) as LoadResult
}

export function percentile(sorted: ArrayLike<number>, p: number) {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]
}
