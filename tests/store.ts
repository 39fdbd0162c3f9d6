import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Config } from '../server/config'
import { createStore, type BlobStore, type Clock } from '../server/infra/storage'

export async function testStore(config: Config, clock?: Clock): Promise<BlobStore> {
  return createStore(config, clock)
}

interface S3rverOptions {
  address: string
  port: number
  silent: boolean
  directory: string
  configureBuckets: { name: string }[]
}
// The package ships no type declarations.
const S3rver: new (opts: S3rverOptions) => { run(): Promise<{ port: number }>; close(): Promise<void> } = require('@20minutes/s3rver')

export interface S3Server {
  config: NonNullable<Config['s3']>
  /** Keys of the objects stored under a prefix, read from the server's own directory. */
  keys(prefix: string): string[]
  close(): Promise<void>
}

/**
 * A real S3-compatible server (it checks SigV4 signatures and expiry) on a free port, with one bucket,
 * its objects under a fresh directory in /tmp that goes away on close.
 */
export async function startS3Server(bucket = 'attachments'): Promise<S3Server> {
  const directory = mkdtempSync(join(tmpdir(), 'fos-s3rver-'))
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket }] })
  const { port } = await server.run()
  return {
    config: {
      bucket,
      endpoint: `http://127.0.0.1:${port}`,
      region: 'us-east-1',
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
      forcePathStyle: true,
    },
    keys(prefix) {
      const dir = join(directory, bucket, prefix)
      if (!existsSync(dir)) return []
      return readdirSync(dir)
        .filter((f) => f.endsWith('._S3rver_object'))
        .map((f) => `${prefix}${f.slice(0, -'._S3rver_object'.length)}`)
    },
    async close() {
      await server.close()
      rmSync(directory, { recursive: true, force: true })
    },
  }
}
