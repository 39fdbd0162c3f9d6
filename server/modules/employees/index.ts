import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { issueKey, KeyModel } from '../../access/keys'
import { routePolicy } from '../../access/policy'
import { errors, IdParams, pageQuery, Pagination } from '../../lib/models'
import { EmployeeModel } from './model'
import { createEmployee, deleteEmployee, getEmployee, employeeDto, issueEmployeeKey, listEmployees, listKeys, revokeKey, updateEmployee } from './service'

const Deleted = t.Object({ deleted: t.Literal(true) })
const detail = (summary: string, description?: string) => ({ tags: ['Employees and keys'], summary, ...(description && { description }) })

/** A company key, an owner, or an employee with `employees.manage` within its limits (server/access/delegation.ts). */
const MANAGE = { permission: 'employees.manage' } as const
/** The key total, as every route that issues a key says it. */
const KEY_TOTAL =
  'A company holds at most `MAX_API_KEYS_PER_COMPANY` (default 200) live keys, company and employee keys together: one more is 409 `API_KEY_LIMIT_REACHED` (revoke one first).'
const LIMITS =
  'With `employees.manage` (not an owner): only within the permissions and clients the caller holds itself (granting or removing one it lacks → 403), never on an owner or on an employee holding more than the caller (403), never its own permissions (403). Only a company key or an owner grants or removes `company.admin`.'

export const employeesModule = (app: AppContext) =>
  new Elysia({ prefix: '/api' })
    .use(routePolicy(app))
    .post('/employees', ({ run, body }) => run((tx, caller) => createEmployee(tx, caller, body)), {
      policy: { ...MANAGE, idempotent: true },
      body: EmployeeModel.create,
      response: { 201: EmployeeModel.employee, ...errors(400, 403, 409, 422) },
      detail: detail('Create an employee', LIMITS),
    })
    .get('/employees', ({ run }) => run(async (tx, caller) => ({ data: await listEmployees(tx, caller) })), {
      policy: MANAGE,
      response: { 200: t.Object({ data: t.Array(EmployeeModel.employee) }) },
      detail: detail('List employees'),
    })
    .get('/employees/:id', ({ run, params }) => run(async (tx, caller) => employeeDto(await getEmployee(tx, caller, params.id))), {
      policy: MANAGE,
      params: IdParams,
      response: { 200: EmployeeModel.employee },
      detail: detail('Get an employee'),
    })
    .patch('/employees/:id', ({ run, params, body }) => run((tx, caller) => updateEmployee(tx, caller, params.id, body)), {
      policy: { ...MANAGE, tx: 'write' },
      params: IdParams,
      body: EmployeeModel.update,
      response: { 200: EmployeeModel.employee, ...errors(403, 409, 422) },
      detail: detail('Update an employee', LIMITS),
    })
    .delete('/employees/:id', ({ run, params }) => run((tx, caller) => deleteEmployee(tx, caller, params.id)), {
      policy: { ...MANAGE, tx: 'write' },
      params: IdParams,
      response: { 200: Deleted },
      detail: detail('Delete an employee (soft); its keys stop working', LIMITS),
    })
    .post(
      '/employees/:id/api-keys',
      ({ run, params, body }) => run((tx, caller) => issueEmployeeKey(tx, caller, params.id, body.name, app.config.maxApiKeysPerCompany)),
      {
        // Not replayable by Idempotency-Key: the secret is never stored, so a second answer could not repeat it.
        policy: { ...MANAGE, tx: 'write', status: 201 },
        params: IdParams,
        body: KeyModel.create,
        response: { 201: KeyModel.issued, ...errors(409) },
        detail: detail('Issue an employee API key (the secret is shown only once)', `${LIMITS} ${KEY_TOTAL}`),
      },
    )
    .post('/api-keys', ({ run, body }) => run((tx, caller) => issueKey(tx, caller.companyId, null, body.name, app.config.maxApiKeysPerCompany)), {
      // Not replayable by Idempotency-Key, for the same reason.
      policy: { companyKeyOnly: true, tx: 'write', status: 201 },
      body: KeyModel.create,
      response: { 201: KeyModel.issued, ...errors(400, 409) },
      detail: detail('Issue a company API key (the secret is shown only once)', `The key holds every permission, as the company itself. ${KEY_TOTAL}`),
    })
    .get('/api-keys', ({ run, query }) => run((tx, caller) => listKeys(tx, caller, query.page ?? 1, query.pageSize ?? 50)), {
      policy: { companyKeyOnly: true },
      query: t.Object(pageQuery()),
      response: { 200: t.Object({ data: t.Array(KeyModel.listed), pagination: Pagination }) },
      detail: detail(
        'List the company\'s live API keys (without their values)',
        '`employee_id` is null for a company key. Keys of deleted employees, which no longer work, are left out. Oldest first, a page at a time: `page` (from 1) and `pageSize` (default 50, at most 200); `data` as before, with `pagination: { page, pageSize, total, totalPages }` beside it.',
      ),
    })
    .delete('/api-keys/:id', ({ run, params }) => run((tx, caller) => revokeKey(tx, caller, params.id)), {
      policy: { ...MANAGE, tx: 'write' },
      params: IdParams,
      response: { 200: Deleted },
      detail: detail(
        'Revoke an API key of the company',
        'With `employees.manage` (not an owner): only the keys of employees the caller may manage; a company key → 403.',
      ),
    })
