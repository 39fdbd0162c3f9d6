import { expect, test } from 'bun:test'
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..')

// Bun runs TypeScript without checking it; a wrong field name only shows up here or in production.
test('the whole project type-checks under strict mode', async () => {
  const proc = Bun.spawn([join(ROOT, 'node_modules/.bin/tsc'), '-p', ROOT], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited])
  if (code !== 0) console.log(out)
  expect(code).toBe(0)
}, 300_000)
