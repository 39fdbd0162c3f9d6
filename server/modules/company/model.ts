import { t } from 'elysia'
import { MoneyOut, NonNegativeMoney } from '../../lib/models'

const optionalText = (max: number, description: string) =>
  t.Optional(t.Nullable(t.String({ maxLength: max, description: `${description}; at most ${max} characters, trimmed; null or "" clears it` })))

const profile = t.Object(
  {
    id: t.Integer({ description: 'The company number (the one the sign-in pages ask for)' }),
    name: t.String(),
    timezone: t.String({ description: 'IANA time zone' }),
    modules: t.Object({ mesas: t.Boolean(), ventanilla: t.Boolean() }),
    legal_name: t.Nullable(t.String({ description: 'Razón social printed on receipts; null until set' })),
    tax_id: t.Nullable(t.String({ description: 'Tax id printed on receipts (a CUIT such as 30-71234567-9); null until set' })),
    address: t.Nullable(t.String({ description: 'Address printed on receipts; null until set' })),
    license: t.Nullable(t.String({ description: 'Exchange-house registration printed on receipts; null until set' })),
    receipt_point: t.Integer({ minimum: 1, maximum: 99999, description: 'Point of sale receipts are numbered under (the PPPPP of PPPPP-NNNNNNNN)' }),
    local_currency: t.String({ description: 'The currency exchanges are settled in (3 capital letters)' }),
    till_tolerance: MoneyOut('Largest till count difference a close may have without `tills.supervise`'),
  },
  { $id: 'CompanyProfile' },
)

export const CompanyProfileModel = {
  profile,
  update: t.Object(
    {
      name: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
      timezone: t.Optional(t.String({ minLength: 1, maxLength: 64, description: 'IANA time zone, e.g. America/Argentina/Buenos_Aires' })),
      local_currency: t.Optional(t.String({ pattern: '^[A-Z]{3}$', minLength: 3, maxLength: 3, description: '3 capital letters, e.g. ARS' })),
      till_tolerance: t.Optional(NonNegativeMoney('Till tolerance')),
      legal_name: optionalText(200, 'Legal name (razón social)'),
      tax_id: optionalText(20, 'Tax id, e.g. a CUIT 30-71234567-9'),
      address: optionalText(300, 'Address'),
      license: optionalText(100, 'Exchange-house registration'),
      // A whole JSON number: the framework's integer would also read the text "3".
      receipt_point: t.Optional(t.Number({ multipleOf: 1, minimum: 1, maximum: 99999, description: 'Point of sale, a whole number 1–99999' })),
    },
    { additionalProperties: false },
  ),
}

export type CompanyProfile = typeof profile.static
export type CompanyProfileUpdate = typeof CompanyProfileModel.update.static
