import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { build, createLogger, type Plugin } from 'vite'

const out = mkdtempSync(join(tmpdir(), 'fos-build-'))
afterAll(() => rmSync(out, { recursive: true, force: true }))

test('the screens build (as `npm start` runs it) prints no bundler timing report, even when a plugin is slow', async () => {
  const printed: string[] = []
  const logger = createLogger('warn')
  const keep = (msg: string) => void printed.push(msg)
  Object.assign(logger, { info: keep, warn: keep, warnOnce: keep, error: keep })
  // A plugin that holds the build long enough for the bundler to report where its time went.
  const slow: Plugin = {
    name: 'slow',
    transform(_code, id) {
      if (!id.endsWith('.tsx')) return
      const until = Date.now() + 100
      while (Date.now() < until);
    },
  }
  await build({
    configFile: join(import.meta.dir, '../../kiosk/vite.config.ts'),
    logLevel: 'warn',
    customLogger: logger,
    plugins: [slow],
    build: { outDir: out, emptyOutDir: true },
  })
  expect(printed.filter((line) => /TIMINGS/.test(line))).toEqual([])
}, 180_000)
