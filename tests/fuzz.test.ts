/**
 * Bad-input fuzzing over every route of /openapi.json, seeded and replayable (FUZZ_SEED, FUZZ_RUNS).
 * Properties: no 5xx ever; every 4xx is `{ error, code }`; a rejected request writes nothing
 * (the company's audit trail, which the database writes on every change, does not grow).
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { sql } from 'drizzle-orm'
import { testApp, type TestApp } from './helpers'

const SEED = Number(process.env.FUZZ_SEED ?? 20261121)
const RUNS = Number(process.env.FUZZ_RUNS ?? 25)

/** Long-lived streams and transports that are exercised by their own tests. */
const SKIP = [/\/events$/, /^\/api\/mcp$/, /^\/docs/, /^\/openapi\.json$/, /^\/kiosk/]

const nasty = fc.constantFrom(
  "'; drop table clients; --",
  '{"$ne":null}',
  '\u0000',
  '\ud800',
  '../../etc/passwd',
  '<script>alert(1)</script>',
  '%00',
  '1e309',
  '-0',
  'NaN',
  '9'.repeat(400),
  'ä'.repeat(5000),
)
const wrongValue = fc.oneof(
  nasty,
  fc.constantFrom(-1, 0, 1.5, 2 ** 31, 2 ** 53 + 1, -1e308, 1e308, true, false, null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.constant('x'.repeat(100_000)),
  fc.constant(Array.from({ length: 20_000 }, (_, i) => i)),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
)
const badId = fc.constantFrom('-1', '0', '1.5', '99999999999', 'abc', '%2e%2e', '1%3Bdrop', '0x10', '1e3', '2147483648', '%20')

type Op = { method: string; path: string; schema?: any; contentTypes: string[] }

function operations(doc: any): Op[] {
  const ops: Op[] = []
  for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
    if (SKIP.some((r) => r.test(path))) continue
    for (const [method, op] of Object.entries<any>(item)) {
      const content = op.requestBody?.content ?? {}
      ops.push({ method: method.toUpperCase(), path, schema: content['application/json']?.schema, contentTypes: Object.keys(content) })
    }
  }
  return ops
}

/** A body that keeps the schema's field names but breaks their values, drops required ones or adds unknown ones. */
function mutatedBody(schema: any) {
  const props = Object.keys(schema?.properties ?? {})
  if (props.length === 0) return fc.jsonValue({ maxDepth: 3 })
  return fc
    .record({
      keep: fc.subarray(props),
      broken: fc.subarray(props, { minLength: 1 }),
      values: fc.array(wrongValue, { minLength: props.length, maxLength: props.length }),
      extra: fc.boolean(),
    })
    .map(({ keep, broken, values, extra }) => {
      const body: Record<string, unknown> = {}
      for (const k of keep) body[k] = 'placeholder'
      broken.forEach((k, i) => (body[k] = values[i]))
      if (extra) body.__proto_extra__ = { injected: true }
      return body
    })
}

const rawBody = fc.oneof(
  fc.constant({ type: 'application/json', body: '{"unterminated": ' }),
  fc.constant({ type: 'application/json', body: new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]) }),
  fc.constant({ type: 'text/plain', body: '{"name":"x"}' }),
  fc.constant({ type: 'application/x-www-form-urlencoded', body: 'name=x&type=0' }),
  fc.constant({ type: 'multipart/form-data; boundary=zzz', body: '--zzz\r\nContent-Disposition: form-data; name="file"\r\n\r\nabc' }),
  fc.constant({ type: 'application/json', body: '[' + '['.repeat(5000) }),
  fc.constant({ type: 'application/json', body: 'null' }),
)

async function auditCount(t: TestApp, companyId: number): Promise<number> {
  const [row] = await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from audit_logs where company_id = ${companyId}`)
  return row.n
}

describe('fuzzing every documented route', () => {
  test(`bad requests never get a 5xx, always { error, code }, never write (seed ${SEED})`, async () => {
    const t = await testApp()
    const c = await t.newCompany({ mesas: true, ventanilla: true })
    const doc = (await t.request('GET', '/openapi.json')).body
    const ops = operations(doc)
    expect(ops.length).toBeGreaterThan(10)
    let sent = 0
    const failures: string[] = []

    const queryKeys = fc.constantFrom('page', 'pageSize', 'type', 'from', 'to', 'status', 'table', 'action', 'operation_id', 'format', 'description')
    const arbitrary = fc.constantFrom(...ops).chain((op) =>
      fc.record({
        op: fc.constant(op),
        id: fc.oneof(badId, fc.constant('1'), fc.constant(String(c.id))),
        kind: fc.constantFrom('mutated', 'raw', 'random'),
        query: fc.dictionary(queryKeys, fc.oneof(nasty, fc.string({ maxLength: 8 })), { maxKeys: 3 }),
        mutated: mutatedBody(op.schema),
        random: fc.jsonValue({ maxDepth: 3 }),
        raw: rawBody,
      }),
    )

    await fc.assert(
      fc.asyncProperty(arbitrary, async (input) => {
        const path = input.op.path.replace(/\{[^}]+\}/g, input.id)
        const qs = new URLSearchParams(input.query as Record<string, string>).toString()
        const url = qs ? `${path}?${qs}` : path
        const before = await auditCount(t, c.id)
        let res
        const wantsBody = !['GET', 'DELETE', 'HEAD'].includes(input.op.method)
        if (wantsBody && input.kind === 'raw') {
          res = await t.request(input.op.method, url, { key: c.key, raw: input.raw.body as BodyInit, headers: { 'content-type': input.raw.type } })
        } else if (wantsBody) {
          res = await t.request(input.op.method, url, { key: c.key, body: input.kind === 'mutated' ? input.mutated : input.random })
        } else {
          res = await t.request(input.op.method, url, { key: c.key })
        }
        sent++
        const where = `${input.op.method} ${url} (${input.kind}) → ${res.status}`
        if (res.status >= 500) failures.push(`${where} ${JSON.stringify(res.body).slice(0, 200)}`)
        if (res.status >= 400) {
          if (typeof res.body !== 'object' || typeof res.body?.error !== 'string' || typeof res.body?.code !== 'string')
            failures.push(`${where} body not { error, code }`)
          if ((await auditCount(t, c.id)) !== before) failures.push(`${where} wrote while rejecting`)
        }
        return true
      }),
      { seed: SEED, numRuns: RUNS * ops.length },
    )
    console.log(`[fuzz] ${sent} requests over ${ops.length} operations (seed ${SEED})`)
    expect(failures).toEqual([])
  }, 600_000)
})
