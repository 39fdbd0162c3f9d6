import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { auth, requireCompanyKey } from '../../access/caller'
import { errors, IdParams } from '../../lib/models'
import { createOnce, write } from '../../lib/write'
import { CompanyModel } from '../superadmin/model'
import { issueKey } from '../superadmin/service'
import { EmployeeModel } from './model'
import { createEmployee, deleteEmployee, getEmployee, employeeDto, listEmployees, revokeKey, updateEmployee } from './service'

const Deleted = t.Object({ deleted: t.Literal(true) })
const detail = (summary: string) => ({ tags: ['Employees and keys'], summary, description: 'Company key only; an employee key gets 403 FORBIDDEN.' })

export const employeesModule = (app: AppContext) =>
  new Elysia({ prefix: '/api' })
    .use(auth(app))
    .onBeforeHandle(({ caller }) => requireCompanyKey(caller))
    .post(
      '/employees',
      ({ caller, body, headers, set }) =>
        createOnce(app, caller, { key: headers['idempotency-key'], method: 'POST', path: '/api/employees', fingerprint: body }, set, (tx) =>
          createEmployee(tx, caller, body),
        ),
      { body: EmployeeModel.create, response: { 201: EmployeeModel.employee, ...errors(400, 401, 403, 409, 422) }, detail: detail('Create an employee') },
    )
    .get('/employees', async ({ caller }) => ({ data: await listEmployees(app.db, caller) }), {
      response: { 200: t.Object({ data: t.Array(EmployeeModel.employee) }), ...errors(401, 403) },
      detail: detail('List employees'),
    })
    .get('/employees/:id', async ({ caller, params }) => employeeDto(await getEmployee(app.db, caller, params.id)), {
      params: IdParams,
      response: { 200: EmployeeModel.employee, ...errors(400, 401, 403, 404) },
      detail: detail('Get an employee'),
    })
    .patch('/employees/:id', ({ caller, params, body }) => write(app, caller, (tx) => updateEmployee(tx, caller, params.id, body)), {
      params: IdParams,
      body: EmployeeModel.update,
      response: { 200: EmployeeModel.employee, ...errors(400, 401, 403, 404, 409, 422) },
      detail: detail('Update an employee'),
    })
    .delete('/employees/:id', ({ caller, params }) => write(app, caller, (tx) => deleteEmployee(tx, caller, params.id)), {
      params: IdParams,
      response: { 200: Deleted, ...errors(400, 401, 403, 404) },
      detail: detail('Delete an employee (soft); its keys stop working'),
    })
    .post(
      '/employees/:id/api-keys',
      // Not replayable by Idempotency-Key: the secret is never stored, so a second answer could not repeat it.
      async ({ caller, params, body, set }) => {
        const key = await write(app, caller, async (tx) => {
          await getEmployee(tx, caller, params.id)
          return issueKey(tx, caller.companyId, params.id, body.name)
        })
        set.status = 201
        return key
      },
      {
        params: IdParams,
        body: CompanyModel.keyCreate,
        response: { 201: CompanyModel.issuedKey, ...errors(400, 401, 403, 404) },
        detail: detail('Issue an employee API key (the secret is shown only once)'),
      },
    )
    .delete('/api-keys/:id', ({ caller, params }) => write(app, caller, (tx) => revokeKey(tx, caller, params.id)), {
      params: IdParams,
      response: { 200: Deleted, ...errors(400, 401, 403, 404) },
      detail: detail('Revoke an API key of the company'),
    })
