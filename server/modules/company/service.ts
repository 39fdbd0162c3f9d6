import { eq } from 'drizzle-orm'
import { companies } from '../../../db/schema'
import type { Executor, Tx } from '../../../db/client'
import type { Caller } from '../../access/caller'
import { invalid, notFound } from '../../lib/errors'
import { announce } from '../../lib/events'
import { storedAmount, toJson } from '../../lib/money'
import { validTimezone } from '../../lib/time'
import type { CompanyProfile, CompanyProfileUpdate } from './model'

type CompanyRow = typeof companies.$inferSelect

export const profileDto = (c: CompanyRow): CompanyProfile => ({
  id: c.id,
  name: c.name,
  timezone: c.timezone,
  modules: { mesas: c.mesasEnabled, ventanilla: c.ventanillaEnabled },
  legal_name: c.legalName,
  tax_id: c.taxId,
  address: c.address,
  license: c.license,
  receipt_point: c.receiptPoint,
  local_currency: c.localCurrency,
  till_tolerance: toJson(c.tillTolerance),
})

/** The caller's company as stored. */
export async function companyRow(db: Executor, caller: Caller): Promise<CompanyRow> {
  const [row] = await db.select().from(companies).where(eq(companies.id, caller.companyId))
  if (!row) throw notFound('Company')
  return row
}

export const getProfile = async (db: Executor, caller: Caller) => profileDto(await companyRow(db, caller))

/** Free text of the profile: trimmed, and empty means not set (null), so a receipt never prints a blank line for it. */
const textOrNull = (value: string | null | undefined) => (value == null || value.trim() === '' ? null : value.trim())

/**
 * Changes the fields given (any subset); the answer is the whole profile. Module flags are not among them: they stay
 * with the platform operator (superadmin, CLI) and the owner's choice at setup. Announces `company.updated`, which the
 * waiting-room screens follow (a new name shows at once).
 */
export async function updateProfile(tx: Tx, caller: Caller, input: CompanyProfileUpdate) {
  const tolerance = input.till_tolerance === undefined ? undefined : storedAmount(input.till_tolerance)
  if (input.timezone !== undefined && !validTimezone(input.timezone))
    throw invalid(`Unknown time zone "${input.timezone}"`, [{ field: 'timezone', message: 'not an IANA time zone (e.g. America/Argentina/Buenos_Aires)' }])
  if (tolerance === null) throw invalid('Invalid till tolerance', [{ field: 'till_tolerance', message: 'must be a decimal ≥ 0 below 10^22' }])
  if (input.name !== undefined && input.name.trim() === '') throw invalid('The name must not be blank', [{ field: 'name', message: 'must not be blank' }])
  const changes = {
    ...(input.name !== undefined && { name: input.name.trim() }),
    ...(input.timezone !== undefined && { timezone: input.timezone }),
    ...(input.local_currency !== undefined && { localCurrency: input.local_currency }),
    ...(tolerance !== undefined && { tillTolerance: tolerance }),
    ...(input.legal_name !== undefined && { legalName: textOrNull(input.legal_name) }),
    ...(input.tax_id !== undefined && { taxId: textOrNull(input.tax_id) }),
    ...(input.address !== undefined && { address: textOrNull(input.address) }),
    ...(input.license !== undefined && { license: textOrNull(input.license) }),
    ...(input.receipt_point !== undefined && { receiptPoint: input.receipt_point }),
  }
  // An empty PATCH changes nothing, so it writes nothing (no audit row, no announcement).
  if (Object.keys(changes).length === 0) return getProfile(tx, caller)
  const [row] = await tx
    .update(companies)
    .set({ ...changes, updatedAt: new Date() })
    .where(eq(companies.id, caller.companyId))
    .returning()
  if (!row) throw notFound('Company')
  await announce(tx, { type: 'company.updated', companyId: caller.companyId, object: { kind: 'company', id: caller.companyId } })
  return profileDto(row)
}
