import { Elysia, status as answer, t } from 'elysia'
import { withHeaders } from '@elysiajs/openapi'
import { LRUCache } from 'lru-cache'
import type { Tx } from '../../db/client'
import type { AppContext } from '../context'
import { ApiError, forbidden, unauthorized } from '../lib/errors'
import { ErrorBody, JSON_BODY, IdempotencyHeaders } from '../lib/models'
import { claimKey, CredentialChanged, idempotencyScope, keepAnswer, requestFingerprint, tenantTx, type TxMode } from '../lib/write'
import { sha256 } from '../lib/secrets'
import { jsonText, wantsMoneyStrings } from '../lib/money'
import { apiErrorResponse } from '../plugins/errors'
import { requestLimits, type Credential } from '../plugins/rate-limit'
import { actsAsCompany, authenticateGrant, can, clientScope, lookupKey, type Caller, type CompanyModule, type KeyLookup, type Permission } from './caller'
import { noteKeyUse } from './key-uses'
import { authenticateSession, checkOrigin, sessionToken } from './sessions'

/**
 * Everything a company route needs decided before its handler runs, declared next to its path:
 * `{ policy: { permission: 'operations.approve', tx: 'write' } }`.
 */
export interface Policy {
  /** Any one of these (a company key holds every permission). Omitted: any key of the company. */
  permission?: Permission | readonly Permission[]
  /** Only a company key or an owner (`company.admin`); any other employee gets 403 FORBIDDEN. */
  companyKeyOnly?: boolean
  /** An employee limited to clients gets 403 FORBIDDEN (company-wide data such as the event feed). */
  unscoped?: boolean
  /** The company module the route belongs to; off → 403 MESAS_DISABLED / VENTANILLA_DISABLED. */
  module?: CompanyModule
  /**
   * The tenant transaction `run` opens (default `read`); `none` for routes that manage their own reads (streams,
   * uploads, single statements): they get no `run`.
   */
  tx?: TxMode | 'none'
  /** An Idempotency-Key claimed in the route's write transaction; the same key and body replays the first answer. */
  idempotent?: boolean
  /** Success status (default 201 for idempotent creates, else 200); a handler may still set another. */
  status?: number
  /** Also accepts `Authorization: Bearer <external grant>` (statements of one client). */
  grant?: boolean
  /** `WWW-Authenticate` of a 401, for clients that would otherwise read it as an OAuth challenge (MCP). */
  challenge?: string
}

/** The route's work on the database: `run((tx, caller) => approveOperation(tx, caller, id))`. */
export type Run = <T>(work: (tx: Tx, caller: Caller) => Promise<T>) => Promise<T>

const MODULE_CODE = { mesas: 'MESAS_DISABLED', ventanilla: 'VENTANILLA_DISABLED' } as const

const anyOf = (p: Policy['permission']): readonly Permission[] => (p === undefined ? [] : typeof p === 'string' ? [p] : p)

/** Who is calling, as decided for one request; `remembered` when it came from the process's memory of its key. */
interface Identified {
  caller: Caller
  remembered?: KeyLookup & { digest: string }
  /** What authenticated the caller, for the rate limits. */
  credential: Credential
}

/**
 * Callers of API keys by the key's digest. A route that runs in a tenant transaction then spends no round trip of
 * its own on the key: `run`'s first statement, sent with the work's first, confirms the remembered caller against
 * the key's rows as they are then (`keyHolds`). When it no longer holds, `run` rolls back, looks the key up afresh
 * and runs the work again with the fresh caller (or answers the refusal). Routes without a transaction look the key
 * up at every request. Bounded by count; an entry is only a hint, checked at every use, so nothing else expires it.
 */
const memories = new WeakMap<AppContext, LRUCache<string, KeyLookup>>()
const keyMemory = (app: AppContext) => {
  let m = memories.get(app)
  if (!m) memories.set(app, (m = new LRUCache<string, KeyLookup>({ max: 10_000 })))
  return m
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

async function byKey(app: AppContext, key: string, remember: boolean): Promise<Identified> {
  const digest = sha256(key)
  const memory = keyMemory(app)
  const credential: Credential = { kind: 'key', value: key }
  const known = remember ? memory.get(digest) : undefined
  if (known) return { caller: known.caller, remembered: { ...known, digest }, credential }
  const found = await lookupKey(app.db, key, digest)
  memory.set(digest, { ...found, caller: frozen(found.caller) })
  return { caller: found.caller, credential }
}

/**
 * The credential of a request: `x-api-key` wins; a `grant` route then takes its bearer; else the `fos_session`
 * cookie of a signed-in employee. Only a request without a key pays for the cookie path.
 */
async function identify(app: AppContext, request: Request, policy: Policy, remember: boolean): Promise<Identified> {
  const key = request.headers.get('x-api-key')
  if (key !== null) return byKey(app, key, remember)
  const bearer = policy.grant ? /^Bearer\s+(\S+)$/i.exec(request.headers.get('authorization') ?? '')?.[1] : undefined
  if (bearer !== undefined) return { caller: await authenticateGrant(app.db, bearer, app.clock()), credential: { kind: 'bearer', value: bearer } }
  const session = sessionToken(request)
  if (session !== null) {
    checkOrigin(request, app.config.publicBaseUrl)
    return { caller: await authenticateSession(app.db, session, app.clock()), credential: { kind: 'session', value: session } }
  }
  // No credential at all: the refusal the route's kind of credential gives.
  throw policy.grant ? unauthorized('Missing or invalid credentials') : unauthorized()
}

function admit(caller: Caller, policy: Policy) {
  if (policy.companyKeyOnly && !actsAsCompany(caller)) throw forbidden('Only a company key or an owner may do this')
  if (policy.unscoped && clientScope(caller)) throw forbidden('Not available to an employee limited to clients')
  if (policy.module && !caller.modules[policy.module])
    throw new ApiError(403, MODULE_CODE[policy.module], `The ${policy.module} module is not enabled for this company`)
  const needed = anyOf(policy.permission)
  if (needed.length && !caller.grant && !needed.some((p) => can(caller, p))) throw forbidden(`Missing permission ${needed.join(' or ')}`)
}

/**
 * Who may call, decided before the body is read or anything is validated. A caller is remembered only for routes
 * whose `run` confirms it; a refusal is never made on a remembered caller (the key may have gained since what it
 * lacked), so the key is then looked up afresh first.
 */
async function decide(app: AppContext, request: Request, policy: Policy, set: SetHeaders): Promise<Identified> {
  const mayRemember = (policy.tx ?? 'read') !== 'none'
  const first = await identify(app, request, policy, mayRemember)
  // Authenticated: from now on charged to its own and its company's budget, and known to the limits by it.
  await requestLimits(app).authenticated(request, first.credential, first.caller.companyId, set.headers)
  try {
    admit(first.caller, policy)
    noteKeyUse(app, first.caller.keyId)
    return first
  } catch (e) {
    if (!first.remembered) throw e
    keyMemory(app).delete(first.remembered.digest)
    const fresh = await identify(app, request, policy, false)
    admit(fresh.caller, policy)
    noteKeyUse(app, fresh.caller.keyId)
    return fresh
  }
}

/**
 * The decision for each request, made once: the gate runs in the parse stage (before the body is read) or in
 * transform (routes without a body), and the handler's context is resolved from the same decision. Keyed by the
 * request so that it is forgotten with it.
 */
const decisions = new WeakMap<Request, { decided: Promise<Identified>; policy: Policy; confirmed: boolean }>()

type SetHeaders = { headers: Record<string, string | number>; status?: number | string }

function gate(app: AppContext, request: Request, policy: Policy, set: SetHeaders): Promise<Identified> {
  let d = decisions.get(request)
  if (!d) {
    const decided = decide(app, request, policy, set).catch((e) => {
      if (policy.challenge && e instanceof ApiError && e.status === 401) set.headers['www-authenticate'] = policy.challenge
      throw e
    })
    decisions.set(request, (d = { decided, policy, confirmed: false }))
  }
  return d.decided
}

/** The first answer of a request made again with the same Idempotency-Key, carried out of the rolled-back work. */
class Replay extends Error {
  constructor(readonly status: number, readonly body: unknown) {
    super('replay')
  }
}

/**
 * A request's database work, whole: opens the tenant transaction (as the caller, in the policy's mode), claims the
 * Idempotency-Key in it, runs the work, keeps its answer for replays and commits; any failure rolls all of it back.
 * A remembered caller is confirmed by the transaction's first statement; found changed, the work is run again with
 * the caller as a fresh lookup finds it (the request itself is never made again).
 */
async function runWork<T>(
  app: AppContext,
  request: Request,
  policy: Policy,
  who: Identified,
  set: SetHeaders,
  fingerprint: () => string,
  work: (tx: Tx, caller: Caller) => Promise<T>,
): Promise<T> {
  const mode = policy.idempotent ? 'write' : ((policy.tx ?? 'read') as TxMode)
  const key = policy.idempotent ? request.headers.get('idempotency-key') : null
  set.status = policy.status ?? (policy.idempotent ? 201 : 200)
  for (;;) {
    const { caller, remembered } = who
    try {
      const result = await tenantTx(
        app,
        caller,
        mode,
        async (tx) => {
          if (key === null) return work(tx, caller)
          const scope = idempotencyScope(caller)
          const prior = await claimKey(app, tx, scope, key, fingerprint(), Number(set.status))
          if (prior) throw new Replay(prior.status, prior.body)
          const body = await work(tx, caller)
          if (!(body instanceof Response)) await keepAnswer(tx, scope, key, body, Number(set.status ?? 200))
          return body
        },
        { credential: remembered && { prefix: remembered.prefix, state: remembered.state } },
      )
      confirm(request)
      return result
    } catch (e) {
      if (e instanceof Replay) {
        confirm(request)
        // Money as the caller asks for it (server/lib/money.ts): the stored answer is plain JSON.
        if (!wantsMoneyStrings(request.headers.get('accept'))) return answer(e.status as 200, e.body as never) as never
        return new Response(jsonText(e.body, true), { status: e.status, headers: { 'content-type': 'application/json; charset=utf-8' } }) as never
      }
      if (!(e instanceof CredentialChanged) || !remembered) {
        // The transaction answered, so its first statement confirmed the caller: the failure stands as it is.
        if (remembered && !(e instanceof CredentialChanged)) confirm(request)
        throw e
      }
      keyMemory(app).delete(remembered.digest)
      who = await identify(app, request, policy, false)
      admit(who.caller, policy)
    }
  }
}

function confirm(request: Request) {
  const d = decisions.get(request)
  if (d) d.confirmed = true
}

/**
 * A request that failed on a remembered caller its transaction never confirmed (a body that failed validation, a
 * handler that refused before its work) is answered as a fresh lookup would have it answered: when the key no
 * longer makes the request, its refusal (401, 403) replaces the failure.
 */
async function refusalOnFreshLookup(app: AppContext, request: Request): Promise<Response | undefined> {
  const d = decisions.get(request)
  if (!d || d.confirmed) return
  const who = await d.decided.catch(() => undefined)
  if (!who?.remembered) return
  keyMemory(app).delete(who.remembered.digest)
  const policy = d.policy
  try {
    admit((await identify(app, request, policy, false)).caller, policy)
  } catch (e) {
    if (!(e instanceof ApiError)) return
    const refusal = apiErrorResponse(e)
    if (policy.challenge && e.status === 401) refusal.headers.set('www-authenticate', policy.challenge)
    return refusal
  }
}

function sentence(policy: Policy): string {
  const parts: string[] = []
  const needed = anyOf(policy.permission)
  if (policy.companyKeyOnly) parts.push('Company key or owner (`company.admin`) only: any other employee gets 403 `FORBIDDEN`.')
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

/** Handlers of `tx: 'none'` routes get this: using it is a bug the first request shows. */
const NO_RUN: Run = () => {
  throw new Error('this route declared tx: none')
}

/**
 * The one route policy: a named plugin whose `policy` macro authenticates (before the body is read), checks the
 * module flag, the permission and client scope, hands the handler `{ caller, run }` and documents all of that in
 * the route's OpenAPI entry. Everything a request does on the database happens inside `run` (runWork above).
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
        const who = await gate(app, request, policy, set)
        if ((policy.tx ?? 'read') === 'none') return { caller: who.caller, run: NO_RUN }
        const run: Run = (work) => runWork(app, request, policy, who, set, () => requestFingerprint(request.method, path, body), work)
        return { caller: who.caller, run }
      },
    }),
  })

/**
 * The refusals of remembered callers (refusalOnFreshLookup), registered before the errors plugin so that its answer
 * to a request whose remembered caller no longer holds wins.
 */
export const freshRefusals = (app: AppContext) =>
  new Elysia({ name: 'fresh-refusals', seed: appSeed(app) }).onError({ as: 'global' }, ({ request }) => refusalOnFreshLookup(app, request))
