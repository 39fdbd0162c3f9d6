import { Elysia, t } from 'elysia'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import type { AppContext } from '../../context'
import { routePolicy } from '../../access/policy'
import { errors } from '../../lib/models'
import { parseExactNumbers } from '../../lib/money'
import { mcpServerFor } from './server'
import { McpModel } from './model'

const detail = {
  tags: ['MCP'],
  summary: 'Model Context Protocol endpoint (Streamable HTTP) for the messaging tools',
  description: [
    'JSON-RPC 2.0 over the MCP Streamable HTTP transport, stateless: every POST is answered on its own with `application/json` (a notification alone gets 202 with no body).',
    'Since the answer is always JSON, a request without `Accept`, or with `*/*`, `application/*` or `application/json` alone, is served like one accepting `application/json, text/event-stream`; an `Accept` that rules JSON out is 406.',
    '`tools/list` gives the company\'s enabled, live tools (name = slug, input schema from `parameter_schema`);',
    '`tools/call` runs one as `POST /api/messaging/tools/{id}/run` does, with `requested_by` from `_meta.requested_by` or an argument `requested_by`.',
    'The optional `Idempotency-Key` header (or `_meta.idempotency_key` of a call) makes calls replayable. See docs/mcp.md.',
  ].join(' '),
  // The document takes plain JSON Schema here; the TypeBox schema as its JSON.
  requestBody: { required: true, content: { 'application/json': { schema: JSON.parse(JSON.stringify(McpModel.body)) } } },
}

/** Says which credential to send, so MCP clients do not take the 401 for an OAuth challenge. */
const CHALLENGE = 'ApiKey header="x-api-key"'

const TRANSPORT_CODES: Record<number, string> = { 415: 'UNSUPPORTED_MEDIA_TYPE' }

/**
 * The transport answers HTTP-level rejections (bad Accept or Content-Type, unparsable JSON-RPC) with a
 * JSON-RPC error body; the API promises `{ error, code }` for every error, so those are rewritten.
 * JSON-RPC errors inside a 200 answer are protocol results and stay as they are.
 */
async function apiError(res: Response): Promise<Response> {
  const body = (await res.json().catch(() => null)) as { error?: { message?: string } } | null
  const message = body?.error?.message ?? (res.statusText || 'Invalid MCP request')
  return new Response(JSON.stringify({ error: message, code: TRANSPORT_CODES[res.status] ?? 'VALIDATION_ERROR' }), {
    status: res.status,
    headers: { 'content-type': 'application/json; charset=utf-8' },
  })
}

/**
 * Answers here are always `application/json`, so any client that takes JSON is served: a missing Accept
 * header, a wildcard or `application/json` alone count as accepting both types the transport insists on.
 * Only a client that rules JSON out (e.g. `Accept: text/html`) gets the transport's 406.
 */
function withLenientAccept(request: Request): Request {
  const accept = request.headers.get('accept')
  const takesJson = accept === null || accept.trim() === '' || /(^|,)\s*(\*\/\*|application\/\*|application\/json)\s*(;|,|$)/i.test(accept)
  if (!takesJson) return request
  const headers = new Headers(request.headers)
  headers.set('accept', 'application/json, text/event-stream')
  // The body is already read and handed over parsed; the transport reads only the method, URL and headers.
  return new Request(request.url, { method: request.method, headers })
}

/**
 * The body as every other route reads it (`parseExactNumbers`): a number a double cannot hold exactly, such as money
 * sent as `1234567890123.123457`, stays its text, which the tools take as they take a decimal string. The transport
 * would `JSON.parse` it and round; it is handed the parsed message instead (`parsedBody`).
 */
async function readMessage(request: Request): Promise<{ ok: true; message: unknown } | { ok: false; answer: Response }> {
  const text = await request.text()
  try {
    return { ok: true, message: parseExactNumbers(text) }
  } catch {
    const answer = new Response(JSON.stringify({ error: 'Parse error: Invalid JSON', code: 'VALIDATION_ERROR' }), {
      status: 400,
      headers: { 'content-type': 'application/json; charset=utf-8' },
    })
    return { ok: false, answer }
  }
}


export const mcpModule = (app: AppContext) =>
  new Elysia({ prefix: '/api' })
    .use(routePolicy(app))
    .post(
      '/mcp',
      async ({ caller, request, headers }) => {
        const idempotencyKey = headers['idempotency-key']
        const body = await readMessage(request)
        if (!body.ok) return body.answer
        const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
        const server = mcpServerFor(app, caller, { idempotencyKey })
        await server.connect(transport)
        try {
          const res = await transport.handleRequest(withLenientAccept(request), { parsedBody: body.message })
          return res.status >= 400 ? await apiError(res) : res
        } finally {
          // Stateless: with JSON responses the answer is complete here, so the per-request server can go.
          await server.close()
        }
      },
      {
        // One endpoint for every JSON-RPC message: tools/list reads and tools/call writes in transactions of their own.
        policy: { permission: ['messaging.run', 'messaging.manage'], tx: 'none', challenge: CHALLENGE },
        parse: 'none',
        response: { 200: McpModel.answer, 202: t.Void({ description: 'A notification (or notifications only) was accepted; no body' }), ...errors(400, 406, 413, 415) },
        detail,
      },
    )
    .get(
      '/mcp',
      ({ set }) => {
        // A stateless server has no stream to resume or push on; MCP clients take 405 as "no GET stream".
        set.status = 405
        set.headers.allow = 'POST'
        return { error: 'This MCP endpoint is stateless: send JSON-RPC messages with POST', code: 'METHOD_NOT_ALLOWED' }
      },
      {
        // Answered without the database.
        policy: { permission: ['messaging.run', 'messaging.manage'], tx: 'none', challenge: CHALLENGE },
        response: { ...errors(405) },
        detail: { tags: ['MCP'], summary: 'No server-to-client stream: 405', description: 'The endpoint is stateless; there is no standalone SSE stream.' },
      },
    )
    .delete(
      '/mcp',
      ({ set }) => {
        set.status = 405
        set.headers.allow = 'POST'
        return { error: 'This MCP endpoint is stateless: there is no session to end', code: 'METHOD_NOT_ALLOWED' }
      },
      {
        // Answered without the database.
        policy: { permission: ['messaging.run', 'messaging.manage'], tx: 'none', challenge: CHALLENGE },
        response: { ...errors(405) },
        detail: { tags: ['MCP'], summary: 'No sessions to end: 405', description: 'The endpoint is stateless; there are no sessions.' },
      },
    )
