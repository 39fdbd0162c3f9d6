/** A webhook receiver on 127.0.0.1, as an integrator runs one: records every request and answers as told. */
import { Webhook } from 'standardwebhooks'

export interface Received {
  id: string
  timestamp: string
  signature: string
  body: string
  event: any
  at: number
}

export interface Receiver {
  url: string
  port: number
  received: Received[]
  /** How to answer the next request (default 200). */
  respond: (r: Received) => Response | Promise<Response>
  /** Resolves once `predicate` holds over the requests received so far. */
  until(predicate: (all: Received[]) => boolean, timeoutMs?: number): Promise<Received[]>
  stop(): void
}

export function startReceiver(port = 0): Receiver {
  const r: Receiver = {
    url: '',
    port: 0,
    received: [],
    respond: () => new Response('ok'),
    async until(predicate, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs
      while (!predicate(r.received)) {
        if (Date.now() > deadline) throw new Error(`receiver: condition not met in ${timeoutMs} ms (${r.received.length} received: ${r.received.map((x) => x.event?.type).join(', ')})`)
        await Bun.sleep(20)
      }
      return r.received
    },
    stop: () => server.stop(true),
  }
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port,
    idleTimeout: 60,
    async fetch(req) {
      const body = await req.text()
      const rec: Received = {
        id: req.headers.get('webhook-id') ?? '',
        timestamp: req.headers.get('webhook-timestamp') ?? '',
        signature: req.headers.get('webhook-signature') ?? '',
        body,
        event: JSON.parse(body),
        at: Date.now(),
      }
      r.received.push(rec)
      return r.respond(rec)
    },
  })
  r.port = server.port!
  r.url = `http://127.0.0.1:${server.port}/hook`
  return r
}

/** What a receiver does with the secret it was given: throws unless the signature holds. */
export function verify(secret: string, rec: Received) {
  return new Webhook(secret).verify(rec.body, { 'webhook-id': rec.id, 'webhook-timestamp': rec.timestamp, 'webhook-signature': rec.signature })
}
