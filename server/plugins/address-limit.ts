import { Elysia } from 'elysia'
import { Slots } from '../lib/slots'

const held = new WeakMap<Request, () => void>()

/**
 * At most `max` requests in progress at once from one client address (0: no bound). Together with the
 * listener's idle timeout and the body deadline this bounds the sockets one address can keep busy: one more
 * is answered 429 RATE_LIMITED with Retry-After and its connection closed, without reading its body. A slot
 * is freed once the app has produced its answer, whichever hook produced it (a refusal before routing included),
 * or when the client went away, whichever comes first.
 */
export function addressLimit(max: number, refused?: () => void) {
  const slots = new Slots<string>(() => max)
  return new Elysia({ name: 'address-limit' })
    .wrap(((fetch: (...args: unknown[]) => Response | Promise<Response>, request: Request) =>
      (...args: unknown[]) => {
        const free = () => held.get(request)?.()
        try {
          const out = fetch(...args)
          if (out instanceof Promise) return out.finally(free)
          free()
          return out
        } catch (e) {
          free()
          throw e
        }
      }) as never)
    .onRequest(({ request, server }) => {
      if (max <= 0) return
      const address = server?.requestIP(request)?.address
      if (!address) return
      const release = slots.take(address)
      if (!release) {
        refused?.()
        return new Response(JSON.stringify({ error: 'Too many requests in progress from this address', code: 'RATE_LIMITED' }), {
          status: 429,
          headers: { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1', connection: 'close' },
        })
      }
      held.set(request, release)
      request.signal.addEventListener('abort', release, { once: true })
    })
}
