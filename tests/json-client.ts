/** A JSON caller of a server over real HTTP, for the tests that talk to a running server process. */
export type Json = Record<string, any>

export function jsonClient(base: string) {
  return async (method: string, path: string, opts: { key?: string; bearer?: string; body?: unknown } = {}) => {
    const headers: Record<string, string> = {}
    if (opts.key) headers['x-api-key'] = opts.key
    if (opts.bearer) headers.authorization = `Bearer ${opts.bearer}`
    if (opts.body !== undefined) headers['content-type'] = 'application/json'
    const res = await fetch(`${base}${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) })
    const text = await res.text()
    let body: Json = {}
    try {
      body = JSON.parse(text)
    } catch {
      // HAProxy's own error pages are HTML.
    }
    return { status: res.status, body, retryAfter: res.headers.get('retry-after'), served: res.headers.get('x-served-by') }
  }
}
