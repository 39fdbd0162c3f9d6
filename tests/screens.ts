/** Helpers of the tests that run the service as several processes (tests/cluster.test.ts, tests/failover.test.ts). */
import type { Json } from './json-client'

/** A kiosk screen: follows the event stream and, like EventSource, reconnects when it ends. */
export class Screen {
  last: Json | null = null
  connections = 0
  servers: string[] = []
  private stopped = false
  private abort = new AbortController()
  readonly done: Promise<void>

  constructor(private url: string) {
    this.done = this.run()
  }

  private async run() {
    while (!this.stopped) {
      try {
        const res = await fetch(this.url, { signal: this.abort.signal })
        if (res.status === 200 && res.body) {
          this.connections++
          this.servers.push(res.headers.get('x-served-by') ?? '?')
          const reader = res.body.getReader()
          const decoder = new TextDecoder()
          let buf = ''
          for (;;) {
            const { done, value } = await reader.read()
            if (done) break
            buf += decoder.decode(value, { stream: true })
            let end: number
            while ((end = buf.indexOf('\n\n')) >= 0) {
              const frame = buf.slice(0, end)
              buf = buf.slice(end + 2)
              if (/^event: snapshot$/m.test(frame)) this.last = JSON.parse(/^data: (.*)$/m.exec(frame)![1])
            }
          }
        }
      } catch {
        // Connection refused or cut: retry like a screen would.
      }
      if (!this.stopped) await Bun.sleep(300)
    }
  }

  get server() {
    return this.servers.at(-1)
  }

  async stop() {
    this.stopped = true
    this.abort.abort()
    await this.done
  }
}

/** Polls `check` every 100 ms until it holds or `ms` have passed; its last answer. */
export async function until(check: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await check()) return true
    await Bun.sleep(100)
  }
  return check()
}
