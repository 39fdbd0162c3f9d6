import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js'
import type { AppContext } from '../../context'
import type { Caller } from '../../access/caller'
import { ApiError } from '../../lib/errors'
import type { ExactMoney } from '../../lib/money'
import { createOnce, tenantTx, write } from '../../lib/write'
import type { RunInput, RunResult } from '../messaging/model'
import { FIELD_RULES, runTool, type FieldRule, type ParameterProblem } from '../messaging/run'
import { companyCurrencies, runnableTools, toolBySlug, toolKind, toolParameters, type StoredParameter, type ToolRow } from '../messaging/service'

type JsonSchema = Record<string, unknown>

/** The parameter's type, then what the run requires of the field it fills (a closed set, a bound, an id). */
function propertySchema(p: StoredParameter, currencies: string[], rule: FieldRule | undefined): JsonSchema {
  const base = { title: p.label, description: p.label }
  if (rule && 'enum' in rule) return { ...base, type: 'string', enum: [...rule.enum] }
  if (rule && 'positive' in rule) return { ...base, type: 'number', exclusiveMinimum: 0 }
  // Amounts keep six decimal places: anything smaller would be stored as 0.
  if (rule && 'amount' in rule) return { ...base, type: 'number', minimum: 0.000001 }
  if (rule && 'id' in rule) return { ...base, type: 'integer', minimum: 1, maximum: 2147483647, description: `${p.label} (id)` }
  return typeSchema(p, currencies, base)
}

function typeSchema(p: StoredParameter, currencies: string[], base: JsonSchema): JsonSchema {
  switch (p.type) {
    case 'number':
      return { ...base, type: 'number' }
    case 'amount':
      return { ...base, type: 'number', exclusiveMinimum: 0 }
    case 'account':
    case 'client':
    case 'cost_center':
      return { ...base, type: 'integer', minimum: 1, description: `${p.label} (id)` }
    case 'currency':
      return { ...base, type: 'string', ...(currencies.length > 0 && { enum: currencies }) }
    case 'side':
      return { ...base, type: 'string', enum: ['buy', 'sell'] }
    case 'date':
      return { ...base, type: 'string', format: 'date' }
    case 'string':
      return { ...base, type: 'string' }
  }
}

/** The bot-facing face of a tool: its parameters only; the fixed config stays on the server. */
export function mcpTool(row: ToolRow, currencies: string[], idempotent: boolean): Tool {
  const params = toolParameters(row)
  const rules = FIELD_RULES[toolKind(row)]
  const required = params.filter((p) => p.required).map((p) => p.key)
  return {
    name: row.slug,
    title: row.name,
    description: row.description || row.name,
    inputSchema: {
      type: 'object',
      properties: Object.fromEntries(params.map((p) => [p.key, propertySchema(p, currencies, rules[p.key])])),
      ...(required.length > 0 && { required }),
    },
    annotations: { title: row.name, readOnlyHint: false, destructiveHint: false, idempotentHint: idempotent, openWorldHint: false },
  }
}

const STATUS_ES: Record<string, string> = {
  pending: 'pendiente de aprobación',
  completed: 'completada',
  cancelled: 'cancelada',
  mixed: 'con movimientos en distintos estados',
}

/** An amount's exact text, signed. */
const signed = (n: ExactMoney) => (n.rawJSON.startsWith('-') || n.rawJSON === '0' ? n.rawJSON : `+${n.rawJSON}`)

export function summary(tool: ToolRow, result: RunResult): string {
  const op = result.operation
  const legs = op.transactions.map((t) => `${t.currency} ${signed(t.amount)} (cuenta ${t.account_id})`).join('; ')
  return `Operación #${op.id} creada con «${tool.name}», ${STATUS_ES[op.status] ?? op.status}: ${legs}.`
}

function errorText(tool: ToolRow | null, e: ApiError): string {
  if (e.code === 'INVALID_PARAMETERS' && Array.isArray(e.details)) {
    const problems = e.details as ParameterProblem[]
    const missing = problems.filter((p) => p.reason === 'missing').map((p) => `${p.field} (${p.label})`)
    const invalid = problems.filter((p) => p.reason === 'invalid').map((p) => `${p.field} (${p.label}): ${p.message}`)
    const parts = [
      ...(missing.length ? [`Faltan datos: ${missing.join(', ')}.`] : []),
      ...(invalid.length ? [`Datos inválidos: ${invalid.join('; ')}.`] : []),
    ]
    return `No se pudo ejecutar «${tool?.name ?? ''}». ${parts.join(' ')} Pedíselos a la persona y volvé a intentar.`
  }
  if (e.code === 'TOOL_DISABLED') return `La herramienta «${tool?.name ?? ''}» está deshabilitada.`
  return `No se pudo ejecutar la herramienta (${e.code}): ${e.message}`
}

const toolError = (tool: ToolRow | null, e: ApiError): CallToolResult => ({
  isError: true,
  content: [{ type: 'text', text: errorText(tool, e) }],
  structuredContent: { error: { code: e.code, message: e.message, ...(e.details !== undefined && { details: e.details }) } },
})

const MAX_ID = 2147483647
const optionalId = (v: unknown) => v === undefined || v === null || (Number.isInteger(v) && (v as number) >= 1 && (v as number) <= MAX_ID)

/**
 * `requested_by` from the call's metadata or arguments, checked like the REST body, and required as there: a run
 * always says who asked (contract §5 and §10), whichever door it came through.
 */
function requester(raw: unknown): RunInput['requested_by'] | ApiError {
  if (raw === undefined || raw === null)
    return new ApiError(400, 'VALIDATION_ERROR', 'requested_by is required: send it in _meta.requested_by or as the argument requested_by', [
      { field: 'requested_by', message: 'required' },
    ])
  const r = raw as Record<string, unknown>
  const ok =
    typeof raw === 'object' &&
    Number.isInteger(r.contact_id) &&
    typeof r.phone === 'string' &&
    r.phone.length <= 50 &&
    optionalId(r.employee_id) &&
    optionalId(r.client_id)
  if (!ok)
    return new ApiError(400, 'VALIDATION_ERROR', 'requested_by must be { contact_id: integer, phone: string, employee_id?: integer, client_id?: integer }')
  return {
    contact_id: r.contact_id as number,
    phone: r.phone as string,
    ...(r.employee_id != null && { employee_id: r.employee_id as number }),
    ...(r.client_id != null && { client_id: r.client_id as number }),
  }
}

/**
 * One MCP server per HTTP request, bound to the authenticated caller: the tool list is read fresh from the
 * database each time, so a disabled or deleted tool disappears at once.
 */
export function mcpServerFor(app: AppContext, caller: Caller, opts: { idempotencyKey?: string }) {
  // The low-level server: the high-level one announces `tools.listChanged`, a notification a stateless endpoint
  // has no stream to deliver on.
  const mcp = new Server({ name: 'financial-operations-service', version: '1.0.0' }, { capabilities: { tools: {} } })

  mcp.setRequestHandler(ListToolsRequestSchema, async () => {
    const [rows, currencies] = await tenantTx(app, caller, 'read', async (tx) => [
      await runnableTools(tx, caller),
      await companyCurrencies(tx, caller.companyId),
    ] as const)
    return { tools: rows.map((r) => mcpTool(r, currencies, opts.idempotencyKey !== undefined)) }
  })

  mcp.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const { name, arguments: args = {}, _meta } = request.params
    const tool = await tenantTx(app, caller, 'read', (tx) => toolBySlug(tx, caller, name))
    if (!tool) return toolError(null, new ApiError(404, 'NOT_FOUND', `Unknown tool ${name}`))
    const meta = (_meta ?? {}) as Record<string, unknown>
    const { requested_by: argRequester, ...parameters } = args as Record<string, unknown>
    const who = requester(meta.requested_by ?? argRequester)
    if (who instanceof ApiError) return toolError(tool, who)
    const input: RunInput = { parameters, requested_by: who, channel: 'messaging' }
    const key = typeof meta.idempotency_key === 'string' ? meta.idempotency_key : opts.idempotencyKey
    try {
      // A call is one message inside the JSON-RPC request, so it claims its key in a write of its own.
      const result =
        key === undefined
          ? await write(app, caller, (tx) => runTool(tx, caller, tool.id, input), { channel: 'messaging' })
          : await createOnce(
              app,
              caller,
              { key, method: 'POST', path: `/api/messaging/tools/${tool.id}/run`, fingerprint: input },
              {},
              (tx) => runTool(tx, caller, tool.id, input),
              { channel: 'messaging' },
            )
      return { content: [{ type: 'text', text: summary(tool, result) }], structuredContent: { operation: result.operation } }
    } catch (e) {
      if (e instanceof ApiError) return toolError(tool, e)
      throw e
    }
  })

  return mcp
}
