/** A server-sent event stream read incrementally by tests; every wait has a deadline so a missing event fails the test. */
export interface SseEvent {
  event: string
  data: string
  id?: string
}

/** Reads a server-sent event stream incrementally; every wait has a deadline so a missing event fails the test. */
export class SseReader {
  text = ''
  events: SseEvent[] = []
  comments = 0
  retry: string | null = null
  done = false
  private buf = ''
  private cursor = 0
  private pending: ReturnType<ReadableStreamDefaultReader<Uint8Array>['read']> | null = null
  private decoder = new TextDecoder()

  constructor(
    readonly response: Response,
    private reader: ReadableStreamDefaultReader<Uint8Array>,
    readonly abort: () => void,
  ) {}

  private parse() {
    let at: number
    while ((at = this.buf.indexOf('\n\n')) >= 0) {
      const block = this.buf.slice(0, at)
      this.buf = this.buf.slice(at + 2)
      const ev: SseEvent = { event: 'message', data: '' }
      let hasData = false
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) this.comments++
        else if (line.startsWith('retry: ')) this.retry = line.slice(7)
        else if (line.startsWith('event: ')) ev.event = line.slice(7)
        else if (line.startsWith('id: ')) ev.id = line.slice(4)
        else if (line.startsWith('data: ')) {
          ev.data += line.slice(6)
          hasData = true
        }
      }
      if (hasData) this.events.push(ev)
    }
  }

  /** Reads until `until()` holds or the stream ends; false when the deadline passes first. */
  async readUntil(until: () => boolean, ms = 2000): Promise<boolean> {
    const deadline = Date.now() + ms
    while (!until()) {
      if (this.done) return false
      const left = deadline - Date.now()
      if (left <= 0) return false
      const read = (this.pending ??= this.reader.read())
      const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), left))
      const got = await Promise.race([read, timer])
      if (got === 'timeout') return false
      this.pending = null
      if (got.done) {
        this.done = true
        return until()
      }
      const chunk = this.decoder.decode(got.value, { stream: true })
      this.text += chunk
      this.buf += chunk
      this.parse()
    }
    return true
  }

  /** The next event not yet consumed that matches, or throws after the deadline. */
  async next(match: (e: SseEvent) => boolean = () => true, ms = 2000): Promise<SseEvent> {
    const find = () => {
      for (let i = this.cursor; i < this.events.length; i++) if (match(this.events[i])) return i
      return -1
    }
    await this.readUntil(() => find() >= 0, ms)
    const i = find()
    if (i < 0) throw new Error(`no matching event within ${ms} ms; got: ${this.text.slice(-500)}`)
    this.cursor = i + 1
    return this.events[i]
  }

  snapshot(ms = 2000, match: (s: any) => boolean = () => true) {
    return this.next((e) => e.event === 'snapshot' && match(JSON.parse(e.data)), ms).then((e) => JSON.parse(e.data))
  }
}

export async function openStream(fetcher: (req: Request) => Promise<Response>, url: string, headers: Record<string, string> = {}) {
  const ctrl = new AbortController()
  const res = await fetcher(new Request(url, { headers, signal: ctrl.signal }))
  if (!res.body) throw new Error(`no body (${res.status})`)
  return new SseReader(res, res.body.getReader(), () => ctrl.abort())
}

