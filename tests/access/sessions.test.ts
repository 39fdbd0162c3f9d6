import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { buildTestApp, postgresTest, type Company, type TestApp } from '../helpers'
import { authenticateKey } from '../../server/access/caller'
import { authenticateSession } from '../../server/access/sessions'
import { configureHashing, hashingLoad } from '../../server/access/passwords'
import { ACCOUNT_FREE_FAILURES, ACCOUNT_MAX_WAIT_MS, DEVICE_COOKIE_DAYS, PAIR_FREE_FAILURES } from '../../server/access/throttle'

let t: TestApp
const ORIGIN = 'http://fos.test'
const PASSWORD = 'correct horse battery'

// Its own app, trusting X-Forwarded-For, so each test signs in from addresses of its own: the throttle counts
// failures per client address too.
beforeAll(async () => {
  t = await buildTestApp({ trustProxy: true })
})

afterAll(() => t.travel(0))

let seq = 0
/** A company with the ventanilla on and an employee who has a password (and an API key, for comparison). */
/** A staff member with a password, made through `app` (its own database when embedded: each test app has one). */
async function staffMember(permissions = ['ventanilla.call'], clientIds?: number[], app = t) {
  const c = await app.newCompany({ ventanilla: true })
  const e = await c.employee(permissions, clientIds)
  const set = await app.request('PATCH', `/api/employees/${e.id}`, { key: c.key, body: { password: PASSWORD } })
  expect(set.status).toBe(200)
  expect(JSON.stringify(set.body)).not.toContain(PASSWORD)
  return { c, e }
}

let addresses = 0
/** A client address no other test uses. */
const newAddress = () => `203.0.113.${++addresses % 250}:${addresses}`

/** Every sign-in comes from an address; by default one per test file run that no throttle test shares. */
let address = newAddress()
const signIn = (companyId: number, email: string, password = PASSWORD, app = t, from = address, cookie?: string) =>
  app.request('POST', '/api/sessions', {
    body: { company_id: companyId, email, password },
    headers: { 'x-forwarded-for': from, ...(cookie !== undefined && { cookie }) },
  })

/** The device cookie a successful sign-in set, as `name=value` for the next request's Cookie header. */
const deviceOf = (headers: Headers) => {
  const set = headers.getSetCookie().find((c) => c.startsWith('fos_device_'))
  return set ? set.slice(0, set.indexOf(';')) : ''
}

const cookieOf = (headers: Headers) => /fos_session=([^;]*)/.exec(headers.get('set-cookie') ?? '')?.[1] ?? ''
const withCookie = (cookie: string, extra: Record<string, string> = {}) => ({ cookie: `theme=dark; fos_session=${cookie}`, ...extra })

async function session(companyId: number, email: string) {
  const r = await signIn(companyId, email)
  expect(r.status).toBe(201)
  return cookieOf(r.headers)
}

describe('passwords', () => {
  test('12–200 characters on create and update, kept only as an argon2id hash', async () => {
    const c = await t.newCompany()
    for (const password of ['short', 'x'.repeat(11), 'x'.repeat(201), 123456789012]) {
      const r = await t.request('POST', '/api/employees', { key: c.key, body: { email: `p${++seq}@fos.test`, name: 'P', permissions: [], password } })
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('VALIDATION_ERROR')
    }
    const made = await t.request('POST', '/api/employees', { key: c.key, body: { email: `p${++seq}@fos.test`, name: 'P', permissions: [], password: 'x'.repeat(12) } })
    expect(made.status).toBe(201)
    expect(Object.keys(made.body).sort()).toEqual(['client_ids', 'email', 'id', 'name', 'permissions'])
    expect((await t.request('PATCH', `/api/employees/${made.body.id}`, { key: c.key, body: { password: 'y'.repeat(11) } })).status).toBe(400)
    const [row] = await t.ctx.database.rows<{ password_hash: string }>(sql`select password_hash from employees where id = ${made.body.id}`)
    expect(row.password_hash).toStartWith('$argon2id$')
    expect(row.password_hash).not.toContain('x'.repeat(12))
    // The audit trail never carries it either.
    const audit = await t.ctx.database.rows<{ after: unknown }>(sql`select after from audit_logs where entity = 'employees' and entity_id = ${made.body.id}`)
    expect(JSON.stringify(audit)).not.toContain('argon2')
  })
})

describe('sign-in', () => {
  test('201 with the employee, the company (name, time zone) and expiry, and an HttpOnly SameSite=Strict cookie for 12 h', async () => {
    const { c, e } = await staffMember()
    const before = Date.now()
    const r = await signIn(c.id, e.email.toUpperCase())
    expect(r.status).toBe(201)
    expect(r.body).toEqual({
      employee: { id: e.id, email: e.email, name: expect.any(String), permissions: ['ventanilla.call'], client_ids: [] },
      company: { id: c.id, name: c.name, timezone: 'America/Argentina/Buenos_Aires' },
      expires_at: expect.stringMatching(/Z$/),
    })
    const ttl = Date.parse(r.body.expires_at) - before
    expect(ttl).toBeGreaterThan(12 * 3600_000 - 5000)
    expect(ttl).toBeLessThan(12 * 3600_000 + 5000)
    const cookie = r.headers.get('set-cookie')!
    expect(cookie).toMatch(/^fos_session=[A-Za-z0-9_-]{43}; /)
    for (const part of ['HttpOnly', 'SameSite=Strict', 'Path=/', 'Max-Age=43200']) expect(cookie).toContain(part)
    // PUBLIC_BASE_URL is http here.
    expect(cookie).not.toContain('Secure')
    const [stored] = await t.ctx.database.rows<{ token_hash: string }>(sql`select token_hash from employee_sessions where employee_id = ${e.id}`)
    expect(stored.token_hash).toMatch(/^[0-9a-f]{64}$/)
    expect(stored.token_hash).not.toBe(cookieOf(r.headers))

    const current = await t.request('GET', '/api/sessions/current', { headers: withCookie(cookieOf(r.headers)) })
    expect(current.status).toBe(200)
    expect(current.body).toEqual(r.body)
    // And a device cookie for the account: signed, sent back only to the sign-in route, kept for months.
    const device = r.headers.getSetCookie().find((c) => c.startsWith('fos_device_'))!
    expect(device).toMatch(/^fos_device_[A-Za-z0-9]{16}=[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}; /)
    for (const part of ['HttpOnly', 'SameSite=Strict', 'Path=/api/sessions', `Max-Age=${DEVICE_COOKIE_DAYS * 86_400}`]) expect(device).toContain(part)
    expect(device).not.toContain(e.email)
  })

  test('Secure cookie when PUBLIC_BASE_URL is https', async () => {
    const secure = await buildTestApp({ publicBaseUrl: 'https://cambio.example' })
    const { c, e } = await staffMember(undefined, undefined, secure)
    const r = await signIn(c.id, e.email, PASSWORD, secure)
    expect(r.status).toBe(201)
    expect(r.headers.get('set-cookie')).toContain('; Secure')
  })

  test('wrong password, unknown e-mail, other company, no password: one 401 answer, no session', async () => {
    const { c, e } = await staffMember()
    const other = await t.newCompany()
    const noPassword = await c.employee(['ventanilla.call'])
    const answers = [
      await signIn(c.id, e.email, 'wrong password!'),
      await signIn(c.id, `nobody${++seq}@fos.test`),
      await signIn(other.id, e.email),
      await signIn(c.id, noPassword.email, ''),
      await signIn(c.id, noPassword.email, 'anything at all'),
    ]
    expect(answers[3].status).toBe(400)
    for (const r of [answers[0], answers[1], answers[2], answers[4]]) {
      expect(r.status).toBe(401)
      expect(r.body).toEqual({ error: 'Wrong e-mail or password', code: 'UNAUTHORIZED' })
      expect(r.headers.get('set-cookie')).toBeNull()
    }
    const [{ n }] = await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from employee_sessions where employee_id = ${e.id}`)
    expect(Number(n)).toBe(0)
    expect((await t.request('POST', '/api/sessions', { body: { company_id: c.id, email: e.email } })).status).toBe(400)
  })

  test('a success does not count as a failure', async () => {
    const { c, e } = await staffMember()
    for (let i = 0; i < 11; i++) expect((await signIn(c.id, e.email)).status).toBe(201)
  })

  test('a sign-in posted from another origin → 403', async () => {
    const { c, e } = await staffMember()
    const r = await t.request('POST', '/api/sessions', {
      body: { company_id: c.id, email: e.email, password: PASSWORD },
      headers: { origin: 'https://evil.example' },
    })
    expect(r.status).toBe(403)
    expect(r.body.code).toBe('FORBIDDEN')
  })
})

describe('the cookie as a credential', () => {
  test('acts exactly as the employee: same caller as the key, permissions, module gate', async () => {
    const { c, e } = await staffMember(['ventanilla.call', 'clients.view'], [])
    const cookie = await session(c.id, e.email)
    const bySession = await authenticateSession(t.ctx.db, cookie, new Date())
    const byKey = await authenticateKey(t.ctx.db, e.key)
    expect({ ...bySession, session: undefined, keyId: undefined }).toEqual({ ...byKey, session: undefined, keyId: undefined })

    expect((await t.request('GET', '/api/ventanilla/queue', { headers: withCookie(cookie) })).status).toBe(200)
    const denied = await t.request('GET', '/api/ventanilla/settings', { headers: withCookie(cookie) })
    expect(denied.status).toBe(403)
    expect(denied.body.code).toBe('FORBIDDEN')
    // Company-key-only routes stay closed to a signed-in employee.
    expect((await t.request('GET', '/api/employees', { headers: withCookie(cookie) })).status).toBe(403)
  })

  test('client scope follows the employee', async () => {
    const { c, e } = await staffMember(['ventanilla.call'], [])
    const scoped = await c.employee(['ventanilla.call'])
    const client = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Cliente Uno', type: 1, accounts: [] } })
    expect(client.status).toBe(201)
    await t.request('PATCH', `/api/employees/${scoped.id}`, { key: c.key, body: { password: PASSWORD, client_ids: [client.body.id] } })
    const scopedCookie = await session(c.id, scoped.email)
    const caller = await authenticateSession(t.ctx.db, scopedCookie, new Date())
    expect(caller.employee!.clientIds).toEqual([client.body.id])
    const cookie = await session(c.id, e.email)
    expect((await authenticateSession(t.ctx.db, cookie, new Date())).employee!.clientIds).toEqual([])
  })

  test('writes need the service Origin; the audit trail names the employee', async () => {
    const { c, e } = await staffMember()
    const service = (await t.request('POST', '/api/ventanilla/services', { key: c.key, body: { name: 'Cambio', prefix: 'A' } })).body.id
    const cookie = await session(c.id, e.email)
    const count = async () =>
      Number((await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from ventanilla_tickets where company_id = ${c.id}`))[0].n)

    for (const headers of [withCookie(cookie), withCookie(cookie, { origin: 'https://evil.example' }), withCookie(cookie, { origin: 'null' })]) {
      const r = await t.request('POST', '/api/ventanilla/tickets', { headers, body: { service_id: service } })
      expect(r.status).toBe(403)
      expect(r.body.code).toBe('FORBIDDEN')
    }
    expect(await count()).toBe(0)
    // Reads need no Origin.
    expect((await t.request('GET', '/api/ventanilla/queue', { headers: withCookie(cookie) })).status).toBe(200)

    const made = await t.request('POST', '/api/ventanilla/tickets', { headers: withCookie(cookie, { origin: ORIGIN }), body: { service_id: service } })
    expect(made.status).toBe(201)
    const [audit] = await t.ctx.database.rows<{ actor_email: string | null }>(
      sql`select actor_email from audit_logs where entity = 'ventanilla_tickets' and entity_id = ${made.body.id} and action = 'create'`,
    )
    expect(audit.actor_email).toBe(e.email)

    // x-api-key wins when both are sent: a company key needs no Origin, and acts as the company.
    const byKey = await t.request('POST', '/api/ventanilla/tickets', { key: c.key, headers: withCookie(cookie), body: { service_id: service } })
    expect(byKey.status).toBe(201)
    const [keyAudit] = await t.ctx.database.rows<{ actor_email: string | null }>(
      sql`select actor_email from audit_logs where entity = 'ventanilla_tickets' and entity_id = ${byKey.body.id} and action = 'create'`,
    )
    expect(keyAudit.actor_email).toBeNull()
    // A bad key is not rescued by a good cookie.
    expect((await t.request('GET', '/api/ventanilla/queue', { key: 'fos_nope', headers: withCookie(cookie) })).status).toBe(401)
  })

  test('unknown, malformed, expired cookies → 401', async () => {
    const { c, e } = await staffMember()
    const cookie = await session(c.id, e.email)
    for (const bad of ['', 'x', 'A'.repeat(43), cookie.slice(0, -1)]) {
      const r = await t.request('GET', '/api/ventanilla/queue', { headers: withCookie(bad) })
      expect(r.status).toBe(401)
      expect(r.body.code).toBe('UNAUTHORIZED')
    }
    t.travel(12 * 3600_000 + 1000)
    try {
      const expired = await t.request('GET', '/api/sessions/current', { headers: withCookie(cookie) })
      expect(expired.status).toBe(401)
      expect((await t.request('GET', '/api/ventanilla/queue', { headers: withCookie(cookie) })).status).toBe(401)
    } finally {
      t.travel(0)
    }
    expect((await t.request('GET', '/api/ventanilla/queue', { headers: withCookie(cookie) })).status).toBe(200)
    // The session routes want a session, not a key.
    expect((await t.request('GET', '/api/sessions/current', { key: c.key })).status).toBe(401)
  })
})

describe('ending sessions', () => {
  test('sign-out: 204, cookie cleared, the session is dead', async () => {
    const { c, e } = await staffMember()
    const cookie = await session(c.id, e.email)
    const other = await session(c.id, e.email)
    expect((await t.request('DELETE', '/api/sessions/current', { headers: withCookie(cookie) })).status).toBe(403)
    const out = await t.request('DELETE', '/api/sessions/current', { headers: withCookie(cookie, { origin: ORIGIN }) })
    expect(out.status).toBe(204)
    expect(out.headers.get('set-cookie')).toMatch(/^fos_session=; .*Max-Age=0/)
    expect((await t.request('GET', '/api/sessions/current', { headers: withCookie(cookie) })).status).toBe(401)
    expect((await t.request('GET', '/api/ventanilla/queue', { headers: withCookie(cookie) })).status).toBe(401)
    // Only that session: the employee's other one goes on.
    expect((await t.request('GET', '/api/sessions/current', { headers: withCookie(other) })).status).toBe(200)
  })

  test('a password change or deleting the employee ends every session of theirs', async () => {
    const { c, e } = await staffMember()
    const bystander = await c.employee(['ventanilla.call'])
    await t.request('PATCH', `/api/employees/${bystander.id}`, { key: c.key, body: { password: PASSWORD } })
    const theirs = await session(c.id, bystander.email)
    const one = await session(c.id, e.email)
    const two = await session(c.id, e.email)
    // Other changes leave sessions alone.
    await t.request('PATCH', `/api/employees/${e.id}`, { key: c.key, body: { name: 'Renombrado' } })
    expect((await t.request('GET', '/api/sessions/current', { headers: withCookie(one) })).body.employee.name).toBe('Renombrado')
    await t.request('PATCH', `/api/employees/${e.id}`, { key: c.key, body: { password: 'a brand new password' } })
    for (const cookie of [one, two]) expect((await t.request('GET', '/api/sessions/current', { headers: withCookie(cookie) })).status).toBe(401)
    expect((await signIn(c.id, e.email)).status).toBe(401)
    const three = (await signIn(c.id, e.email, 'a brand new password')).headers
    expect((await t.request('GET', '/api/sessions/current', { headers: withCookie(cookieOf(three)) })).status).toBe(200)
    expect((await t.request('DELETE', `/api/employees/${e.id}`, { key: c.key })).status).toBe(200)
    expect((await t.request('GET', '/api/sessions/current', { headers: withCookie(cookieOf(three)) })).status).toBe(401)
    expect((await signIn(c.id, e.email, 'a brand new password')).status).toBe(401)
    expect((await t.request('GET', '/api/sessions/current', { headers: withCookie(theirs) })).status).toBe(200)
  })

  postgresTest('sign-out, revocation and the failure limit hold across processes', async () => {
    const other = await buildTestApp({ trustProxy: true })
    const { c, e } = await staffMember()
    const cookie = await session(c.id, e.email)
    expect((await other.request('GET', '/api/sessions/current', { headers: withCookie(cookie) })).status).toBe(200)
    expect((await t.request('DELETE', '/api/sessions/current', { headers: withCookie(cookie, { origin: ORIGIN }) })).status).toBe(204)
    expect((await other.request('GET', '/api/sessions/current', { headers: withCookie(cookie) })).status).toBe(401)

    const victim = await staffMember()
    // Failures from one address spread over two processes count together: eight of them (each wait, as it comes, is
    // waited out on both processes' clocks), then the wait is 8 s, long enough for any machine.
    const from = newAddress()
    let ahead = 0
    try {
      for (let failures = 0, i = 0; failures < PAIR_FREE_FAILURES + 3; i++) {
        const r = await signIn(victim.c.id, victim.e.email, `wrong password ${i}`, i % 2 ? other : t, from)
        if (r.status === 401) failures++
        else {
          expect(r.status).toBe(429)
          ahead += Number(r.headers.get('retry-after')) * 1000
          t.travel(ahead)
          other.travel(ahead)
        }
      }
      expect((await signIn(victim.c.id, victim.e.email, PASSWORD, other, from)).status).toBe(429)
      expect((await signIn(victim.c.id, victim.e.email, PASSWORD, t, from)).status).toBe(429)
    } finally {
      t.travel(0)
      other.travel(0)
    }
    // Concurrent attempts see each other before their passwords are checked: a burst gets no more checks than the
    // free failures.
    const burst = newAddress()
    const tries = await Promise.all(Array.from({ length: 12 }, (_, i) => signIn(victim.c.id, victim.e.email, `wrong password ${i}`, i % 2 ? other : t, burst)))
    expect(tries.every((r) => r.status === 401 || r.status === 429)).toBe(true)
    expect(tries.filter((r) => r.status === 401).length).toBeLessThanOrEqual(PAIR_FREE_FAILURES)
    // The employee, from where they have not failed, is not held back by it.
    expect((await signIn(victim.c.id, victim.e.email, PASSWORD, other, newAddress())).status).toBe(201)
  })
})

describe('sign-in throttling', () => {
  afterAll(() => t.travel(0))

  test('one address guessing one account: free failures, then waits that double after each failure', async () => {
    const { c, e } = await staffMember()
    const from = newAddress()
    for (let i = 0; i < PAIR_FREE_FAILURES; i++) expect((await signIn(c.id, e.email, `wrong password ${i}`, t, from)).status).toBe(401)
    const waits: number[] = []
    let ahead = 0
    try {
      for (let i = 0; i < 4; i++) {
        const limited = await signIn(c.id, e.email, PASSWORD, t, from)
        expect(limited.status).toBe(429)
        expect(limited.body).toEqual({ error: expect.any(String), code: 'RATE_LIMITED' })
        expect(limited.headers.get('set-cookie')).toBeNull()
        const wait = Number(limited.headers.get('retry-after'))
        waits.push(wait)
        // Once the wait is over, the next guess is checked, and fails: the next wait is twice as long.
        t.travel((ahead += wait * 1000))
        expect((await signIn(c.id, e.email, `still wrong ${i}`, t, from)).status).toBe(401)
      }
    } finally {
      t.travel(0)
    }
    expect(waits).toEqual([1, 2, 4, 8])
    // A refused attempt is no failure: it did not lengthen the wait. And the right password from elsewhere works.
    expect((await signIn(c.id, e.email, PASSWORD, t, newAddress())).status).toBe(201)
    // After the window, the address may try again, and a success clears its failures.
    t.travel(ahead + 15 * 60_000 + 1000)
    try {
      expect((await signIn(c.id, e.email, PASSWORD, t, from)).status).toBe(201)
      for (let i = 0; i < PAIR_FREE_FAILURES; i++) expect((await signIn(c.id, e.email, `wrong again ${i}`, t, from)).status).toBe(401)
    } finally {
      t.travel(0)
    }
  })

  test('repro: failures naming companies that do not exist lock nobody out, at that address or anywhere, and are written down nowhere', async () => {
    const { c, e } = await staffMember()
    const shared = newAddress()
    const tries = []
    // The probe's 26: enough to lock a whole address out for 64 s when failures counted per address.
    for (let i = 0; i < 26; i++) tries.push((await signIn(900_000 + i, i % 2 ? e.email.toUpperCase() : `x${i}@fos.test`, `guess ${i}`, t, shared)).status)
    expect(tries).toEqual(Array(26).fill(401))
    const [{ n }] = await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from sign_in_failures where company_id >= 900000`)
    expect(Number(n)).toBe(0)
    // Every employee at that address, on a browser that never signed in (no device cookie), signs in at once.
    const own = await signIn(c.id, e.email, PASSWORD, t, shared)
    expect([own.status, own.headers.get('retry-after')]).toEqual([201, null])
  })

  test('repro: failures against other accounts from one address never hold back anyone else at that address', async () => {
    const { c, e } = await staffMember()
    const shared = newAddress()
    // 30 wrong tries over 30 e-mails of the same company, and 5 against one real colleague, from one NAT address.
    const colleague = await c.employee(['ventanilla.call'])
    for (let i = 0; i < 30; i++) expect((await signIn(c.id, `spray${i}.${c.id}@fos.test`, 'Password123!', t, shared)).status).toBe(401)
    for (let i = 0; i < PAIR_FREE_FAILURES; i++) expect((await signIn(c.id, colleague.email, `wrong ${i}`, t, shared)).status).toBe(401)
    expect((await signIn(c.id, e.email, PASSWORD, t, shared)).status).toBe(201)
  })

  test('a browser holding the device cookie is held back only by its own failures, never by other browsers at its address', async () => {
    const { c, e } = await staffMember()
    const branch = newAddress()
    const first = await signIn(c.id, e.email, PASSWORD, t, branch)
    expect(first.status).toBe(201)
    const device = deviceOf(first.headers)
    expect(device).not.toBe('')
    // Someone else at the same address (no cookie) guesses at the account: the free failures, then five more, each
    // wait waited out on the app's clock, so the address's wait is now 32 s, longer than anything below takes.
    for (let i = 0; i < PAIR_FREE_FAILURES; i++) expect((await signIn(c.id, e.email, `guess ${i}`, t, branch)).status).toBe(401)
    let ahead = 0
    try {
      for (let i = 0; i < 5; i++) {
        const held = await signIn(c.id, e.email, `guess again ${i}`, t, branch)
        if (held.status === 429) t.travel((ahead += Number(held.headers.get('retry-after')) * 1000))
        expect((await signIn(c.id, e.email, `guess once more ${i}`, t, branch)).status).toBe(401)
      }
      const untrusted = await signIn(c.id, e.email, PASSWORD, t, branch)
      expect(untrusted.status).toBe(429)
      expect(Number(untrusted.headers.get('retry-after'))).toBeGreaterThan(10)
      // The employee's own browser is trusted: signed in at once, from that very address, with a fresh device cookie.
      const trusted = await signIn(c.id, e.email, PASSWORD, t, branch, device)
      expect([trusted.status, trusted.headers.get('retry-after')]).toEqual([201, null])
      const renewed = deviceOf(trusted.headers)
      expect(renewed).not.toBe(device)
      // A cookie altered by one character, or one made for another account, trusts nothing: the untrusted wait applies.
      const tampered = renewed.slice(0, -1) + (renewed.endsWith('A') ? 'B' : 'A')
      expect((await signIn(c.id, e.email, PASSWORD, t, branch, tampered)).status).toBe(429)
      const other = await staffMember()
      const theirs = deviceOf((await signIn(other.c.id, other.e.email, PASSWORD, t, newAddress())).headers)
      const renamed = renewed.slice(0, renewed.indexOf('=')) + theirs.slice(theirs.indexOf('='))
      expect((await signIn(c.id, e.email, PASSWORD, t, branch, renamed)).status).toBe(429)
      // The untrusted browser elsewhere, where nobody failed, is not held back either.
      expect((await signIn(c.id, e.email, PASSWORD, t, newAddress())).status).toBe(201)
    } finally {
      t.travel(0)
    }
  })

  test('a trusted browser backs off on its own failures: free ones, then waits that double', async () => {
    const { c, e } = await staffMember()
    const device = deviceOf((await signIn(c.id, e.email, PASSWORD, t, newAddress())).headers)
    const waits: number[] = []
    let ahead = 0
    try {
      // From a new address each time: the cookie's count follows the browser, not the address.
      for (let i = 0; i < PAIR_FREE_FAILURES; i++) expect((await signIn(c.id, e.email, `typo ${i}`, t, newAddress(), device)).status).toBe(401)
      for (let i = 0; i < 3; i++) {
        const limited = await signIn(c.id, e.email, PASSWORD, t, newAddress(), device)
        expect(limited.status).toBe(429)
        waits.push(Number(limited.headers.get('retry-after')))
        t.travel((ahead += waits[i] * 1000))
        expect((await signIn(c.id, e.email, `typo again ${i}`, t, newAddress(), device)).status).toBe(401)
      }
      // Doubling: 1, 2, 4 s after each failure (a second less when the machine was slow to check the password).
      waits.forEach((wait, i) => expect(wait).toBeWithin(Math.max(1, 2 ** i - 1), 2 ** i + 1))
      t.travel((ahead += 8000))
      expect((await signIn(c.id, e.email, PASSWORD, t, newAddress(), device)).status).toBe(201)
    } finally {
      t.travel(0)
    }
  })

  test('many addresses guessing one account: an address that has not failed is never delayed; one that has waits at most 30 s', async () => {
    const { c, e } = await staffMember()
    for (let i = 0; i < ACCOUNT_FREE_FAILURES + 10; i++) expect((await signIn(c.id, e.email, `guess ${i}`, t, newAddress())).status).toBe(401)
    // Each attacking address that failed once must now wait, briefly.
    const again = newAddress()
    expect((await signIn(c.id, e.email, 'guess', t, again)).status).toBe(401)
    const slowed = await signIn(c.id, e.email, 'guess', t, again)
    expect(slowed.status).toBe(429)
    expect(Number(slowed.headers.get('retry-after'))).toBeLessThanOrEqual(ACCOUNT_MAX_WAIT_MS / 1000)
    // The employee signs in at once from an address that has not failed.
    expect((await signIn(c.id, e.email, PASSWORD, t, newAddress())).status).toBe(201)
    // One typo of theirs costs them at most ACCOUNT_MAX_WAIT_MS.
    const typo = newAddress()
    expect((await signIn(c.id, e.email, 'typo', t, typo)).status).toBe(401)
    t.travel(ACCOUNT_MAX_WAIT_MS + 100)
    try {
      expect((await signIn(c.id, e.email, PASSWORD, t, typo)).status).toBe(201)
    } finally {
      t.travel(0)
    }
  })

  test('password checks run in a bounded pool: never more at once than configured; past the queue deadline 503, not a failure', async () => {
    const pooled = await buildTestApp({ trustProxy: true, passwordHashing: { concurrency: 1, queueMs: 150 } })
    const { c, e } = await staffMember(undefined, undefined, pooled)
    let most = 0
    const watching = setInterval(() => (most = Math.max(most, hashingLoad().running)), 2)
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => signIn(c.id, e.email, i === 0 ? PASSWORD : `wrong ${i}`, pooled, newAddress())))
    clearInterval(watching)
    const statuses = answers.map((r) => r.status)
    expect(most).toBe(1)
    expect(statuses).toContain(503)
    for (const r of answers.filter((a) => a.status === 503)) {
      expect(r.body).toEqual({ error: expect.any(String), code: 'SERVICE_UNAVAILABLE' })
      expect(r.headers.get('retry-after')).toBe('1')
    }
    expect(statuses.every((s) => [201, 401, 503].includes(s))).toBe(true)
    // Only the attempts whose password was checked were written down as failures.
    const [{ n }] = await pooled.ctx.database.rows<{ n: number }>(
      sql`select count(*)::int as n from sign_in_failures where company_id = ${c.id}`,
    )
    expect(Number(n)).toBe(statuses.filter((s) => s === 401).length)
    configureHashing(t.ctx.config.passwordHashing)
  })
})

describe('the key path', () => {
  test('a request with x-api-key never looks at the cookie', async () => {
    const c: Company = await t.newCompany({ ventanilla: true })
    // A cookie of the right shape that matches no session: with the key it is not even looked up.
    const r = await t.request('GET', '/api/ventanilla/queue', { key: c.key, headers: withCookie('B'.repeat(43)) })
    expect(r.status).toBe(200)
  })
})
