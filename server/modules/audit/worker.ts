import type { AppContext } from '../../context'
import { makeDigests, sealRound } from './chain'

export interface AuditChainWorker {
  /** Finishes the round in flight and stops; no new round starts. */
  stop(): Promise<void>
}

export interface AuditChainOptions {
  /** Pause between sealing rounds. A row is sealed within one pause plus one round of its commit. */
  intervalMs?: number
  /** How often finished days are looked for (digests are made once, so this only bounds their delay). */
  digestEveryMs?: number
}

/**
 * The chain sealer of this process. Every process runs one; they share the work through Postgres: a company's
 * rows are sealed under that company's advisory lock, and a process that finds the lock taken skips the
 * company this round (the holder is sealing those very rows). A short poll rather than a NOTIFY from the audit
 * trigger: it keeps the trigger free of work, needs no dedicated session behind a transaction pooler, and
 * works the same on embedded PGlite. The poll itself reads only the partial index of unsealed rows.
 */
export function startAuditChain(app: AppContext, opts: AuditChainOptions = {}): AuditChainWorker {
  const intervalMs = opts.intervalMs ?? 1000
  const digestEveryMs = opts.digestEveryMs ?? 60_000
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined
  let round: Promise<void> = Promise.resolve()
  let lastDigests = 0

  const once = async () => {
    try {
      while (!stopped && (await sealRound(app.db, false)).more);
      if (Date.now() - lastDigests >= digestEveryMs) {
        lastDigests = Date.now()
        const made = await makeDigests(app.db, app.clock())
        if (made > 0) app.log({ level: 'info', msg: 'audit digests made', count: made })
      }
    } catch (e) {
      app.log({ level: 'error', msg: 'audit chain round failed', error: e instanceof Error ? e.message : String(e) })
    }
  }

  const schedule = () => {
    if (stopped) return
    timer = setTimeout(() => {
      round = once().then(schedule)
    }, intervalMs)
  }
  round = once().then(schedule)

  return {
    async stop() {
      stopped = true
      clearTimeout(timer)
      await round
    },
  }
}
