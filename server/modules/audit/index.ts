import { Elysia } from 'elysia'
import type { AppContext } from '../../context'
import { auth, requirePermission } from '../../access/caller'
import { errors } from '../../lib/models'
import { readSnapshot } from '../../lib/write'
import { AuditModel } from './model'
import { listAuditLogs } from './service'

export const auditModule = (app: AppContext) =>
  new Elysia({ prefix: '/api' })
    .use(auth(app))
    .get(
      '/audit-logs',
      ({ caller, query }) => {
        requirePermission(caller, 'audit.view')
        // One snapshot, so the total agrees with the page; row-level security confines it to the company as well.
        return readSnapshot(app.db, caller.companyId, (tx) => listAuditLogs(tx, caller, query))
      },
      {
        query: AuditModel.query,
        response: { 200: AuditModel.page, ...errors(400, 401, 403) },
        detail: {
          tags: ['Audit'],
          summary: 'Read the audit trail of the company',
          description: [
            'Every insert, update and delete of every company table, written by the database in the same transaction, newest first',
            '(`timestamp` descending, then `id` descending). The company of the changed row decides who sees it, never the actor.',
            'pageSize defaults to 50, at most 100. An employee key needs `audit.view`; a company key sees the whole company.',
            'An employee limited to some clients sees only rows of operations and transactions visible under that limit; any other',
            '`table` gives that employee an empty page. `actor` names the current employee with the recorded email (id and name',
            'null when there is none, all fields null for a company-key write). `channel_detail` is `{}` when the row has no channel.',
          ].join(' '),
        },
      },
    )
