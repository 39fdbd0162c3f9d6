import { Webhook } from 'standardwebhooks'
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'

/** A Standard Webhooks secret: `whsec_` and the base64 of 32 random bytes. */
export const newEndpointSecret = () => `whsec_${randomBytes(32).toString('base64')}`

const keys = new Map<string, Buffer>()

/** The encryption key of endpoint secrets, derived from SIGNING_SECRET so that it is never stored beside them. */
function keyOf(signingSecret: string): Buffer {
  let key = keys.get(signingSecret)
  if (!key) {
    key = Buffer.from(hkdfSync('sha256', signingSecret, 'webhook-endpoint-secrets', 'aes-256-gcm', 32))
    keys.set(signingSecret, key)
  }
  return key
}

/** `v1.<iv>.<tag>.<ciphertext>` in base64url: AES-256-GCM, so a tampered value fails to open instead of signing garbage. */
export function sealSecret(signingSecret: string, secret: string): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', keyOf(signingSecret), iv)
  const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()])
  return ['v1', iv, cipher.getAuthTag(), body].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.')
}

export function openSecret(signingSecret: string, sealed: string): string {
  const [version, iv, tag, body] = sealed.split('.')
  if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('unreadable endpoint secret')
  const decipher = createDecipheriv('aes-256-gcm', keyOf(signingSecret), Buffer.from(iv, 'base64url'))
  decipher.setAuthTag(Buffer.from(tag, 'base64url'))
  return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8')
}

/** Signers by signing secret and sealed secret: every delivery signs, so an endpoint's secret is opened once, not per attempt. */
const signers = new Map<string, Webhook>()
const MAX_SIGNERS = 1000

/** The Standard Webhooks signer of a sealed `whsec_` secret, kept while it is in use. */
export function signerOf(signingSecret: string, sealed: string): Webhook {
  const cached = `${signingSecret}\u0000${sealed}`
  let signer = signers.get(cached)
  if (!signer) {
    signer = new Webhook(openSecret(signingSecret, sealed))
    if (signers.size >= MAX_SIGNERS) signers.clear()
    signers.set(cached, signer)
  }
  return signer
}
