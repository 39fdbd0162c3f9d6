import { and, asc, eq, gt, isNull, notInArray, sql } from 'drizzle-orm'
import { companies, employees, ventanillaDispenserTokens, ventanillaRates, ventanillaServices, ventanillaSettings, ventanillaTickets, ventanillaTokens } from '../../../db/schema'
import { rowsOf } from '../../../db/client'
import type { Executor, Tx } from '../../../db/client'
import type { Database } from '../../../db/client'
import type { Caller } from '../../access/caller'
import { conflict, invalid, notFound, rateLimited, unprocessable } from '../../lib/errors'
import { announce } from '../../lib/events'
import { dec, storedAmount, toJson } from '../../lib/money'
import { csvRecord, safeText } from '../exports/csv'
import { isoSql, localDate, validTimezone } from '../../lib/time'
import { credentialPrefix, newCredential, sameDigest, sha256 } from '../../lib/secrets'
import type { Snapshot, SnapshotCall } from './model'

export type PrivacyMode = 'full_name' | 'first_last_initial' | 'ticket'
export type PriorityMode = 'first' | 'off'
export type AsksName = 'off' | 'optional' | 'required'
type SettingsRow = typeof ventanillaSettings.$inferSelect
type ServiceRow = typeof ventanillaServices.$inferSelect
type TicketRow = typeof ventanillaTickets.$inferSelect

export const TOKEN_KIND = 'vtk'
export const channelOf = (companyId: number) => `ventanilla_${companyId}`

/** Notifications are delivered at commit, so listeners never rebuild from a change that was rolled back. */
export async function publish(tx: Tx, companyId: number, payload = 'change') {
  await tx.execute(sql`select pg_notify(${channelOf(companyId)}, ${payload})`)
}

/** Words that belong to the word after them in a Spanish name: "de la Torre", "del Valle", "de los Ángeles". */
const PARTICLES = new Set(['de', 'del', 'la', 'las', 'los', 'y', 'e', 'da', 'das', 'do', 'dos', 'di', 'van', 'von', 'der'])

/** A name's parts: its words, each particle joined to the word after it. */
function nameParts(words: string[]): string[][] {
  const parts: string[][] = []
  let pending: string[] = []
  for (const word of words) {
    pending.push(word)
    if (!PARTICLES.has(word.toLocaleLowerCase('es'))) {
      parts.push(pending)
      pending = []
    }
  }
  if (pending.length) parts.push(pending)
  return parts
}

/**
 * What the public screen may show of a customer's name; the full name never leaves the server otherwise.
 * `first_last_initial` reads the name as Spanish names are written (given names, then one or two surnames, which
 * the name-parsing libraries get wrong: they take the last word for the surname): a particle belongs to the part
 * after it ("de la Torre" is one part). One part is shown whole; two are the given name and the surname's initial
 * ("Juan P.", contract §8); three are ambiguous (two given names and a surname, or one and two surnames), so only
 * the first is shown, with the last part's initial ("Juan Carlos Pérez" → "Juan P."); four or more are two given
 * names and the initial of the first surname ("María José González Fernández de la Torre" → "María José G.").
 * When unsure it shows less, never a surname in full. docs/ventanilla.md has the rule and its examples.
 */
export function maskName(name: string | null, mode: PrivacyMode): string | null {
  if (mode === 'ticket' || name == null) return null
  const words = name.trim().split(/\s+/).filter(Boolean)
  if (words.length === 0) return null
  if (mode === 'full_name') return name
  const parts = nameParts(words)
  if (parts.length === 1) return words.join(' ')
  const given = parts.slice(0, parts.length >= 4 ? 2 : 1)
  const surname = parts.length === 3 ? parts[2] : parts[given.length]
  const initial = Array.from(surname[surname.length - 1])[0].toLocaleUpperCase('es')
  return `${given.flat().join(' ')} ${initial}.`
}

function isUniqueViolation(e: unknown): boolean {
  const err = e as { code?: string; cause?: { code?: string } }
  return (err?.cause?.code ?? err?.code) === '23505'
}

async function company(db: Executor, companyId: number) {
  const [row] = await db.select().from(companies).where(eq(companies.id, companyId))
  return row
}

async function settingsRow(db: Executor, companyId: number): Promise<SettingsRow | undefined> {
  const [row] = await db.select().from(ventanillaSettings).where(eq(ventanillaSettings.companyId, companyId))
  return row
}

function settingsDto(row: SettingsRow | undefined, companyTimezone: string) {
  return {
    displayName: row?.displayName ?? null,
    logoUrl: row?.logoUrl ?? '',
    showLogo: row?.showLogo ?? false,
    timezone: row?.timezone ?? companyTimezone,
    tickerText: row?.tickerText ?? '',
    announceSound: row?.announceSound ?? true,
    announceTts: row?.announceTts ?? true,
    privacyMode: (row?.privacyMode ?? 'first_last_initial') as PrivacyMode,
    priorityMode: (row?.priorityMode ?? 'first') as PriorityMode,
    dispenserAsksName: (row?.dispenserAsksName ?? 'off') as AsksName,
  }
}

/** The screen's time zone: its own setting, else the company's. */
async function timezoneOf(db: Executor, companyId: number): Promise<string> {
  const [row] = await db
    .select({ own: ventanillaSettings.timezone, company: companies.timezone })
    .from(companies)
    .leftJoin(ventanillaSettings, eq(ventanillaSettings.companyId, companies.id))
    .where(eq(companies.id, companyId))
  return row.own ?? row.company
}

export async function getSettings(db: Executor, caller: Caller) {
  const [c, row] = await Promise.all([company(db, caller.companyId), settingsRow(db, caller.companyId)])
  return settingsDto(row, c.timezone)
}

export interface SettingsInput {
  displayName?: string | null
  logoUrl?: string
  showLogo?: boolean
  timezone?: string
  tickerText?: string
  announceSound?: boolean
  announceTts?: boolean
  privacyMode?: PrivacyMode
  priorityMode?: PriorityMode
  dispenserAsksName?: AsksName
}

/**
 * Field checks a schema would only answer with its pattern: an http logo would be refused by the browser of a kiosk
 * served over https (mixed content), so it is refused here with words instead.
 */
function checkSettings(input: SettingsInput) {
  const problems: { field: string; message: string }[] = []
  if (input.timezone !== undefined && !validTimezone(input.timezone)) problems.push({ field: 'timezone', message: `"${input.timezone}" is not an IANA time zone (e.g. America/Argentina/Buenos_Aires)` })
  const logo = input.logoUrl
  if (logo !== undefined && logo !== '' && !/^\/[^/\s]\S*$|^\/$/.test(logo)) {
    let url: URL | null = null
    try {
      url = new URL(logo)
    } catch {
      url = null
    }
    if (!url || url.protocol !== 'https:' || /\s/.test(logo))
      problems.push({ field: 'logoUrl', message: 'the logo must be an https:// address (or a path on this service starting with /), or empty for none' })
  }
  if (problems.length) throw invalid(problems.map((p) => `${p.field}: ${p.message}`).join('; '), problems)
}

/** PUT: the whole settings (an omitted `priorityMode`, `dispenserAsksName` or `displayName` takes its default). */
export async function putSettings(tx: Tx, caller: Caller, input: Required<Omit<SettingsInput, 'displayName' | 'priorityMode' | 'dispenserAsksName'>> & SettingsInput, now: Date) {
  return saveSettings(tx, caller, { displayName: null, priorityMode: 'first', dispenserAsksName: 'off', ...input }, now)
}

/** PATCH: only the fields given change; the answer is the whole settings. */
export async function patchSettings(tx: Tx, caller: Caller, input: SettingsInput, now: Date) {
  return saveSettings(tx, caller, input, now)
}

async function saveSettings(tx: Tx, caller: Caller, input: SettingsInput, now: Date) {
  checkSettings(input)
  const values = {
    ...(input.displayName !== undefined && { displayName: input.displayName?.trim() ? input.displayName : null }),
    ...(input.logoUrl !== undefined && { logoUrl: input.logoUrl }),
    ...(input.showLogo !== undefined && { showLogo: input.showLogo }),
    ...(input.timezone !== undefined && { timezone: input.timezone }),
    // A ticker of blanks only is no ticker: the screen hides an empty one.
    ...(input.tickerText !== undefined && { tickerText: input.tickerText.trim() ? input.tickerText : '' }),
    ...(input.announceSound !== undefined && { announceSound: input.announceSound }),
    ...(input.announceTts !== undefined && { announceTts: input.announceTts }),
    ...(input.privacyMode !== undefined && { privacyMode: input.privacyMode }),
    ...(input.priorityMode !== undefined && { priorityMode: input.priorityMode }),
    ...(input.dispenserAsksName !== undefined && { dispenserAsksName: input.dispenserAsksName }),
    updatedAt: now,
  }
  const [row] = await tx
    .insert(ventanillaSettings)
    .values({ companyId: caller.companyId, ...values, createdAt: now })
    .onConflictDoUpdate({ target: ventanillaSettings.companyId, set: values })
    .returning()
  await publish(tx, caller.companyId)
  return settingsDto(row, (await company(tx, caller.companyId)).timezone)
}

function rateDto(r: { currency: string; buy: string; sell: string }) {
  return {
    currency: r.currency,
    buy: toJson(r.buy),
    sell: toJson(r.sell),
    mid: toJson(dec(r.buy).plus(r.sell).div(2)),
  }
}

async function listRates(db: Executor, companyId: number) {
  const rows = await db
    .select()
    .from(ventanillaRates)
    .where(eq(ventanillaRates.companyId, companyId))
    .orderBy(asc(ventanillaRates.position), asc(ventanillaRates.currency))
  return rows.map(rateDto)
}

/** Replaces the whole board: currencies not in the list disappear from it. */
export async function putRates(tx: Tx, caller: Caller, input: { rates: { currency: string; buy: string | number; sell: string | number }[] }, now: Date) {
  const problems: { field: string; message: string }[] = []
  const seen = new Set<string>()
  const rates = input.rates.map((r, i) => {
    const currency = r.currency.toUpperCase()
    if (seen.has(currency)) problems.push({ field: `rates.${i}.currency`, message: `duplicate currency ${currency}` })
    seen.add(currency)
    const amount = (side: 'buy' | 'sell') => {
      const value = r[side]
      const stored = storedAmount(value)
      if (stored === null) {
        const comma = typeof value === 'string' && /^\s*-?\d+(\.\d{3})*,\d+\s*$/.test(value)
        problems.push({
          field: `rates.${i}.${side}`,
          message: comma ? `"${value}" uses a comma: write decimals with a dot, e.g. "${value.trim().replace(/\./g, '').replace(',', '.')}"` : `"${value}" is not a decimal number (digits, with a dot for decimals)`,
        })
      } else if (dec(stored).isNegative()) problems.push({ field: `rates.${i}.${side}`, message: 'must not be negative' })
      return stored ?? '0'
    }
    return { currency, buy: amount('buy'), sell: amount('sell') }
  })
  if (problems.length) throw invalid(`Invalid rates: ${problems.map((p) => `${p.field}: ${p.message}`).join('; ')}`, problems)

  const keep = rates.map((r) => r.currency)
  await tx
    .delete(ventanillaRates)
    .where(and(eq(ventanillaRates.companyId, caller.companyId), ...(keep.length ? [notInArray(ventanillaRates.currency, keep)] : [])))
  for (const [position, r] of rates.entries()) {
    const values = { buy: r.buy, sell: r.sell, position, updatedAt: now }
    await tx
      .insert(ventanillaRates)
      .values({ companyId: caller.companyId, currency: r.currency, ...values, createdAt: now })
      .onConflictDoUpdate({ target: [ventanillaRates.companyId, ventanillaRates.currency], set: values })
  }
  await tx
    .insert(ventanillaSettings)
    .values({ companyId: caller.companyId, ratesUpdatedAt: now, ratesUpdatedBy: caller.employee?.id ?? null, createdAt: now, updatedAt: now })
    .onConflictDoUpdate({ target: ventanillaSettings.companyId, set: { ratesUpdatedAt: now, ratesUpdatedBy: caller.employee?.id ?? null } })
  await publish(tx, caller.companyId)
  return { rates: await listRates(tx, caller.companyId) }
}

/** The board with when and by whom it was last replaced (`updated_by` null for a key). */
export async function getRates(db: Executor, caller: Caller) {
  const [[meta], rates] = await Promise.all([
    db
      .select({ at: ventanillaSettings.ratesUpdatedAt, by: employees.name })
      .from(ventanillaSettings)
      .leftJoin(employees, eq(employees.id, ventanillaSettings.ratesUpdatedBy))
      .where(eq(ventanillaSettings.companyId, caller.companyId)),
    listRates(db, caller.companyId),
  ])
  return { rates, updated_at: meta?.at ? meta.at.toISOString() : null, updated_by: meta?.by ?? null }
}

const serviceDto = (s: ServiceRow) => ({
  id: s.id,
  name: s.name,
  prefix: s.prefix,
  created_at: s.createdAt.toISOString(),
  updated_at: s.updatedAt.toISOString(),
})

export async function listServices(db: Executor, caller: Caller) {
  const rows = await db
    .select()
    .from(ventanillaServices)
    .where(and(eq(ventanillaServices.companyId, caller.companyId), isNull(ventanillaServices.deletedAt)))
    .orderBy(asc(ventanillaServices.id))
  return rows.map(serviceDto)
}

async function liveService(db: Executor, companyId: number, id: number, lock = false) {
  const q = db
    .select()
    .from(ventanillaServices)
    .where(and(eq(ventanillaServices.id, id), eq(ventanillaServices.companyId, companyId), isNull(ventanillaServices.deletedAt)))
  const [row] = lock ? await q.for('update') : await q
  return row
}

async function prefixTaken(tx: Tx, companyId: number, prefix: string, exceptId?: number) {
  const [row] = await tx
    .select({ id: ventanillaServices.id })
    .from(ventanillaServices)
    .where(and(eq(ventanillaServices.companyId, companyId), eq(ventanillaServices.prefix, prefix), isNull(ventanillaServices.deletedAt)))
  return row != null && row.id !== exceptId
}

const prefixConflict = () => conflict('PREFIX_TAKEN', 'Another live service uses this prefix')

export async function createService(tx: Tx, caller: Caller, input: { name: string; prefix: string }, now: Date) {
  const prefix = input.prefix.toUpperCase()
  if (await prefixTaken(tx, caller.companyId, prefix)) throw prefixConflict()
  try {
    const [row] = await tx
      .insert(ventanillaServices)
      .values({ companyId: caller.companyId, name: input.name, prefix, createdAt: now, updatedAt: now })
      .returning()
    await publish(tx, caller.companyId)
    return serviceDto(row)
  } catch (e) {
    if (isUniqueViolation(e)) throw prefixConflict()
    throw e
  }
}

export async function updateService(tx: Tx, caller: Caller, id: number, input: { name?: string; prefix?: string }, now: Date) {
  if (!(await liveService(tx, caller.companyId, id, true))) throw notFound('Service')
  const prefix = input.prefix?.toUpperCase()
  if (prefix && (await prefixTaken(tx, caller.companyId, prefix, id))) throw prefixConflict()
  try {
    const [row] = await tx
      .update(ventanillaServices)
      .set({ ...(input.name !== undefined && { name: input.name }), ...(prefix !== undefined && { prefix }), updatedAt: now })
      .where(eq(ventanillaServices.id, id))
      .returning()
    await publish(tx, caller.companyId)
    return serviceDto(row)
  } catch (e) {
    if (isUniqueViolation(e)) throw prefixConflict()
    throw e
  }
}

/** Soft delete: its tickets stay for the record, but it is no longer offered, numbered or called. */
export async function deleteService(tx: Tx, caller: Caller, id: number, now: Date) {
  if (!(await liveService(tx, caller.companyId, id, true))) throw notFound('Service')
  await tx.update(ventanillaServices).set({ deletedAt: now, updatedAt: now }).where(eq(ventanillaServices.id, id))
  await publish(tx, caller.companyId)
  return { deleted: true as const }
}

export async function createToken(tx: Tx, caller: Caller, name: string, publicBaseUrl: string, now: Date) {
  const credential = newCredential(TOKEN_KIND)
  const [row] = await tx
    .insert(ventanillaTokens)
    .values({ companyId: caller.companyId, name, prefix: credential.prefix, tokenHash: credential.hash, createdAt: now, updatedAt: now })
    .returning({ id: ventanillaTokens.id })
  return { id: row.id, name, token: credential.value, kiosk_url: `${publicBaseUrl}/kiosk/${credential.value}` }
}

export async function listTokens(db: Executor, caller: Caller) {
  const rows = await db
    .select({ id: ventanillaTokens.id, name: ventanillaTokens.name, prefix: ventanillaTokens.prefix, createdAt: ventanillaTokens.createdAt })
    .from(ventanillaTokens)
    .where(and(eq(ventanillaTokens.companyId, caller.companyId), isNull(ventanillaTokens.revokedAt)))
    .orderBy(asc(ventanillaTokens.id))
  return rows.map((r) => ({ id: r.id, name: r.name, prefix: r.prefix, created_at: r.createdAt.toISOString() }))
}

/** Revoking tells every process, so streams opened with the token end at once. */
export async function revokeToken(tx: Tx, caller: Caller, id: number, now: Date) {
  const [row] = await tx
    .update(ventanillaTokens)
    .set({ revokedAt: now, updatedAt: now })
    .where(and(eq(ventanillaTokens.id, id), eq(ventanillaTokens.companyId, caller.companyId), isNull(ventanillaTokens.revokedAt)))
    .returning({ id: ventanillaTokens.id })
  if (!row) throw notFound('Token')
  await publish(tx, caller.companyId, `revoked:${id}`)
  return { deleted: true as const }
}

const ticketDto = (r: TicketRow) => ({
  id: r.id,
  number: r.number,
  service_id: r.serviceId,
  customer_name: r.customerName,
  status: r.status as 'waiting' | 'called' | 'finished' | 'no_show',
  priority: r.priority,
  desk: r.desk,
  called_at: r.calledAt ? r.calledAt.toISOString() : null,
  created_at: r.createdAt.toISOString(),
  updated_at: r.updatedAt.toISOString(),
})

const unknownService = (id: number) =>
  unprocessable('UNKNOWN_SERVICE', 'Unknown service', [{ field: 'service_id', message: `unknown service ${id}` }])

/**
 * Numbers restart at 001 each day in the screen's time zone. The service row is locked while the next
 * number is taken, so concurrent tickets of one service get consecutive numbers without gaps or repeats.
 */
export async function createTicket(
  tx: Tx,
  caller: Caller,
  input: { service_id: number; customer_name?: string | null; priority?: boolean },
  now: Date,
  dispenserTokenId: number | null = null,
) {
  const service = await liveService(tx, caller.companyId, input.service_id, true)
  if (!service) throw unknownService(input.service_id)
  return issueTicket(tx, caller.companyId, service, input, now, dispenserTokenId)
}

async function issueTicket(
  tx: Tx,
  companyId: number,
  service: ServiceRow,
  input: { customer_name?: string | null; priority?: boolean },
  now: Date,
  dispenserTokenId: number | null,
) {
  const day = localDate(now, await timezoneOf(tx, companyId))
  const [{ next }] = await tx
    .select({ next: sql<number>`coalesce(max(${ventanillaTickets.seq}), 0)::int + 1` })
    .from(ventanillaTickets)
    .where(and(sql`coalesce(${ventanillaTickets.issuedServiceId}, ${ventanillaTickets.serviceId}) = ${service.id}`, eq(ventanillaTickets.localDate, day)))
  const seq = Number(next)
  const name = input.customer_name?.trim() ? input.customer_name.trim() : null
  const [row] = await tx
    .insert(ventanillaTickets)
    .values({
      companyId,
      serviceId: service.id,
      issuedServiceId: service.id,
      number: `${service.prefix}-${String(seq).padStart(3, '0')}`,
      seq,
      localDate: day,
      customerName: name,
      priority: input.priority ?? false,
      dispenserTokenId,
      createdAt: now,
      updatedAt: now,
    })
    .returning()
  await publish(tx, companyId)
  return announceTicket(tx, 'ventanilla_ticket.created', row)
}

/** Each step of a ticket is told to the rest of the service (and, through the outbox, to integrators). */
async function announceTicket(tx: Tx, type: string, row: TicketRow) {
  const dto = ticketDto(row)
  await announce(tx, { type, companyId: row.companyId, object: { kind: 'ventanilla_ticket', id: row.id }, render: async () => dto })
  return dto
}

/**
 * The order tickets are called in: with `priorityMode` `first` waiting priority tickets go before the others,
 * each group oldest first; with `off` arrival order only. `created_at` is a ticket's place in line, kept through
 * transfers. Used by the call, the staff queue and the count ahead, so all three agree.
 */
const priorityFirst = (companyId: number) =>
  sql`coalesce((select st.priority_mode from ventanilla_settings st where st.company_id = ${companyId}), 'first') = 'first'`
const callOrder = (companyId: number) => sql`case when t.priority and ${priorityFirst(companyId)} then 0 else 1 end, t.created_at, t.id`

/** Takes the oldest waiting ticket; concurrent desks skip each other's locked row instead of calling it twice. */
export async function callNext(database: Database, tx: Tx, caller: Caller, input: { desk: string; service_id?: number }, now: Date) {
  if (input.service_id !== undefined && !(await liveService(tx, caller.companyId, input.service_id))) throw unknownService(input.service_id)
  const [next] = await database.rows<{ id: number }>(
    sql`select t.id from ventanilla_tickets t
        join ventanilla_services s on s.id = t.service_id and s.deleted_at is null
        where t.company_id = ${caller.companyId} and t.status = 'waiting'
          ${input.service_id !== undefined ? sql`and t.service_id = ${input.service_id}` : sql``}
        order by ${callOrder(caller.companyId)}
        limit 1
        for update of t skip locked`,
    tx,
  )
  if (!next) throw conflict('QUEUE_EMPTY', 'No ticket is waiting')
  return markCalled(tx, caller, Number(next.id), input.desk, now)
}

async function markCalled(tx: Tx, caller: Caller, id: number, desk: string, now: Date) {
  const companyId = caller.companyId
  const [row] = await tx
    .update(ventanillaTickets)
    .set({ status: 'called', desk, calledBy: caller.employee?.id ?? null, calledAt: now, firstCalledAt: sql`coalesce(${ventanillaTickets.firstCalledAt}, ${now.toISOString()}::timestamptz)`, updatedAt: now })
    .where(eq(ventanillaTickets.id, id))
    .returning()
  await publish(tx, companyId)
  return announceTicket(tx, 'ventanilla_ticket.called', row)
}

async function lockTicket(tx: Tx, companyId: number, id: number) {
  const [row] = await tx
    .select()
    .from(ventanillaTickets)
    .where(and(eq(ventanillaTickets.id, id), eq(ventanillaTickets.companyId, companyId)))
    .for('update')
  if (!row) throw notFound('Ticket')
  return row
}

const badStatus = (row: TicketRow, action: string) =>
  conflict('INVALID_TICKET_STATUS', `Ticket ${row.number} is ${row.status} and cannot be ${action}`)

/** Calls a ticket again (or a no-show that came back); a finished ticket stays finished. */
export async function recallTicket(tx: Tx, caller: Caller, id: number, desk: string, now: Date) {
  const row = await lockTicket(tx, caller.companyId, id)
  if (row.status === 'finished') throw badStatus(row, 'called')
  return markCalled(tx, caller, id, desk, now)
}

const closed = (row: TicketRow) => conflict('TICKET_CLOSED', `Ticket ${row.number} is ${row.status === 'finished' ? 'finished' : 'a no-show'}`)

/** Sets or clears the customer's name of a ticket still in line or being served; a closed ticket keeps its record. */
export async function renameTicket(tx: Tx, caller: Caller, id: number, customerName: string | null, now: Date) {
  const row = await lockTicket(tx, caller.companyId, id)
  if (row.status === 'finished' || row.status === 'no_show') throw closed(row)
  const [renamed] = await tx
    .update(ventanillaTickets)
    .set({ customerName: customerName?.trim() ? customerName.trim() : null, updatedAt: now })
    .where(eq(ventanillaTickets.id, id))
    .returning()
  await publish(tx, caller.companyId)
  return announceTicket(tx, 'ventanilla_ticket.updated', renamed)
}

export async function finishTicket(tx: Tx, caller: Caller, id: number, now: Date) {
  const row = await lockTicket(tx, caller.companyId, id)
  if (row.status !== 'called') throw badStatus(row, 'finished')
  return setStatus(tx, caller.companyId, id, 'finished', now, { finishedAt: now })
}

export async function noShowTicket(tx: Tx, caller: Caller, id: number, now: Date) {
  const row = await lockTicket(tx, caller.companyId, id)
  if (row.status !== 'called' && row.status !== 'waiting') throw badStatus(row, 'marked no-show')
  return setStatus(tx, caller.companyId, id, 'no_show', now)
}

async function setStatus(tx: Tx, companyId: number, id: number, status: 'finished' | 'no_show', now: Date, extra: { finishedAt?: Date } = {}) {
  const [row] = await tx.update(ventanillaTickets).set({ status, updatedAt: now, ...extra }).where(eq(ventanillaTickets.id, id)).returning()
  await publish(tx, companyId)
  return announceTicket(tx, `ventanilla_ticket.${status}`, row)
}

/** The token's company when the token is live and the module is on; anything else looks the same as unknown. */
export async function resolveToken(db: Executor, raw: string): Promise<{ tokenId: number; companyId: number } | null> {
  const prefix = credentialPrefix(TOKEN_KIND, raw)
  if (!prefix) return null
  const [row] = await db
    .select({ id: ventanillaTokens.id, companyId: ventanillaTokens.companyId, hash: ventanillaTokens.tokenHash, revokedAt: ventanillaTokens.revokedAt, enabled: companies.ventanillaEnabled })
    .from(ventanillaTokens)
    .innerJoin(companies, eq(companies.id, ventanillaTokens.companyId))
    .where(eq(ventanillaTokens.prefix, prefix))
  if (!row || !sameDigest(sha256(raw), row.hash) || row.revokedAt || !row.enabled) return null
  return { tokenId: row.id, companyId: row.companyId }
}

/** Ids among `ids` that are still live tokens of an enabled company. */
export async function liveTokenIds(database: Database, ids: number[]): Promise<Set<number>> {
  if (ids.length === 0) return new Set()
  const rows = await database.rows<{ id: number }>(
    sql`select t.id from ventanilla_tokens t join companies c on c.id = t.company_id
        where t.id = any(${`{${ids.map(Number).join(',')}}`}::int[]) and t.revoked_at is null and c.ventanilla_enabled`,
  )
  return new Set(rows.map((r) => Number(r.id)))
}

interface SnapshotRow {
  name: string
  enabled: boolean
  company_tz: string
  display_name: string | null
  logo_url: string | null
  show_logo: boolean | null
  own_tz: string | null
  ticker_text: string | null
  announce_sound: boolean | null
  announce_tts: boolean | null
  privacy_mode: string | null
  rates: string
  services: string
  calls: string
  updated_at: string
}

/**
 * The public snapshot of one company, or null when its module is off. It carries no amounts or balances,
 * and names are already masked by the screen's privacy mode. One statement, so a rebuild is one round trip
 * and reads one consistent state.
 */
export async function buildSnapshot(database: Database, companyId: number, now: Date): Promise<Snapshot | null> {
  const [row] = await database.rows<SnapshotRow>(
    sql`with head as (
          select c.id, c.name, c.ventanilla_enabled as enabled, c.timezone as company_tz, c.updated_at as company_updated,
                 st.display_name, st.logo_url, st.show_logo, st.timezone as own_tz, st.ticker_text, st.announce_sound,
                 st.announce_tts, st.privacy_mode, st.updated_at as settings_updated, st.rates_updated_at,
                 coalesce(st.timezone, c.timezone) as tz
          from companies c left join ventanilla_settings st on st.company_id = c.id
          where c.id = ${companyId}
        )
        select h.name, h.enabled, h.company_tz, h.display_name, h.logo_url, h.show_logo, h.own_tz, h.ticker_text,
          h.announce_sound, h.announce_tts, h.privacy_mode,
          (select coalesce(json_agg(json_build_object('currency', r.currency, 'buy', r.buy::text, 'sell', r.sell::text)
                    order by r.position, r.currency), '[]')::text
             from ventanilla_rates r where r.company_id = h.id) as rates,
          (select coalesce(json_agg(json_build_object('id', s.id, 'name', s.name, 'prefix', s.prefix, 'waiting',
                    (select count(*) from ventanilla_tickets t where t.service_id = s.id and t.status = 'waiting')) order by s.id), '[]')::text
             from ventanilla_services s where s.company_id = h.id and s.deleted_at is null) as services,
          (select coalesce(json_agg(x order by x.called_at desc, x.id desc), '[]')::text from (
             select t.id, t.number, t.customer_name, t.desk, t.called_at, sv.name as service
             from ventanilla_tickets t join ventanilla_services sv on sv.id = t.service_id
             -- A call without a desk (transferred before transfers kept it) cannot say where to go: left off the board.
             where t.company_id = h.id and t.called_at is not null and t.desk is not null
               and t.called_at >= ((((${now.toISOString()})::timestamptz at time zone h.tz)::date)::timestamp at time zone h.tz)
             order by t.called_at desc, t.id desc
             limit 7) x) as calls,
          to_json(greatest(h.company_updated, h.settings_updated, h.rates_updated_at,
            (select max(updated_at) from ventanilla_services where company_id = h.id),
            (select max(updated_at) from ventanilla_tickets where company_id = h.id))) #>> '{}' as updated_at
        from head h`,
  )
  if (!row?.enabled) return null
  const settings = settingsDto(
    {
      displayName: row.display_name,
      logoUrl: row.logo_url ?? '',
      showLogo: row.show_logo ?? false,
      timezone: row.own_tz,
      tickerText: row.ticker_text ?? '',
      announceSound: row.announce_sound ?? true,
      announceTts: row.announce_tts ?? true,
      privacyMode: row.privacy_mode ?? 'first_last_initial',
    } as SettingsRow,
    row.company_tz,
  )
  const calls = JSON.parse(row.calls) as { number: string; customer_name: string | null; desk: string; called_at: string; service: string }[]
  const services = JSON.parse(row.services) as { id: number; name: string; prefix: string; waiting: number }[]
  const toCall = (c: (typeof calls)[number]): SnapshotCall => ({
    ticket: c.number,
    name: maskName(c.customer_name, settings.privacyMode),
    desk: c.desk,
    service: c.service,
    calledAt: new Date(c.called_at).toISOString(),
  })
  return {
    companyName: settings.displayName ?? row.name,
    date: localDate(now, settings.timezone),
    rates: (JSON.parse(row.rates) as { currency: string; buy: string; sell: string }[]).map(rateDto),
    services: services.map((s) => ({ id: Number(s.id), name: s.name, prefix: s.prefix, waiting: Number(s.waiting) })),
    currentCall: calls.length ? toCall(calls[0]) : null,
    recentCalls: calls.slice(1).map(toCall),
    logoUrl: settings.logoUrl,
    showLogo: settings.showLogo,
    timezone: settings.timezone,
    tickerText: settings.tickerText,
    announceSound: settings.announceSound,
    announceTts: settings.announceTts,
    privacyMode: settings.privacyMode,
    updatedAt: new Date(row.updated_at).toISOString(),
  }
}

/**
 * Sends a waiting or called ticket to another service's queue: same number, same place by `created_at`. A ticket
 * that is over (finished or no-show) → 409 TICKET_CLOSED; a service of another company is as unknown as none.
 */
export async function transferTicket(tx: Tx, caller: Caller, id: number, serviceId: number, now: Date) {
  const row = await lockTicket(tx, caller.companyId, id)
  if (!(await liveService(tx, caller.companyId, serviceId))) throw notFound('Service')
  if (row.status === 'finished' || row.status === 'no_show') throw closed(row)
  // The desk stays: it is where the last call sent the customer, and the waiting-room board lists that call with it.
  const [moved] = await tx
    .update(ventanillaTickets)
    .set({ serviceId, status: 'waiting', updatedAt: now })
    .where(eq(ventanillaTickets.id, id))
    .returning()
  await publish(tx, caller.companyId)
  return announceTicket(tx, 'ventanilla_ticket.transferred', moved)
}

export interface QueueService {
  service_id: number
  name: string
  prefix: string
  waiting: { id: number; number: string; customer_name: string | null; priority: boolean; created_at: string }[]
}

export interface Serving {
  desk: string
  ticket: { id: number; number: string; customer_name: string | null; service_id: number }
  employee: { id: number; name: string } | null
  called_at: string
}

export interface StaffQueue {
  data: QueueService[]
  serving: Serving[]
}

/**
 * Every live service with its waiting tickets in the order they will be called, full names included (staff only),
 * and who is being served at each desk: of the tickets called and not yet over, the latest call of each desk (a
 * desk that called again without finishing the first shows only the last one).
 */
export async function staffQueue(database: Database, companyId: number, on?: Executor): Promise<StaffQueue> {
  const [row] = await database.rows<{ data: string; serving: string }>(
    sql`select (select coalesce(json_agg(json_build_object('service_id', s.id, 'name', s.name, 'prefix', s.prefix, 'waiting',
          (select coalesce(json_agg(json_build_object('id', t.id, 'number', t.number, 'customer_name', t.customer_name,
                    'priority', t.priority, 'created_at', ${isoSql(sql`t.created_at`)}) order by ${callOrder(companyId)}), '[]')
             from ventanilla_tickets t where t.service_id = s.id and t.status = 'waiting')) order by s.id), '[]')::text
        from ventanilla_services s where s.company_id = ${companyId} and s.deleted_at is null) as data,
        (select coalesce(json_agg(json_build_object('desk', x.desk,
            'ticket', json_build_object('id', x.id, 'number', x.number, 'customer_name', x.customer_name, 'service_id', x.service_id),
            'employee', case when x.employee_id is null then null else json_build_object('id', x.employee_id, 'name', x.employee_name) end,
            'called_at', ${isoSql(sql`x.called_at`)}) order by x.desk), '[]')::text
          from (select distinct on (t.desk) t.id, t.number, t.customer_name, t.service_id, t.desk, t.called_at, e.id as employee_id, e.name as employee_name
                from ventanilla_tickets t left join employees e on e.id = t.called_by
                where t.company_id = ${companyId} and t.status = 'called' and t.desk is not null
                order by t.desk, t.called_at desc, t.id desc) x) as serving`,
    on,
  )
  return { data: JSON.parse(row.data) as QueueService[], serving: JSON.parse(row.serving) as Serving[] }
}

/** The queue for a staff stream, or null once the company's module is off. */
export async function liveQueue(database: Database, companyId: number): Promise<StaffQueue | null> {
  const [row] = await database.rows<{ enabled: boolean }>(sql`select ventanilla_enabled as enabled from companies where id = ${companyId}`)
  return row?.enabled ? staffQueue(database, companyId) : null
}

/**
 * Per company-zone day (of the ticket's creation) and service: tickets issued, served (finished) and no-show;
 * wait is first call − created, service time is finish − last call; seconds rounded to whole numbers, null without data.
 */
/**
 * Waiting-room figures per day (the company's zone, the day the tickets were taken) and service. A transferred
 * ticket counts where each thing happened: it was issued, and waited until its first call, under the service it
 * was taken for (`issued_service_id`); it was served, or missed, and its service time counts, under the service
 * that had it last (`service_id`). Tickets from before `issued_service_id` existed count under their service.
 */
export async function stats(database: Database, tx: Tx, caller: Caller, from: string, to: string) {
  const rows = await database.rows<{
    date: string
    service_id: number
    service_name: string
    issued: number
    served: number
    no_show: number
    avg_wait_s: number | null
    p90_wait_s: number | null
    avg_service_s: number | null
  }>(
    sql`with tz as (select timezone from companies where id = ${caller.companyId}),
        t as (
          select (tk.created_at at time zone (select timezone from tz))::date as day,
                 coalesce(tk.issued_service_id, tk.service_id) as issued_service, tk.service_id as last_service, tk.status,
                 extract(epoch from tk.first_called_at - tk.created_at) as wait_s,
                 case when tk.status = 'finished' then extract(epoch from tk.finished_at - tk.called_at) end as service_s
          from ventanilla_tickets tk
          where tk.company_id = ${caller.companyId}
            and tk.created_at >= (${from}::date)::timestamp at time zone (select timezone from tz)
            and tk.created_at < ((${to}::date) + 1)::timestamp at time zone (select timezone from tz)
        ),
        counted as (
          select day, issued_service as service_id, 1 as issued, 0 as served, 0 as no_show, wait_s, null::numeric as service_s from t
          union all
          select day, last_service, 0, (status = 'finished')::int, (status = 'no_show')::int, null, service_s from t
        )
        select to_char(day, 'YYYY-MM-DD') as date, service_id,
               (select s.name from ventanilla_services s where s.id = counted.service_id) as service_name,
               sum(issued)::int as issued, sum(served)::int as served, sum(no_show)::int as no_show,
               round(avg(wait_s))::float8 as avg_wait_s,
               round((percentile_cont(0.9) within group (order by wait_s))::numeric)::float8 as p90_wait_s,
               round(avg(service_s))::float8 as avg_service_s
        from counted group by day, service_id order by day, service_id`,
    tx,
  )
  return rows.map((r) => ({
    date: r.date,
    service_id: Number(r.service_id),
    service_name: r.service_name,
    issued: Number(r.issued),
    served: Number(r.served),
    no_show: Number(r.no_show),
    avg_wait_s: r.avg_wait_s == null ? null : Number(r.avg_wait_s),
    p90_wait_s: r.p90_wait_s == null ? null : Number(r.p90_wait_s),
    avg_service_s: r.avg_service_s == null ? null : Number(r.avg_service_s),
  }))
}

export type StatsRow = Awaited<ReturnType<typeof stats>>[number]

/** The columns of the stats CSV, in the JSON order, under the headings an es-AR spreadsheet user reads. */
const STATS_COLUMNS: [keyof StatsRow, string][] = [
  ['date', 'Fecha'],
  ['service_id', 'N.º de servicio'],
  ['service_name', 'Servicio'],
  ['issued', 'Emitidos'],
  ['served', 'Atendidos'],
  ['no_show', 'No se presentaron'],
  ['avg_wait_s', 'Espera promedio (s)'],
  ['p90_wait_s', 'Espera p90 (s)'],
  ['avg_service_s', 'Atención promedio (s)'],
]

/** A cell as an es-AR spreadsheet reads it: dates dd/mm/aaaa, a decimal comma, free text kept from running as a formula. */
function statsCell(column: keyof StatsRow, value: StatsRow[keyof StatsRow]): string {
  if (value == null) return ''
  if (column === 'service_name') return safeText(String(value))
  if (column === 'date') return String(value).split('-').reverse().join('/')
  return String(value).replace('.', ',')
}

/**
 * The stats rows as a CSV an es-AR spreadsheet opens as it is (contract §16 asks only for the same rows): a UTF-8
 * byte order mark, `;` between fields (the comma is the decimal separator there), Spanish headings, dates dd/mm/aaaa,
 * decimal commas, CRLF after every record, empty cells for nulls.
 */
export function statsCsv(rows: StatsRow[]): string {
  const record = (fields: string[]) => csvRecord(fields, ';')
  return '\ufeff' + record(STATS_COLUMNS.map(([, heading]) => heading)) + rows.map((r) => record(STATS_COLUMNS.map(([c]) => statsCell(c, r[c])))).join('')
}

/** Today in the company's zone, the default of both ends of the stats range. */
export async function companyToday(tx: Tx, caller: Caller, now: Date) {
  return localDate(now, (await company(tx, caller.companyId)).timezone)
}

export const DISPENSER_KIND = 'vdt'
/** Tickets one dispenser may issue per minute, on all processes together. */
export const DISPENSER_PER_MINUTE = 30

export async function createDispenserToken(tx: Tx, caller: Caller, name: string, publicBaseUrl: string, now: Date) {
  const credential = newCredential(DISPENSER_KIND)
  const [row] = await tx
    .insert(ventanillaDispenserTokens)
    .values({ companyId: caller.companyId, name, prefix: credential.prefix, tokenHash: credential.hash, createdAt: now, updatedAt: now })
    .returning({ id: ventanillaDispenserTokens.id })
  return { id: row.id, name, token: credential.value, dispenser_url: `${publicBaseUrl}/dispenser/${credential.value}` }
}

export async function listDispenserTokens(db: Executor, caller: Caller) {
  const rows = await db
    .select({ id: ventanillaDispenserTokens.id, name: ventanillaDispenserTokens.name, prefix: ventanillaDispenserTokens.prefix, createdAt: ventanillaDispenserTokens.createdAt })
    .from(ventanillaDispenserTokens)
    .where(and(eq(ventanillaDispenserTokens.companyId, caller.companyId), isNull(ventanillaDispenserTokens.revokedAt)))
    .orderBy(asc(ventanillaDispenserTokens.id))
  return rows.map((r) => ({ id: r.id, name: r.name, prefix: r.prefix, created_at: r.createdAt.toISOString() }))
}

export async function revokeDispenserToken(tx: Tx, caller: Caller, id: number, now: Date) {
  const [row] = await tx
    .update(ventanillaDispenserTokens)
    .set({ revokedAt: now, updatedAt: now })
    .where(and(eq(ventanillaDispenserTokens.id, id), eq(ventanillaDispenserTokens.companyId, caller.companyId), isNull(ventanillaDispenserTokens.revokedAt)))
    .returning({ id: ventanillaDispenserTokens.id })
  if (!row) throw notFound('Dispenser token')
  return { deleted: true as const }
}

/** A live dispenser token of a company whose module is on; anything else looks the same as unknown. */
export async function resolveDispenser(db: Executor, raw: string): Promise<{ tokenId: number; companyId: number; name: string } | null> {
  const prefix = credentialPrefix(DISPENSER_KIND, raw)
  if (!prefix) return null
  const [row] = await db
    .select({
      id: ventanillaDispenserTokens.id,
      companyId: ventanillaDispenserTokens.companyId,
      name: ventanillaDispenserTokens.name,
      hash: ventanillaDispenserTokens.tokenHash,
      revokedAt: ventanillaDispenserTokens.revokedAt,
      enabled: companies.ventanillaEnabled,
    })
    .from(ventanillaDispenserTokens)
    .innerJoin(companies, eq(companies.id, ventanillaDispenserTokens.companyId))
    .where(eq(ventanillaDispenserTokens.prefix, prefix))
  if (!row || !sameDigest(sha256(raw), row.hash) || row.revokedAt || !row.enabled) return null
  return { tokenId: row.id, companyId: row.companyId, name: row.name }
}

/** What a dispenser shows: the company, the services to take a ticket for, and whether priority tickets exist. */
export async function dispenserView(tx: Executor, companyId: number) {
  const [c, settings, services] = await Promise.all([
    company(tx, companyId),
    settingsRow(tx, companyId),
    tx
      .select({ id: ventanillaServices.id, name: ventanillaServices.name, prefix: ventanillaServices.prefix })
      .from(ventanillaServices)
      .where(and(eq(ventanillaServices.companyId, companyId), isNull(ventanillaServices.deletedAt)))
      .orderBy(asc(ventanillaServices.id)),
  ])
  const dto = settingsDto(settings, c.timezone)
  return { companyName: dto.displayName ?? c.name, timezone: dto.timezone, priority: dto.priorityMode === 'first', asksName: dto.dispenserAsksName, services }
}

/**
 * A ticket taken at a dispenser. The dispenser's row is locked first, so the per-minute count and the insert are
 * one step for every process; a refused request writes nothing.
 */
export async function dispenseTicket(
  tx: Tx,
  target: { tokenId: number; companyId: number },
  input: { service_id: number; priority?: boolean; customer_name?: string | null },
  now: Date,
) {
  // Checked before anything is locked or counted: a refused ticket is no ticket, and no use of the minute's quota.
  const asks = settingsDto(await settingsRow(tx, target.companyId), '').dispenserAsksName
  const name = asks === 'off' ? null : input.customer_name?.trim() || null
  if (asks === 'required' && !name) throw invalid('Write your name to take a ticket', [{ field: 'customer_name', message: 'required by this dispenser' }])
  await tx.select({ id: ventanillaDispenserTokens.id }).from(ventanillaDispenserTokens).where(eq(ventanillaDispenserTokens.id, target.tokenId)).for('update')
  const since = new Date(now.getTime() - 60_000)
  const recent = await tx
    .select({ createdAt: ventanillaTickets.createdAt })
    .from(ventanillaTickets)
    .where(and(eq(ventanillaTickets.dispenserTokenId, target.tokenId), gt(ventanillaTickets.createdAt, since)))
    .orderBy(asc(ventanillaTickets.createdAt))
    .limit(DISPENSER_PER_MINUTE)
  if (recent.length >= DISPENSER_PER_MINUTE)
    throw rateLimited('Too many tickets from this dispenser; wait a moment', (recent[0].createdAt.getTime() + 60_000 - now.getTime()) / 1000)
  const service = await liveService(tx, target.companyId, input.service_id, true)
  if (!service) throw unknownService(input.service_id)
  const ticket = await issueTicket(tx, target.companyId, service, { priority: input.priority, customer_name: name }, now, target.tokenId)
  const pf = priorityFirst(target.companyId)
  const [{ ahead }] = rowsOf<{ ahead: number }>(
    await tx.execute(
      sql`select count(*)::int as ahead from ventanilla_tickets t, ventanilla_tickets me
          where me.id = ${ticket.id} and t.service_id = me.service_id and t.status = 'waiting' and t.id <> me.id
            and (case when t.priority and ${pf} then 0 else 1 end, t.created_at, t.id)
              < (case when me.priority and ${pf} then 0 else 1 end, me.created_at, me.id)`,
    ),
  )
  return { number: ticket.number, service: service.name, priority: ticket.priority, waiting_ahead: Number(ahead) }
}
