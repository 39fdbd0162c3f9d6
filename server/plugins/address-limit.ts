import { Elysia } from 'elysia'
import { clientAddress, isHealthCheck } from '../access/address'
import { SharedSlots } from '../lib/slots'
import type { RequestLimits } from './rate-limit'

const held = new WeakMap<Request, () => void>()

/** The share of an address a request takes from: its credential's company, once known, or everyone else's. */
const UNKNOWN = 'unrecognised'

export interface AddressLimitOptions {
  /** Requests in progress at once from one client address; 0: no bound. */
  max: number
  trustProxy: boolean
  /** Tells which company a request's credential belongs to, when this process has seen it authenticate. */
  limits: Pick<RequestLimits, 'recognised'>
  /** Told of each refusal. */
  refused?: () => void
}

/**
 * At most `max` requests in progress at once from one client address (`clientAddress`: the balancer's forwarded
 * one when trusted), shared out as the database pool is: the requests of one company, or those with no credential
 * the service knows, hold at most half of an address's slots (`SharedSlots`), so slow anonymous bodies cannot take
 * the slots of the tenants behind the same address, nor one tenant those of another. Together with the listener's
 * idle timeout and the body deadline this bounds the sockets one address can keep busy: one more is answered 429
 * RATE_LIMITED with Retry-After and its connection closed, without reading its body. The balancer's health checks
 * are never counted. A slot is freed once the app has produced its answer, whichever hook produced it (a refusal
 * before routing included), or when the client went away, whichever comes first.
 */
export function addressLimit(opts: AddressLimitOptions) {
  const slots = new SharedSlots<string, string>(() => opts.max)
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
      if (opts.max <= 0 || isHealthCheck(request)) return
      const address = clientAddress(request, server, opts.trustProxy)
      if (!address) return
      const company = opts.limits.recognised(request)?.companyId
      const release = slots.take(address, company == null ? UNKNOWN : String(company))
      if (!release) {
        opts.refused?.()
        return new Response(JSON.stringify({ error: 'Too many requests in progress from this address', code: 'RATE_LIMITED' }), {
          status: 429,
          headers: { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1', connection: 'close' },
        })
      }
      held.set(request, release)
      request.signal.addEventListener('abort', release, { once: true })
    })
}
