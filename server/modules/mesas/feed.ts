import type { Tx } from '../../plugins/database'

/**
 * Called by the ledger in the same database transaction after an operation is created or changes status,
 * so the auto-fed blotter follows the operation (line added when its legs count, dropped on cancel).
 */
export async function syncMesaLines(_tx: Tx, _companyId: number, _operationId: number): Promise<void> {}
