import { describe, expect, test } from 'bun:test'
import type { Socket } from 'node:net'
import postgres from 'postgres'
import { hostList } from '../../db/hosts'
import { connectionOptions, isConnectionLost } from '../../db/client'
import { ConfigError, loadConfig } from '../../server/config'
import { postgresTest } from '../helpers'

describe('multi-host database URLs', () => {
  test('DATABASE_URL, DATABASE_DIRECT_URL and DATABASE_READ_URL take a libpq host list; a malformed one stops the start naming the variable', () => {
    const list = 'postgres://app:pw@db1:6001,db2:6002/fos?target_session_attrs=read-write'
    const read = 'postgres://app:pw@db1:6001,db2:6002/fos?target_session_attrs=prefer-standby'
    const config = loadConfig({ DATABASE_URL: list, DATABASE_DIRECT_URL: list, DATABASE_READ_URL: read })
    expect([config.databaseUrl, config.databaseDirectUrl, config.databaseReadUrl]).toEqual([list, list, read])
    const refusals: [Record<string, string>, RegExp][] = [
      [{ DATABASE_URL: 'postgres://app@db1:6001,/fos' }, /DATABASE_URL lists hosts separated by commas/],
      [{ DATABASE_URL: 'postgres://app@db1:99999,db2/fos' }, /DATABASE_URL must be a URL/],
      [{ DATABASE_URL: 'mysql://db1,db2/fos' }, /DATABASE_URL must be a URL starting with postgres:\/\//],
      [{ DATABASE_URL: 'postgres://db1,db2/fos?target_session_attrs=any' }, /target_session_attrs must be read-write/],
      [{ DATABASE_READ_URL: read }, /DATABASE_READ_URL needs DATABASE_URL/],
    ]
    for (const [env, message] of refusals) {
      expect(() => loadConfig(env)).toThrow(ConfigError)
      expect(() => loadConfig(env)).toThrow(message)
    }
  })

  test('a host list is given to postgres.js as its first host, asking for a primary (or nothing, when a standby is preferred); other URLs are left to it', () => {
    const list = hostList('postgres://app:p%40ss@db1:6001,[::1]:6002,db3/fos?sslmode=disable&target_session_attrs=read-write')
    expect(list).toEqual({
      url: 'postgres://app:p%40ss@db1:6001/fos?sslmode=disable&target_session_attrs=primary',
      hosts: [
        { host: 'db1', port: 6001 },
        { host: '::1', port: 6002 },
        { host: 'db3', port: 5432 },
      ],
      single: ['postgres://app:p%40ss@db1:6001/fos?sslmode=disable', 'postgres://app:p%40ss@[::1]:6002/fos?sslmode=disable', 'postgres://app:p%40ss@db3/fos?sslmode=disable'],
      want: 'primary',
    })
    expect(hostList('postgres://app@db1:6001,db2/fos?target_session_attrs=read-write&connect_timeout=3')?.single).toEqual(['postgres://app@db1:6001/fos?connect_timeout=3', 'postgres://app@db2/fos?connect_timeout=3'])
    expect(hostList('postgres://app@db1:6001/fos?target_session_attrs=read-write')).toBeNull()
    // A read URL preferring a standby: the probes choose, postgres.js is told nothing it would refuse a primary for.
    expect(hostList('postgres://app@db1,db2:6002/fos?target_session_attrs=prefer-standby&sslmode=disable')).toEqual({
      url: 'postgres://app@db1/fos?sslmode=disable',
      hosts: [
        { host: 'db1', port: 5432 },
        { host: 'db2', port: 6002 },
      ],
      single: ['postgres://app@db1/fos?sslmode=disable', 'postgres://app@db2:6002/fos?sslmode=disable'],
      want: 'standby',
    })
    expect(hostList('postgres://app@db1,db2/fos?target_session_attrs=read-only')).toBeNull()
    expect(hostList('postgres://app@db1,db2/fos')).toBeNull()
  })

  test('a lost connection or a server that cannot write is told apart from every other failure, also wrapped', () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT', '25001', '25006', '25P02', '57P01'])
      expect([code, isConnectionLost({ code }), isConnectionLost(new Error('Failed query', { cause: { code } }))]).toEqual([code, true, true])
    for (const code of ['23505', '40001', '22003', undefined]) expect(isConnectionLost(new Error('x', { cause: { code } }))).toBe(false)
    expect(isConnectionLost(new TypeError('undefined is not an object'))).toBe(false)
  })

  postgresTest('a pooled connection whose socket went away mid-write starts again on the next socket, without waiting out its connect timeout', async () => {
    // The test database listed twice: a host list, so the pool connects through db/hosts.ts's socket hook.
    const single = new URL(process.env.TEST_DATABASE_URL!)
    const listed = `postgres://${single.username}@${single.host},${single.host}${single.pathname}?target_session_attrs=read-write`
    const own = connectionOptions(postgres, listed)
    expect(own.options.connect_timeout).toBe(5)
    const sockets: Socket[] = []
    const counted = {
      ...own.options,
      socket: async () => {
        const socket = await own.options.socket!()
        sockets.push(socket)
        return socket
      },
    }
    const sql = postgres(own.url, { ...counted, max: 1, connect_timeout: 30, onnotice: () => {} })
    try {
      expect((await sql`select 1 as x`)[0].x).toBe(1)
      // The socket goes away with a statement waiting to be sent (postgres.js sends small ones on the next turn of
      // the event loop): what a failover does to a busy connection.
      sockets[0].destroy()
      const cut = sql`select 2 as x`.then(() => 'answered', (e) => e.code)
      expect(await cut).toBe('CONNECTION_CLOSED')
      const started = Date.now()
      expect((await sql`select 3 as x`)[0].x).toBe(3)
      expect(Date.now() - started).toBeLessThan(5_000)
      expect(sockets.length).toBeGreaterThan(2)
    } finally {
      await sql.end({ timeout: 1 })
    }
  })
})

