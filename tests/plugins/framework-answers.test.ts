/**
 * Answers nobody's handler writes: refusals made on the way to a route (request head too large, a body too large or
 * of a type nothing parses, no such route). On a real listener, started as the package scripts start it, each one is
 * `{ error, code }` like every other refusal.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startServer, type RunningServer } from '../server'
import { multipartBound } from '../../server/plugins/body-limit'
import { loadConfig } from '../../server/config'

let server: RunningServer

beforeAll(async () => {
  server = await startServer({ dataDir: mkdtempSync(join(tmpdir(), 'fos-answers-')), databaseUrl: process.env.TEST_DATABASE_URL })
}, 180_000)

afterAll(async () => {
  server.proc.kill('SIGTERM')
  await server.proc.exited
})

/** Sends `head` as written and reads the answer until the server closes or 3 s pass. */
function raw(head: string): Promise<{ status: number; headers: string; body: string }> {
  return new Promise((done, fail) => {
    const socket = connect(server.port, '127.0.0.1')
    const chunks: Buffer[] = []
    const finish = () => {
      clearTimeout(timer)
      socket.destroy()
      const text = Buffer.concat(chunks).toString('utf8')
      const [headers, body = ''] = text.split('\r\n\r\n', 2)
      done({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(headers)?.[1] ?? 0), headers, body })
    }
    const timer = setTimeout(finish, 3000)
    socket.on('data', (d: Buffer) => {
      chunks.push(d)
      const text = Buffer.concat(chunks).toString('utf8')
      const length = /content-length: (\d+)/i.exec(text)?.[1]
      const at = text.indexOf('\r\n\r\n')
      if (at >= 0 && length !== undefined && Buffer.byteLength(text.slice(at + 4)) >= Number(length)) finish()
    })
    socket.on('end', finish)
    socket.on('error', fail)
    socket.write(head)
  })
}

const json = (body: string) => {
  try {
    return JSON.parse(body)
  } catch {
    return { unparsed: body }
  }
}

describe('answers the framework or the listener makes carry { error, code }', () => {
  test('a very long URL or header: 431 HEADERS_TOO_LARGE with a body', async () => {
    const limit = loadConfig({}).maxHeaderBytes
    for (const [name, head] of [
      ['url', `GET /api/clients?q=${'a'.repeat(limit + 100)} HTTP/1.1\r\nHost: x\r\n\r\n`],
      ['header', `GET /api/clients HTTP/1.1\r\nHost: x\r\nX-Filler: ${'b'.repeat(limit + 100)}\r\n\r\n`],
      ['sign-in url', `POST /api/sessions?${'c'.repeat(40_000)} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`],
    ]) {
      const r = await raw(head)
      expect({ name, status: r.status, body: json(r.body) }).toEqual({ name, status: 431, body: { error: expect.any(String), code: 'HEADERS_TOO_LARGE' } })
    }
    // Just under the bound the request goes on to its route.
    const fits = await raw(`GET /api/clients?q=${'a'.repeat(limit - 400)} HTTP/1.1\r\nHost: x\r\n\r\n`)
    expect([fits.status, json(fits.body).code]).toEqual([401, 'UNAUTHORIZED'])
  })

  test('a body declared over any bound, of a type nothing parses, or to no route: each with its code', async () => {
    const config = loadConfig({})
    const cases: [string, string, number, string][] = [
      ['multipart over its bound', `POST /api/operations/1/attachments HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: ${multipartBound(config.maxUploadBytes) + 1}\r\n\r\n`, 413, 'PAYLOAD_TOO_LARGE'],
      ['JSON over its bound', `POST /api/clients HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${500 * 1024 * 1024}\r\n\r\n`, 413, 'PAYLOAD_TOO_LARGE'],
      ['multipart/xxjson', `POST /api/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/xxjson\r\nContent-Length: 4\r\n\r\n[[]]`, 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['no such route', `GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n`, 404, 'NOT_FOUND'],
      ['OPTIONS', `OPTIONS /api/clients HTTP/1.1\r\nHost: x\r\n\r\n`, 404, 'NOT_FOUND'],
    ]
    for (const [name, head, status, code] of cases) {
      const r = await raw(head)
      expect({ name, status: r.status, body: json(r.body) }).toEqual({ name, status, body: { error: expect.any(String), code } })
      expect(r.headers).toMatch(/content-type: application\/json/i)
    }
  })
})
