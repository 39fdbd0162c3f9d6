import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { chromium, type BrowserContext } from 'playwright-core'

export const ROOT = resolve(import.meta.dir, '../..')
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

/** Builds the apps unless a build is already there (the `test` script builds them; a bare `bun test` may not). */
export function ensureKioskBuilt() {
  if (['index.html', 'staff.html', 'dispenser.html', 'manage.html', 'setup.html', 'setup-done.html', 'receipt.html', 'statement.html'].every((page) => existsSync(join(ROOT, 'kiosk/dist', page)))) return
  // bun test sets NODE_ENV=test, which would give Vite a development build of Solid.
  const build = Bun.spawnSync([process.execPath, 'run', 'kiosk:build'], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'production' },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  if (build.exitCode !== 0) throw new Error(`kiosk build failed:\n${build.stdout.toString()}\n${build.stderr.toString()}`)
}

export interface Chromium {
  context: BrowserContext
  close(): Promise<void>
}

/** Debian's chromium, headless, on a fresh throwaway profile that `close()` removes. */
export async function launchChromium(viewport = { width: 1920, height: 1080 }): Promise<Chromium> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: install it with \`apt-get install -y chromium\``)
  const profile = mkdtempSync(join(tmpdir(), 'kiosk-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport,
    locale: 'es-AR',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
    ],
  })
  return {
    context,
    async close() {
      await context.close().catch(() => {})
      rmSync(profile, { recursive: true, force: true })
    },
  }
}
