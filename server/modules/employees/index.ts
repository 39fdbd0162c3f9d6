import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { issueKey, KeyModel } from '../../access/keys'
import { routePolicy } from '../../access/policy'
import { errors, IdParams } from '../../lib/models'
import { EmployeeModel } from './model'
import { createEmployee, deleteEmployee, getEmployee, employeeDto, listEmployees, revokeKey, updateEmployee } from './service'

const Deleted = t.Object({ deleted: t.Literal(true) })
const detail = (summary: string) => ({ tags: ['Employees and keys'], summary })

export const employeesModule = (app: AppContext) =>
  new Elysia({ prefix: '/api' })
    .use(routePolicy(app))
    .post('/employees', ({ run, body }) => run((tx, caller) => createEmployee(tx, caller, body)), {
      policy: { companyKeyOnly: true, idempotent: true },
      body: EmployeeModel.create,
      response: { 201: EmployeeModel.employee, ...errors(400, 409, 422) },
      detail: detail('Create an employee'),
    })
    .get('/employees', ({ run }) => run(async (tx, caller) => ({ data: await listEmployees(tx, caller) })), {
      policy: { companyKeyOnly: true },
      response: { 200: t.Object({ data: t.Array(EmployeeModel.employee) }) },
      detail: detail('List employees'),
    })
    .get('/employees/:id', ({ run, params }) => run(async (tx, caller) => employeeDto(await getEmployee(tx, caller, params.id))), {
      policy: { companyKeyOnly: true },
      params: IdParams,
      response: { 200: EmployeeModel.employee },
      detail: detail('Get an employee'),
    })
    .patch('/employees/:id', ({ run, params, body }) => run((tx, caller) => updateEmployee(tx, caller, params.id, body)), {
      policy: { companyKeyOnly: true, tx: 'write' },
      params: IdParams,
      body: EmployeeModel.update,
      response: { 200: EmployeeModel.employee, ...errors(409, 422) },
      detail: detail('Update an employee'),
    })
    .delete('/employees/:id', ({ run, params }) => run((tx, caller) => deleteEmployee(tx, caller, params.id)), {
      policy: { companyKeyOnly: true, tx: 'write' },
      params: IdParams,
      response: { 200: Deleted },
      detail: detail('Delete an employee (soft); its keys stop working'),
    })
    .post(
      '/employees/:id/api-keys',
      ({ run, params, body }) => run(async (tx, caller) => {
        await getEmployee(tx, caller, params.id)
        return issueKey(tx, caller.companyId, params.id, body.name)
      }),
      {
        // Not replayable by Idempotency-Key: the secret is never stored, so a second answer could not repeat it.
        policy: { companyKeyOnly: true, tx: 'write', status: 201 },
        params: IdParams,
        body: KeyModel.create,
        response: { 201: KeyModel.issued },
        detail: detail('Issue an employee API key (the secret is shown only once)'),
      },
    )
    .delete('/api-keys/:id', ({ run, params }) => run((tx, caller) => revokeKey(tx, caller, params.id)), {
      policy: { companyKeyOnly: true, tx: 'write' },
      params: IdParams,
      response: { 200: Deleted },
      detail: detail('Revoke an API key of the company'),
    })
