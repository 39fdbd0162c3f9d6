import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto'
import type { Config } from '../../config'

/**
 * The Ed25519 key that signs the daily digests: AUDIT_SIGNING_KEY (PKCS#8 PEM, checked by loadConfig), else one
 * generated once into DATA_DIR so digests keep verifying across restarts. Processes sharing a database should
 * share the key (set AUDIT_SIGNING_KEY, or share DATA_DIR): the published key is the answering process's.
 */
export function auditSigningKeyPem(config: Config): string {
  if (config.auditSigningKey) return config.auditSigningKey
  const file = join(config.dataDir, 'audit-signing-key.pem')
  if (!existsSync(file)) {
    mkdirSync(config.dataDir, { recursive: true })
    const { privateKey } = generateKeyPairSync('ed25519')
    // `wx`: a process starting at the same moment may have written it first; then its key is the one.
    try {
      writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' })
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
    }
  }
  return readFileSync(file, 'utf8')
}

export interface SigningKey {
  privateKey: KeyObject
  /** SPKI PEM, as `GET /api/audit-logs/digest-key` publishes it. */
  publicPem: string
}

const loaded = new WeakMap<Config, SigningKey>()

export function signingKey(config: Config): SigningKey {
  let key = loaded.get(config)
  if (!key) {
    const privateKey = createPrivateKey(auditSigningKeyPem(config))
    key = { privateKey, publicPem: createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }).toString() }
    loaded.set(config, key)
  }
  return key
}
