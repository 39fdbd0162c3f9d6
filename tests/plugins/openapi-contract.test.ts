import { describe, expect, test } from 'bun:test'
import { copyFileSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { testApp, type RecordedPair } from '../helpers'
import { violations } from './contract'

const ROOT = join(import.meta.dir, '..', '..')

/**
 * Suite files whose requests are replayed against the document: a broad sample that stays quick. Set
 * `CONTRACT_SAMPLE` to a space-separated list of test files (e.g. every file of tests/modules) for a full sweep.
 */
const SAMPLE = process.env.CONTRACT_SAMPLE?.split(/\s+/).filter(Boolean) ?? [
  'tests/modules/clients.test.ts',
  'tests/modules/operations.test.ts',
  'tests/modules/identity.test.ts',
  'tests/modules/exports.test.ts',
  'tests/modules/ventanilla-counter.test.ts',
  'tests/access/sessions.test.ts',
]

async function run(cmd: string[], env: Record<string, string> = {}, cwd = ROOT) {
  const proc = Bun.spawn(cmd, { cwd, env: { ...process.env, ...env }, stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { out, err, code }
}

async function liveDocument() {
  const t = await testApp()
  const res = await t.request('GET', '/openapi.json')
  expect(res.status).toBe(200)
  return res.body
}

describe('the OpenAPI document describes the service as it answers', () => {
  test("the suite's own requests and answers satisfy it: route, status, content type, bodies, parameters", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fos-contract-'))
    const file = join(dir, 'pairs.jsonl')
    writeFileSync(file, '')
    const replay = run([join(ROOT, 'node_modules/.bin/bun'), 'test', '--timeout', '60000', ...SAMPLE], { CONTRACT_PAIRS: file })
    const doc = await liveDocument()
    const { out, err, code } = await replay
    if (code !== 0) console.log(out, err.slice(-4000))
    const pairs = readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as RecordedPair)
    expect(pairs.length).toBeGreaterThan(300)
    expect(new Set(pairs.map((p) => p.status)).size).toBeGreaterThan(6)
    expect(violations(doc, pairs)).toEqual([])
  }, 180_000)

  test('a typed client generated from it type-checks and runs the integrator example (strict, no casts)', async () => {
    const doc = await liveDocument()
    const dir = mkdtempSync(join(tmpdir(), 'fos-client-'))
    writeFileSync(join(dir, 'openapi.json'), JSON.stringify(doc))
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
    const generated = await run(['node', join(import.meta.dir, 'openapi-typescript.mjs'), join(dir, 'openapi.json'), join(dir, 'api.d.ts')])
    if (generated.code !== 0) console.log(generated.err)
    expect(generated.code).toBe(0)
    const example = join(ROOT, 'docs/examples/integrator.ts')
    expect(readFileSync(example, 'utf8')).not.toMatch(/\bas\s+(any|unknown|[A-Z])|<any>|@ts-/)
    copyFileSync(example, join(dir, 'integrator.ts'))
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'ESNext', moduleResolution: 'bundler', lib: ['ES2022', 'DOM'], types: [], strict: true, noEmit: true, skipLibCheck: true },
        files: ['integrator.ts'],
      }),
    )
    const checked = await run([join(ROOT, 'node_modules/.bin/tsc'), '-p', dir])
    if (checked.code !== 0) console.log(checked.out)
    expect(checked.code).toBe(0)

    // The same script, run against the service.
    const t = await testApp()
    const c = await t.newCompany()
    const { firstSteps } = await import(join(dir, 'integrator.ts'))
    const result = await firstSteps('http://fos.test', c.key, (request: Request) => t.app.handle(request))
    expect(result.approvedTransactions).toBe(2)
    expect(result.count).toBe(1)
    expect(result.balances).toEqual(['Juan Pérez ARS -118000', 'Juan Pérez USD 100'])
  }, 120_000)
})
