/**
 * Builds the screen apps (kiosk/) only when their sources changed since the last build, so a restart serves within
 * seconds instead of spending several on an identical Vite build. The inputs are every file under kiosk/ but the
 * output, the lockfile (a dependency upgrade changes the bundle) and this script; their digest is kept beside the
 * output. Vite has no such check of its own, hence this small one.
 */
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { build } from 'vite'

const ROOT = join(import.meta.dir, '..')
const KIOSK = join(ROOT, 'kiosk')
const DIST = join(KIOSK, 'dist')
const STAMP = join(DIST, '.sources-digest')

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return path === DIST || entry.name === 'node_modules' ? [] : files(path)
    return [path]
  })
}

function sourcesDigest(): string {
  const hash = createHash('sha256')
  for (const path of [...files(KIOSK), join(ROOT, 'package-lock.json'), import.meta.path].sort()) {
    hash.update(relative(ROOT, path)).update('\0').update(readFileSync(path)).update('\0')
  }
  return hash.digest('hex')
}

const digest = sourcesDigest()
const force = process.argv.includes('--force')
if (!force && existsSync(STAMP) && readFileSync(STAMP, 'utf8') === digest) {
  console.log('screen apps up to date (kiosk/dist)')
} else {
  await build({ configFile: join(KIOSK, 'vite.config.ts'), logLevel: 'warn' })
  writeFileSync(STAMP, digest)
  console.log('screen apps built (kiosk/dist)')
}
