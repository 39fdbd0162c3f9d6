import type { Config } from '../server/config'
import { createStore, type BlobStore } from '../server/plugins/storage'

export async function testStore(config: Config): Promise<BlobStore> {
  return createStore(config)
}
