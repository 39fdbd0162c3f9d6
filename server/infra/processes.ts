/**
 * Several server processes on one port. Bun, like Node, runs a process's requests on one thread, so one process uses
 * one core however many the machine has; with `PROCESSES=N` the first process starts N−1 copies of itself, all
 * listening with SO_REUSEPORT, and the kernel spreads new connections over them. Each copy is a whole server (its
 * pools, its delivery worker, its share of the audit chain), as behind a balancer; what must hold across processes
 * (rate limits, pushes to screens, migrations) already does.
 *
 * The first process watches the others: one that exits while the service is up is started again, after a pause
 * that grows while copies keep dying young. Each copy holds a pipe from the first as its stdin and stops when that
 * pipe closes, so no copy outlives the process that started it, however that one ended.
 */
import type { Subprocess } from 'bun'

/** Set in a copy's environment: the process id of the first process. */
const FIRST = 'FOS_FIRST_PROCESS'
/** A copy that ran this long before exiting is restarted after the shortest pause again. */
const STEADY_MS = 30_000
const PAUSE_MS = { min: 1_000, max: 30_000 }
/** How long copies get to finish their requests once asked to stop, before they are killed. */
const GRACE_MS = 15_000

/** Set in a copy's environment: its place among the copies, 1 to N−1, kept when it is started again. */
const SLOT = 'FOS_PROCESS_SLOT'

/** True in a process another server process started. */
export const isCopy = () => process.env[FIRST] !== undefined

/** This process's place in a PROCESSES start: 0 for the first (or only) one, 1 to N−1 for its copies. */
export const processSlot = () => Number(process.env[SLOT] ?? 0)

/** In a copy: `then` runs once the first process is gone or lets go of it (its pipe closes). */
export function whenFirstGone(then: () => void) {
  void (async () => {
    for await (const _ of Bun.stdin.stream()) {
      // Nothing is sent on the pipe; it only has to stay open.
    }
    then()
  })()
}

/** In a copy, once it listens: tells the first process (`Copies.listening`). */
export const announceListening = () => process.send?.('listening')

export interface Copies {
  /** Resolves once as many copies as were asked for have announced that they listen. */
  listening: Promise<void>
  /** Asks every copy to stop, waits for them (killing any still running after the grace period). */
  stop(): Promise<void>
}

/**
 * Starts `count` copies of this process (its script and arguments, without `dropArgs`) listening on `port`, and keeps
 * them running until `stop`.
 */
export function startCopies(count: number, port: number, log: (entry: Record<string, unknown>) => void, dropArgs: string[] = []): Copies {
  const args = [process.execPath, ...process.execArgv, Bun.main, ...process.argv.slice(2).filter((a) => !dropArgs.includes(a))]
  const env = { ...process.env, PORT: String(port), [FIRST]: String(process.pid) }
  const running = new Set<Subprocess>()
  let stopping = false
  let waiting = count
  let allListening!: () => void
  const listening = new Promise<void>((resolve) => (allListening = resolve))

  /** `pause`: the one before this start, 0 for none; a copy that dies young doubles it for the next. */
  const start = (slot: number, pause: number) => {
    const started = Date.now()
    const proc = Bun.spawn(args, {
      env: { ...env, [SLOT]: String(slot) },
      stdin: 'pipe',
      stdout: 'inherit',
      stderr: 'inherit',
      ipc(message) {
        if (message === 'listening' && --waiting === 0) allListening()
      },
    })
    running.add(proc)
    void proc.exited.then((code) => {
      running.delete(proc)
      if (stopping) return
      const next = Date.now() - started >= STEADY_MS ? PAUSE_MS.min : Math.min(PAUSE_MS.max, Math.max(PAUSE_MS.min, pause * 2))
      log({ level: 'error', msg: 'server process exited; starting it again', exited_pid: proc.pid, code, slot, restart_in_ms: next })
      setTimeout(() => stopping || start(slot, next), next)
    })
  }
  for (let slot = 1; slot <= count; slot++) start(slot, 0)

  return {
    listening,
    async stop() {
      stopping = true
      const all = [...running]
      for (const p of all) p.kill('SIGTERM')
      const exited = Promise.all(all.map((p) => p.exited))
      if ((await Promise.race([exited.then(() => true), Bun.sleep(GRACE_MS).then(() => false)])) === false) {
        for (const p of all) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL')
        await exited
      }
    },
  }
}
