import { t } from 'elysia'

const timezone = t.String({ minLength: 1, maxLength: 64, description: 'IANA time zone, e.g. America/Argentina/Buenos_Aires' })

export const CompanyModel = {
  create: t.Object({ name: t.String({ minLength: 1, maxLength: 200 }), timezone: t.Optional(timezone) }, { additionalProperties: false }),
  update: t.Object(
    {
      name: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
      timezone: t.Optional(timezone),
      modules: t.Optional(
        t.Object({ mesas: t.Optional(t.Boolean()), ventanilla: t.Optional(t.Boolean()) }, { additionalProperties: false }),
      ),
    },
    { additionalProperties: false },
  ),
  company: t.Object({
    id: t.Integer(),
    name: t.String(),
    timezone: t.String(),
    modules: t.Object({ mesas: t.Boolean(), ventanilla: t.Boolean() }),
  }, { $id: 'Company' }),
}
