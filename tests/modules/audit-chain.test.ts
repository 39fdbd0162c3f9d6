/**
 * The tamper-evident audit chain (contract §14): sealing after commit in commit order, verify, the guard that keeps
 * every service role from rewriting rows, tampering as the database superuser, and signed daily digests.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { rmSync, statSync } from 'node:fs'
import { createHash, createPublicKey, generateKeyPairSync, verify as verifySignature } from 'node:crypto'
import { sql } from 'drizzle-orm'
import { openDatabase, type Database } from '../../db/client'
import { GENESIS, makeDigests, sealAll } from '../../server/modules/audit/chain'
import { startAuditChain } from '../../server/modules/audit/worker'
import { ConfigError, loadConfig, type Config } from '../../server/config'
import { createApp } from '../../server/app'
import { postgresTest, testApp, type Company, type TestApp } from '../helpers'

beforeAll(async () => {
  await testApp()
}, 120_000)

interface ChainRow {
  id: number
  seq: number
  prev_hash: string
  hash: string
  canonical: string
}

const chainOf = (db: Database, companyId: number) =>
  db
    .rows<ChainRow>(sql`select a.id::int, s.seq::int, s.prev_hash, s.hash, audit_canonical(a) as canonical
      from audit_seals s join audit_logs a on a.id = s.audit_id where s.company_id = ${companyId} order by s.seq`)
    .then((rows) => rows.map((r) => ({ ...r, id: Number(r.id), seq: Number(r.seq) })))

const unsealed = async (db: Database, companyId: number) =>
  (await db.rows<{ n: number }>(sql`select count(*)::int as n from audit_logs a
    where company_id = ${companyId} and not exists (select 1 from audit_seals s where s.audit_id = a.id)`))[0].n

/** A few audited writes through the API: clients, accounts, an operation and its approval. */
async function activity(t: TestApp, c: Company, clients = 3) {
  const post = async (path: string, body?: unknown, status = 201) => {
    const r = await t.request('POST', path, { key: c.key, body })
    if (r.status !== status) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`)
    return r.body
  }
  const type = await post('/api/operation-types', { name: 'Cambio', kind: 'exchange' })
  const caja = await post('/api/clients', { name: 'Caja', type: 0, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] })
  for (let i = 0; i < clients; i++) await post('/api/clients', { name: `Cliente ${i}`, type: 1 })
  const op = await post('/api/operations', {
    operation_type_id: type.id,
    transactions: [
      { account_id: caja.accounts[0].id, amount: '-1180000.5' },
      { account_id: caja.accounts[1].id, amount: '1000.000001' },
    ],
  })
  await post(`/api/operations/${op.id}/approve`, undefined, 200)
}

const verify = (t: TestApp, key: string, query = '') => t.request('GET', `/api/audit-logs/verify${query}`, { key })

/** A chain of `n`+ sealed rows for a fresh company. */
async function sealedCompany(t: TestApp, clients = 6) {
  const c = await t.newCompany()
  await activity(t, c, clients)
  await sealAll(t.ctx.db)
  return c
}

/**
 * Runs `fn` as the database superuser with every trigger off, the way an administrator would rewrite history
 * behind the service's back (the test database role is the cluster superuser).
 */
const asSuperuser = (t: TestApp, fn: (q: (query: ReturnType<typeof sql>) => Promise<unknown>) => Promise<void>) =>
  t.ctx.db.transaction(async (tx) => {
    await tx.execute(sql`set local session_replication_role = replica`)
    await fn((query) => tx.execute(query))
  })

describe('audit chain', () => {
  test('sealed rows form a gapless chain that the documented recipe recomputes; entries carry seq and hash', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    await activity(t, c)
    const before = await t.request('GET', '/api/audit-logs?pageSize=100', { key: c.key })
    expect(before.body.data.length).toBeGreaterThan(5)
    for (const e of before.body.data) expect({ seq: e.seq, hash: e.hash }).toEqual({ seq: null, hash: null })

    expect(await sealAll(t.ctx.db)).toBeGreaterThanOrEqual(before.body.data.length)
    const chain = await chainOf(t.ctx.database, c.id)
    expect(chain.map((r) => r.seq)).toEqual(chain.map((_, i) => i + 1))
    // Sealed in one pass with nothing in flight: id order is commit order here.
    expect(chain.map((r) => r.id)).toEqual([...chain.map((r) => r.id)].sort((a, b) => a - b))
    let prev = GENESIS
    for (const r of chain) {
      expect(r.prev_hash).toBe(prev)
      expect(r.hash).toBe(createHash('sha256').update(`${r.prev_hash}${r.canonical}`, 'utf8').digest('hex'))
      prev = r.hash
    }
    // The same recipe with Postgres's own SHA-256, as a customer holding a database export would run it.
    const [sqlCheck] = await t.ctx.database.rows<{ bad: number }>(sql`select count(*)::int as bad from audit_seals s join audit_logs a on a.id = s.audit_id
      where s.company_id = ${c.id} and s.hash <> encode(sha256(convert_to(s.prev_hash || audit_canonical(a), 'UTF8')), 'hex')`)
    expect(sqlCheck.bad).toBe(0)

    // The canonical JSON is the documented object, keys shorter first then bytewise, jsonb separators.
    const client = chain.find((r) => JSON.parse(r.canonical).entity === 'clients')!
    const parsed = JSON.parse(client.canonical)
    expect(Object.keys(parsed)).toEqual(['id', 'after', 'action', 'before', 'entity', 'channel', 'entity_id', 'timestamp', 'raw_action', 'actor_email', 'channel_detail'])
    expect(parsed.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/)
    const jsonbText = (v: unknown): string => {
      if (v === null || typeof v !== 'object') return JSON.stringify(v)
      if (Array.isArray(v)) return `[${v.map(jsonbText).join(', ')}]`
      const keys = Object.keys(v).sort((a, b) => Buffer.byteLength(a) - Buffer.byteLength(b) || Buffer.compare(Buffer.from(a), Buffer.from(b)))
      return `{${keys.map((k) => `${JSON.stringify(k)}: ${jsonbText((v as Record<string, unknown>)[k])}`).join(', ')}}`
    }
    expect(jsonbText(parsed)).toBe(client.canonical)
    // Amounts keep their stored digits, beyond what a double holds.
    const tx = chain.find((r) => JSON.parse(r.canonical).entity === 'transactions')!
    expect(tx.canonical).toMatch(/"amount": (-1180000\.500000|1000\.000001)/)

    const after = await t.request('GET', '/api/audit-logs?pageSize=100', { key: c.key })
    const bySeq = new Map(chain.map((r) => [r.id, r]))
    for (const e of after.body.data) expect({ seq: e.seq, hash: e.hash }).toEqual({ seq: bySeq.get(e.id)!.seq, hash: bySeq.get(e.id)!.hash })

    const head = chain[chain.length - 1]
    const all = await verify(t, c.key)
    expect(all.status).toBe(200)
    expect(all.body).toEqual({ as_of: expect.any(String), verified: true, rows: chain.length, first_seq: 1, last_seq: head.seq, head: { seq: head.seq, hash: head.hash }, broken: null })
    const part = await verify(t, c.key, '?from_seq=2&to_seq=4')
    expect(part.body).toEqual({ as_of: expect.any(String), verified: true, rows: 3, first_seq: 2, last_seq: 4, head: { seq: 4, hash: chain[3].hash }, broken: null })
    const past = await verify(t, c.key, `?from_seq=${head.seq - 1}&to_seq=${head.seq + 50}`)
    expect(past.body).toMatchObject({ verified: true, rows: 2, first_seq: head.seq - 1, last_seq: head.seq })
    const beyond = await verify(t, c.key, `?from_seq=${head.seq + 1}`)
    expect(beyond.body).toEqual({ as_of: expect.any(String), verified: true, rows: 0, first_seq: null, last_seq: null, head: { seq: head.seq, hash: head.hash }, broken: null })
    expect((await verify(t, c.key, '?from_seq=5&to_seq=4')).body.code).toBe('VALIDATION_ERROR')
    expect((await verify(t, c.key, '?from_seq=0')).status).toBe(400)
    expect((await verify(t, c.key, '?to_seq=abc')).status).toBe(400)

    const empty = await t.newCompany()
    await sealAll(t.ctx.db)
    // The new company's own creation rows are its chain; a company with none verifies as an empty chain.
    const fresh = await verify(t, empty.key)
    expect(fresh.body.verified).toBe(true)
    expect(fresh.body.rows).toBe(fresh.body.head.seq)
  })

  test('the canonical text is exactly the jsonb text of the documented object, whatever the snapshots hold', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const odd = [
      `{"name": "Pérez \\"el Tano\\" \\\\ \\u0001 \\t ✓ 😀", "nested": {"a": [1, 2.50, -0.000001, 1e3, true, null, {}], "": ""}}`,
      '{"amount": 123456789012345678901234567890.123456789, "note": "</script>", "list": [[], [[]], "x"]}',
      '"a bare string"',
      '[]',
    ]
    for (const [i, snapshot] of odd.entries())
      await t.ctx.database.rows(sql`insert into audit_logs (company_id, entity, entity_id, action, raw_action, actor_email, channel, channel_detail, before, after, changes)
        values (${c.id}, 'clients', ${i + 1}, 'update', 'UPDATE', ${i % 2 ? null : 'Añá "q" <x@y>'}, ${i % 2 ? 'twin' : null},
                ${i % 2 ? sql`'{"requested_by": "bot \\"1\\""}'::jsonb` : sql`null`}, ${i === 3 ? null : sql`${snapshot}::jsonb`}, ${snapshot}::jsonb, '[]')`)
    const rows = await t.ctx.database.rows<{ ours: string; documented: string }>(sql`select audit_canonical(a) as ours, jsonb_build_object(
        'id', a.id, 'entity', a.entity, 'entity_id', a.entity_id, 'action', a.action, 'raw_action', a.raw_action,
        'actor_email', a.actor_email, 'channel', a.channel, 'channel_detail', a.channel_detail,
        'timestamp', to_char(a.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), 'before', a.before, 'after', a.after)::text as documented
      from audit_logs a where company_id = ${c.id}`)
    expect(rows.length).toBeGreaterThan(odd.length)
    for (const r of rows) expect(r.ours).toBe(r.documented)
  })

  test('verify, digests and the key: audit.view, and no client-scoped employee on company-wide routes', async () => {
    const t = await testApp()
    const c = await sealedCompany(t, 1)
    const [caja] = (await t.request('GET', '/api/clients', { key: c.key })).body.data
    const none = await c.employee(['clients.view'])
    const viewer = await c.employee(['audit.view'])
    const scoped = await c.employee(['audit.view'], [caja.id])
    for (const path of ['/api/audit-logs/verify', '/api/audit-logs/digests', '/api/audit-logs/digest-key']) {
      expect((await t.request('GET', path, { key: none.key })).status).toBe(403)
      expect((await t.request('GET', path, { key: viewer.key })).status).toBe(200)
      expect((await t.request('GET', path)).status).toBe(401)
    }
    expect((await t.request('GET', '/api/audit-logs/verify', { key: scoped.key })).body.code).toBe('FORBIDDEN')
    expect((await t.request('GET', '/api/audit-logs/digests', { key: scoped.key })).status).toBe(403)
    expect((await t.request('GET', '/api/audit-logs', { key: scoped.key })).status).toBe(200)
  })

  test('no role the service runs as can update, delete or truncate audit rows or their places', async () => {
    const t = await testApp()
    const c = await sealedCompany(t, 1)
    const db = t.ctx.db
    const [row] = await chainOf(t.ctx.database, c.id)
    const refused = async (query: ReturnType<typeof sql> | ReturnType<typeof sql>[], pattern: RegExp) => {
      let error: unknown
      try {
        await db.transaction(async (tx) => {
          for (const q of Array.isArray(query) ? query : [query]) await tx.execute(q)
        })
      } catch (e) {
        error = e
      }
      expect(String((error as { cause?: unknown })?.cause ?? error)).toMatch(pattern)
    }
    const appendOnly = /append-only/
    // The connecting role (the tables' owner; here even a superuser): the guard triggers refuse.
    await refused(sql`update audit_logs set after = '{"name":"X"}' where id = ${row.id}`, appendOnly)
    await refused(sql`delete from audit_logs where id = ${row.id}`, appendOnly)
    await refused(sql`truncate audit_logs`, appendOnly)
    await refused(sql`update audit_seals set hash = ${GENESIS} where audit_id = ${row.id}`, appendOnly)
    await refused(sql`delete from audit_seals where audit_id = ${row.id}`, appendOnly)
    await refused(sql`truncate audit_seals`, appendOnly)
    // A row written now waits for its place; nothing about it can change while it waits either.
    await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Tarde', type: 1 } })
    const [open] = await t.ctx.database.rows<{ id: number }>(sql`select audit_id::int as id from audit_pending where company_id = ${c.id}`)
    await refused(sql`update audit_logs set actor_email = 'x@y' where id = ${open.id}`, appendOnly)
    expect(await makeDigests(db, new Date(Date.now() + 86_400_000))).toBeGreaterThan(0)
    await refused(sql`update audit_digests set hash = ${GENESIS} where company_id = ${c.id}`, appendOnly)
    await refused(sql`delete from audit_digests where company_id = ${c.id}`, appendOnly)
    await refused(sql`truncate audit_digests`, appendOnly)
    expect(await unsealed(t.ctx.database, c.id)).toBe(1)

    // The tenant role every request runs as has no UPDATE or DELETE grant at all, and cannot write places or take a
    // row out of the queue.
    const asTenant = (query: ReturnType<typeof sql>) => [
      sql`select set_config('app.company_id', ${String(c.id)}, true), set_config('role', 'fos_app', true)`,
      query,
    ]
    await refused(asTenant(sql`update audit_logs set after = '{}' where id = ${row.id}`), /permission denied/)
    await refused(asTenant(sql`delete from audit_logs where id = ${row.id}`), /permission denied/)
    await refused(asTenant(sql`truncate audit_logs`), /permission denied/)
    await refused(asTenant(sql`insert into audit_digests (company_id, date, seq, hash) values (${c.id}, '2026-01-01', 1, ${GENESIS})`), /permission denied/)
    await refused(asTenant(sql`insert into audit_seals (audit_id, company_id, seq, prev_hash, hash, sealed_at) values (${open.id}, ${c.id}, 999, ${GENESIS}, ${GENESIS}, now())`), /permission denied/)
    await refused(asTenant(sql`delete from audit_pending where company_id = ${c.id}`), /permission denied/)
    await sealAll(db)
    expect(await unsealed(t.ctx.database, c.id)).toBe(0)
    expect((await verify(t, c.key)).body.verified).toBe(true)
  })

  test('tampering as the superuser with the guard off: verify names the first broken seq and why', async () => {
    const t = await testApp()
    const db = t.ctx.database

    // A changed `after`: the row no longer gives its hash.
    const changed = await sealedCompany(t)
    const rowsA = await chainOf(db, changed.id)
    expect(rowsA.length).toBeGreaterThan(10)
    expect((await verify(t, changed.key)).body.verified).toBe(true)
    await asSuperuser(t, async (q) => {
      await q(sql`update audit_logs set after = jsonb_set(coalesce(after, '{}'), '{tampered}', 'true') where id = ${rowsA[6].id}`)
    })
    const a = await verify(t, changed.key)
    expect(a.body).toMatchObject({ verified: false, rows: rowsA.length, broken: { seq: 7, reason: 'hash_mismatch' } })
    // A range that starts after the change links to the stored hash before it and still verifies.
    expect((await verify(t, changed.key, '?from_seq=8')).body).toMatchObject({ verified: true, broken: null })
    expect((await verify(t, changed.key, '?to_seq=6')).body).toMatchObject({ verified: true, broken: null })

    // A deleted row: its place has no row. With its place deleted too, the place itself is missing.
    const deleted = await sealedCompany(t)
    const rowsB = await chainOf(db, deleted.id)
    await asSuperuser(t, async (q) => {
      await q(sql`delete from audit_logs where id = ${rowsB[4].id}`)
    })
    const b = await verify(t, deleted.key)
    expect(b.body).toMatchObject({ verified: false, rows: rowsB.length - 1, broken: { seq: 5, reason: 'gap' } })
    expect((await verify(t, deleted.key, '?to_seq=5')).body).toMatchObject({ verified: false, broken: { seq: 5, reason: 'gap' } })
    await asSuperuser(t, async (q) => {
      await q(sql`delete from audit_seals where audit_id = ${rowsB[4].id}`)
    })
    expect((await verify(t, deleted.key)).body).toMatchObject({ verified: false, rows: rowsB.length - 1, broken: { seq: 5, reason: 'gap' } })
    expect((await verify(t, deleted.key, '?to_seq=5')).body).toMatchObject({ verified: false, broken: { seq: 5, reason: 'gap' } })

    // A row moved to another company: its place no longer has it.
    const moved = await sealedCompany(t)
    const rowsM = await chainOf(db, moved.id)
    await asSuperuser(t, async (q) => {
      await q(sql`update audit_logs set company_id = ${changed.id} where id = ${rowsM[2].id}`)
    })
    expect((await verify(t, moved.key)).body).toMatchObject({ verified: false, broken: { seq: 3, reason: 'gap' } })

    // A forged row slipped in at place 5, correctly hashed onto place 4, the later rows moved up one place:
    // the old fifth row no longer links to what now precedes it.
    const forged = await sealedCompany(t)
    const rowsC = await chainOf(db, forged.id)
    await asSuperuser(t, async (q) => {
      await q(sql`update audit_seals set seq = -seq where company_id = ${forged.id} and seq >= 5`)
      await q(sql`update audit_seals set seq = 1 - seq where company_id = ${forged.id} and seq < 0`)
      await q(sql`with forged as (
          insert into audit_logs (company_id, entity, entity_id, action, raw_action, before, after, changes)
          values (${forged.id}, 'clients', 1, 'create', 'INSERT', null, '{"name":"Forjado"}', '[]') returning *)
        insert into audit_seals (audit_id, company_id, seq, prev_hash, hash, sealed_at)
        select a.id, a.company_id, 5, ${rowsC[3].hash}, encode(sha256(convert_to(${rowsC[3].hash} || audit_canonical(a::audit_logs), 'UTF8')), 'hex'), now()
          from forged a`)
    })
    const cRes = await verify(t, forged.key)
    expect(cRes.body).toMatchObject({ verified: false, rows: rowsC.length + 1, broken: { seq: 6, reason: 'prev_mismatch' } })

    // A forged row appended after the head with a made-up hash.
    const appended = await sealedCompany(t)
    const rowsD = await chainOf(db, appended.id)
    const headD = rowsD[rowsD.length - 1]
    await asSuperuser(t, async (q) => {
      await q(sql`with forged as (
          insert into audit_logs (company_id, entity, entity_id, action, raw_action, after, changes)
          values (${appended.id}, 'clients', 1, 'create', 'INSERT', '{}', '[]') returning id)
        insert into audit_seals (audit_id, company_id, seq, prev_hash, hash, sealed_at)
        select id, ${appended.id}, ${headD.seq + 1}, ${headD.hash}, ${'f'.repeat(64)}, now() from forged`)
    })
    expect((await verify(t, appended.key)).body).toMatchObject({ verified: false, broken: { seq: headD.seq + 1, reason: 'hash_mismatch' } })

    // None of this reached another company's chain.
    expect((await verify(t, (await sealedCompany(t, 1)).key)).body.verified).toBe(true)
  })

  test('daily digests: the head at the end of each company day, signed with the published Ed25519 key', async () => {
    const t = await testApp()
    const c = await t.newCompany({ timezone: 'America/Argentina/Buenos_Aires' })
    await activity(t, c, 2)
    await sealAll(t.ctx.db)
    const rows = await chainOf(t.ctx.database, c.id)
    const head = rows[rows.length - 1]
    // The first three places were sealed a day earlier (rewritten as the superuser: the guard allows no such change).
    await asSuperuser(t, async (q) => {
      await q(sql`update audit_seals set sealed_at = sealed_at - interval '1 day' where company_id = ${c.id} and seq <= 3`)
    })
    const [{ today }] = await t.ctx.database.rows<{ today: string }>(
      sql`select to_char((now() at time zone 'America/Argentina/Buenos_Aires')::date, 'YYYY-MM-DD') as today`,
    )
    const day = (offset: number) => new Date(Date.parse(`${today}T12:00:00Z`) + offset * 86_400_000).toISOString().slice(0, 10)

    expect((await t.request('GET', '/api/audit-logs/digests', { key: c.key })).body).toEqual({
      data: [],
      pagination: { page: 1, pageSize: 50, total: 0, totalPages: 0 },
    })
    // Two days later: yesterday, today and tomorrow are finished days.
    const later = new Date(Date.now() + 2 * 86_400_000)
    expect(await makeDigests(t.ctx.db, later)).toBeGreaterThanOrEqual(3)
    expect(await makeDigests(t.ctx.db, later)).toBe(0)

    const listed = await t.request('GET', '/api/audit-logs/digests', { key: c.key })
    expect(listed.status).toBe(200)
    expect(listed.body.pagination).toEqual({ page: 1, pageSize: 50, total: 3, totalPages: 1 })
    expect(listed.body.data.map((d: { date: string; seq: number }) => [d.date, d.seq])).toEqual([
      [day(1), head.seq],
      [day(0), head.seq],
      [day(-1), 3],
    ])
    expect(listed.body.data[2].hash).toBe(rows[2].hash)
    expect(listed.body.data[0].hash).toBe(head.hash)

    const key = await t.request('GET', '/api/audit-logs/digest-key', { key: c.key })
    expect(key.body.alg).toBe('Ed25519')
    const publicKey = createPublicKey(key.body.public_key)
    expect(publicKey.asymmetricKeyType).toBe('ed25519')
    for (const d of listed.body.data) {
      const message = Buffer.from(`${c.id}.${d.date}.${d.seq}.${d.hash}`)
      expect(verifySignature(null, message, publicKey, Buffer.from(d.signature, 'base64'))).toBe(true)
      const altered = Buffer.from(`${c.id}.${d.date}.${d.seq}.${'0'.repeat(64)}`)
      expect(verifySignature(null, altered, publicKey, Buffer.from(d.signature, 'base64'))).toBe(false)
    }
    // A kept digest checked against the live chain: the place still holds the digest's hash, and the chain verifies.
    const kept = listed.body.data[2]
    const upTo = await verify(t, c.key, `?to_seq=${kept.seq}`)
    expect(upTo.body).toMatchObject({ verified: true, head: { seq: kept.seq, hash: kept.hash } })

    const paged = await t.request('GET', '/api/audit-logs/digests?page=2&pageSize=2', { key: c.key })
    expect(paged.body.data.map((d: { date: string }) => d.date)).toEqual([day(-1)])
    expect((await t.request('GET', '/api/audit-logs/digests?pageSize=101', { key: c.key })).status).toBe(400)
  })

  test('the signing key: AUDIT_SIGNING_KEY (PKCS#8 Ed25519) or one generated once under DATA_DIR', async () => {
    expect(() => loadConfig({ AUDIT_SIGNING_KEY: 'not a key' })).toThrow(ConfigError)
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
    expect(() => loadConfig({ AUDIT_SIGNING_KEY: rsa })).toThrow('AUDIT_SIGNING_KEY must be an Ed25519 key')
    const { privateKey, publicKey } = generateKeyPairSync('ed25519')
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
    expect(loadConfig({ AUDIT_SIGNING_KEY: pem.replace(/\n/g, '\\n') }).auditSigningKey).toBe(pem)

    const t = await testApp()
    const c = await t.newCompany()
    const served = (config: Config) => createApp({ ...t.ctx, config }).handle(new Request('http://fos.test/api/audit-logs/digest-key', { headers: { 'x-api-key': c.key } }))
    const published = await (await served({ ...t.ctx.config, auditSigningKey: pem })).json()
    expect(published).toEqual({ alg: 'Ed25519', public_key: publicKey.export({ type: 'spki', format: 'pem' }).toString() })

    const dataDir = `/tmp/fos-test-${process.pid}-key`
    rmSync(dataDir, { recursive: true, force: true })
    const generated = await (await served({ ...t.ctx.config, auditSigningKey: '', dataDir })).json()
    const again = await (await served({ ...t.ctx.config, auditSigningKey: '', dataDir })).json()
    expect(again.public_key).toBe(generated.public_key)
    expect(generated.public_key).not.toBe(published.public_key)
    expect(statSync(`${dataDir}/audit-signing-key.pem`).mode & 0o777).toBe(0o600)
    rmSync(dataDir, { recursive: true, force: true })
  })

  test('the worker seals within 5 s of commit and stops cleanly', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const worker = startAuditChain(t.ctx)
    try {
      const r = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Ana', type: 1 } })
      const committed = Date.now()
      let entry: { seq: number | null } | undefined
      while (Date.now() - committed < 5000) {
        const page = await t.request('GET', `/api/audit-logs?table=clients`, { key: c.key })
        entry = page.body.data.find((e: { entity_id: number }) => e.entity_id === r.body.id)
        if (entry?.seq) break
        await Bun.sleep(100)
      }
      expect(entry?.seq).toBeGreaterThan(0)
    } finally {
      await worker.stop()
    }
  })

  postgresTest(
    '20 concurrent writers, some holding their transaction open, two sealing processes: every row verifies',
    async () => {
      const t = await testApp()
      const c = await t.newCompany()
      const url = process.env.TEST_DATABASE_URL!
      const writers = await openDatabase({ url, poolMax: 20 })
      const other = await openDatabase({ url, poolMax: 2 })
      // Two sealers on two pools, as two processes of the service would run them.
      const sealers = [startAuditChain(t.ctx, { intervalMs: 20 }), startAuditChain({ ...t.ctx, db: other.db, database: other }, { intervalMs: 20 })]
      try {
        const insertClient = (q: (query: ReturnType<typeof sql>) => Promise<unknown>, name: string) =>
          q(sql`insert into clients (company_id, name, type) values (${c.id}, ${name}, 1)`)

        // The pitfall made certain: this transaction's row takes an id first and commits only after a later id is sealed.
        const late = writers.db.transaction(async (tx) => {
          await insertClient((q) => tx.execute(q), 'late')
          const [{ id }] = await writers.rows<{ id: number }>(
            sql`select max(id)::int as id from audit_logs where company_id = ${c.id} and entity = 'clients'`,
            tx,
          )
          for (let i = 0; i < 200; i++) {
            const [sealedAfter] = await t.ctx.database.rows<{ n: number }>(
              sql`select count(*)::int as n from audit_seals where company_id = ${c.id} and audit_id > ${id}`,
            )
            if (sealedAfter.n > 0) return
            await Bun.sleep(25)
          }
          throw new Error('no later row was sealed while this one was open')
        })

        const until = Date.now() + 3000
        let written = 0
        const writer = async (w: number) => {
          for (let i = 0; Date.now() < until; i++) {
            await writers.db.transaction(async (tx) => {
              await insertClient((q) => tx.execute(q), `w${w}-${i}`)
              if ((w + i) % 4 === 0) await tx.execute(sql`select pg_sleep(${0.05 + Math.random() * 0.3})`)
              await tx.execute(sql`update clients set description = 'seen' where company_id = ${c.id} and name = ${`w${w}-${i}`}`)
            })
            written += 2
          }
        }
        await Promise.all([late, ...Array.from({ length: 19 }, (_, w) => writer(w))])
        expect(written).toBeGreaterThan(100)

        const deadline = Date.now() + 5000
        while ((await unsealed(t.ctx.database, c.id)) > 0 && Date.now() < deadline) await Bun.sleep(50)
        expect(await unsealed(t.ctx.database, c.id)).toBe(0)

        const chain = await chainOf(t.ctx.database, c.id)
        const [{ total }] = await t.ctx.database.rows<{ total: number }>(sql`select count(*)::int as total from audit_logs where company_id = ${c.id}`)
        expect(chain.length).toBe(total)
        expect(chain.map((r) => r.seq)).toEqual(chain.map((_, i) => i + 1))
        // Commit order differs from id order somewhere: a lower id holds a later place.
        expect(chain.some((r, i) => i > 0 && r.id < chain[i - 1].id)).toBe(true)

        const result = await verify(t, c.key)
        expect(result.body).toEqual({
          as_of: expect.any(String),
          verified: true,
          rows: total,
          first_seq: 1,
          last_seq: total,
          head: { seq: total, hash: chain[total - 1].hash },
          broken: null,
        })
      } finally {
        await Promise.all(sealers.map((s) => s.stop()))
        await writers.close()
        await other.close()
      }
    },
    60_000,
  )
})
