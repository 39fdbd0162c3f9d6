import type { Config } from './config'
import type { Database, Db } from '../db/client'
import type { BlobStore } from './infra/storage'
import type { DomainEvents } from './lib/events'

/** Everything a feature needs from outside, injected once when the app is built. */
export interface AppContext {
  config: Config
  database: Database
  db: Db
  store: BlobStore
  clock: () => Date
  log: (entry: Record<string, unknown>) => void
  /** In-transaction announcements between features (server/lib/events.ts). */
  events: DomainEvents
}
