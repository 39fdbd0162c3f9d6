/**
 * `PROCESSES=N`: the first server process starts N−1 copies on its port (server/infra/processes.ts). Real processes
 * (`bun server/main.ts`) on Postgres: both serve, a copy that dies is started again, and none outlives the first.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { ConfigError, loadConfig } from '../../server/config'
import { postgresTest } from '../helpers'
import { startServer, type RunningServer } from '../server'

const running = new Set<Subprocess>()
const pids = new Set<number>()
const dirs: string[] = []

afterAll(() => {
  for (const p of running) if (p.exitCode === null) p.kill('SIGKILL')
  for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL')
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

function alive(pid: number) {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

type Line = { pid?: number; msg: string; exited_pid?: number }

/** The whole JSON lines the processes have written to `file` so far. */
const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .slice(0, -1)
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line)

async function until<T>(what: string, probe: () => T | undefined | false, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const got = probe()
    if (got) return got
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(100)
  }
}

async function startTwo(): Promise<{ server: RunningServer; log: string; first: number; copy: number }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'fos-processes-'))
  dirs.push(dataDir)
  const log = join(dataDir, 'server.log')
  const file = Bun.file(log)
  const server = await startServer({ dataDir, databaseUrl: process.env.TEST_DATABASE_URL, stdout: file, stderr: file, env: { PROCESSES: '2' } })
  running.add(server.proc)
  const listening = await until('both processes listening', () => {
    const l = lines(log).filter((e) => e.msg === 'listening')
    return l.length === 2 && l
  })
  const first = server.proc.pid
  const copy = listening.map((e) => e.pid!).find((pid) => pid !== first)!
  expect(listening.map((e) => e.pid)).toContain(first)
  pids.add(copy)
  return { server, log, first, copy }
}

/** `count` requests, each on a connection of its own, so the kernel picks a process for each. */
async function healthChecks(base: string, count: number) {
  for (let i = 0; i < count; i++) {
    const res = await fetch(`${base}/health`, { headers: { connection: 'close' }, keepalive: false })
    expect(res.status).toBe(200)
    await res.arrayBuffer()
  }
}

const servedBy = (log: string) => new Set(lines(log).filter((e) => e.msg === 'request').map((e) => e.pid))

describe('several server processes on one port', () => {
  test('PROCESSES above 1 needs DATABASE_URL', () => {
    expect(() => loadConfig({ PROCESSES: '2' })).toThrow(ConfigError)
    expect(() => loadConfig({ PROCESSES: '0', DATABASE_URL: 'postgres://x@127.0.0.1/db' })).toThrow(ConfigError)
    expect(loadConfig({ PROCESSES: '2', DATABASE_URL: 'postgres://x@127.0.0.1/db' }).processes).toBe(2)
    expect(loadConfig({}).processes).toBe(1)
  })

  postgresTest('both serve; a copy killed is started again; a copy stops when the first process is killed', async () => {
    const { server, log, first, copy } = await startTwo()
    await healthChecks(server.base, 40)
    const served = await until('requests logged by both processes', () => {
      const s = servedBy(log)
      return s.size === 2 && s
    })
    expect([...served].sort()).toEqual([first, copy].sort())

    process.kill(copy, 'SIGKILL')
    const again = await until('a new copy listening', () =>
      lines(log).find((e) => e.msg === 'listening' && e.pid !== first && e.pid !== copy),
    )
    pids.add(again.pid!)
    expect(lines(log).some((e) => e.msg === 'server process exited; starting it again' && e.exited_pid === copy && e.pid === first)).toBe(true)
    await healthChecks(server.base, 40)
    await until('requests served by the new copy', () => servedBy(log).has(again.pid))

    server.proc.kill('SIGKILL')
    await until('the copy to stop once the first process is gone', () => !alive(again.pid!))
    expect(lines(log).some((e) => e.pid === again.pid && e.msg === 'stopping')).toBe(true)
  }, 90_000)

  postgresTest('SIGTERM to the first process stops every process', async () => {
    const { server, log, first, copy } = await startTwo()
    server.proc.kill('SIGTERM')
    expect(await server.proc.exited).toBe(0)
    await until('the copy to exit', () => !alive(copy))
    const stopping = lines(log).filter((e) => e.msg === 'stopping').map((e) => e.pid)
    expect(stopping.sort()).toEqual([first, copy].sort())
  }, 60_000)
})
