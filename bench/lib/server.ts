/** `bun server/main.ts` as deployed, in a child process on a free loopback port with a fresh DATA_DIR. */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BunFile, Subprocess } from 'bun'
import { freePort, ROOT, sleep, waitHealthy } from './common'

export interface MainServer {
  proc: Subprocess
  port: number
  base: string
  /** Milliseconds from the spawn to the first healthy /health. */
  coldMs: number
  /** SIGTERM, SIGKILL after 10 s, then the DATA_DIR is removed. */
  stop(): Promise<void>
}

export interface MainServerOptions {
  /** Unset: the embedded database in the fresh DATA_DIR. */
  databaseUrl?: string
  /** Settings beside PORT, DATA_DIR, DATABASE_URL, PUBLIC_BASE_URL and the rate limits (off unless set here). */
  env?: Record<string, string>
  /** Names the DATA_DIR, `fos-bench-<name>-…`. */
  name: string
  stdout?: BunFile | 'ignore'
  healthTimeoutMs?: number
}

export async function startMainServer(options: MainServerOptions): Promise<MainServer> {
  const port = freePort()
  const dataDir = mkdtempSync(join(tmpdir(), `fos-bench-${options.name}-`))
  const env: Record<string, string | undefined> = {
    ...process.env,
    PORT: String(port),
    DATA_DIR: dataDir,
    DATABASE_URL: options.databaseUrl,
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    RATE_LIMIT_PER_MINUTE: '0',
    RATE_LIMIT_IP_PER_MINUTE: '0',
    ...options.env,
  }
  if (!options.databaseUrl) delete env.DATABASE_URL
  const t0 = performance.now()
  const proc = Bun.spawn([process.execPath, 'server/main.ts'], { cwd: ROOT, env, stdout: options.stdout ?? 'ignore', stderr: 'inherit' })
  const stop = async () => {
    proc.kill('SIGTERM')
    await Promise.race([proc.exited, sleep(10_000)])
    if (proc.exitCode === null) proc.kill('SIGKILL')
    rmSync(dataDir, { recursive: true, force: true })
  }
  const base = `http://127.0.0.1:${port}`
  try {
    const coldMs = await waitHealthy(`${base}/health`, t0, options.healthTimeoutMs ?? 120_000, () => proc.exitCode === null)
    return { proc, port, base, coldMs, stop }
  } catch (e) {
    await stop()
    throw e
  }
}
