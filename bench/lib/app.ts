/**
 * The app as `bun run start` builds it (rate limits off, no request log), in this process or in a child process
 * listening on a free port. The child prints one JSON line (its port, and the company and key it issued when asked
 * to) and runs until its stdin closes; the parent holds that stdin, so a parent that dies takes the child with it.
 */
import type { Subprocess } from 'bun'
import { loadConfig } from '../../server/config'
import { createApp } from '../../server/app'
import type { AppContext } from '../../server/context'
import { openDatabase, type Database } from '../../db/client'
import { createStore } from '../../server/infra/storage'
import { DomainEvents } from '../../server/lib/events'
import { SIGNING_SECRET } from './common'
import { newCompany } from './tenants'
import { announceListening, isCopy, startCopies } from '../../server/infra/processes'

export interface ContextOptions {
  /** More settings, as the environment would give them. */
  env?: Record<string, string>
  events?: DomainEvents
  log?: AppContext['log']
}

export function benchContext(url: string, database: Database, options: ContextOptions = {}): AppContext {
  const config = {
    ...loadConfig({ DATA_DIR: `/tmp/fos-bench-${process.pid}`, SIGNING_SECRET, ...options.env }),
    databaseUrl: url,
    rateLimit: { perKey: 0, perIp: 0, perCompany: 0 },
  }
  return { config, database, db: database.db, store: createStore(config), clock: () => new Date(), log: options.log ?? (() => {}), events: options.events ?? new DomainEvents() }
}

/** Something the child runs beside the app: stopped before the database closes; `line` answers the parent's commands. */
export interface Companion {
  line?(text: string): Promise<void>
  stop(): Promise<void>
}

export interface ServeOptions extends ContextOptions {
  /** Connections of each process's pool. */
  poolMax: number
  /**
   * Server processes on the port, as `PROCESSES` starts them (server/infra/processes.ts): the first answers the
   * parent and starts the others. Only the first issues the company and runs the companion.
   */
  processes?: number
  /** Issue an API key for a new company of this name before listening. */
  company?: string
  companion?: (ctx: AppContext) => Companion
}

/** The child side: serves until stdin closes, then stops and exits. A companion's commands are acknowledged `ok <line>`. */
export async function serveApp(url: string, options: ServeOptions): Promise<never> {
  const processes = options.processes ?? 1
  const copy = isCopy()
  const database = await openDatabase({ url, poolMax: options.poolMax })
  const ctx = benchContext(url, database, options)
  const company = options.company === undefined || copy ? undefined : await newCompany(database, options.company)
  const listening = createApp(ctx).listen({ port: copy ? Number(process.env.PORT) : 0, idleTimeout: 0, reusePort: processes > 1 })
  const companion = copy ? undefined : options.companion?.(ctx)
  const port = listening.server!.port!
  // The others are listening before the parent hears the port, so its first requests already meet all of them.
  const copies = processes > 1 && !copy ? startCopies(processes - 1, port, () => {}) : undefined
  if (copies) await copies.listening
  if (copy) announceListening()
  else console.log(JSON.stringify({ port, ...(company && { key: company.key, companyId: company.companyId }) }))
  let pending = ''
  for await (const chunk of Bun.stdin.stream()) {
    if (!companion?.line) continue
    pending += new TextDecoder().decode(chunk)
    const lines = pending.split('\n')
    pending = lines.pop()!
    for (const line of lines) {
      await companion.line(line)
      console.log(`ok ${line}`)
    }
  }
  await Promise.all([copies?.stop(), listening.stop(true)])
  await companion?.stop()
  await database.close()
  process.exit(0)
}

export interface ServedApp {
  proc: Subprocess<'pipe', 'pipe', 'inherit'>
  port: number
  base: string
  /** Present when the child was asked for a company. */
  key: string
  companyId: number
  /** Sends a command line to the companion and waits for its acknowledgement. */
  command(line: string): Promise<void>
  /** Closes the child's stdin and waits up to `graceMs` for it to exit, then kills it. */
  stop(graceMs?: number): Promise<void>
}

/** The parent side: runs `script --serve …args` (a script that calls `serveApp` then) and reads its first line. */
export async function spawnApp(script: string, args: string[]): Promise<ServedApp> {
  const proc = Bun.spawn([process.execPath, script, '--serve', ...args], { stdin: 'pipe', stdout: 'pipe', stderr: 'inherit' })
  const reader = proc.stdout.getReader()
  let buffered = ''
  const nextLine = async () => {
    while (!buffered.includes('\n')) {
      const { value, done } = await reader.read()
      if (done) throw new Error('server exited before answering')
      buffered += new TextDecoder().decode(value)
    }
    const at = buffered.indexOf('\n')
    const line = buffered.slice(0, at)
    buffered = buffered.slice(at + 1)
    return line
  }
  const stop = async (graceMs = 10_000) => {
    proc.stdin.end()
    await Promise.race([proc.exited, Bun.sleep(graceMs)])
    if (proc.exitCode === null) proc.kill()
  }
  try {
    const info = JSON.parse(await nextLine()) as { port: number; key: string; companyId: number }
    return {
      proc,
      ...info,
      base: `http://127.0.0.1:${info.port}`,
      async command(line: string) {
        proc.stdin.write(`${line}\n`)
        proc.stdin.flush()
        if ((await nextLine()) !== `ok ${line}`) throw new Error(`server did not acknowledge ${line}`)
      },
      stop,
    }
  } catch (e) {
    await stop()
    throw e
  }
}
