import { t } from 'elysia'
import { PERMISSIONS } from '../../access/caller'

const permission = t.Union(PERMISSIONS.map((p) => t.Literal(p)))
const password = t.String({
  minLength: 12,
  maxLength: 200,
  description: 'For signing in to the counter apps (`POST /api/sessions`): 12–200 characters, kept only as a slow salted hash (argon2id); never answered. Changing it ends the employee’s sessions.',
})
const clientIds = t.Array(t.Integer({ minimum: 1, maximum: 2147483647 }), { maxItems: 1000, uniqueItems: true })

export const EmployeeModel = {
  create: t.Object(
    {
      email: t.String({ format: 'email', maxLength: 254 }),
      name: t.String({ minLength: 1, maxLength: 200 }),
      permissions: t.Array(permission, { uniqueItems: true, maxItems: PERMISSIONS.length }),
      client_ids: t.Optional(clientIds),
      password: t.Optional(password),
    },
    { additionalProperties: false },
  ),
  update: t.Object(
    {
      email: t.Optional(t.String({ format: 'email', maxLength: 254 })),
      name: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
      permissions: t.Optional(t.Array(permission, { uniqueItems: true, maxItems: PERMISSIONS.length })),
      client_ids: t.Optional(clientIds),
      password: t.Optional(password),
    },
    { additionalProperties: false },
  ),
  employee: t.Object({
    id: t.Integer(),
    email: t.String(),
    name: t.String(),
    permissions: t.Array(t.String()),
    client_ids: t.Array(t.Integer()),
  }, { $id: 'Employee' }),
}
