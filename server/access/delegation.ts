import { forbidden } from '../lib/errors'
import { actsAsCompany, type Caller } from './caller'

/** What a caller acting on employees may see of one: enough to tell whether it holds more than the caller. */
export interface ManagedEmployee {
  id: number
  permissions: string[]
  clientIds: number[]
}

const OWNER = 'company.admin'

/**
 * The limits of `employees.manage`, for a caller that is neither a company key nor an owner: what it hands out, or
 * lets someone else use, must be within what it holds itself. Otherwise a manager could mint itself a stronger
 * colleague, or a key to one, and act through it.
 *
 * - `target`, when given, is an employee acted on (updated, deleted, given a key or password, a key revoked): never
 *   an owner, and never one holding a permission or reaching a client the caller does not.
 * - `permissions` (and `clientIds`), when given, is what the target is to hold: every permission added or taken
 *   away must be one the caller holds; a caller limited to clients may only give a limit within its own.
 * - Only a company key or an owner grants or removes `company.admin`, and nobody but them changes their own
 *   permissions.
 */
export function checkDelegation(
  caller: Caller,
  change: { target?: ManagedEmployee; permissions?: string[]; clientIds?: number[] },
) {
  const before = change.target?.permissions ?? []
  const after = change.permissions
  if (after !== undefined && before.includes(OWNER) !== after.includes(OWNER) && !actsAsCompany(caller))
    throw forbidden('Only a company key or an owner may grant or remove company.admin')
  if (actsAsCompany(caller)) return
  const me = caller.employee!
  const held = new Set(me.permissions)
  const { target } = change
  if (target) {
    if (target.permissions.includes(OWNER)) throw forbidden('An owner is managed only by a company key or another owner')
    const beyond = target.permissions.filter((p) => !held.has(p))
    if (beyond.length) throw forbidden(`This employee holds permissions you do not: ${beyond.join(', ')}`)
    if (!withinScope(me.clientIds, target.clientIds)) throw forbidden('This employee reaches clients you do not')
  }
  if (after !== undefined) {
    if (target?.id === me.id && !sameSet(before, after)) throw forbidden('Nobody changes their own permissions')
    const changed = [...after.filter((p) => !before.includes(p)), ...before.filter((p) => !after.includes(p))]
    const lacking = changed.filter((p) => !held.has(p))
    if (lacking.length) throw forbidden(`You cannot grant or remove permissions you do not hold: ${lacking.join(', ')}`)
  }
  const clientIds = change.clientIds ?? (target ? undefined : [])
  if (clientIds !== undefined && !withinScope(me.clientIds, clientIds)) throw forbidden('You cannot give access to clients you do not reach')
}

/** Whether a client limit (`[]`: none, every client) stays within the caller's (`[]`: every client). */
function withinScope(mine: number[], theirs: number[]) {
  if (mine.length === 0) return true
  return theirs.length > 0 && theirs.every((id) => mine.includes(id))
}

const sameSet = (a: string[], b: string[]) => a.length === b.length && a.every((p) => b.includes(p))
