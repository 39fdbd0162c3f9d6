import { Elysia, status as answer, t } from 'elysia'
import { withHeaders } from '@elysiajs/openapi'
import { LRUCache } from 'lru-cache'
import type { Tx } from '../../db/client'
import type { AppContext } from '../context'
import { ApiError, forbidden } from '../lib/errors'
import { ErrorBody, JSON_BODY, IdempotencyHeaders } from '../lib/models'
import { claimKey, keepAnswer, openTenantTx, requestFingerprint, type Credential, type OpenTx, type TxMode } from '../lib/write'
import { sha256 } from '../lib/secrets'
import { jsonText, wantsMoneyStrings } from '../lib/money'
import { apiErrorResponse } from '../plugins/errors'
import { requestId } from '../plugins/request-log'
import { authenticateGrant, authenticateKey, can, clientScope, lookupKey, type Caller, type CompanyModule, type KeyLookup, type Permission } from './caller'
import { authenticateSession, checkOrigin, sessionToken } from './sessions'

/**
 * Everything a company route needs decided before its handler runs, declared next to its path:
 * `{ policy: { permission: 'operations.approve', tx: 'write' } }`.
 */
export interface Policy {
  /** Any one of these (a company key holds every permission). Omitted: any key of the company. */
  permission?: Permission | readonly Permission[]
  /** Only a company key; an employee key gets 403 FORBIDDEN. */
  companyKeyOnly?: boolean
  /** An employee limited to clients gets 403 FORBIDDEN (company-wide data such as the event feed). */
  unscoped?: boolean
  /** The company module the route belongs to; off → 403 MESAS_DISABLED / VENTANILLA_DISABLED. */
  module?: CompanyModule
  /** The transaction handed to the handler as `tx` (default `read`); `none` for streams that manage their own reads. */
  tx?: TxMode | 'none'
  /**
   * With `tx: 'none'`: the handler's one statement confirms a caller the process remembers for its key (`keyHolds`
   * with the `credential` it is handed) and answers its `held` column with `confirmHeld`, so the route too is
   * spared the key's lookup.
   */
  confirmsKey?: boolean
  /** An Idempotency-Key claimed in the route's write transaction; the same key and body replays the first answer. */
  idempotent?: boolean
  /** Success status (default 201 for idempotent creates, else 200); a handler may still set another. */
  status?: number
  /** Also accepts `Authorization: Bearer <external grant>` (statements of one client). */
  grant?: boolean
  /** `WWW-Authenticate` of a 401, for clients that would otherwise read it as an OAuth challenge (MCP). */
  challenge?: string
}

const MODULE_CODE = { mesas: 'MESAS_DISABLED', ventanilla: 'VENTANILLA_DISABLED' } as const

interface RequestState {
  caller?: Promise<Caller>
  policy?: Policy
  /** The caller came from the process's memory of its key, not from a lookup made for this request. */
  remembered?: KeyLookup & { digest: string }
  /** The remembered caller was handed to a transaction to confirm; `refused` once it found the key changed. */
  confirming?: boolean
  refused?: boolean
  open?: OpenTx
  key?: string
  replayed?: boolean
}

const states = new WeakMap<Request, RequestState>()
const stateOf = (request: Request) => {
  let s = states.get(request)
  if (!s) states.set(request, (s = {}))
  return s
}

const anyOf = (p: Policy['permission']): readonly Permission[] => (p === undefined ? [] : typeof p === 'string' ? [p] : p)

/**
 * Callers of API keys by the key's digest, so that a route which runs in a tenant transaction spends no round trip
 * of its own on the key: the transaction's first statement, sent with the route's first, confirms the remembered
 * caller against the key's rows as they are then (`keyHolds`), and a change found there answers the request from a
 * fresh lookup instead (`recheck` below). Routes without such a transaction (but the one that confirms in its own
 * statement), uploads and every refusal look the key up afresh. Bounded by count; an entry is only a hint, checked
 * at every use, so nothing else needs to expire it. Callers are shared by the requests of a key: never changed.
 */
const remembered = new WeakMap<AppContext, LRUCache<string, KeyLookup>>()
const keyMemory = (app: AppContext) => {
  let m = remembered.get(app)
  if (!m) remembered.set(app, (m = new LRUCache<string, KeyLookup>({ max: 10_000 })))
  return m
}

/** Requests made again from the start after their remembered caller was found changed: they look their key up. */
const replays = new WeakSet<Request>()

const mayRemember = (request: Request, policy: Policy) =>
  ((policy.tx ?? 'read') !== 'none' || policy.confirmsKey === true) && !replays.has(request) && !/^multipart\//i.test(request.headers.get('content-type') ?? '')

async function byKey(app: AppContext, request: Request, policy: Policy, key: string): Promise<Caller> {
  const digest = sha256(key)
  const memory = keyMemory(app)
  if (mayRemember(request, policy)) {
    const known = memory.get(digest)
    if (known) {
      stateOf(request).remembered = { ...known, digest }
      return known.caller
    }
  }
  const found = await lookupKey(app.db, key, digest)
  memory.set(digest, { ...found, caller: frozen(found.caller) })
  return found.caller
}

/** A caller to be shared by every request of its key, made immutable so that none can change it for the others. */
function frozen(caller: Caller): Caller {
  if (caller.employee) {
    Object.freeze(caller.employee.permissions)
    Object.freeze(caller.employee.clientIds)
    Object.freeze(caller.employee)
  }
  Object.freeze(caller.modules)
  return Object.freeze(caller)
}

/** Stops using what the process remembered for this request's key, and says whether it had used it. */
function forget(app: AppContext, state: RequestState): boolean {
  const known = state.remembered
  if (!known) return false
  keyMemory(app).delete(known.digest)
  state.remembered = undefined
  return true
}

/**
 * The credential of a request: `x-api-key` wins; a `grant` route then takes its bearer; else the `fos_session`
 * cookie of a signed-in employee. Only a request without a key pays for the cookie path.
 */
async function identify(app: AppContext, request: Request, policy: Policy): Promise<Caller> {
  const key = request.headers.get('x-api-key')
  if (key !== null) return byKey(app, request, policy, key)
  const bearer = policy.grant ? /^Bearer\s+(\S+)$/i.exec(request.headers.get('authorization') ?? '')?.[1] : undefined
  if (bearer !== undefined) return authenticateGrant(app.db, bearer, app.clock())
  const session = sessionToken(request)
  if (session !== null) {
    checkOrigin(request, app.config.publicBaseUrl)
    return authenticateSession(app.db, session, app.clock())
  }
  return policy.grant ? authenticateGrant(app.db, undefined, app.clock()) : authenticateKey(app.db, null)
}

/**
 * Who may call: decided once per request, before the body is read or anything is validated. A refusal is never
 * made on a remembered caller: the key may have gained since what it lacked, so it is looked up again first.
 */
async function decide(app: AppContext, request: Request, policy: Policy): Promise<Caller> {
  const caller = await identify(app, request, policy)
  try {
    admit(caller, policy)
    return caller
  } catch (e) {
    if (!forget(app, stateOf(request))) throw e
    const fresh = await identify(app, request, policy)
    admit(fresh, policy)
    return fresh
  }
}

function admit(caller: Caller, policy: Policy) {
  if (policy.companyKeyOnly && (caller.employee || caller.grant)) throw forbidden('Only a company key may do this')
  if (policy.unscoped && clientScope(caller)) throw forbidden('Not available to an employee limited to clients')
  if (policy.module && !caller.modules[policy.module])
    throw new ApiError(403, MODULE_CODE[policy.module], `The ${policy.module} module is not enabled for this company`)
  const needed = anyOf(policy.permission)
  if (needed.length && !caller.grant && !needed.some((p) => can(caller, p))) throw forbidden(`Missing permission ${needed.join(' or ')}`)
}

type SetHeaders = { headers: Record<string, string | number> }

function gate(app: AppContext, request: Request, policy: Policy, set: SetHeaders): Promise<Caller> {
  const state = stateOf(request)
  state.policy = policy
  state.caller ??= decide(app, request, policy).catch((e) => {
    if (policy.challenge && e instanceof ApiError && e.status === 401) set.headers['www-authenticate'] = policy.challenge
    throw e
  })
  return state.caller
}

async function close(request: Request, ok: boolean) {
  const state = states.get(request)
  const open = state?.open
  if (!open) return
  state.open = undefined
  if (ok) await open.commit()
  else await open.rollback()
}

/** Handlers of `tx: 'none'` routes get this: using it is a bug the first request shows. */
const NO_TX = new Proxy({} as Tx, {
  get() {
    throw new Error('this route declared tx: none')
  },
})

function sentence(policy: Policy): string {
  const parts: string[] = []
  const needed = anyOf(policy.permission)
  if (policy.companyKeyOnly) parts.push('Company key only: an employee key gets 403 `FORBIDDEN`.')
  else if (needed.length) parts.push(`Needs ${needed.map((p) => `\`${p}\``).join(' or ')} (a company key has every permission).`)
  if (policy.grant) parts.push('Also accepts `Authorization: Bearer <external grant>`, which reaches only its own client.')
  if (policy.unscoped) parts.push('An employee limited to clients gets 403 `FORBIDDEN`.')
  if (policy.module) parts.push(`While the company's ${policy.module} module is off: 403 \`${MODULE_CODE[policy.module]}\`.`)
  if (policy.idempotent)
    parts.push('Accepts `Idempotency-Key` (1–255 characters): the same key and body within 24 h answer the first response again; a different body is 409 `IDEMPOTENCY_KEY_REUSED`.')
  return parts.join(' ')
}

const ERROR_SCHEMA = JSON.parse(JSON.stringify(ErrorBody))

type Hook = Record<string, unknown> & { response?: unknown; detail?: Record<string, unknown>; parse?: unknown; params?: unknown; headers?: unknown; body?: unknown }

/** Writes the policy into the route's OpenAPI entry: its permission sentence and the answers it can cause. */
function document(hook: Hook, policy: Policy) {
  const detail = (hook.detail ??= {})
  const own = typeof detail.description === 'string' && detail.description ? detail.description : ''
  detail.description = [sentence(policy), own].filter(Boolean).join('\n\n')
  const statuses = [401, 429]
  if (policy.companyKeyOnly || policy.unscoped || policy.module || anyOf(policy.permission).length) statuses.push(403)
  if (hook.params) statuses.push(400, 404)
  if (policy.idempotent) statuses.push(400, 409)
  const written = detail.responses as Record<number, unknown> | undefined
  if (written && hook.response === undefined) {
    // Answers documented by hand (a stream with several content types) stay as written: a response schema would
    // replace them all in the document, so the policy's answers join them there instead.
    for (const s of statuses) written[s] ??= { description: ErrorBody.description, content: { 'application/json': { schema: ERROR_SCHEMA } } }
  } else {
    const response = (hook.response ??= {}) as Record<number, unknown>
    for (const s of statuses) response[s] ??= ErrorBody
    if (policy.challenge) response[401] = withHeaders(ErrorBody, { 'WWW-Authenticate': t.Literal(policy.challenge) })
  }
  if (policy.idempotent && !hook.headers) hook.headers = IdempotencyHeaders
  // With a function in the parse stage the generator cannot tell the body's content type and leaves it empty;
  // the document step (server/plugins/openapi.ts) fills it in from this.
  if (hook.body !== undefined && hook.parse !== 'none') detail[JSON_BODY] = hook.body
}

const seeds = new WeakMap<AppContext, number>()
let built = 0
/** Elysia dedupes a named plugin by its seed; each app built in one process gets its own. */
function appSeed(app: AppContext) {
  if (!seeds.has(app)) seeds.set(app, ++built)
  return seeds.get(app)!
}

/**
 * The one route policy: a named plugin whose `policy` macro authenticates (before the body is read), checks
 * the module flag, the permission and client scope, opens the declared transaction as the tenant, claims the
 * Idempotency-Key, hands the handler `{ caller, tx }`, commits after it (rolls back on any error), and documents
 * all of that in the route's OpenAPI entry.
 */
export const routePolicy = (app: AppContext) =>
  new Elysia({ name: 'route-policy', seed: appSeed(app) }).macro({
    policy: (policy: Policy) => ({
      introspect(hook: Hook) {
        document(hook, policy)
        // Bodies are read in the parse stage, which comes before transform: the gate goes first in it. A route
        // without a body schema reads none, and one that reads its own (`parse: 'none'`) does so in its handler:
        // both are gated in transform, still before anything touches the body.
        if (hook.body === undefined && hook.parse === undefined) hook.parse = 'none'
        if (hook.parse === 'none') return
        const gateFirst = ({ request, set }: { request: Request; set: SetHeaders }) => gate(app, request, policy, set).then(() => undefined)
        hook.parse = [gateFirst, ...(hook.parse === undefined ? [] : Array.isArray(hook.parse) ? hook.parse : [hook.parse])]
      },
      async transform({ request, set }: { request: Request; set: SetHeaders }) {
        await gate(app, request, policy, set)
      },
      async resolve({ request, path, body, set }) {
        const caller = await gate(app, request, policy, set)
        const mode = policy.tx ?? 'read'
        const state = stateOf(request)
        let credential: Credential | undefined
        if (state.remembered) {
          state.confirming = true
          credential = { prefix: state.remembered.prefix, state: state.remembered.state, refused: () => (state.refused = true) }
        }
        if (mode === 'none') return { caller, tx: NO_TX, credential }
        const open = await openTenantTx(app, caller, policy.idempotent ? 'write' : mode, credential)
        state.open = open
        set.status = policy.status ?? (policy.idempotent ? 201 : 200)
        const key = policy.idempotent ? request.headers.get('idempotency-key') : null
        if (key !== null) {
          const prior = await claimKey(app, open.tx, caller.companyId, key, requestFingerprint(request.method, path, body), Number(set.status))
          if (prior) {
            state.replayed = true
            await close(request, false)
            // An early answer skips the response hooks, so money is written as asked here (server/lib/money.ts).
            if (!wantsMoneyStrings(request.headers.get('accept'))) return answer(prior.status as 200, prior.body as never)
            const text = jsonText(prior.body, true)
            return answer(prior.status as 200, new Response(text, { status: prior.status, headers: { 'content-type': 'application/json; charset=utf-8' } }) as never)
          }
          state.key = key
        }
        return { caller, tx: open.tx, credential: undefined }
      },
      async afterHandle({ request, responseValue, set }) {
        const state = states.get(request)
        if (!state?.open) return
        // The framework awaits a handler only when its source looks asynchronous; one that returns a promise
        // without looking so would otherwise reach this point unfinished and be committed half done.
        const settled = responseValue instanceof Promise ? await responseValue : responseValue
        if (state.key !== undefined && !(settled instanceof Response))
          await keepAnswer(state.open.tx, (await state.caller!).companyId, state.key, settled, Number(set.status ?? 200))
        await close(request, true)
        if (settled !== responseValue) return settled as never
      },
      async error({ request }) {
        await close(request, false)
      },
      async afterResponse({ request }) {
        await close(request, false)
      },
    }),
  })

/** Requests whose remembered caller was found changed though the key may still make them: answered again. */
const answerAgain = new WeakSet<Request>()

/**
 * A request that failed on a remembered caller is answered as a fresh lookup would have had it answered. If its
 * transaction confirmed the caller, the failure stands. If not (the key was found changed, or the request failed
 * before its transaction), the key is looked up afresh: a refusal (401, 403) is the answer; a key that may still
 * make the request has it made again from the start, its transaction having rolled back.
 */
async function recheck(app: AppContext, request: Request): Promise<Response | undefined> {
  const state = states.get(request)
  if (!state?.remembered) return
  // The transaction's first statement has answered once the transaction has ended.
  await close(request, false)
  if (state.confirming && !state.refused) return
  forget(app, state)
  const policy = state.policy!
  try {
    await decide(app, request, policy)
  } catch (e) {
    if (!(e instanceof ApiError)) return
    const refusal = apiErrorResponse(e)
    if (policy.challenge && e.status === 401) refusal.headers.set('www-authenticate', policy.challenge)
    return refusal
  }
  if (!state.confirming) return
  answerAgain.add(request)
  return new Response(null, { status: 503 })
}

type Fetch = (...args: unknown[]) => Response | Promise<Response>

async function madeAgain(fetch: Fetch, request: Request, first: Response, rest: unknown[]): Promise<Response> {
  await first.body?.cancel()
  // The body as it arrived: the body limit keeps what it read.
  const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.arrayBuffer()
  const headers = new Headers(request.headers)
  // Logged under the first attempt's id, so the log shows both attempts as one request.
  const id = requestId(request)
  if (id) headers.set('x-request-id', id)
  const replay = new Request(request.url, { method: request.method, headers, body })
  replays.add(replay)
  return fetch(replay, ...rest)
}

/**
 * Remembered key callers, registered before the errors plugin so that its answer to a request whose remembered
 * caller no longer holds wins; the request is made again here when it must be.
 */
export const rememberedCallers = (app: AppContext) =>
  new Elysia({ name: 'remembered-callers', seed: appSeed(app) })
    .wrap(((fetch: Fetch, request: Request) =>
      (...args: unknown[]) => {
        const settle = (out: Response) => (answerAgain.delete(request) ? madeAgain(fetch, request, out, args.slice(1)) : out)
        const out = fetch(...args)
        return out instanceof Promise ? out.then(settle) : settle(out)
      }) as never)
    .onError({ as: 'global' }, ({ request }) => recheck(app, request))
