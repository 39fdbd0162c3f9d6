import { and, asc, eq, inArray, isNull, sql, type Placeholder, type SQL } from 'drizzle-orm'
import { accounts, clients, clientTags, tags } from '../../../db/schema'
import { rowsOf, type Executor, type Tx } from '../../../db/client'
import { fixedStatement, statementsByShape } from '../../../db/statement'
import { clientScope, type Caller } from '../../access/caller'
import { ApiError, conflict, invalid, isUniqueViolation, notFound, unprocessable } from '../../lib/errors'
import { announce, announceAll, type DomainEvent } from '../../lib/events'
import { arrayLiteral, groupBy, pgArray } from '../../lib/arrays'
import { dec, toJson } from '../../lib/money'
import { isoSql } from '../../lib/time'
import { drawnIds, insertOne, insertPlanned, type KeyCheckPlans } from '../../lib/write'
import { checkDocument, documentOf, searchNumber, type ClientDocument, type DocumentInput } from './document'

type ClientRow = typeof clients.$inferSelect
type AccountRow = typeof accounts.$inferSelect
type TagRow = typeof tags.$inferSelect
type ClientTagRow = typeof clientTags.$inferSelect

export const tagDto = (t: TagRow) => ({
  id: t.id,
  name: t.name,
  color: t.color,
  company_id: t.companyId,
  created_at: t.createdAt.toISOString(),
  updated_at: t.updatedAt.toISOString(),
})

export const accountDto = (a: AccountRow) => ({
  id: a.id,
  name: a.name,
  currency_name: a.currencyName,
  client_id: a.clientId,
  balance: toJson(a.balance),
  created_at: a.createdAt.toISOString(),
  updated_at: a.updatedAt.toISOString(),
})

export const clientTagDto = (ct: ClientTagRow, tag: TagRow) => ({
  id: ct.id,
  client_id: ct.clientId,
  tag_id: ct.tagId,
  created_at: ct.createdAt.toISOString(),
  tag: tagDto(tag),
})

const clientDto = (c: ClientRow, accs: AccountRow[], cts: { ct: ClientTagRow; tag: TagRow }[]) => ({
  id: c.id,
  name: c.name,
  description: c.description,
  company_id: c.companyId,
  type: c.type,
  document: documentOf(c),
  created_at: c.createdAt.toISOString(),
  updated_at: c.updatedAt.toISOString(),
  accounts: accs.map(accountDto),
  client_tags: cts.map(({ ct, tag }) => clientTagDto(ct, tag)),
})

/** Accounts and tags of many clients in two queries, whatever the page size. */
async function withChildren(db: Executor, rows: ClientRow[]) {
  if (rows.length === 0) return []
  const ids = rows.map((r) => r.id)
  const accs = await db.select().from(accounts).where(inArray(accounts.clientId, ids)).orderBy(asc(accounts.id)).prepare('client_accounts').execute()
  const cts = await db
    .select({ ct: clientTags, tag: tags })
    .from(clientTags)
    .innerJoin(tags, eq(tags.id, clientTags.tagId))
    .where(inArray(clientTags.clientId, ids))
    .orderBy(asc(clientTags.id))
    .prepare('client_tags')
    .execute()
  const accsBy = groupBy(accs, (a) => a.clientId)
  const tagsBy = groupBy(cts, (x) => x.ct.clientId)
  return rows.map((r) => clientDto(r, accsBy.get(r.id) ?? [], tagsBy.get(r.id) ?? []))
}

/** The caller's live clients: of its company, not deleted, and inside an employee's client scope (others are 404). */
const live = (caller: Caller) => {
  const scope = clientScope(caller)
  return and(eq(clients.companyId, caller.companyId), isNull(clients.deletedAt), scope ? inArray(clients.id, scope) : undefined)
}

/** `%`, `_` and the escape character itself are literal in the description filter. */
export const likeLiteral = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`)

/** The filters of `GET /api/clients` as the route hands them over (all optional, combined with and). */
export interface ClientListQuery {
  page?: number
  pageSize?: number
  description?: string
  search?: string
  type?: number
  document?: string
  ids?: string
  account_ids?: string
}

/** The most ids one `ids` or `account_ids` filter takes: one page of the largest size holds every match. */
export const MAX_LISTED_IDS = 200

/** A comma list of ids (`3,17,42`), each a positive 32-bit integer, duplicates dropped; anything else is 400. */
function idList(field: 'ids' | 'account_ids', raw: string): number[] {
  const ids = raw.split(',').map((part) => (/^[1-9]\d{0,9}$/.test(part.trim()) ? Number(part.trim()) : NaN))
  if (ids.some((id) => !(id <= 2147483647)) || ids.length > MAX_LISTED_IDS)
    throw invalid(`Invalid ${field}`, [{ field, message: `a comma-separated list of 1 to ${MAX_LISTED_IDS} ids, each a positive integer up to 2147483647` }])
  return [...new Set(ids)]
}

/**
 * The list in one statement, and Postgres assembles the whole answer as JSON text, so a page costs one round trip
 * and neither row mapping nor re-serialising here (the hot read path: 50 clients with accounts and tags are
 * ~44 kB). Without a text filter, a list of ids or a client scope the page is read from the (company, [type,] name)
 * index, stopping at its last row, and the count walks the same index without sorting anything: for a company of
 * 50,000 clients 15–26 ms against 37–75 ms when every match was gathered, sorted for the page and counted again. A
 * description or search filter finds its matches through the `clients_search` trigram index (see `TextCheck`), and
 * a scope or a list of ids names its few clients, so those matches are gathered once and both paged and counted. One statement is one snapshot, so `count` always agrees with the page. Balances leave as JSON
 * numbers straight from `numeric`, the same figure `toJson` gives; the shape is the one `getClient` answers (tests
 * compare them field by field).
 */
export async function listClients(db: Executor, caller: Caller, q: ClientListQuery) {
  const page = q.page ?? 1
  const pageSize = q.pageSize ?? 50
  const scope = clientScope(caller)
  const document = q.document === undefined ? null : searchNumber(q.document)
  const ids = q.ids === undefined ? null : idList('ids', q.ids)
  const accountIds = q.account_ids === undefined ? null : idList('account_ids', q.account_ids)
  const shape: PageShape = {
    scoped: Boolean(scope),
    typed: q.type !== undefined,
    described: textFilter(q.description),
    searched: textFilter(q.search),
    documented: document !== null,
    listed: ids !== null,
    byAccount: accountIds !== null,
  }
  const [row] = rowsOf<{ body: string }>(
    await clientPage(shape)(db, {
      company: caller.companyId,
      scope: scope ? arrayLiteral(scope) : null,
      type: q.type ?? null,
      description: q.description ? textPattern(q.description) : null,
      search: q.search ? textPattern(q.search) : null,
      document,
      ids: ids ? arrayLiteral(ids) : null,
      accounts: accountIds ? arrayLiteral(accountIds) : null,
      limit: pageSize,
      offset: (page - 1) * pageSize,
    }),
  )
  return row.body
}

/**
 * How a text filter is checked: `trigrams` through the `clients_search` index (db/schema/clients.ts), `rows` one row
 * at a time over the company's rows. The index finds a word by its trigrams (runs of three letters or digits); a word
 * without one ("ar", "5 b") gives the index nothing to narrow by, and asking it anyway walks all of the company's
 * entries twice before reading the rows (232 ms for "ar" over 50,000 clients, against 92 row by row).
 */
type TextCheck = false | 'trigrams' | 'rows'

const textFilter = (text: string | undefined): TextCheck => (!text ? false : /[\p{L}\p{N}]{3}/u.test(text) ? 'trigrams' : 'rows')

/** The value of a text filter: an ILIKE pattern for the index, the bare text for the row-by-row check. */
const textPattern = (text: string) => (textFilter(text) === 'trigrams' ? `%${likeLiteral(text)}%` : text)

/**
 * A part of `column`, ignoring case. `strpos` over `lower` is what ILIKE does in a UTF-8 database (it lowers both
 * sides and compares), written so that the trigram index cannot take it.
 */
const containsText = (column: SQL, value: Placeholder, check: TextCheck) =>
  check === 'trigrams' ? sql`${column} ilike ${value}::text` : sql`strpos(lower(${column}), lower(${value}::text)) > 0`

/** Which filters a page statement has: each combination is its own prepared text. */
interface PageShape {
  scoped: boolean
  typed: boolean
  described: TextCheck
  searched: TextCheck
  documented: boolean
  listed: boolean
  byAccount: boolean
}

const clientPages = statementsByShape<ReturnType<typeof clientPageText>>()

const clientPage = (shape: PageShape) => clientPages(Object.values(shape), () => clientPageText(shape))

function clientPageText({ scoped, typed, described, searched, documented, listed, byAccount }: PageShape) {
  return fixedStatement<{
    company: number
    scope: string | null
    type: number | null
    description: string | null
    search: string | null
    document: string | null
    ids: string | null
    accounts: string | null
    limit: number
    offset: number
  }>((p) => {
    // A scope or a list of ids is read by primary key; `+ 0` keeps the planner from walking the company's index
    // instead, which it would when the company is missing from the statistics (26 ms for 3 scoped clients of 50,000,
    // against 0.2).
    const byKey = scoped || listed || byAccount
    const where = [byKey ? sql`c.company_id + 0 = ${p.company}::int` : sql`c.company_id = ${p.company}::int`, sql`c.deleted_at is null`]
    if (scoped) where.push(sql`c.id = any(${p.scope}::int[])`)
    if (listed) where.push(sql`c.id = any(${p.ids}::int[])`)
    // The owners of the accounts, read by the accounts' primary key; an account of another company names nobody.
    if (byAccount) where.push(sql`c.id in (select a.client_id from accounts a where a.id = any(${p.accounts}::int[]) and a.company_id = ${p.company}::int)`)
    if (typed) where.push(sql`c.type = ${p.type}::smallint`)
    if (described) where.push(containsText(sql`c.description`, p.description, described))
    if (searched) where.push(sql`(${containsText(sql`c.name`, p.search, searched)} or ${containsText(sql`c.description`, p.search, searched)})`)
    // Read from the (company, number) index: a document names one client, or a few of different types.
    if (documented) where.push(sql`c.document_number = ${p.document}::text`)
    const filter = sql.join(where, sql` and `)
    const byName = sql`order by name collate "C", id limit ${p.limit}::int offset ${p.offset}::int`
    const [gather, pageIds, count] =
      described || searched || documented || byKey
        ? [sql`with matches as materialized (select c.id, c.name from clients c where ${filter}) `, sql`select id from matches ${byName}`, sql`select count(*) from matches`]
        : [sql``, sql`select c.id from clients c where ${filter} ${byName}`, sql`select count(*) from clients c where ${filter}`]
    return sql`${gather}select json_build_object('data', coalesce((select json_agg(json_build_object(
              'id', p.id, 'name', p.name, 'description', p.description, 'company_id', p.company_id, 'type', p.type,
              'document', case when p.document_number is not null then json_build_object(
                'type', p.document_type, 'number', p.document_number, 'country', p.document_country) end,
              'created_at', ${isoSql(sql`p.created_at`)}, 'updated_at', ${isoSql(sql`p.updated_at`)},
              'accounts', coalesce((
                select json_agg(json_build_object(
                  'id', a.id, 'name', a.name, 'currency_name', a.currency_name, 'client_id', a.client_id, 'balance', trim_scale(a.balance),
                  'created_at', ${isoSql(sql`a.created_at`)}, 'updated_at', ${isoSql(sql`a.updated_at`)}) order by a.id)
                from accounts a where a.client_id = p.id), '[]'::json),
              'client_tags', coalesce((
                select json_agg(json_build_object(
                  'id', ct.id, 'client_id', ct.client_id, 'tag_id', ct.tag_id, 'created_at', ${isoSql(sql`ct.created_at`)},
                  'tag', json_build_object('id', t.id, 'name', t.name, 'color', t.color, 'company_id', t.company_id,
                    'created_at', ${isoSql(sql`t.created_at`)}, 'updated_at', ${isoSql(sql`t.updated_at`)})) order by ct.id)
                from client_tags ct join tags t on t.id = ct.tag_id where ct.client_id = p.id), '[]'::json)
            ) order by p.name collate "C", p.id) from clients p where p.id in (${pageIds})), '[]'::json),
          'count', (${count}))::text as body`
  })
}

async function clientRow(db: Executor, caller: Caller, id: number, lock = false) {
  const query = db.select().from(clients).where(and(eq(clients.id, id), live(caller)))
  const [row] = await (lock ? query.for('update').prepare('client_row_locked') : query.prepare('client_row')).execute()
  if (!row) throw notFound('Client')
  return row
}

export async function getClient(db: Executor, caller: Caller, id: number) {
  const [dto] = await withChildren(db, [await clientRow(db, caller, id)])
  return dto
}

export type CreateClientInput = {
  name: string
  description?: string
  type: number
  document?: DocumentInput | null
  accounts?: { name?: string; currency_name: string }[]
  tag_ids?: number[]
}

/** The most clients one batch may create. */
export const MAX_CLIENT_BATCH = 1000

type ClientDto = ReturnType<typeof clientDto>

const iso = (column: string) => isoSql(sql.raw(column))

/**
 * Clients, their accounts and tag links in one statement: client ids are drawn first, so accounts and tag links name
 * their client inside it; the foreign keys are checked at its end, when every row exists (their plans:
 * server/lib/write.ts). Accounts and links name their client by its place in the arrays, from 1.
 */
const INSERT_CLIENTS = fixedStatement<{
  count: number
  companyId: number
  names: string
  descriptions: string
  types: string
  documentTypes: string
  documentNumbers: string
  documentCountries: string
  accountClients: string
  accountNames: string
  currencies: string
  linkClients: string
  linkTags: string
  keyChecks: KeyCheckPlans
}>(
  (p) => sql`${drawnIds('clients', p.count)}, inserted as (
      insert into clients (id, company_id, name, description, type, document_type, document_number, document_country)
      select ids.id, ${p.companyId}::int, u.name, u.description, u.type, u.document_type, u.document_number, u.document_country
      from unnest(${p.names}::text[], ${p.descriptions}::text[], ${p.types}::smallint[], ${p.documentTypes}::text[], ${p.documentNumbers}::text[],
                  ${p.documentCountries}::text[]) with ordinality as u(name, description, type, document_type, document_number, document_country, n)
      join ids on ids.n = u.n
      order by u.n
      returning id, name, description, company_id, type,
        case when document_number is not null then json_build_object('type', document_type, 'number', document_number, 'country', document_country) end as document,
        ${iso('created_at')} as created_at, ${iso('updated_at')} as updated_at
    ), opened as (
      insert into accounts (company_id, client_id, name, currency_name)
      select ${p.companyId}::int, ids.id, u.name, u.currency_name
      from unnest(${p.accountClients}::int[], ${p.accountNames}::text[], ${p.currencies}::text[]) with ordinality as u(client, name, currency_name, n)
      join ids on ids.n = u.client
      order by u.n
      returning id, name, currency_name, client_id, balance::text as balance, ${iso('created_at')} as created_at, ${iso('updated_at')} as updated_at
    ), linked as (
      insert into client_tags (company_id, client_id, tag_id)
      select ${p.companyId}::int, ids.id, u.tag_id
      from unnest(${p.linkClients}::int[], ${p.linkTags}::int[]) with ordinality as u(client, tag_id, n)
      join ids on ids.n = u.client
      order by u.n
      returning id, client_id, tag_id, ${iso('created_at')} as created_at
    )
    select coalesce((select json_agg(inserted order by inserted.id) from inserted), '[]') as clients,
      coalesce((select json_agg(opened order by opened.id) from opened), '[]') as accounts,
      coalesce((select json_agg(linked order by linked.id) from linked), '[]') as links,
      set_config('plan_cache_mode', ${p.keyChecks}, true) as plan_mode`,
)

/** 409 for a document a live client of the company already holds. */
const documentTaken = (doc: ClientDocument, field = 'document') =>
  new ApiError(409, 'DOCUMENT_TAKEN', `Another client already has ${doc.type} ${doc.number}`, [{ field, message: `${doc.type} ${doc.number} belongs to another live client` }])

/** The unique index on live clients' documents (db/schema/clients.ts). */
export const DOCUMENT_INDEX = 'clients_company_document_live'

/** The live clients of the company holding any of these documents, as `type number` keys. */
async function documentsHeld(tx: Tx, companyId: number, docs: ClientDocument[]): Promise<Set<string>> {
  if (docs.length === 0) return new Set()
  const rows = rowsOf<{ key: string }>(
    await tx.execute(sql`select c.document_type || ' ' || c.document_number as key from clients c
      join unnest(${pgArray(docs.map((d) => d.type), 'text')}, ${pgArray(docs.map((d) => d.number), 'text')}) as d(type, number)
        on c.company_id = ${companyId} and c.document_type = d.type and c.document_number = d.number and c.deleted_at is null`),
  )
  return new Set(rows.map((r) => r.key))
}

/**
 * Inserts clients with their accounts and tags in one statement whatever their number (each from arrays bound as
 * single parameters), answers them as `getClient` would, from the inserted rows, and announces them together. Tags are looked up by primary key
 * and their company checked on the rows. Items naming an unknown tag, or a document another item or a live client
 * holds, are returned in `bad` and nothing is written. One create checks its document only through the unique index
 * (no lookup of its own), which is also what answers a batch that lost a race: 409 `DOCUMENT_TAKEN`.
 */
async function insertClients(
  tx: Tx,
  caller: Caller,
  inputs: CreateClientInput[],
  batch = false,
): Promise<{ bad: { index: number; error: ApiError }[]; created: ClientDto[] }> {
  const companyId = caller.companyId
  const bad: { index: number; error: ApiError }[] = []
  const documents = inputs.map((input, index) => {
    try {
      return input.document ? checkDocument(input.document, batch ? `clients.${index}.document` : 'document') : null
    } catch (e) {
      if (!(e instanceof ApiError)) throw e
      bad.push({ index, error: e })
      return null
    }
  })
  if (batch) {
    const held = await documentsHeld(tx, companyId, documents.filter((d): d is ClientDocument => d !== null))
    const seen = new Set<string>()
    documents.forEach((doc, index) => {
      if (!doc) return
      const key = `${doc.type} ${doc.number}`
      if (held.has(key) || seen.has(key)) bad.push({ index, error: documentTaken(doc, `clients.${index}.document`) })
      seen.add(key)
    })
  }
  const tagIds = [...new Set(inputs.flatMap((i) => i.tag_ids ?? []))]
  const tagRows = tagIds.length
    ? (await tx.select().from(tags).where(sql`${tags.id} = any(${pgArray(tagIds, 'int')})`)).filter((t) => t.companyId === companyId)
    : []
  const tagById = new Map(tagRows.map((t) => [t.id, t]))
  inputs.forEach((input, index) => {
    const unknown = (input.tag_ids ?? []).filter((id) => !tagById.has(id))
    if (unknown.length)
      bad.push({ index, error: unprocessable('UNKNOWN_TAG', 'Unknown tag', unknown.map((id) => ({ field: 'tag_ids', message: `unknown tag ${id}` }))) })
  })
  if (bad.length) return { bad: bad.sort((a, b) => a.index - b.index), created: [] }

  const opened = inputs.flatMap((input, i) => (input.accounts ?? []).map((a) => ({ client: i + 1, name: a.name ?? a.currency_name, currency: a.currency_name })))
  const links = inputs.flatMap((input, i) => (input.tag_ids ?? []).map((tagId) => ({ client: i + 1, tagId })))
  let inserted: {
    clients: Omit<ClientDto, 'accounts' | 'client_tags'>[]
    accounts: (Omit<ReturnType<typeof accountDto>, 'balance'> & { balance: string })[]
    links: { id: number; client_id: number; tag_id: number; created_at: string }[]
  }
  try {
    ;[inserted] = rowsOf<typeof inserted>(
      await insertPlanned(tx, inputs.length + opened.length + links.length, (keyChecks) =>
        INSERT_CLIENTS(tx, {
          count: inputs.length,
          companyId,
          names: arrayLiteral(inputs.map((i) => i.name)),
          descriptions: arrayLiteral(inputs.map((i) => i.description ?? '')),
          types: arrayLiteral(inputs.map((i) => i.type)),
          documentTypes: arrayLiteral(documents.map((d) => d?.type ?? null)),
          documentNumbers: arrayLiteral(documents.map((d) => d?.number ?? null)),
          documentCountries: arrayLiteral(documents.map((d) => d?.country ?? null)),
          accountClients: arrayLiteral(opened.map((a) => a.client)),
          accountNames: arrayLiteral(opened.map((a) => a.name)),
          currencies: arrayLiteral(opened.map((a) => a.currency)),
          linkClients: arrayLiteral(links.map((l) => l.client)),
          linkTags: arrayLiteral(links.map((l) => l.tagId)),
          keyChecks,
        }),
      ),
    )
  } catch (e) {
    if (!isUniqueViolation(e, DOCUMENT_INDEX)) throw e
    const doc = documents.find((d) => d !== null)!
    throw batch ? new ApiError(409, 'DOCUMENT_TAKEN', 'A document of this batch was taken by another client meanwhile; nothing was created') : documentTaken(doc)
  }

  const accountsBy = groupBy(inserted.accounts, (a) => a.client_id)
  const linksBy = groupBy(inserted.links, (l) => l.client_id)
  const created = inserted.clients.map((c) => ({
    ...c,
    accounts: (accountsBy.get(c.id) ?? []).map((a) => ({ ...a, balance: toJson(a.balance) })),
    client_tags: (linksBy.get(c.id) ?? []).map((l) => ({ ...l, tag: tagDto(tagById.get(l.tag_id)!) })),
  }))
  await announceAll(
    tx,
    created.flatMap((dto) => [clientEvent(caller, 'client.created', dto), ...dto.accounts.map((account) => accountEvent(caller, account))]),
  )
  return { bad, created }
}

export async function createClient(tx: Tx, caller: Caller, input: CreateClientInput) {
  const { bad, created } = await insertClients(tx, caller, [input])
  if (bad.length) throw bad[0].error
  return created[0]
}

/**
 * Creates up to MAX_CLIENT_BATCH clients in the caller's transaction, all or none: every item is checked as a single
 * create checks it, and when any fails the answer is 422 BATCH_ITEM_INVALID listing each failing item.
 */
export async function createClients(tx: Tx, caller: Caller, inputs: CreateClientInput[]) {
  if (inputs.length === 0 || inputs.length > MAX_CLIENT_BATCH)
    throw invalid(`A batch holds 1 to ${MAX_CLIENT_BATCH} clients`, [{ field: 'clients', message: `1 to ${MAX_CLIENT_BATCH} items` }])
  const { bad, created } = await insertClients(tx, caller, inputs, true)
  if (bad.length)
    throw unprocessable(
      'BATCH_ITEM_INVALID',
      `${bad.length} of ${inputs.length} clients are invalid; nothing was created`,
      bad.map(({ index, error }) => ({ index, code: error.code, error: error.message, details: error.details })),
    )
  return created
}

/** What the client module tells the rest of the service (and, through the outbox, integrators). */
const clientEvent = (caller: Caller, type: string, dto: { id: number }): DomainEvent => ({
  type,
  companyId: caller.companyId,
  object: { kind: 'client', id: dto.id },
  render: async () => dto,
})
const accountEvent = (caller: Caller, dto: { id: number }): DomainEvent => ({
  type: 'account.created',
  companyId: caller.companyId,
  object: { kind: 'account', id: dto.id },
  render: async () => dto,
})
const announceClient = (tx: Tx, caller: Caller, type: string, dto: { id: number }) => announce(tx, clientEvent(caller, type, dto))
const announceAccount = (tx: Tx, caller: Caller, dto: { id: number }) => announce(tx, accountEvent(caller, dto))

export async function updateClient(tx: Tx, caller: Caller, id: number, input: { name?: string; description?: string; type?: number; document?: DocumentInput | null }) {
  const document = input.document ? checkDocument(input.document) : input.document
  await clientRow(tx, caller, id, true)
  try {
    await tx
      .update(clients)
      .set({
        ...(input.name !== undefined && { name: input.name }),
        ...(input.description !== undefined && { description: input.description }),
        ...(input.type !== undefined && { type: input.type }),
        ...(document !== undefined && { documentType: document?.type ?? null, documentNumber: document?.number ?? null, documentCountry: document?.country ?? null }),
        updatedAt: new Date(),
      })
      .where(eq(clients.id, id))
  } catch (e) {
    if (document && isUniqueViolation(e, DOCUMENT_INDEX)) throw documentTaken(document)
    throw e
  }
  const dto = await getClient(tx, caller, id)
  await announceClient(tx, caller, 'client.updated', dto)
  return dto
}

/**
 * Soft delete, refused while money sits on any account. The accounts are locked first, so a movement
 * committing at the same moment either lands before the check (and blocks it) or waits behind the delete.
 * Locked as the ledger locks them (ascending ids, `for no key update`, server/modules/operations/service.ts): the
 * lock a balance update takes, and none that a new transaction's foreign-key check (`for key share`) waits for.
 */
export async function deleteClient(tx: Tx, caller: Caller, id: number) {
  const [last] = await withChildren(tx, [await clientRow(tx, caller, id, true)])
  const accs = await tx
    .select({ id: accounts.id, balance: accounts.balance })
    .from(accounts)
    .where(eq(accounts.clientId, id))
    .orderBy(asc(accounts.id))
    .for('no key update')
  const open = accs.filter((a) => !dec(a.balance).isZero())
  if (open.length)
    throw new ApiError(409, 'BALANCE_NOT_ZERO', 'The client has accounts with a balance other than zero', open.map((a) => ({ field: 'accounts', message: `account ${a.id} balance ${a.balance}` })))
  await tx.update(clients).set({ deletedAt: new Date(), updatedAt: new Date() }).where(eq(clients.id, id))
  // The event carries the client as it last read, since its GET answers 404 from now on.
  await announceClient(tx, caller, 'client.deleted', last)
  return { deleted: true as const }
}

export async function addAccount(tx: Tx, caller: Caller, clientId: number, input: { name?: string; currency_name: string }) {
  // A caja's new account waits for an open or close of its till in progress (they lock the till row, then every
  // account of the caja, server/modules/tills/service.ts): made after it, it is not one the close failed to lock.
  await tx.execute(sql`select 1 from till_states where caja_id = ${clientId} for share`)
  await clientRow(tx, caller, clientId, true)
  const [row] = await insertOne(
    tx,
    tx
      .insert(accounts)
      .values({ companyId: caller.companyId, clientId, name: input.name ?? input.currency_name, currencyName: input.currency_name })
      .returning(),
  )
  const dto = accountDto(row)
  await announceAccount(tx, caller, dto)
  return dto
}

export async function listTags(db: Executor, caller: Caller) {
  const rows = await db
    .select()
    .from(tags)
    .where(eq(tags.companyId, caller.companyId))
    .orderBy(sql`${tags.name} collate "C"`, asc(tags.id))
    .prepare('tags')
    .execute()
  return rows.map(tagDto)
}

export async function createTag(tx: Tx, caller: Caller, input: { name: string; color: string }) {
  const [row] = await tx.insert(tags).values({ companyId: caller.companyId, name: input.name, color: input.color }).returning().prepare('tag_insert').execute()
  return tagDto(row)
}

async function existingLink(db: Executor, clientId: number, tagId: number) {
  const [row] = await db
    .select({ ct: clientTags, tag: tags })
    .from(clientTags)
    .innerJoin(tags, eq(tags.id, clientTags.tagId))
    .where(and(eq(clientTags.clientId, clientId), eq(clientTags.tagId, tagId)))
  return row ? clientTagDto(row.ct, row.tag) : null
}

/** The client-tag if the tag is already on the client (the POST then answers 200 with it), else null. */
export async function findClientTag(db: Executor, caller: Caller, clientId: number, tagId: number) {
  await clientRow(db, caller, clientId)
  return existingLink(db, clientId, tagId)
}

export async function attachTag(tx: Tx, caller: Caller, clientId: number, tagId: number) {
  await clientRow(tx, caller, clientId, true)
  const [tag] = await tx.select().from(tags).where(and(eq(tags.id, tagId), eq(tags.companyId, caller.companyId)))
  if (!tag) throw unprocessable('UNKNOWN_TAG', 'Unknown tag', [{ field: 'tag_id', message: `unknown tag ${tagId}` }])
  const [ct] = await insertOne(tx, tx.insert(clientTags).values({ companyId: caller.companyId, clientId, tagId }).onConflictDoNothing().returning())
  if (ct) await announceClient(tx, caller, 'client.updated', await getClient(tx, caller, clientId))
  return ct ? clientTagDto(ct, tag) : (await existingLink(tx, clientId, tagId))!
}

export async function detachTag(tx: Tx, caller: Caller, clientId: number, tagId: number) {
  await clientRow(tx, caller, clientId, true)
  const removed = await tx
    .delete(clientTags)
    .where(and(eq(clientTags.clientId, clientId), eq(clientTags.tagId, tagId)))
    .returning({ id: clientTags.id })
  if (removed.length === 0) throw notFound('Tag on this client')
  await announceClient(tx, caller, 'client.updated', await getClient(tx, caller, clientId))
  return { deleted: true as const }
}

/** Exact sums in SQL (numeric), one row per currency; accounts of deleted clients do not count. */
export async function balances(db: Executor, caller: Caller) {
  const rows = await db
    .select({
      currency: accounts.currencyName,
      cajas: sql<string>`coalesce(sum(${accounts.balance}) filter (where ${clients.type} = 0), 0)::text`,
      accounts: sql<string>`coalesce(sum(${accounts.balance}) filter (where ${clients.type} = 1), 0)::text`,
    })
    .from(accounts)
    .innerJoin(clients, eq(clients.id, accounts.clientId))
    .where(and(eq(accounts.companyId, caller.companyId), live(caller)))
    .groupBy(accounts.currencyName)
    .orderBy(sql`${accounts.currencyName} collate "C"`)
  return { data: rows.map((r) => ({ currency: r.currency, cajas: toJson(r.cajas), accounts: toJson(r.accounts) })) }
}
