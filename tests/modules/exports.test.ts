import { beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import Decimal from 'decimal.js'
import postgres from 'postgres'
import { buildTestApp, postgresTest, testApp, type Company, type TestApp } from '../helpers'

const DAY = 86_400_000

// The first use builds the shared app and migrates its database, which can take a while on PGlite.
beforeAll(async () => {
  await testApp()
}, 120_000)

/** RFC 4180 reader, strict enough to catch a writer that gets quoting or line ends wrong. */
function parseCsv(text: string): string[][] {
  const records: string[][] = []
  let field = ''
  let record: string[] = []
  let i = 0
  while (i < text.length) {
    if (text[i] === '"') {
      i++
      for (;;) {
        if (i >= text.length) throw new Error('unterminated quoted field')
        if (text[i] === '"') {
          if (text[i + 1] === '"') {
            field += '"'
            i += 2
            continue
          }
          i++
          break
        }
        field += text[i++]
      }
      if (i < text.length && text[i] !== ',' && text[i] !== '\r') throw new Error(`garbage after quoted field at ${i}`)
    }
    const c = text[i]
    if (c === ',') {
      record.push(field)
      field = ''
      i++
    } else if (c === '\r') {
      if (text[i + 1] !== '\n') throw new Error(`bare CR at ${i}`)
      record.push(field)
      records.push(record)
      field = ''
      record = []
      i += 2
    } else if (c === '\n') {
      throw new Error(`bare LF at ${i}`)
    } else if (c !== undefined) {
      if (c === '"') throw new Error(`quote inside an unquoted field at ${i}`)
      field += c
      i++
    }
  }
  if (field !== '' || record.length > 0) throw new Error('last record without CRLF')
  return records
}

async function setup(t: TestApp, c?: Company) {
  c ??= await t.newCompany()
  const type = await t.request('POST', '/api/operation-types', { key: c.key, body: { name: 'Varios', kind: 'other' } })
  expect(type.status).toBe(201)
  const client = await t.request('POST', '/api/clients', {
    key: c.key,
    body: { name: 'Juan', type: 1, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] },
  })
  expect(client.status).toBe(201)
  const other = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Otro', type: 1, accounts: [{ currency_name: 'ARS' }] } })
  const caja = await t.request('POST', '/api/clients', {
    key: c.key,
    body: { name: 'Caja', type: 0, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] },
  })
  const byCurrency = (body: any) => Object.fromEntries(body.accounts.map((a: any) => [a.currency_name, a.id as number]))
  return {
    c,
    typeId: type.body.id as number,
    clientId: client.body.id as number,
    otherId: other.body.id as number,
    acc: byCurrency(client.body),
    caja: byCurrency(caja.body),
  }
}

type Setup = Awaited<ReturnType<typeof setup>>

/** A completed operation; `completedAt` pins its transactions' completion instant (the database clock cannot be moved). */
async function completed(
  t: TestApp,
  s: Setup,
  legs: { account: number; amount: number | string; description?: string }[],
  opts: { completedAt?: string; description?: string; status?: 'pending' | 'completed' } = {},
) {
  const res = await t.request('POST', '/api/operations', {
    key: s.c.key,
    body: {
      operation_type_id: s.typeId,
      description: opts.description ?? '',
      status: opts.status ?? 'completed',
      transactions: legs.map((l) => ({ account_id: l.account, amount: l.amount, ...(l.description !== undefined && { description: l.description }) })),
    },
  })
  expect(res.status).toBe(201)
  if (opts.completedAt)
    await t.ctx.database.rows(sql`update transactions set completed_at = ${opts.completedAt}::timestamptz where operation_id = ${res.body.id}`)
  return res.body as { id: number; transactions: { id: number }[] }
}

async function grant(t: TestApp, s: Setup, clientId = s.clientId, body: unknown = {}) {
  const res = await t.request('POST', `/api/clients/${clientId}/external-grants`, { key: s.c.key, body })
  expect(res.status).toBe(201)
  return res.body as { id: number; token: string; expires_at: string }
}

const statement = (t: TestApp, id: number, query: string, auth: { key?: string; bearer?: string }) =>
  t.request('GET', `/api/external/clients/${id}/statement${query}`, auth)

async function balances(t: TestApp, clientId: number, key: string) {
  const res = await t.request('GET', `/api/clients/${clientId}`, { key })
  return Object.fromEntries(res.body.accounts.map((a: any) => [a.id, a.balance as number]))
}

describe('external grants', () => {
  test('issue, bounds, permissions and storage as a hash', async () => {
    const t = await testApp()
    const s = await setup(t)
    const before = t.ctx.clock().getTime()
    const g = await grant(t, s)
    expect(Object.keys(g).sort()).toEqual(['expires_at', 'id', 'token'])
    expect(g.token.length).toBeGreaterThanOrEqual(40)
    const lifetime = new Date(g.expires_at).getTime() - before
    expect(lifetime).toBeGreaterThanOrEqual(30 * DAY - 1000)
    expect(lifetime).toBeLessThanOrEqual(30 * DAY + 60_000)

    const week = await grant(t, s, s.clientId, { expires_in_days: 7 })
    expect(Math.round((new Date(week.expires_at).getTime() - before) / DAY)).toBe(7)
    const noBody = await t.request('POST', `/api/clients/${s.clientId}/external-grants`, { key: s.c.key })
    expect(noBody.status).toBe(201)

    for (const body of [{ expires_in_days: 0 }, { expires_in_days: 366 }, { expires_in_days: 1.5 }, { expires_in_days: 'x' }]) {
      const bad = await t.request('POST', `/api/clients/${s.clientId}/external-grants`, { key: s.c.key, body })
      expect(bad.status).toBe(400)
      expect(bad.body.code).toBe('VALIDATION_ERROR')
    }
    expect((await t.request('POST', '/api/clients/abc/external-grants', { key: s.c.key, body: {} })).body.code).toBe('INVALID_ID')
    expect((await t.request('POST', `/api/clients/${s.clientId}/external-grants`, { body: {} })).status).toBe(401)
    expect((await t.request('POST', '/api/clients/2147483000/external-grants', { key: s.c.key, body: {} })).status).toBe(404)

    const other = await t.newCompany()
    const cross = await t.request('POST', `/api/clients/${s.clientId}/external-grants`, { key: other.key, body: {} })
    expect(cross.status).toBe(404)
    expect(cross.body.code).toBe('NOT_FOUND')

    const viewer = await s.c.employee(['clients.view'])
    const denied = await t.request('POST', `/api/clients/${s.clientId}/external-grants`, { key: viewer.key, body: {} })
    expect(denied.status).toBe(403)
    expect(denied.body.code).toBe('FORBIDDEN')
    const editor = await s.c.employee(['clients.edit'])
    expect((await t.request('POST', `/api/clients/${s.clientId}/external-grants`, { key: editor.key, body: {} })).status).toBe(201)
    const scoped = await s.c.employee(['clients.edit'], [s.otherId])
    expect((await t.request('POST', `/api/clients/${s.clientId}/external-grants`, { key: scoped.key, body: {} })).status).toBe(404)

    const [row] = await t.ctx.database.rows<{ token_hash: string; prefix: string }>(
      sql`select token_hash, prefix from external_grants where id = ${g.id}`,
    )
    expect(row.token_hash).not.toContain(g.token)
    expect(g.token).toContain(row.prefix)
    const leaked = await t.ctx.database.rows(sql`select 1 from audit_logs where entity = 'external_grants' and (after::text like ${`%${g.token}%`} or after::text like ${`%${row.token_hash}%`})`)
    expect(leaked).toEqual([])
  })

  test('a grant sees only its client; wrong, unknown, revoked and expired grants', async () => {
    const t = await testApp()
    const s = await setup(t)
    await completed(t, s, [
      { account: s.acc.ARS, amount: 100 },
      { account: s.caja.ARS, amount: -100 },
    ])
    const g = await grant(t, s)
    const ok = await statement(t, s.clientId, '', { bearer: g.token })
    expect(ok.status).toBe(200)
    expect(ok.body.client).toEqual({ id: s.clientId, name: 'Juan', type: 1 })

    const wrongClient = await statement(t, s.otherId, '', { bearer: g.token })
    expect(wrongClient.status).toBe(404)
    expect(wrongClient.body.code).toBe('NOT_FOUND')
    const foreign = await setup(t)
    expect((await statement(t, foreign.clientId, '', { bearer: g.token })).status).toBe(404)
    expect((await statement(t, 2147483000, '', { bearer: g.token })).status).toBe(404)

    expect((await statement(t, s.clientId, '', {})).status).toBe(401)
    const forged = g.token.slice(0, -4) + (g.token.endsWith('AAAA') ? 'BBBB' : 'AAAA')
    const bad = await statement(t, s.clientId, '', { bearer: forged })
    expect(bad.status).toBe(401)
    expect(bad.body.code).toBe('UNAUTHORIZED')
    expect((await statement(t, s.clientId, '', { bearer: 'nonsense' })).status).toBe(401)
    // A grant is not an API key.
    expect((await statement(t, s.clientId, '', { key: g.token })).status).toBe(401)

    // Revocation: the owner of the client may revoke; another client's path or company cannot.
    expect((await t.request('DELETE', `/api/clients/${s.otherId}/external-grants/${g.id}`, { key: s.c.key })).status).toBe(404)
    expect((await t.request('DELETE', `/api/clients/${s.clientId}/external-grants/${g.id}`, { key: foreign.c.key })).status).toBe(404)
    const viewer = await s.c.employee(['clients.view'])
    expect((await t.request('DELETE', `/api/clients/${s.clientId}/external-grants/${g.id}`, { key: viewer.key })).status).toBe(403)
    expect((await t.request('DELETE', `/api/clients/${s.clientId}/external-grants/x`, { key: s.c.key })).body.code).toBe('INVALID_ID')
    const revoked = await t.request('DELETE', `/api/clients/${s.clientId}/external-grants/${g.id}`, { key: s.c.key })
    expect(revoked.status).toBe(200)
    expect(revoked.body).toEqual({ deleted: true })
    const after = await statement(t, s.clientId, '', { bearer: g.token })
    expect(after.status).toBe(401)
    expect(after.body.code).toBe('UNAUTHORIZED')
    // Why, for the holder of a real token only: a forged one learns nothing.
    expect(after.body.details).toEqual({ reason: 'revoked', at: expect.stringMatching(/Z$/) })
    expect(bad.body.details).toBeUndefined()
    expect((await t.request('DELETE', `/api/clients/${s.clientId}/external-grants/${g.id}`, { key: s.c.key })).status).toBe(404)

    const short = await grant(t, s, s.clientId, { expires_in_days: 1 })
    expect((await statement(t, s.clientId, '', { bearer: short.token })).status).toBe(200)
    try {
      t.travel(DAY + 60_000)
      const expired = await statement(t, s.clientId, '', { bearer: short.token })
      expect(expired.status).toBe(401)
      expect(expired.body.code).toBe('UNAUTHORIZED')
      expect(expired.body.details).toEqual({ reason: 'expired', at: short.expires_at })
    } finally {
      t.travel(0)
    }
    expect((await statement(t, s.clientId, '', { bearer: short.token })).status).toBe(200)
  })

  test('API keys: company key of the client, employee permission and client scope', async () => {
    const t = await testApp()
    const s = await setup(t)
    expect((await statement(t, s.clientId, '', { key: s.c.key })).status).toBe(200)
    const other = await t.newCompany()
    const cross = await statement(t, s.clientId, '', { key: other.key })
    expect(cross.status).toBe(404)
    expect(cross.body.code).toBe('NOT_FOUND')
    expect((await statement(t, s.clientId, '', { key: 'fos_000000000000_' + 'A'.repeat(32) })).status).toBe(401)
    const noPerm = await s.c.employee(['operations.view'])
    const denied = await statement(t, s.clientId, '', { key: noPerm.key })
    expect(denied.status).toBe(403)
    expect(denied.body.code).toBe('FORBIDDEN')
    const viewer = await s.c.employee(['clients.view'])
    expect((await statement(t, s.clientId, '', { key: viewer.key })).status).toBe(200)
    const scoped = await s.c.employee(['clients.view'], [s.otherId])
    expect((await statement(t, s.clientId, '', { key: scoped.key })).status).toBe(404)
    expect((await statement(t, s.otherId, '', { key: scoped.key })).status).toBe(200)
    expect((await statement(t, 0, '', { key: s.c.key })).body.code).toBe('INVALID_ID')
    // The key wins when both credentials are sent.
    const g = await grant(t, s)
    expect((await statement(t, s.otherId, '', { key: s.c.key, bearer: g.token })).status).toBe(200)
  })
})

describe('statements', () => {
  test('running balances reconcile with the account balances; date-only bounds are local days', async () => {
    const t = await testApp()
    const s = await setup(t)
    // Buenos Aires is UTC−03:00: 23:30 local on the 10th is 02:30 UTC on the 11th.
    const late = await completed(t, s, [{ account: s.acc.ARS, amount: '1000.10' }, { account: s.caja.ARS, amount: '-1000.10' }], {
      completedAt: '2024-03-10T23:30:00-03:00',
      description: 'Depósito',
    })
    await completed(t, s, [{ account: s.acc.ARS, amount: '0.2', description: 'ajuste' }, { account: s.caja.ARS, amount: '-0.2' }], {
      completedAt: '2024-03-09T12:00:00Z',
    })
    await completed(t, s, [{ account: s.acc.ARS, amount: '-250.05' }, { account: s.caja.ARS, amount: '250.05' }], {
      completedAt: '2024-03-11T00:30:00-03:00',
    })
    await completed(t, s, [{ account: s.acc.USD, amount: 40 }, { account: s.caja.USD, amount: -40 }])
    await completed(t, s, [{ account: s.acc.ARS, amount: 999 }, { account: s.caja.ARS, amount: -999 }], { status: 'pending' })

    const all = await statement(t, s.clientId, '', { key: s.c.key })
    expect(all.status).toBe(200)
    expect(all.body.timezone).toBe('America/Argentina/Buenos_Aires')
    expect(all.body.from).toBeNull()
    expect(all.body.until).toBeNull()
    const bal = await balances(t, s.clientId, s.c.key)
    expect(all.body.accounts.map((a: any) => a.id)).toEqual([s.acc.ARS, s.acc.USD])
    for (const a of all.body.accounts) {
      expect(a.opening_balance).toBe(0)
      expect(a.closing_balance).toBe(bal[a.id])
      expect(a.balance).toBe(bal[a.id])
      let running = new Decimal(a.opening_balance)
      for (const row of a.transactions) {
        running = running.plus(row.amount)
        expect(row.running_balance).toBe(running.toNumber())
      }
    }
    const ars = all.body.accounts[0]
    // Pending transactions are not in a statement; completed ones come oldest first.
    expect(ars.transactions.map((r: any) => r.amount)).toEqual([0.2, 1000.1, -250.05])
    expect(ars.transactions.map((r: any) => r.running_balance)).toEqual([0.2, 1000.3, 750.25])
    expect(ars.closing_balance).toBe(750.25)
    expect(ars.transactions[0].description).toBe('ajuste')
    expect(ars.transactions[1]).toMatchObject({ description: 'Depósito', operation_id: late.id, completed_at: '2024-03-11T02:30:00.000Z' })

    const day10 = await statement(t, s.clientId, '?from=2024-03-10&to=2024-03-10', { key: s.c.key })
    expect(day10.status).toBe(200)
    expect(day10.body.from).toBe('2024-03-10T03:00:00.000Z')
    expect(day10.body.until).toBe('2024-03-11T03:00:00.000Z')
    const d10 = day10.body.accounts[0]
    // 23:30 local belongs to the 10th, though it is the 11th in UTC; 00:30 local of the 11th does not.
    expect(d10.transactions.map((r: any) => r.amount)).toEqual([1000.1])
    expect(d10.opening_balance).toBe(0.2)
    expect(d10.closing_balance).toBe(1000.3)
    expect(d10.transactions[0].running_balance).toBe(1000.3)

    const day11 = await statement(t, s.clientId, '?from=2024-03-11&to=2024-03-11', { key: s.c.key })
    const d11 = day11.body.accounts[0]
    expect(d11.transactions.map((r: any) => r.amount)).toEqual([-250.05])
    expect(d11.opening_balance).toBe(1000.3)
    expect(d11.closing_balance).toBe(750.25)

    // From the 11th on, with no upper bound, the closing balance is the account balance.
    const since = await statement(t, s.clientId, '?from=2024-03-11', { key: s.c.key })
    expect(since.body.accounts[0].closing_balance).toBe(bal[s.acc.ARS])
    expect(since.body.until).toBeNull()

    // Date-times are instants and inclusive at both ends.
    const exact = await statement(t, s.clientId, '?from=2024-03-11T02:30:00Z&to=2024-03-11T02:30:00Z', { key: s.c.key })
    expect(exact.body.accounts[0].transactions.map((r: any) => r.amount)).toEqual([1000.1])
    const offset = await statement(t, s.clientId, `?from=${encodeURIComponent('2024-03-10T23:30:00.000001-03:00')}`, { key: s.c.key })
    expect(offset.body.accounts[0].transactions.map((r: any) => r.amount)).toEqual([-250.05])

    for (const q of ['?from=2024-02-30', '?to=2024-13-01', '?from=yesterday', '?from=2024-03-10T25:00:00Z', '?from=2024-03-10T10:00:00', '?from=2024-03-12&to=2024-03-11', '?format=xml']) {
      const bad = await statement(t, s.clientId, q, { key: s.c.key })
      expect(bad.status).toBe(400)
      expect(bad.body.code).toBe('VALIDATION_ERROR')
    }
    // Credentials are checked before the query.
    expect((await statement(t, s.clientId, '?from=nonsense', {})).status).toBe(401)
  })

  test('CSV: RFC 4180, formula-safe text cells, the same rows as JSON', async () => {
    const t = await testApp()
    const s = await setup(t)
    const tricky = [
      'plain',
      'comma, inside',
      'quote " inside',
      'line\nbreak and\r\nCRLF',
      '=HYPERLINK("http://evil")',
      '+1+1',
      '-2+3',
      '@SUM(A1)',
      'ñandú €',
    ]
    for (const [i, description] of tricky.entries()) {
      await completed(t, s, [{ account: s.acc.ARS, amount: i % 2 ? -(i + 0.5) : i + 0.25, description }, { account: s.caja.ARS, amount: i % 2 ? i + 0.5 : -(i + 0.25) }], {
        completedAt: `2024-05-0${i + 1}T15:00:00Z`,
      })
    }
    await completed(t, s, [{ account: s.acc.USD, amount: '-12.5' }, { account: s.caja.USD, amount: '12.5' }], {
      completedAt: '2024-05-02T10:00:00Z',
      description: 'from the operation',
    })

    const res = await statement(t, s.clientId, '?format=csv&from=2024-05-01', { key: s.c.key })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="statement-${s.clientId}.csv"`)
    const text = res.body as string
    expect(text.endsWith('\r\n')).toBe(true)
    expect(text).toContain('"quote "" inside"')
    const [header, ...rows] = parseCsv(text)
    expect(header).toEqual(['account_id', 'account_name', 'currency', 'transaction_id', 'operation_id', 'completed_at', 'description', 'amount', 'running_balance'])

    const json = await statement(t, s.clientId, '?format=json&from=2024-05-01', { key: s.c.key })
    const neutral = (v: string) => (/^[=+\-@\t\r]/.test(v) ? `'${v}` : v)
    const expected = json.body.accounts.flatMap((a: any) =>
      a.transactions.map((r: any) => [
        String(a.id),
        a.name,
        a.currency_name,
        String(r.id),
        String(r.operation_id),
        r.completed_at,
        neutral(r.description),
        String(r.amount),
        String(r.running_balance),
      ]),
    )
    expect(rows).toEqual(expected)
    expect(rows.length).toBe(10)
    // JSON keeps the text as written; CSV neutralises formulas in text cells only.
    expect(json.body.accounts[0].transactions[4].description).toBe('=HYPERLINK("http://evil")')
    const byDescription = new Map(rows.map((r) => [r[6], r]))
    expect(byDescription.get(`'=HYPERLINK("http://evil")`)).toBeDefined()
    expect(byDescription.get("'-2+3")).toBeDefined()
    expect(byDescription.get("'@SUM(A1)")).toBeDefined()
    expect(byDescription.get('line\nbreak and\r\nCRLF')).toBeDefined()
    // Negative amounts stay numbers.
    const usd = rows.find((r) => r[2] === 'USD')!
    expect(usd[6]).toBe('from the operation')
    expect(usd[7]).toBe('-12.5')
    expect(usd[8]).toBe('-12.5')
    expect(rows.some((r) => r[7].startsWith("'") || r[8].startsWith("'"))).toBe(false)

    const g = await grant(t, s)
    const viaGrant = await statement(t, s.clientId, '?format=csv&from=2024-05-01', { bearer: g.token })
    expect(viaGrant.body).toBe(text)
    const empty = await statement(t, s.otherId, '?format=csv', { key: s.c.key })
    expect(parseCsv(empty.body)).toEqual([header])
    const bad = await statement(t, s.clientId, '?format=csv&from=2024-05-40', { key: s.c.key })
    expect(bad.status).toBe(400)
    expect(bad.headers.get('content-type')).toContain('application/json')
  })

  test('a long range streams in batches and still reconciles', async () => {
    const t = await testApp()
    const s = await setup(t)
    const op = await completed(t, s, [{ account: s.acc.ARS, amount: 1 }, { account: s.caja.ARS, amount: -1 }], { completedAt: '2023-12-31T12:00:00Z' })
    const n = 2600
    // Bulk history straight into the ledger tables, balance kept equal to the sum of completed amounts.
    await t.ctx.database.rows(sql`insert into transactions (company_id, operation_id, account_id, currency, amount, status, description, completed_at)
      select ${s.c.id}, ${op.id}, ${s.acc.ARS}, 'ARS', ((g % 7) - 3) + 0.125, 'completed', 'lote ' || g,
             '2024-01-01T00:00:00Z'::timestamptz + ((g / 3) || ' minutes')::interval
      from generate_series(1, ${n}) g`)
    await t.ctx.database.rows(sql`update accounts set balance = (select sum(amount) from transactions where account_id = ${s.acc.ARS} and status = 'completed') where id = ${s.acc.ARS}`)

    const res = await statement(t, s.clientId, '?format=csv', { key: s.c.key })
    expect(res.status).toBe(200)
    const rows = parseCsv(res.body).slice(1).filter((r) => r[2] === 'ARS')
    expect(rows.length).toBe(n + 1)
    expect(new Set(rows.map((r) => r[3])).size).toBe(n + 1)
    let running = new Decimal(0)
    for (const r of rows) {
      running = running.plus(r[7])
      expect(r[8]).toBe(running.toFixed())
    }
    const bal = await balances(t, s.clientId, s.c.key)
    expect(Number(rows[rows.length - 1][8])).toBe(bal[s.acc.ARS])
    const json = await statement(t, s.clientId, '', { key: s.c.key })
    expect(json.body.accounts[0].transactions.length).toBe(n + 1)
    expect(json.body.accounts[0].closing_balance).toBe(bal[s.acc.ARS])
  })
})

describe('statement bytes', () => {
  // The database writes the statement text; this rebuilds the expected bytes from the rows the way the server wrote
  // them row by row before (decimal.js sums, JSON.stringify, csv.ts quoting), over several batches. Money is every
  // digit of the exact value (a raw JSON number, which JSON.stringify writes verbatim), never a double's rounding.
  const D = Decimal.clone({ precision: 40 })
  const exact = (d: InstanceType<typeof D>) => (JSON as any).rawJSON(d.toFixed())
  /** Equal texts; on a difference, shows where it starts rather than two megabytes. */
  const sameText = (got: string, want: string) => {
    let i = 0
    while (i < got.length && got[i] === want[i]) i++
    expect(got.slice(Math.max(0, i - 80), i + 80)).toBe(want.slice(Math.max(0, i - 80), i + 80))
    expect(got.length).toBe(want.length)
  }
  const csvCell = (v: string) => {
    const safe = /^[=+\-@\t\r]/.test(v) ? `'${v}` : v
    return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe
  }

  test('JSON and CSV of a 2,600-row statement equal the expected bytes; the ETag is the digest of those bytes', async () => {
    const t = await testApp()
    const s = await setup(t)
    await t.request('PATCH', `/api/clients/${s.clientId}`, { key: s.c.key, body: { name: 'Juan "Tito", =1+1 \u0007 ñ' } })
    const op = await completed(t, s, [{ account: s.acc.USD, amount: '0.000001' }, { account: s.caja.USD, amount: '-0.000001' }], {
      completedAt: '2023-12-31T12:00:00.123456Z',
      description: 'operación "base", con coma',
    })
    const descriptions = ['', 'plain', 'comma, inside', 'quote " inside', 'line\nbreak\r\nCRLF', '=SUM(A1)', '+1', '-2', '@x', '\ttab', 'ctl \u0001\u001f\u007f', 'ñandú € 😀', '\\ back / slash', ' lead']
    // Amounts of up to 22 digits push the running balance past 15 significant digits, past 1e21 and back, and
    // completion instants repeat so the keyset order falls back on the id.
    const amounts = ['0.5', '-0.25', '1234.567891', '-0.000001', '98765432109876.543210', '400000000000000000000', '400000000000000000000', '400000000000000000000', '-1199999999999999999999.999999', '7', '0.1', '-1000000']
    const n = 2600
    await t.ctx.database.rows(sql`insert into transactions (company_id, operation_id, account_id, currency, amount, status, description, completed_at)
      select ${s.c.id}, ${op.id}, ${s.acc.ARS}, 'ARS', (${JSON.stringify(amounts)}::jsonb ->> (g % ${amounts.length}))::numeric, 'completed',
             ${JSON.stringify(descriptions)}::jsonb ->> (g % ${descriptions.length}),
             '2024-01-01T00:00:00Z'::timestamptz + ((g / 3) || ' seconds')::interval + ((g % 7) || ' microseconds')::interval
      from generate_series(1, ${n}) g`)
    await t.ctx.database.rows(sql`insert into transactions (company_id, operation_id, account_id, currency, amount, status, description, completed_at)
      values (${s.c.id}, ${op.id}, ${s.acc.ARS}, 'ARS', 5, 'pending', 'not completed', null)`)
    await t.ctx.database.rows(sql`update accounts a set balance = coalesce((select sum(amount) from transactions t where t.account_id = a.id and t.status = 'completed'), 0)
      where a.id in (${s.acc.ARS}, ${s.acc.USD})`)

    async function expected(from: string | null) {
      const [client] = await t.ctx.database.rows<{ name: string }>(sql`select name from clients where id = ${s.clientId}`)
      const accounts = await t.ctx.database.rows<{ id: number; name: string; currency_name: string; balance: string }>(
        sql`select id, name, currency_name, balance::text as balance from accounts where client_id = ${s.clientId} order by id`,
      )
      const out = []
      const csv = ['account_id,account_name,currency,transaction_id,operation_id,completed_at,description,amount,running_balance\r\n']
      for (const a of accounts) {
        const rows = await t.ctx.database.rows<{ id: number; operation_id: number; ms: string; description: string; amount: string; before: boolean }>(
          sql`select t.id, t.operation_id, floor(extract(epoch from t.completed_at) * 1000)::text as ms, t.amount::text as amount,
              case when t.description <> '' then t.description else o.description end as description,
              ${from}::timestamptz is not null and t.completed_at < ${from}::timestamptz as before
            from transactions t join operations o on o.id = t.operation_id
            where t.account_id = ${a.id} and t.status = 'completed' order by t.completed_at, t.id`,
        )
        let running = new D(0)
        for (const r of rows.filter((r) => r.before)) running = running.plus(r.amount)
        const opening = running
        const transactions = []
        for (const r of rows.filter((r) => !r.before)) {
          running = running.plus(r.amount)
          const completedAt = new Date(Number(r.ms)).toISOString()
          transactions.push({ id: Number(r.id), operation_id: Number(r.operation_id), completed_at: completedAt, description: r.description, amount: exact(new D(r.amount)), running_balance: exact(running) })
          csv.push([String(a.id), csvCell(a.name), csvCell(a.currency_name), String(r.id), String(r.operation_id), completedAt, csvCell(r.description), new D(r.amount).toFixed(), running.toFixed()].join(',') + '\r\n')
        }
        out.push({ id: Number(a.id), name: a.name, currency_name: a.currency_name, balance: exact(new D(a.balance)), opening_balance: exact(opening), closing_balance: exact(running), transactions })
      }
      const json = JSON.stringify({ client: { id: s.clientId, name: client.name, type: 1 }, timezone: 'America/Argentina/Buenos_Aires', from, until: null, accounts: out })
      return { json, csv: csv.join('') }
    }

    const get = (query: string, headers: Record<string, string> = {}) =>
      t.app.handle(new Request(`http://fos.test/api/external/clients/${s.clientId}/statement${query}`, { headers: { 'x-api-key': s.c.key, ...headers } }))
    const want = await expected(null)
    // Past 1e21 and past 15 significant digits, where a double would print an exponent or round.
    expect(want.json).toContain('"running_balance":1200021432098552112698.458916')
    const json = await get('')
    expect(json.status).toBe(200)
    expect(json.headers.get('content-type')).toBe('application/json; charset=utf-8')
    const text = await json.text()
    sameText(text, want.json)
    const tag = json.headers.get('etag')
    expect(tag).toBe(`"${new Bun.CryptoHasher('sha1').update(text).digest('base64url')}"`)
    const csv = await get('?format=csv')
    sameText(await csv.text(), want.csv)

    const from = '2024-01-01T00:05:00.000Z'
    const since = await expected(from)
    sameText(await (await get(`?from=${from}`)).text(), since.json)
    sameText(await (await get(`?format=csv&from=${from}`)).text(), since.csv)

    const same = await get('', { 'if-none-match': tag! })
    expect(same.status).toBe(304)
    expect(await same.text()).toBe('')
    await completed(t, s, [{ account: s.acc.ARS, amount: 1 }, { account: s.caja.ARS, amount: -1 }])
    const changed = await get('', { 'if-none-match': tag! })
    expect(changed.status).toBe(200)
    expect(changed.headers.get('etag')).not.toBe(tag)
    sameText(await changed.text(), (await expected(null)).json)
  }, 60_000)
})

describe('export timeout', () => {
  postgresTest('a slow export is cut by EXPORT_STATEMENT_TIMEOUT_MS, set per transaction, and answers 503 with Retry-After', async () => {
    const t = await buildTestApp({ exports: { ...(await testApp()).ctx.config.exports, statementTimeoutMs: 500 } })
    const s = await setup(t)
    await completed(t, s, [{ account: s.acc.ARS, amount: 10 }, { account: s.caja.ARS, amount: -10 }])
    const g = await grant(t, s)
    expect((await statement(t, s.clientId, '', { bearer: g.token })).status).toBe(200)

    // Another session holds the client table: every export statement waits for it until its timeout.
    const other = postgres(process.env.TEST_DATABASE_URL!, { max: 1, onnotice: () => {} })
    try {
      const holding = other.begin(async (tx) => {
        await tx`lock table clients in access exclusive mode`
        await Bun.sleep(4000)
      })
      await Bun.sleep(200)
      for (const query of ['', '?format=csv']) {
        const started = performance.now()
        const cut = await statement(t, s.clientId, query, { bearer: g.token })
        const ms = performance.now() - started
        expect({ query, status: cut.status, code: cut.body.code }).toEqual({ query, status: 503, code: 'SERVICE_UNAVAILABLE' })
        expect(cut.headers.get('retry-after')).toBe('1')
        expect(ms).toBeGreaterThanOrEqual(450)
        expect(ms).toBeLessThan(3000)
      }
      await holding
    } finally {
      await other.end({ timeout: 1 })
    }
    // The bound ended with its transaction: ordinary requests, on the other pool, never carried it.
    expect((await statement(t, s.clientId, '', { bearer: g.token })).status).toBe(200)
  })
})

describe('statements read from DATABASE_READ_URL', () => {
  postgresTest('say as of when: as_of in the JSON and the As-Of header on both; from the primary they say nothing', async () => {
    const url = process.env.TEST_DATABASE_URL!
    // The suite's database as the read URL: a primary, so as_of is the read's own time.
    const t = await buildTestApp({ databaseReadUrl: url })
    const c = await t.newCompany()
    const client = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Réplica', type: 1, accounts: [{ currency_name: 'ARS' }] } })
    const before = Date.now()
    const json = await statement(t, client.body.id, '', { key: c.key })
    expect(json.status).toBe(200)
    expect(Date.parse(json.body.as_of)).toBeGreaterThanOrEqual(before - 1000)
    expect(json.headers.get('as-of')).toBe(json.body.as_of)
    const csv = await statement(t, client.body.id, '?format=csv', { key: c.key })
    expect(csv.status).toBe(200)
    expect(Date.parse(csv.headers.get('as-of')!)).toBeGreaterThanOrEqual(before - 1000)

    const primary = await testApp()
    const p = await primary.newCompany()
    const other = await primary.request('POST', '/api/clients', { key: p.key, body: { name: 'Primaria', type: 1 } })
    const plain = await statement(primary, other.body.id, '', { key: p.key })
    expect(plain.status).toBe(200)
    expect('as_of' in plain.body).toBe(false)
    expect(plain.headers.get('as-of')).toBeNull()
  })
})
