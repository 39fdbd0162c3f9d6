import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

export const sha256 = (value: string | Uint8Array) => createHash('sha256').update(value).digest('hex')

/** Compares two hex digests without leaking where they differ. */
export function sameDigest(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex')
  const y = Buffer.from(b, 'hex')
  return x.length === y.length && timingSafeEqual(x, y)
}

/** An opaque credential `<kind>_<prefix>_<secret>`: the prefix finds the row, the digest of the whole proves it. */
export function newCredential(kind: string) {
  const prefix = randomBytes(6).toString('hex')
  const value = `${kind}_${prefix}_${randomBytes(24).toString('base64url')}`
  return { prefix, value, hash: sha256(value) }
}

export function credentialPrefix(kind: string, value: string | undefined | null): string | null {
  if (!value) return null
  const m = new RegExp(`^${kind}_([0-9a-f]{12})_[A-Za-z0-9_-]{32}$`).exec(value)
  return m ? m[1] : null
}
