import type { Config } from './config'
import type { Database, Db } from './plugins/database'
import type { BlobStore } from './plugins/storage'

/** Everything a feature needs from outside, injected once when the app is built. */
export interface AppContext {
  config: Config
  database: Database
  db: Db
  store: BlobStore
  clock: () => Date
  log: (entry: Record<string, unknown>) => void
}
