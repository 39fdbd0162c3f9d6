import { t } from 'elysia'

/**
 * The MCP endpoint's JSON-RPC 2.0 messages as JSON Schema, so a typed client can build a call from the document:
 * the methods this server answers, each with its params (`tools/call` with the `requested_by` it needs), and any
 * other request or notification of the protocol in the general shape. Answers are JSON-RPC responses.
 */
const JsonRpcVersion = t.Literal('2.0')
const RequestId = t.Union([t.String(), t.Integer()], { description: 'Chosen by the client; echoed in the answer' })

const RequestedBy = t.Object(
  {
    contact_id: t.Integer({ description: 'The messaging contact who asked' }),
    phone: t.String({ maxLength: 50 }),
    employee_id: t.Optional(t.Nullable(t.Integer({ minimum: 1, maximum: 2147483647 }))),
    client_id: t.Optional(t.Nullable(t.Integer({ minimum: 1, maximum: 2147483647 }))),
  },
  { description: 'Who asked for the run, as `requested_by` of `POST /api/messaging/tools/{id}/run`' },
)

const ToolsCall = t.Object(
  {
    jsonrpc: JsonRpcVersion,
    id: RequestId,
    method: t.Literal('tools/call'),
    params: t.Object({
      name: t.String({ description: "The tool's slug, as `tools/list` names it" }),
      arguments: t.Optional(
        t.Record(t.String(), t.Any(), {
          description: "Values of the tool's parameters by key; may carry `requested_by` instead of `_meta.requested_by`",
        }),
      ),
      _meta: t.Optional(
        t.Object({
          requested_by: t.Optional(RequestedBy),
          idempotency_key: t.Optional(t.String({ minLength: 1, maxLength: 255, description: 'Replays the first answer of the same call within 24 h' })),
        }),
      ),
    }),
  },
  { $id: 'McpToolsCall', description: 'Runs a tool; `requested_by` (from `_meta` or `arguments`) is required as by `/run`' },
)

const ToolsList = t.Object(
  {
    jsonrpc: JsonRpcVersion,
    id: RequestId,
    method: t.Literal('tools/list'),
    params: t.Optional(t.Object({ cursor: t.Optional(t.String()) })),
  },
  { $id: 'McpToolsList', description: "The company's enabled, live tools" },
)

const Initialize = t.Object(
  {
    jsonrpc: JsonRpcVersion,
    id: RequestId,
    method: t.Literal('initialize'),
    params: t.Object({
      protocolVersion: t.String({ description: 'e.g. `2025-06-18`' }),
      capabilities: t.Record(t.String(), t.Any()),
      clientInfo: t.Object({ name: t.String(), version: t.String() }),
    }),
  },
  { $id: 'McpInitialize' },
)

const OtherRequest = t.Object(
  {
    jsonrpc: JsonRpcVersion,
    id: t.Optional(RequestId),
    method: t.String({ description: 'Any other method of the protocol (`ping`, `notifications/initialized`, …); without `id` a notification' }),
    params: t.Optional(t.Record(t.String(), t.Any())),
  },
  { $id: 'McpMessage' },
)

const Message = t.Union([ToolsCall, ToolsList, Initialize, OtherRequest])

const Answer = t.Object(
  {
    jsonrpc: JsonRpcVersion,
    id: t.Union([t.String(), t.Integer(), t.Null()]),
    result: t.Optional(t.Record(t.String(), t.Any(), { description: 'The method\'s result; for `tools/call` `{ content, structuredContent: { operation }, isError? }`' })),
    error: t.Optional(t.Object({ code: t.Integer(), message: t.String(), data: t.Optional(t.Any()) })),
  },
  { $id: 'McpAnswer' },
)

export const McpModel = {
  body: t.Union([Message, t.Array(Message, { minItems: 1 })], { description: 'A JSON-RPC 2.0 request or notification of the MCP protocol (or a batch of them)' }),
  answer: t.Union([Answer, t.Array(Answer)], { description: 'A JSON-RPC 2.0 answer (or batch of answers)' }),
}
