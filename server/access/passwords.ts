import pLimit from 'p-limit'
import { overloaded } from '../lib/admission'

/**
 * Password hashing, the costliest thing an unauthenticated caller can ask for (argon2id: about 160 ms of a core per
 * hash). Every hash and check goes through one bounded pool per process: at most `concurrency` at a time (never more
 * than one per core), the rest queued for at most `queueMs`, then refused 503 SERVICE_UNAVAILABLE with Retry-After,
 * so a flood of sign-ins waits for the cores it is given instead of taking them from every other request.
 */
export interface HashingLimits {
  concurrency: number
  queueMs: number
}

const PASSWORD_OPTIONS = { algorithm: 'argon2id' } as const

const limit = pLimit(1)
let queueMs = 2000

/** Sets the pool's bounds (each app applies its configuration; one process serves one configuration). */
export function configureHashing(limits: HashingLimits) {
  limit.concurrency = limits.concurrency
  queueMs = limits.queueMs
}

/** Hashes and checks running and waiting now, for tests and logs. */
export const hashingLoad = () => ({ running: limit.activeCount, waiting: limit.pendingCount })

function pooled<T>(work: () => Promise<T>): Promise<T> {
  let expired = false
  let timer: ReturnType<typeof setTimeout> | undefined
  const queued = limit(() => {
    if (expired) return Promise.resolve(undefined as T)
    clearTimeout(timer)
    return work()
  })
  const deadline = new Promise<never>((_, refuse) => {
    timer = setTimeout(() => {
      expired = true
      refuse(overloaded('password_hashing'))
    }, queueMs)
  })
  return Promise.race([queued, deadline])
}

export const hashPassword = (password: string) => pooled(() => Bun.password.hash(password, PASSWORD_OPTIONS))

/** Whether `password` matches `hash`; a malformed hash is a mismatch. */
export const verifyPassword = (password: string, hash: string) => pooled(() => Bun.password.verify(password, hash).catch(() => false))
