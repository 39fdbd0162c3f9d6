/**
 * Volume fuzzing of every write route of /openapi.json: FUZZ_VOLUME (default 10,000) seeded requests, a few at a
 * time, mixing schema-shaped bodies with broken values, random JSON, malformed bytes, JSON nested past the depth
 * limit and bodies that trickle in or stall past the body deadline. Properties: never a 5xx, every 4xx is
 * `{ error, code }`, a stalled body is 408. The seed is printed; FUZZ_SEED replays a run exactly.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { buildTestApp, type TestApp } from './helpers'

const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000_007)
const VOLUME = Number(process.env.FUZZ_VOLUME ?? 10_000)
const PARALLEL = 16
/** The body deadline of this app: short, so stalled bodies cost little. */
const BODY_TIMEOUT_MS = 300

const SKIP = [/\/events$/, /^\/api\/mcp$/, /^\/docs/, /^\/openapi\.json$/, /^\/kiosk/]
const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

type Op = { method: string; path: string; schema?: any }

function writeRoutes(doc: any): Op[] {
  const ops: Op[] = []
  for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
    if (SKIP.some((r) => r.test(path))) continue
    for (const [method, op] of Object.entries<any>(item))
      if (WRITES.has(method.toUpperCase())) ops.push({ method: method.toUpperCase(), path, schema: op.requestBody?.content?.['application/json']?.schema })
  }
  return ops
}

const wrong = fc.oneof(
  fc.constantFrom('', '\u0000', '\ud800', "'; drop table clients; --", '1e309', 'NaN', '-0', '9'.repeat(30), '5e21', 'x'.repeat(3000)),
  fc.constantFrom(-1, 0, 1.5, 2 ** 31, 2 ** 53 + 1, 5e21, 1e22, -1e308, true, false, null),
  fc.array(fc.oneof(fc.integer(), fc.string({ maxLength: 4 })), { maxLength: 4 }),
  fc.jsonValue({ maxDepth: 3 }),
)

function shaped(schema: any) {
  const props = Object.keys(schema?.properties ?? {})
  if (props.length === 0) return fc.jsonValue({ maxDepth: 3 })
  return fc.dictionary(fc.constantFrom(...props, '__extra__'), wrong, { maxKeys: props.length + 1 })
}

const deep = (levels: number, inside: string) => `{"${inside}":${'['.repeat(levels)}${']'.repeat(levels)}}`

function request(op: Op) {
  return fc.record({
    op: fc.constant(op),
    id: fc.constantFrom('1', '2', '-1', '0', 'abc', '2147483648', '1e3'),
    body: fc.oneof(
      { weight: 6, arbitrary: shaped(op.schema).map((v) => ({ kind: 'shaped' as const, text: JSON.stringify(v) })) },
      { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => ({ kind: 'random' as const, text: JSON.stringify(v) ?? 'null' })) },
      {
        weight: 1,
        arbitrary: fc.constantFrom('{"a": ', '[', '{"x":1}}', 'nul', '"\\ud800"', '{"a":"\\u0000"}', '').map((text) => ({ kind: 'malformed' as const, text })),
      },
      {
        weight: 1,
        arbitrary: fc
          .record({ levels: fc.oneof(fc.integer({ min: 65, max: 200 }), fc.constant(100_000)), inside: fc.constantFrom('transactions', 'name', 'rates', 'x') })
          .map(({ levels, inside }) => ({ kind: 'deep' as const, text: deep(levels, inside) })),
      },
      { weight: 1, arbitrary: shaped(op.schema).map((v) => ({ kind: 'trickled' as const, text: JSON.stringify(v) })) },
      { weight: 1, arbitrary: fc.constant({ kind: 'stalled' as const, text: '{"name":' }) },
    ),
  })
}

/** Chunks a few bytes apart (`stall`: the last chunk never comes, so the body deadline has to end it). */
function slowBody(text: string, stall: boolean) {
  const bytes = new TextEncoder().encode(text)
  const size = Math.max(1, Math.ceil(bytes.length / 4))
  let at = 0
  return new ReadableStream<Uint8Array>({
    async pull(c) {
      if (at >= bytes.length) {
        if (stall) return new Promise<void>(() => {})
        return c.close()
      }
      await Bun.sleep(2)
      c.enqueue(bytes.slice(at, (at += size)))
    },
  })
}

async function send(t: TestApp, key: string, input: { op: Op; id: string; body: { kind: string; text: string } }) {
  const path = input.op.path.replace(/\{[^}]+\}/g, input.id)
  const { kind, text } = input.body
  const slow = kind === 'trickled' || kind === 'stalled'
  const body = slow ? slowBody(text, kind === 'stalled') : text
  const res = await t.app.handle(
    new Request(`http://fos.test${path}`, {
      method: input.op.method,
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit),
  )
  const raw = await res.text()
  return { where: `${input.op.method} ${path} (${kind})`, status: res.status, raw, kind }
}

describe('volume fuzzing of every write route', () => {
  test(`${VOLUME} seeded requests, deep nesting and slow bodies included: never a 5xx (seed ${SEED})`, async () => {
    console.log(`[fuzz-volume] seed ${SEED} (replay with FUZZ_SEED=${SEED})`)
    const t = await buildTestApp({ bodyTimeoutMs: BODY_TIMEOUT_MS })
    const c = await t.newCompany({ mesas: true, ventanilla: true })
    const ops = writeRoutes((await t.request('GET', '/openapi.json')).body)
    expect(ops.length).toBeGreaterThan(30)
    const inputs = fc.sample(fc.oneof(...ops.map(request)), { seed: SEED, numRuns: VOLUME })
    const failures: string[] = []
    const kinds = new Map<string, number>()
    let next = 0
    const started = performance.now()
    await Promise.all(
      Array.from({ length: PARALLEL }, async () => {
        while (next < inputs.length) {
          const r = await send(t, c.key, inputs[next++])
          kinds.set(r.kind, (kinds.get(r.kind) ?? 0) + 1)
          if (r.status >= 500) failures.push(`${r.where} → ${r.status} ${r.raw.slice(0, 200)}`)
          else if (r.status >= 400) {
            let body: any
            try {
              body = JSON.parse(r.raw)
            } catch {}
            if (typeof body?.error !== 'string' || typeof body?.code !== 'string') failures.push(`${r.where} → ${r.status} not { error, code }`)
          }
          if (r.kind === 'stalled' && r.status !== 408 && r.status !== 401 && r.status !== 403 && r.status !== 404 && r.status !== 400)
            failures.push(`${r.where} → ${r.status} for a stalled body`)
        }
      }),
    )
    const seconds = (performance.now() - started) / 1000
    console.log(`[fuzz-volume] ${inputs.length} requests over ${ops.length} write routes in ${seconds.toFixed(1)} s (seed ${SEED}): ${JSON.stringify(Object.fromEntries(kinds))}`)
    expect(failures.slice(0, 20)).toEqual([])
    expect(inputs.length).toBe(VOLUME)
  }, 300_000)
})
