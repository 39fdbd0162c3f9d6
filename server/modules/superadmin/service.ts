import { eq } from 'drizzle-orm'
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose'
import { companies } from '../../../db/schema'
import type { Executor, Tx } from '../../../db/client'
import type { Config } from '../../config'
import { announce } from '../../lib/events'
import { invalid, notFound, unauthorized } from '../../lib/errors'
import { validTimezone } from '../../lib/time'

type CompanyRow = typeof companies.$inferSelect

export const companyDto = (c: CompanyRow) => ({
  id: c.id,
  name: c.name,
  timezone: c.timezone,
  modules: { mesas: c.mesasEnabled, ventanilla: c.ventanillaEnabled },
})

/** A token issued further ahead than this (clock skew) is refused. */
const MAX_ISSUED_AHEAD_S = 60
/** The longest lifetime (`exp − iat`) a superadmin token may have. */
const MAX_LIFETIME_S = 24 * 60 * 60

/**
 * Verifies a superadmin bearer token: signature, expiry, an allow-listed `email` claim, and its age: `iat` is
 * required, at most 60 s in the future, and at most 24 h before `exp`, so a leaked long-lived token is worthless.
 */
export function superadminVerifier(config: Config['superadmin']) {
  const jwks: JWTVerifyGetKey | null = config.jwksUrl ? createRemoteJWKSet(new URL(config.jwksUrl)) : null
  const secret = config.jwtSecret ? new TextEncoder().encode(config.jwtSecret) : null
  return async (authorization: string | undefined): Promise<string> => {
    const token = /^Bearer ([A-Za-z0-9._~+/=-]+)$/.exec(authorization ?? '')?.[1]
    if (!token || (!jwks && !secret)) throw unauthorized('Missing or invalid superadmin token')
    try {
      const { payload } = jwks
        ? await jwtVerify(token, jwks, { algorithms: ['RS256', 'ES256'], requiredClaims: ['exp', 'iat'] })
        : await jwtVerify(token, secret!, { algorithms: ['HS256'], requiredClaims: ['exp', 'iat'] })
      const iat = payload.iat!
      if (iat > Date.now() / 1000 + MAX_ISSUED_AHEAD_S) throw new Error('issued in the future')
      if (payload.exp! - iat > MAX_LIFETIME_S) throw new Error('lifetime too long')
      const email = typeof payload.email === 'string' ? payload.email.toLowerCase() : ''
      if (!email || !config.emails.includes(email)) throw new Error('email not allowed')
      return email
    } catch {
      throw unauthorized('Missing or invalid superadmin token')
    }
  }
}

export async function createCompany(tx: Tx, input: { name: string; timezone?: string }) {
  if (input.timezone && !validTimezone(input.timezone)) throw invalid('Unknown time zone', [{ field: 'timezone', message: 'not an IANA time zone' }])
  const [row] = await tx.insert(companies).values({ name: input.name, ...(input.timezone ? { timezone: input.timezone } : {}) }).returning()
  return companyDto(row)
}

export async function updateCompany(
  tx: Tx,
  id: number,
  input: { name?: string; timezone?: string; modules?: { mesas?: boolean; ventanilla?: boolean } },
) {
  if (input.timezone && !validTimezone(input.timezone)) throw invalid('Unknown time zone', [{ field: 'timezone', message: 'not an IANA time zone' }])
  const [row] = await tx
    .update(companies)
    .set({
      ...(input.name !== undefined && { name: input.name }),
      ...(input.timezone !== undefined && { timezone: input.timezone }),
      ...(input.modules?.mesas !== undefined && { mesasEnabled: input.modules.mesas }),
      ...(input.modules?.ventanilla !== undefined && { ventanillaEnabled: input.modules.ventanilla }),
      updatedAt: new Date(),
    })
    .where(eq(companies.id, id))
    .returning()
  if (!row) throw notFound('Company')
  // Screens showing the company (its name, time zone, modules) follow it by listening.
  await announce(tx, { type: 'company.updated', companyId: id, object: { kind: 'company', id } })
  return companyDto(row)
}

export async function getCompany(db: Executor, id: number) {
  const [row] = await db.select().from(companies).where(eq(companies.id, id))
  if (!row) throw notFound('Company')
  return row
}
