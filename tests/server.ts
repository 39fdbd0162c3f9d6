/**
 * The service as a user runs it: `bun server/main.ts` in its own process on a free port, for the tests that need
 * a real listener (restarts, kill -9, several processes, a browser).
 */
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { SUPERADMIN_EMAIL, SUPERADMIN_SECRET } from './helpers'
import { LISTENER_HEADER_BYTES } from '../server/config'

const ROOT = join(import.meta.dir, '..')

/** A port nothing listens on right now, picked by the kernel. */
export function freePort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  return port
}

export interface ServerOptions {
  dataDir: string
  /** Postgres URL; without it the process uses the embedded PGlite under dataDir. */
  databaseUrl?: string
  port?: number
  /** Extra environment, applied last. */
  env?: Record<string, string>
  args?: string[]
  stdout?: 'ignore' | 'inherit' | 'pipe' | ReturnType<typeof Bun.file>
  stderr?: 'ignore' | 'inherit' | 'pipe' | ReturnType<typeof Bun.file>
  /** How long to wait for a healthy /health. */
  timeoutMs?: number
}

export interface RunningServer {
  proc: Subprocess
  port: number
  base: string
}

/** The environment of a test server: the suite's own superadmin secret, no rate limits, nothing inherited that picks a database or store. */
export function serverEnv(port: number, opts: Pick<ServerOptions, 'dataDir' | 'databaseUrl' | 'env'>): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v
  for (const k of ['DATABASE_URL', 'TEST_DATABASE_URL', 'S3_BUCKET', 'SUPERADMIN_JWKS_URL']) delete env[k]
  return {
    ...env,
    PORT: String(port),
    DATA_DIR: opts.dataDir,
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    SIGNING_SECRET: 'test-signing-secret-0123456789',
    SUPERADMIN_JWT_SECRET: SUPERADMIN_SECRET,
    SUPERADMIN_EMAILS: SUPERADMIN_EMAIL,
    RATE_LIMIT_PER_MINUTE: '0',
    RATE_LIMIT_IP_PER_MINUTE: '0',
    ...(opts.databaseUrl && { DATABASE_URL: opts.databaseUrl }),
    ...opts.env,
  }
}

/** Starts the server and resolves once /health answers 200; a process that exits first is an error. */
export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const port = opts.port ?? freePort()
  // As the package scripts start it: the listener's bound on a request head above the application's (431 with a body).
  const proc = Bun.spawn([process.execPath, `--max-http-header-size=${LISTENER_HEADER_BYTES}`, 'server/main.ts', ...(opts.args ?? [])], {
    cwd: ROOT,
    env: serverEnv(port, opts),
    stdout: opts.stdout ?? 'ignore',
    stderr: opts.stderr ?? 'inherit',
  })
  const base = `http://127.0.0.1:${port}`
  const deadline = Date.now() + (opts.timeoutMs ?? 180_000)
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`server exited with ${proc.exitCode} (data dir ${opts.dataDir})`)
    try {
      if ((await fetch(`${base}/health`)).status === 200) return { proc, port, base }
    } catch {
      // Not listening yet.
    }
    await Bun.sleep(100)
  }
  proc.kill('SIGKILL')
  throw new Error('server did not answer /health in time')
}
