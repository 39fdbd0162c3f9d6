import { can, session } from './session'

/** Only an owner (or the company key) issues, lists and revokes company API keys (contract §15). */
export const isOwner = () => session()?.employee.permissions.includes('company.admin') ?? false

/** Webhooks and the event feed: `webhooks.manage` without a client scope (contract §11). */
export const canHooks = () => can('webhooks.manage') && (session()?.employee.client_ids.length ?? 0) === 0
