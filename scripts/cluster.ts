import type { Subprocess } from 'bun'
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..')

export interface ClusterOptions {
  databaseUrl: string
  /** Where the script keeps its configuration, logs and pid files. */
  dir: string
  /** Free ports: HAProxy's front, PgBouncer's, then one per server process. */
  ports: number[]
  /** For the script and its server processes: pool sizes, limits, secrets. */
  env: Record<string, string>
}

export interface RunningCluster {
  proc: Subprocess
  /** HAProxy's address. */
  base: string
  /** A database URL through PgBouncer. */
  pooledUrl: string
  /** Each server process's own address, past HAProxy. */
  serverBases: string[]
  stop(): Promise<void>
}

/**
 * `scripts/cluster.sh` on the given ports, answered once it prints its ready line. Its stdin is a pipe and the script
 * runs with CLUSTER_STOP_ON_EOF, so it stops everything it started when this process goes, even killed.
 */
export async function startCluster(o: ClusterOptions, readyWithinMs = 120_000): Promise<RunningCluster> {
  const [front, pgbouncerPort, ...serverPorts] = o.ports
  const proc = Bun.spawn(['bash', 'scripts/cluster.sh'], {
    cwd: ROOT,
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'inherit',
    env: {
      ...process.env,
      PATH: `${join(ROOT, 'node_modules', '.bin')}:${process.env.PATH}`,
      DATABASE_URL: o.databaseUrl,
      CLUSTER_DIR: o.dir,
      CLUSTER_PORT: String(front),
      CLUSTER_PGBOUNCER_PORT: String(pgbouncerPort),
      CLUSTER_SERVER_PORTS: serverPorts.join(' '),
      CLUSTER_STOP_ON_EOF: '1',
      ...o.env,
    },
  })
  const decoder = new TextDecoder()
  let out = ''
  const reader = proc.stdout.getReader()
  const deadline = Date.now() + readyWithinMs
  while (Date.now() < deadline) {
    const { done, value } = await reader.read()
    if (done) break
    out += decoder.decode(value, { stream: true })
    const ready = /cluster ready (\S+)/.exec(out)
    if (ready) {
      reader.releaseLock()
      const pooled = new URL(o.databaseUrl)
      pooled.port = String(pgbouncerPort)
      return {
        proc,
        base: ready[1],
        pooledUrl: pooled.toString(),
        serverBases: serverPorts.map((p) => `http://127.0.0.1:${p}`),
        async stop() {
          proc.kill('SIGTERM')
          await proc.exited
        },
      }
    }
  }
  proc.kill('SIGTERM')
  throw new Error(`cluster did not start: ${out}`)
}
