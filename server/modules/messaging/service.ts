import { and, asc, eq, inArray, isNull, sql } from 'drizzle-orm'
import { accounts, clients, costCenters, messagingTools, operationTypes, transactionTypes } from '../../../db/schema'
import type { Executor, Tx } from '../../../db/client'
import type { Caller } from '../../access/caller'
import { ApiError, conflict, invalid, notFound, unprocessable } from '../../lib/errors'
import { announce } from '../../lib/events'
import { iso } from '../../lib/models'
import { isFiniteDecimal, toJson, toMoney } from '../../lib/money'
import type { FixedConfigInput, ParameterSchemaInput, ParameterType, ToolDto } from './model'

export type ToolRow = typeof messagingTools.$inferSelect
export type ToolKind = FixedConfigInput['toolKind']
export interface StoredParameter {
  key: string
  label: string
  type: ParameterType
  required: boolean
}

/**
 * The slug rule of the contract, exactly: lower case, accents stripped, every run of characters outside
 * a-z0-9 becomes one `-`, trimmed. The slug libraries checked transliterate beyond that (`&` → `and`,
 * `ü` → `ue`, `%` → `percent`), so the rule is applied here by hand.
 */
export function slugify(text: string): string {
  return text
    .normalize('NFD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
}

/**
 * Which fields a parameter may fill, per kind, and the parameter types that fit each. Besides the
 * `fixed_config` fields, every kind takes `date`, the operation's date (default: now), since no
 * `fixed_config` field is a date and the `date` parameter type would otherwise fill nothing.
 */
const ID = ['account', 'number'] as const
const DATE = ['date'] as const
export const PARAMETER_FIELDS: Record<ToolKind, Record<string, readonly ParameterType[]>> = {
  up_down: {
    date: DATE,
    mode: ['string'],
    direction: ['string'],
    sourceAccountId: ID,
    destinationAccountId: ID,
    clientId: ['client', 'number'],
    currency: ['currency', 'string'],
    amount: ['amount', 'number'],
    description: ['string'],
  },
  exchange: {
    date: DATE,
    localAccountId: ID,
    quoteAccountId: ID,
    side: ['side', 'string'],
    quoteAmount: ['amount', 'number'],
    fx: ['amount', 'number'],
  },
  budget: {
    date: DATE,
    costCenterId: ['cost_center', 'number'],
    direction: ['string'],
    paymentSourceMode: ['string'],
    internalAccountId: ID,
    payerClientId: ['client', 'number'],
    amount: ['amount', 'number'],
    currency: ['currency', 'string'],
    description: ['string'],
  },
  other: { date: DATE, description: ['string'] },
}

export const toolKind = (row: ToolRow) => (row.fixedConfig as FixedConfigInput).toolKind
export const toolParameters = (row: ToolRow) => (row.parameterSchema as { parameters: StoredParameter[] }).parameters

/**
 * Money in `fixed_config` is stored as sent (number or decimal string; a number reads back as a raw JSON number with
 * its digits), so a run computes from the exact value; responses carry it as a JSON number, like every other amount.
 */
function configDto(config: FixedConfigInput): ToolDto['fixed_config'] {
  const money = (v: unknown) => (isFiniteDecimal(v) ? toJson(toMoney(v)) : v)
  const c: Record<string, unknown> = { ...config }
  for (const field of ['amount', 'quoteAmount', 'fx']) if (c[field] != null) c[field] = money(c[field])
  if (Array.isArray(c.transactions)) c.transactions = c.transactions.map((t: Record<string, unknown>) => ({ ...t, amount: money(t.amount) }))
  return c as ToolDto['fixed_config']
}

export const toolDto = (r: ToolRow): ToolDto => ({
  id: r.id,
  company_id: r.companyId,
  name: r.name,
  slug: r.slug,
  description: r.description,
  enabled: r.enabled,
  company_operation_type_id: r.companyOperationTypeId,
  mode: r.mode as ToolDto['mode'],
  fixed_config: configDto(r.fixedConfig as FixedConfigInput),
  parameter_schema: { parameters: toolParameters(r) },
  created_by: r.createdBy,
  created_at: r.createdAt.toISOString(),
  updated_at: r.updatedAt.toISOString(),
  deleted_at: iso(r.deletedAt),
})

const withoutNulls = <T extends object>(o: T): T =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined)) as T

function normalizeSchema(kind: ToolKind, schema: ParameterSchemaInput | undefined): { parameters: StoredParameter[] } {
  const fields = PARAMETER_FIELDS[kind]
  const seen = new Set<string>()
  const problems: { field: string; message: string }[] = []
  const parameters = (schema?.parameters ?? []).map((p, i) => {
    const at = `parameter_schema.parameters.${i}`
    const allowed = Object.hasOwn(fields, p.key) ? fields[p.key] : undefined
    if (!allowed)
      problems.push({ field: `${at}.key`, message: `${p.key} is not a field of a ${kind} tool (one of: ${Object.keys(fields).join(', ')})` })
    else if (!allowed.includes(p.type))
      problems.push({ field: `${at}.type`, message: `${p.key} takes a parameter of type ${allowed.join(' or ')}` })
    if (seen.has(p.key)) problems.push({ field: `${at}.key`, message: `${p.key} appears twice` })
    seen.add(p.key)
    return { key: p.key, label: p.label?.trim() || p.key, type: p.type, required: p.required ?? true }
  })
  if (problems.length) throw invalid('Invalid parameter_schema', problems)
  return { parameters }
}

async function checkOperationType(tx: Tx, companyId: number, config: FixedConfigInput) {
  const id = config.operationTypeId
  const [type] =
    id != null && Number.isInteger(id) && id >= 1 && id <= 2147483647
      ? await tx
          .select({ kind: operationTypes.kind })
          .from(operationTypes)
          .where(and(eq(operationTypes.id, id), eq(operationTypes.companyId, companyId)))
      : []
  if (!type)
    throw unprocessable('OPERATION_TYPE_NOT_FOUND', 'fixed_config.operationTypeId is not an operation type of your company', [
      { field: 'fixed_config.operationTypeId', message: id == null ? 'required' : `unknown operation type ${id}` },
    ])
  if (type.kind !== config.toolKind)
    throw unprocessable('OPERATION_TYPE_KIND_MISMATCH', `The operation type is of kind ${type.kind}, the tool of kind ${config.toolKind}`, [
      { field: 'fixed_config.operationTypeId', message: `operation type kind ${type.kind} does not match toolKind ${config.toolKind}` },
    ])
  return id!
}

/** Fixed references must exist in the caller's company when the tool is saved, not only when it runs. */
async function checkReferences(tx: Tx, companyId: number, config: FixedConfigInput) {
  const c = config as Record<string, unknown>
  const accountFields = ['sourceAccountId', 'destinationAccountId', 'localAccountId', 'quoteAccountId', 'internalAccountId']
  const wantedAccounts = accountFields.filter((f) => c[f] != null).map((f) => ({ field: `fixed_config.${f}`, id: c[f] as number }))
  const wantedTypes: { field: string; id: number }[] = []
  if (config.toolKind === 'other')
    (config.transactions ?? []).forEach((t, i) => {
      wantedAccounts.push({ field: `fixed_config.transactions.${i}.accountId`, id: t.accountId })
      if (t.transactionTypeId != null) wantedTypes.push({ field: `fixed_config.transactions.${i}.transactionTypeId`, id: t.transactionTypeId })
    })
  if (wantedAccounts.length) {
    const found = await tx
      .select({ id: accounts.id })
      .from(accounts)
      .innerJoin(clients, eq(clients.id, accounts.clientId))
      .where(and(eq(accounts.companyId, companyId), isNull(clients.deletedAt), inArray(accounts.id, wantedAccounts.map((w) => w.id))))
    const known = new Set(found.map((f) => f.id))
    const missing = wantedAccounts.filter((w) => !known.has(w.id))
    if (missing.length)
      throw unprocessable('UNKNOWN_ACCOUNT', 'Unknown account in fixed_config', missing.map((m) => ({ field: m.field, message: `unknown account ${m.id}` })))
  }
  if (wantedTypes.length) {
    const found = await tx
      .select({ id: transactionTypes.id })
      .from(transactionTypes)
      .where(and(eq(transactionTypes.companyId, companyId), inArray(transactionTypes.id, wantedTypes.map((w) => w.id))))
    const known = new Set(found.map((f) => f.id))
    const missing = wantedTypes.filter((w) => !known.has(w.id))
    if (missing.length)
      throw unprocessable('UNKNOWN_TRANSACTION_TYPE', 'Unknown transaction type in fixed_config', missing.map((m) => ({ field: m.field, message: `unknown transaction type ${m.id}` })))
  }
  for (const f of ['clientId', 'payerClientId']) {
    if (c[f] == null) continue
    const [client] = await tx
      .select({ id: clients.id })
      .from(clients)
      .where(and(eq(clients.id, c[f] as number), eq(clients.companyId, companyId), isNull(clients.deletedAt)))
    if (!client) throw unprocessable('UNKNOWN_CLIENT', 'Unknown client in fixed_config', [{ field: `fixed_config.${f}`, message: `unknown client ${c[f]}` }])
  }
  if (c.costCenterId != null) {
    const [cc] = await tx
      .select({ id: costCenters.id })
      .from(costCenters)
      .where(and(eq(costCenters.id, c.costCenterId as number), eq(costCenters.companyId, companyId)))
    if (!cc)
      throw unprocessable('UNKNOWN_COST_CENTER', 'Unknown cost center in fixed_config', [
        { field: 'fixed_config.costCenterId', message: `unknown cost center ${c.costCenterId}` },
      ])
  }
}

const legacyMode = (config: FixedConfigInput) => (config.toolKind === 'up_down' ? (config.mode ?? 'standard') : 'standard')

function slugOf(value: string) {
  const slug = slugify(value)
  if (!slug) throw invalid('The slug would be empty', [{ field: 'slug', message: 'needs at least one letter or digit' }])
  return slug
}

async function assertSlugFree(tx: Tx, companyId: number, slug: string, exceptId?: number) {
  const [row] = await tx
    .select({ id: messagingTools.id })
    .from(messagingTools)
    .where(and(eq(messagingTools.companyId, companyId), eq(messagingTools.slug, slug), isNull(messagingTools.deletedAt)))
  if (row && row.id !== exceptId) throw slugTaken(slug)
}

const slugTaken = (slug: string) => conflict('SLUG_TAKEN', `Another live tool of the company has the slug ${slug}`)

/** A concurrent writer that passed the same free-slug check loses at the partial unique index instead. */
async function guardSlug<T>(slug: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (e) {
    if (e instanceof ApiError) throw e
    const code = (e as { cause?: { code?: string } })?.cause?.code ?? (e as { code?: string })?.code
    if (code === '23505') throw slugTaken(slug)
    throw e
  }
}

export async function createTool(
  tx: Tx,
  caller: Caller,
  input: {
    name: string
    fixed_config: FixedConfigInput
    slug?: string
    enabled?: boolean
    description?: string
    parameter_schema?: ParameterSchemaInput
  },
) {
  const config = withoutNulls(input.fixed_config)
  const operationTypeId = await checkOperationType(tx, caller.companyId, config)
  const parameterSchema = normalizeSchema(config.toolKind, input.parameter_schema)
  await checkReferences(tx, caller.companyId, config)
  const slug = slugOf(input.slug ?? input.name)
  await assertSlugFree(tx, caller.companyId, slug)
  const [row] = await guardSlug(slug, () =>
    tx
      .insert(messagingTools)
      .values({
        companyId: caller.companyId,
        name: input.name,
        slug,
        description: input.description ?? '',
        enabled: input.enabled ?? true,
        companyOperationTypeId: operationTypeId,
        mode: legacyMode(config),
        fixedConfig: config,
        parameterSchema,
        createdBy: caller.employee?.id ?? null,
      })
      .returning(),
  )
  return announceTool(tx, caller, 'messaging_tool.created', toolDto(row))
}

/** Tells the rest of the service about a tool change; answers the tool as announced. */
async function announceTool<T extends { id: number }>(tx: Tx, caller: Caller, type: string, dto: T): Promise<T> {
  await announce(tx, { type, companyId: caller.companyId, object: { kind: 'messaging_tool', id: dto.id }, render: async () => dto })
  return dto
}

export async function listTools(db: Executor, caller: Caller) {
  const rows = await db
    .select()
    .from(messagingTools)
    .where(and(eq(messagingTools.companyId, caller.companyId), isNull(messagingTools.deletedAt)))
    .orderBy(asc(messagingTools.id))
  return rows.map(toolDto)
}

/** A live tool of the caller's company; 404 when missing, deleted or foreign. */
export async function getToolRow(db: Executor, caller: Caller, id: number, lock = false) {
  const query = db
    .select()
    .from(messagingTools)
    .where(and(eq(messagingTools.id, id), eq(messagingTools.companyId, caller.companyId), isNull(messagingTools.deletedAt)))
  const [row] = lock ? await query.for('update') : await query
  if (!row) throw notFound('Messaging tool')
  return row
}

export async function updateTool(
  tx: Tx,
  caller: Caller,
  id: number,
  input: {
    name?: string
    fixed_config?: FixedConfigInput
    slug?: string
    enabled?: boolean
    description?: string
    parameter_schema?: ParameterSchemaInput
  },
) {
  const current = await getToolRow(tx, caller, id, true)
  const config = input.fixed_config ? withoutNulls(input.fixed_config) : (current.fixedConfig as FixedConfigInput)
  const changes: Partial<typeof messagingTools.$inferInsert> = {}
  if (input.fixed_config) {
    changes.companyOperationTypeId = await checkOperationType(tx, caller.companyId, config)
    await checkReferences(tx, caller.companyId, config)
    changes.fixedConfig = config
    changes.mode = legacyMode(config)
  }
  if (input.parameter_schema || input.fixed_config)
    changes.parameterSchema = normalizeSchema(config.toolKind, input.parameter_schema ?? (current.parameterSchema as ParameterSchemaInput))
  if (input.name !== undefined) changes.name = input.name
  if (input.description !== undefined) changes.description = input.description
  if (input.enabled !== undefined) changes.enabled = input.enabled
  let slug = current.slug
  if (input.slug !== undefined) {
    slug = slugOf(input.slug)
    if (slug !== current.slug) await assertSlugFree(tx, caller.companyId, slug, id)
    changes.slug = slug
  }
  const [row] = await guardSlug(slug, () =>
    tx
      .update(messagingTools)
      .set({ ...changes, updatedAt: sql`now()` })
      .where(eq(messagingTools.id, id))
      .returning(),
  )
  return announceTool(tx, caller, 'messaging_tool.updated', toolDto(row))
}

/** Soft delete: the slug becomes free again and every later read answers 404. */
export async function deleteTool(tx: Tx, caller: Caller, id: number) {
  await getToolRow(tx, caller, id, true)
  const [row] = await tx.update(messagingTools).set({ deletedAt: sql`now()`, updatedAt: sql`now()` }).where(eq(messagingTools.id, id)).returning()
  await announceTool(tx, caller, 'messaging_tool.deleted', toolDto(row))
  return { deleted: true as const }
}

/** Tools a bot may use right now: enabled and live. */
export async function runnableTools(db: Executor, caller: Caller) {
  return db
    .select()
    .from(messagingTools)
    .where(and(eq(messagingTools.companyId, caller.companyId), eq(messagingTools.enabled, true), isNull(messagingTools.deletedAt)))
    .orderBy(asc(messagingTools.id))
}

/** The live tool with this slug (enabled or not), or null. */
export async function toolBySlug(db: Executor, caller: Caller, slug: string) {
  const [row] = await db
    .select()
    .from(messagingTools)
    .where(and(eq(messagingTools.companyId, caller.companyId), eq(messagingTools.slug, slug), isNull(messagingTools.deletedAt)))
  return row ?? null
}

/** Currencies of the company's accounts (live clients), sorted. */
export async function companyCurrencies(db: Executor, companyId: number): Promise<string[]> {
  const rows = await db
    .selectDistinct({ currency: accounts.currencyName })
    .from(accounts)
    .innerJoin(clients, eq(clients.id, accounts.clientId))
    .where(and(eq(accounts.companyId, companyId), isNull(clients.deletedAt)))
    .orderBy(asc(accounts.currencyName))
  return rows.map((r) => r.currency)
}
