import { t } from 'elysia'
import { DateTime } from '../../lib/models'

const employee = t.Object({
  id: t.Integer(),
  email: t.String(),
  name: t.String(),
  permissions: t.Array(t.String()),
  client_ids: t.Array(t.Integer()),
})

export const SessionModel = {
  create: t.Object(
    {
      company_id: t.Integer({ minimum: 1, maximum: 2147483647 }),
      email: t.String({ minLength: 1, maxLength: 320 }),
      password: t.String({ minLength: 1, maxLength: 200 }),
    },
    { additionalProperties: false },
  ),
  session: t.Object({
    employee,
    company: t.Object(
      { id: t.Integer(), name: t.String(), timezone: t.String({ description: 'IANA zone: the apps show times in it' }) },
      { description: 'The company the session was opened in' },
    ),
    expires_at: DateTime,
  }),
}
