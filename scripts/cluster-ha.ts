import type { Subprocess } from 'bun'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..')

/** A port nothing listens on right now, picked by the kernel. */
function freePort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  return port
}

export function distinctPorts(n: number): number[] {
  const ports = new Set<number>()
  while (ports.size < n) ports.add(freePort())
  return [...ports]
}

export interface HaCluster {
  proc: Subprocess
  base: string
  dir: string
  databaseUrl: string
  /** Each server process's own address, past HAProxy. */
  serverBases: string[]
  /** Runs a subcommand of scripts/cluster-ha.sh on this cluster's directory; resolves to its output. */
  control(...args: string[]): Promise<string>
  stop(): Promise<void>
}

/**
 * scripts/cluster-ha.sh on free ports, resolved once it prints its ready line. Its stdin is a pipe and it runs with
 * CLUSTER_STOP_ON_EOF, so everything it started stops when this process goes, even killed.
 */
export async function startHaCluster(env: Record<string, string>, servers = 2): Promise<HaCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'fos-ha-'))
  const [front, monitor, n1, n2, ...serverPorts] = distinctPorts(4 + servers)
  const proc = Bun.spawn(['bash', 'scripts/cluster-ha.sh'], {
    cwd: ROOT,
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'inherit',
    env: {
      ...process.env,
      PATH: `${join(ROOT, 'node_modules', '.bin')}:${process.env.PATH}`,
      CLUSTER_DIR: dir,
      CLUSTER_PORT: String(front),
      CLUSTER_MONITOR_PORT: String(monitor),
      CLUSTER_NODE_PORTS: `${n1} ${n2}`,
      CLUSTER_SERVER_PORTS: serverPorts.join(' '),
      CLUSTER_SERVERS: servers ? '1' : '0',
      CLUSTER_STOP_ON_EOF: '1',
      ...env,
    },
  })
  const stop = async () => {
    if (proc.exitCode === null) {
      proc.kill('SIGTERM')
      await proc.exited
    }
    rmSync(dir, { recursive: true, force: true })
  }
  const control = async (...args: string[]) => {
    const p = Bun.spawn(['bash', 'scripts/cluster-ha.sh', args[0], dir, ...args.slice(1)], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
    const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()])
    if ((await p.exited) !== 0) throw new Error(`cluster-ha.sh ${args.join(' ')}: ${err}`)
    return out.trim()
  }
  const decoder = new TextDecoder()
  let out = ''
  const reader = proc.stdout.getReader()
  const deadline = Date.now() + 180_000
  while (Date.now() < deadline) {
    const { done, value } = await reader.read()
    if (done) break
    out += decoder.decode(value, { stream: true })
    const ready = /cluster ready (\S+) (\S+) (\S+)/.exec(out)
    if (ready) {
      reader.releaseLock()
      return { proc, base: ready[1], dir, databaseUrl: ready[3], serverBases: serverPorts.map((p) => `http://127.0.0.1:${p}`), control, stop }
    }
  }
  await stop()
  throw new Error(`cluster-ha did not start: ${out}`)
}

