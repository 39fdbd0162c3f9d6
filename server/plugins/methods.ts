import { Elysia } from 'elysia'

interface Route {
  method: string
  path: string
}

/** `/api/clients/:id` → a pattern of its concrete paths; `*` takes the rest. */
const patternOf = (path: string) =>
  new RegExp(`^${path.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:[^/]+/g, '[^/]+').replace(/\*$/, '.*')}$`)

/**
 * 405 with `Allow` for a path the service knows asked with a method it does not answer there (HTTP semantics,
 * RFC 9110 §15.5.6), instead of the 404 the router gives: a client learns it has the method wrong, not the path;
 * OPTIONS on such a path is 204 with the same `Allow`.
 * Worked out only when the router has found nothing, so it costs nothing on the requests it serves. Registered
 * before the errors plugin, whose 404 it replaces.
 */
export function methodNotAllowed(routes: () => Route[]) {
  let table: { pattern: RegExp; methods: Set<string> }[] | null = null
  const build = () => {
    const byPath = new Map<string, Set<string>>()
    for (const r of routes()) {
      const method = r.method.toUpperCase()
      if (method === 'ALL') continue
      const methods = byPath.get(r.path) ?? new Set<string>()
      methods.add(method)
      // The framework answers HEAD for every GET.
      if (method === 'GET') methods.add('HEAD')
      byPath.set(r.path, methods)
    }
    return [...byPath].map(([path, methods]) => ({ pattern: patternOf(path), methods }))
  }
  return new Elysia({ name: 'method-not-allowed' }).onError({ as: 'global' }, ({ code, request, path }) => {
    if (code !== 'NOT_FOUND') return
    table ??= build()
    const allowed = new Set<string>()
    for (const route of table) if (route.pattern.test(path)) for (const m of route.methods) allowed.add(m)
    if (allowed.size === 0 || allowed.has(request.method)) return
    const allow = [...allowed].sort().join(', ')
    // OPTIONS asks what the path takes (a browser's preflight is the CORS plugin's, before this).
    if (request.method === 'OPTIONS') return new Response(null, { status: 204, headers: { allow: `${allow}, OPTIONS` } })
    return new Response(JSON.stringify({ error: `${request.method} is not answered here; use ${allow}`, code: 'METHOD_NOT_ALLOWED' }), {
      status: 405,
      headers: { 'content-type': 'application/json; charset=utf-8', allow },
    })
  })
}
