import { t } from 'elysia'
import { DateTime, pageQuery, MoneyOut } from '../../lib/models'
import { DocumentModel, NUMBER_RULE } from './document'

const TYPE_DOC = '0 = internal caja, 1 = external running account'
/**
 * Exactly the numbers 0 and 1: the framework's own integer also reads "0" and "1", and a union of literals is
 * rendered by the OpenAPI generator as a string enum; a whole number (`multipleOf: 1`) is documented as `integer`.
 */
const clientType = t.Number({ multipleOf: 1, minimum: 0, maximum: 1, enum: [0, 1], description: TYPE_DOC })
/** Query strings arrive as text; Elysia's t.Integer reads "0"/"1" there. */
const clientTypeQuery = t.Integer({ minimum: 0, maximum: 1, description: `${TYPE_DOC}; omitted means both` })
const refId = t.Integer({ minimum: 1, maximum: 2147483647 })
const currencyName = t.String({ minLength: 1, maxLength: 50, description: 'Currency of the account, e.g. USD, ARS' })
const accountName = t.String({
  minLength: 1,
  maxLength: 200,
  description: 'Account name; when omitted the account is named after its currency (`currency_name`).',
})

const tag = t.Object({
  id: t.Integer(),
  name: t.String(),
  color: t.String({ description: 'Hex color #RRGGBB' }),
  company_id: t.Integer(),
  created_at: DateTime,
  updated_at: DateTime,
}, { $id: 'Tag' })

const account = t.Object({
  id: t.Integer(),
  name: t.String(),
  currency_name: t.String(),
  client_id: t.Integer(),
  balance: MoneyOut('Balance'),
  created_at: DateTime,
  updated_at: DateTime,
}, { $id: 'Account' })

const clientTag = t.Object({
  id: t.Integer(),
  client_id: t.Integer(),
  tag_id: t.Integer(),
  created_at: DateTime,
  tag,
}, { $id: 'ClientTag' })

const client = t.Object({
  id: t.Integer(),
  name: t.String(),
  description: t.String(),
  company_id: t.Integer(),
  type: clientType,
  document: t.Nullable(DocumentModel.output),
  created_at: DateTime,
  updated_at: DateTime,
  accounts: t.Array(account),
  client_tags: t.Array(clientTag),
}, { $id: 'Client' })

const documentInput = t.Optional(
  t.Nullable(DocumentModel.input, {
    description: `The customer's identity document; null for none. Unique among the company's live clients by type and number (409 \`DOCUMENT_TAKEN\`). ${NUMBER_RULE}`,
  }),
)

const accountCreate = t.Object({ name: t.Optional(accountName), currency_name: currencyName }, { additionalProperties: false })

const create = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 200 }),
    description: t.Optional(t.String({ maxLength: 2000 })),
    type: clientType,
    document: documentInput,
    accounts: t.Optional(t.Array(accountCreate, { maxItems: 100, description: 'Optional: a walk-in customer (type 1) may have none' })),
    tag_ids: t.Optional(t.Array(refId, { maxItems: 100, uniqueItems: true })),
  },
  { additionalProperties: false },
)

export const ClientModel = {
  client,
  account,
  tag,
  clientTag,
  listQuery: t.Object({
    ...pageQuery(200),
    description: t.Optional(t.String({ maxLength: 200, description: "Case-insensitive part of the client's description" })),
    search: t.Optional(
      t.String({
        maxLength: 200,
        description: "Case-insensitive part of the client's name or of its description (`%` and `_` are literal). An addition beyond the contract.",
      }),
    ),
    ids: t.Optional(
      t.String({
        maxLength: 2400,
        description: 'Only these clients: a comma-separated list of up to 200 client ids, e.g. `3,17,42`. An addition beyond the contract.',
      }),
    ),
    account_ids: t.Optional(
      t.String({
        maxLength: 2400,
        description: 'Only the clients holding these accounts: a comma-separated list of up to 200 account ids. An addition beyond the contract.',
      }),
    ),
    type: t.Optional(clientTypeQuery),
    document: t.Optional(t.String({ minLength: 1, maxLength: 60, description: `A document number, matched exactly whatever the document's type. ${NUMBER_RULE}` })),
  }),
  list: t.Object({ data: t.Array(client), count: t.Integer({ description: 'Number of clients matching the filters, over all pages' }) }),
  create,
  batch: t.Object({ clients: t.Array(create, { minItems: 1, maxItems: 1000 }) }, { additionalProperties: false }),
  batchCreated: t.Object({ data: t.Array(client) }),
  update: t.Object(
    {
      name: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
      description: t.Optional(t.String({ maxLength: 2000 })),
      type: t.Optional(clientType),
      document: documentInput,
    },
    { additionalProperties: false },
  ),
  accountCreate,
  tagCreate: t.Object(
    {
      name: t.String({ minLength: 1, maxLength: 100 }),
      color: t.String({ pattern: '^#[0-9A-Fa-f]{6}$', maxLength: 7, description: 'Hex color #RRGGBB' }),
    },
    { additionalProperties: false },
  ),
  tagAttach: t.Object({ tag_id: refId }, { additionalProperties: false }),
  balances: t.Object({
    data: t.Array(
      t.Object({
        currency: t.String(),
        cajas: MoneyOut('Sum of balances of internal cajas (type 0) in this currency'),
        accounts: MoneyOut('Sum of balances of external accounts (type 1) in this currency'),
      }),
    ),
  }),
}
