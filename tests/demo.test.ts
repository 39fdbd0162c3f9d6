import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startServer } from './server'

const dataDir = mkdtempSync(join(tmpdir(), 'fos-demo-'))
let proc: import('bun').Subprocess | undefined

afterAll(() => {
  if (proc && proc.exitCode === null) proc.kill('SIGKILL')
  rmSync(dataDir, { recursive: true, force: true })
})

/** `bun run demo` as the README promises it: an empty embedded database gets a company whose key and kiosk work. */
test('demo seeds an empty database and prints a working key and kiosk link', async () => {
  const server = await startServer({ dataDir, args: ['--demo'], stdout: 'pipe' })
  proc = server.proc
  // The demo prints its key and kiosk link before it listens, so they are already in the pipe.
  const reader = (server.proc.stdout as ReadableStream<Uint8Array>).getReader()
  let out = ''
  while (!/Kiosk:\s+\S+/.test(out)) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`demo ended early: ${out}`)
    out += new TextDecoder().decode(value)
  }
  reader.releaseLock()
  const key = /API key:\s+(\S+)/.exec(out)![1]
  const kiosk = /Kiosk:\s+(\S+)/.exec(out)![1]
  const base = server.base
  const body = await (await fetch(`${base}/api/clients`, { headers: { 'x-api-key': key } })).json()
  expect(body.count).toBe(2)
  const position = await (await fetch(`${base}/api/mesas/1/position`, { headers: { 'x-api-key': key } })).json()
  expect(position.realized_pnl).toBe(4000)
  const token = kiosk.split('/').pop()!
  const snapshot = await (await fetch(`${base}/api/public/ventanilla/${token}`)).json()
  expect(snapshot.currentCall).toMatchObject({ ticket: 'A-001', name: 'María G.', desk: 'Caja 1' })
  expect(JSON.stringify(snapshot)).not.toContain('González')
}, 120_000)
