import { sign, type KeyObject } from 'node:crypto'
import { sql } from 'drizzle-orm'
import { rowsOf, type Db, type Executor } from '../../../db/client'
import { invalid } from '../../lib/errors'
import { pagination } from '../../lib/models'

/**
 * The per-company hash chain of the audit trail (contract §14).
 *
 * Rows are written unsealed by the audit trigger, which does no hashing; each also gets an entry in `audit_pending`.
 * A sealer runs in every process; for one company it takes a transaction-scoped advisory lock shared by every
 * process, reads the chain head, then the company's pending rows that are committed and visible, in id order, and
 * gives them the next places: rows of `audit_seals`, inserted, while their pending entries are deleted in the same
 * transaction. Audit rows themselves are never rewritten (no second version of a wide row, nor of its five index
 * entries, per row sealed). A row whose transaction commits late (a lower id still uncommitted while higher ones are
 * sealed) is simply invisible until it commits and then gets the next place: `seq` is handed out at seal time,
 * under the lock, so it follows the order rows became visible and never leaves a gap or reuses a place.
 */

/** prev_hash of seq 1. */
export const GENESIS = '0'.repeat(64)
const SEAL_BATCH = 2000

/**
 * Seals the company's visible unsealed rows, up to one batch; answers how many. `wait: false` gives up at once
 * when another process holds the company's lock (it is sealing these very rows). The batch is one call of
 * `audit_seal` (db/sql/audit.sql), which hashes where the rows are.
 */
export async function sealBatch(db: Db, companyId: number, wait = true): Promise<number> {
  const [done] = rowsOf<{ n: number }>(await db.execute(sql`select audit_seal(${companyId}, ${SEAL_BATCH}, ${wait}) as n`))
  return Number(done.n)
}

/** Companies that have rows waiting for a place (the queue is short: entries leave as their rows are sealed). */
export async function companiesToSeal(db: Db): Promise<number[]> {
  const rows = rowsOf<{ company_id: number }>(await db.execute(sql`select distinct company_id from audit_pending`))
  return rows.map((r) => Number(r.company_id))
}

/** Seals every row of the company visible now, batch after batch; answers how many. */
export async function sealCompany(db: Db, companyId: number, wait = true): Promise<number> {
  let sealed = 0
  for (;;) {
    const n = await sealBatch(db, companyId, wait)
    sealed += n
    if (n < SEAL_BATCH) return sealed
  }
}

/**
 * One batch for every company with rows waiting, so a company with a large backlog (a bulk import) does not hold
 * back the others' seals; `more` says some company had a full batch and the caller should go round again.
 */
export async function sealRound(db: Db, wait = true): Promise<{ sealed: number; more: boolean }> {
  let sealed = 0
  let more = false
  for (const companyId of await companiesToSeal(db)) {
    const n = await sealBatch(db, companyId, wait)
    sealed += n
    if (n === SEAL_BATCH) more = true
  }
  return { sealed, more }
}

/** Seals every row visible now; answers how many. */
export async function sealAll(db: Db, wait = true): Promise<number> {
  let sealed = 0
  for (;;) {
    const round = await sealRound(db, wait)
    sealed += round.sealed
    if (!round.more) return sealed
  }
}

export interface VerifyResult {
  verified: boolean
  rows: number
  first_seq: number | null
  last_seq: number | null
  head: { seq: number; hash: string }
  broken: null | { seq: number; reason: 'hash_mismatch' | 'gap' | 'prev_mismatch' }
}

const REASONS = ['gap', 'prev_mismatch', 'hash_mismatch'] as const

/**
 * Recomputes the chain over `[from, to]` against the rows as stored, in one statement that answers one row. The first
 * break wins: a missing place, or a place whose audit row is gone (or moved to another company), is a `gap`, a
 * place whose prev_hash is not the hash of the row before is a
 * `prev_mismatch`, a place whose hash is not what its row gives is a `hash_mismatch`. The rest of the range is only
 * counted.
 */
export async function verifyChain(db: Executor, companyId: number, from?: number, to?: number): Promise<VerifyResult> {
  if (from !== undefined && to !== undefined && from > to)
    throw invalid('from_seq is after to_seq', [{ field: 'from_seq', message: 'must not exceed to_seq' }])
  const [top] = rowsOf<{ seq: string | number; hash: string }>(
    await db.execute(sql`select seq, hash from audit_seals where company_id = ${companyId} order by seq desc limit 1`),
  )
  const chainHead = top ? { seq: Number(top.seq), hash: top.hash } : { seq: 0, hash: GENESIS }
  const first = from ?? 1
  const last = Math.min(to ?? chainHead.seq, chainHead.seq)
  const result: VerifyResult = { verified: true, rows: 0, first_seq: null, last_seq: null, head: chainHead, broken: null }
  if (first > last) return result

  let expectedPrev: string | null = GENESIS
  if (first > 1) {
    const [before] = rowsOf<{ hash: string }>(
      await db.execute(sql`select hash from audit_seals where company_id = ${companyId} and seq = ${first - 1}`),
    )
    // With the row before the range missing, the range's first link cannot be checked from inside the range.
    expectedPrev = before?.hash ?? null
  }

  // Every row's hash is recomputed where the row lies (the sealer's recipe, see audit_seal), in the inner query, so parallel workers share it; the links are checked in seq order by the
  // window above it. A row's break is encoded as 4·place + reason, so the smallest is the first break in order
  // (a gap names the missing place, which lies between the row before and this one). Only that, the count and the
  // bounds come back: memory stays flat however long the chain. JIT compiling would cost seconds on a long chain and
  // speed up none of the work, which is in the functions; the parallel workers a tenant transaction turns off
  // (server/lib/write.ts) are what spreads that work over the cores, so they are asked for back.
  await db.execute(sql`select set_config('jit', 'off', true),
    set_config('max_parallel_workers_per_gather', (select reset_val from pg_settings where name = 'max_parallel_workers_per_gather'), true)`)
  const [found] = rowsOf<{ rows: string | number; first_seq: string | number | null; last_seq: string | number | null; broken: string | number | null }>(
    await db.execute(sql`
      with linked as (
        select r.seq, r.prev_hash, r.intact, r.missing,
               lag(r.seq) over w as before_seq, lag(r.hash) over w as before_hash
          from (select s.seq, s.prev_hash, s.hash, a.id is null as missing,
                       s.hash = encode(sha256(convert_to(s.prev_hash || audit_canonical(a), 'UTF8')), 'hex') as intact
                  from audit_seals s
                  left join audit_logs a on a.id = s.audit_id and a.company_id = s.company_id
                 where s.company_id = ${companyId} and s.seq >= ${first} and s.seq <= ${last}
                 order by s.seq) r
        window w as (order by r.seq)
      ), judged as (
        select seq, missing, case
            when seq <> coalesce(before_seq + 1, ${first}) then coalesce(before_seq + 1, ${first}) * 4 + 0
            when missing then seq * 4 + 0
            when prev_hash is distinct from (case when before_seq is null then ${expectedPrev}::text else before_hash end)
                 and (before_seq is not null or ${expectedPrev}::text is not null) then seq * 4 + 1
            when intact is not true then seq * 4 + 2
          end as broken
          from linked
      )
      select count(*) filter (where not missing) as rows, min(seq) as first_seq, max(seq) as last_seq, min(broken) as broken from judged`),
  )
  const rows = Number(found.rows)
  if (rows > 0) {
    const lastSeq = Number(found.last_seq)
    const [at] = rowsOf<{ hash: string | null }>(
      await db.execute(sql`select hash from audit_seals where company_id = ${companyId} and seq = ${lastSeq} limit 1`),
    )
    Object.assign(result, { rows, first_seq: Number(found.first_seq), last_seq: lastSeq, head: { seq: lastSeq, hash: at?.hash ?? '' } })
  }
  if (found.broken !== null) {
    const code = Number(found.broken)
    result.verified = false
    result.broken = { seq: Math.floor(code / 4), reason: REASONS[code % 4] }
  } else if ((result.last_seq ?? first - 1) < last) {
    // Places missing at the end of the range (or the whole range): no row after them to notice.
    result.verified = false
    result.broken = { seq: (result.last_seq ?? first - 1) + 1, reason: 'gap' }
  }
  return result
}

/**
 * One digest per finished day of each company with a chain: the head as it stood at the end of that day in the
 * company's time zone (the last row sealed before local midnight), from the day of its first seal to yesterday.
 * A day without new rows repeats the head of the day before, so the digests form an unbroken daily series.
 * Each company is done under its chain lock, so no seal is in flight across the midnight being judged.
 */
export async function makeDigests(db: Db, now: Date): Promise<number> {
  const companies = rowsOf<{ id: number; timezone: string }>(
    await db.execute(sql`select c.id, c.timezone from companies c
      where exists (select 1 from audit_seals s where s.company_id = c.id)
        and not exists (select 1 from audit_digests d where d.company_id = c.id
                        and d.date = (${now.toISOString()}::timestamptz at time zone c.timezone)::date - 1)`),
  )
  let made = 0
  for (const c of companies) {
    made += await db.transaction(async (tx) => {
      await tx.execute(sql`select audit_chain_lock(${c.id}, true)`)
      const inserted = rowsOf(
        await tx.execute(sql`
          with bounds as (
            select coalesce(
                     (select max(date) + 1 from audit_digests where company_id = ${c.id}),
                     (select (sealed_at at time zone ${c.timezone})::date from audit_seals
                       where company_id = ${c.id} order by seq limit 1)
                   ) as first_day,
                   (${now.toISOString()}::timestamptz at time zone ${c.timezone})::date - 1 as last_day
          ), days as (
            select d::date as day, ((d::date + 1)::timestamp at time zone ${c.timezone}) as day_end
              from bounds, generate_series(bounds.first_day::timestamp, bounds.last_day::timestamp, interval '1 day') d
          ), heads as (
            -- sealed_at grows with seq, so walking back from the head stops at the first row sealed before midnight.
            select days.day, h.seq, h.hash
              from days cross join lateral (
                select s.seq, s.hash from audit_seals s
                 where s.company_id = ${c.id} and s.sealed_at < days.day_end
                 order by s.seq desc limit 1) h
          )
          insert into audit_digests (company_id, date, seq, hash)
          select ${c.id}, heads.day, heads.seq, heads.hash from heads
          on conflict do nothing
          returning date`),
      )
      return inserted.length
    })
  }
  return made
}

/** What a digest's signature covers: `company_id.date.seq.hash`. */
export const digestMessage = (companyId: number, d: { date: string; seq: number; hash: string }) => `${companyId}.${d.date}.${d.seq}.${d.hash}`

export async function listDigests(db: Executor, companyId: number, key: KeyObject, page = 1, pageSize = 50) {
  const rows = rowsOf<{ date: string; seq: string | number; hash: string }>(
    await db.execute(sql`select to_char(date, 'YYYY-MM-DD') as date, seq, hash from audit_digests
      where company_id = ${companyId} order by date desc limit ${pageSize} offset ${(page - 1) * pageSize}`),
  )
  const [{ total }] = rowsOf<{ total: string | number }>(
    await db.execute(sql`select count(*) as total from audit_digests where company_id = ${companyId}`),
  )
  const data = rows.map((r) => {
    const d = { date: r.date, seq: Number(r.seq), hash: r.hash }
    return { ...d, signature: sign(null, Buffer.from(digestMessage(companyId, d)), key).toString('base64') }
  })
  return { data, pagination: pagination(page, pageSize, Number(total)) }
}
