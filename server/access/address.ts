/** What the listener can say about a request's peer; null when the app is called in-process (tests, benches). */
export type Peer = { requestIP(r: Request): { address: string } | null } | null | undefined

/**
 * The client address of a request, the one rule every per-address limit uses (requests in progress, event streams,
 * the anonymous rate limit, sign-in throttling): with TRUST_PROXY, the last X-Forwarded-For entry, which the balancer
 * we trust appended (earlier entries are whatever the client sent); otherwise, or when the balancer sent none (its own
 * health checks), the connection's peer. Null when neither is known.
 */
export function clientAddress(request: Request, server: Peer, trustProxy: boolean): string | null {
  const forwarded = trustProxy ? request.headers.get('x-forwarded-for')?.split(',').pop()?.trim() : undefined
  return forwarded || server?.requestIP(request)?.address || null
}

/**
 * The balancer's own checks (`/health`, `/health/…`): never counted against a per-address bound, since a balancer
 * probes every process from one address and a refusal would take a healthy process out of rotation.
 */
export const isHealthCheck = (request: Request) => /^[a-z]+:\/\/[^/]+\/health(\/[^?]*)?(\?|$)/.test(request.url)

/** The probes no rate limit charges: the balancer's checks and the metrics scrape (which has its own token). */
export const isProbe = (request: Request) => isHealthCheck(request) || /^[a-z]+:\/\/[^/]+\/metrics(\?|$)/.test(request.url)
