import { t } from 'elysia'
import { CompanyModel } from '../superadmin/model'
import { EmployeeModel } from '../employees/model'

export const SetupModel = {
  create: t.Object(
    {
      token: t.String({ minLength: 1, maxLength: 200, description: 'The token of the setup link printed at start (after `#`)' }),
      company: t.Object(
        {
          name: t.String({ minLength: 1, maxLength: 200 }),
          timezone: t.Optional(t.String({ minLength: 1, maxLength: 64, description: 'IANA time zone; default America/Argentina/Buenos_Aires' })),
          modules: t.Optional(t.Object({ mesas: t.Optional(t.Boolean()), ventanilla: t.Optional(t.Boolean()) }, { additionalProperties: false })),
        },
        { additionalProperties: false },
      ),
      owner: t.Object(
        {
          email: t.String({ format: 'email', maxLength: 254 }),
          name: t.String({ minLength: 1, maxLength: 200 }),
          password: t.String({ minLength: 12, maxLength: 200, description: '12–200 characters; kept only as a slow salted hash' }),
        },
        { additionalProperties: false },
      ),
      starter: t.Optional(
        t.Boolean({
          default: false,
          description:
            'A ready start: the caja "Caja principal" with accounts ARS, USD, EUR and BRL; operation types "Compra de divisas" and "Venta de divisas" (exchange), "Ingreso" and "Egreso" (up_down), "Ajuste de caja" (other); transaction types "Capital" and "Comisión" (is_commission). Default false: the company has no records.',
        }),
      ),
    },
    { additionalProperties: false },
  ),
  created: t.Object({ company: CompanyModel.company, employee: EmployeeModel.employee }),
}
