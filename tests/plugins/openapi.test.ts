import { describe, expect, test } from 'bun:test'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { testApp } from '../helpers'

const ROOT = join(import.meta.dir, '..', '..')

describe('OpenAPI document', () => {
  test('declares both security schemes, version 1.0.0, and public routes without security', async () => {
    const t = await testApp()
    const res = await t.request('GET', '/openapi.json')
    expect(res.status).toBe(200)
    const doc = res.body
    expect(doc.openapi).toMatch(/^3\.1/)
    expect(doc.info.version).toBe('1.0.0')
    expect(doc.components.securitySchemes.apiKey).toEqual({ type: 'apiKey', in: 'header', name: 'x-api-key' })
    expect(doc.components.securitySchemes.bearer.scheme).toBe('bearer')
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      if (!path.startsWith('/api/public/')) continue
      for (const op of Object.values(item)) expect(op.security).toEqual([])
    }
  })

  test('every operation under /api documents its 4xx answers with the error body', async () => {
    const t = await testApp()
    const doc = (await t.request('GET', '/openapi.json')).body
    const missing: string[] = []
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      if (!path.startsWith('/api/')) continue
      for (const [method, op] of Object.entries<any>(item)) {
        if (!Object.keys(op.responses ?? {}).some((s) => s.startsWith('4'))) missing.push(`${method.toUpperCase()} ${path}`)
      }
    }
    expect(missing).toEqual([])
  })

  test('passes redocly lint with the recommended ruleset: no errors', async () => {
    const t = await testApp()
    const doc = (await t.request('GET', '/openapi.json')).body
    const dir = mkdtempSync(join(tmpdir(), 'fos-openapi-'))
    const file = join(dir, 'openapi.json')
    writeFileSync(file, JSON.stringify(doc))
    writeFileSync(join(dir, 'redocly.yaml'), 'extends:\n  - recommended\n')
    const proc = Bun.spawn([join(ROOT, 'node_modules/.bin/redocly'), 'lint', file, '--format=stylish'], {
      cwd: dir,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    if (code !== 0) console.log(out, err)
    expect(code).toBe(0)
  }, 120_000)
})
