/** Shared pieces of the bench scripts: the result line protocol, child processes, memory, load runs. */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

export const ROOT = join(import.meta.dir, '..', '..')

/** The Postgres the benches create their throwaway databases on (as a superuser: they create and drop them). */
export const ADMIN_URL = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
/** Long enough for the app's checks; the same in every process a bench starts, so signed links agree. */
export const SIGNING_SECRET = 'bench-signing-secret-0123456789'

/** A numeric setting from the environment, `fallback` when unset. */
export const envNumber = (name: string, fallback: number) => Number(process.env[name] ?? fallback)
/** A comma-separated list of numbers from the environment. */
export const envNumbers = (name: string, fallback: string) => (process.env[name] ?? fallback).split(',').map(Number)

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

/** User + system CPU time of a process so far, in ms (from /proc/<pid>/stat, clock ticks of 10 ms). */
export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
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

/** `n` different free loopback ports, for processes that are started together. */
export function distinctPorts(n: number): number[] {
  const ports = new Set<number>()
  while (ports.size < n) ports.add(freePort())
  return [...ports]
}

export interface Run {
  done: number
  seconds: number
  latencies: number[]
}

/** `workers` loops calling `fn` until `seconds` pass or `fn` says there is no more work (returns false). */
export async function timed(workers: number, seconds: number, fn: () => Promise<boolean | void>): Promise<Run> {
  const latencies: number[] = []
  const started = performance.now()
  const deadline = started + seconds * 1000
  let stop = false
  const worker = async () => {
    while (!stop && performance.now() < deadline) {
      const t0 = performance.now()
      if ((await fn()) === false) {
        stop = true
        return
      }
      latencies.push(performance.now() - t0)
    }
  }
  await Promise.all(Array.from({ length: workers }, worker))
  return { done: latencies.length, seconds: (performance.now() - started) / 1000, latencies: latencies.sort((a, b) => a - b) }
}

export const rate = (r: { done: number; seconds: number }) => r.done / r.seconds

/** What several rounds of one kind added up to. */
export interface Phase {
  done: number
  seconds: number
}

export const phase = (): Phase => ({ done: 0, seconds: 0 })

/** Calls `fn` once per id from `workers` loops until the ids or `seconds` run out; adds the count and time to `into`. */
export async function driveIds(ids: number[], fn: (id: number) => Promise<void>, into: Phase, workers: number, seconds: number) {
  let next = 0
  const run = await timed(workers, seconds, async () => (next < ids.length ? fn(ids[next++]) : false))
  into.done += run.done
  into.seconds += run.seconds
}

/** `rounds` rounds over `modes`, in order on even rounds and reversed on odd ones, so drifting machine load hits each alike. */
export async function alternating<M extends string>(rounds: number, modes: readonly M[], fn: (mode: M, round: number) => Promise<void>) {
  for (let round = 0; round < rounds; round++) for (const mode of round % 2 === 0 ? modes : [...modes].reverse()) await fn(mode, round)
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
  /** Requests per second over all connections (autocannon `overallRate`); unset: as fast as answers come back. */
  rate?: number
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
