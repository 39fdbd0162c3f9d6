import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/*
 * The database's functions, views and triggers (db/sql/*.sql), applied after the migrations, each file recorded in
 * `routine_files` with a digest and the objects it defines. A file is applied again only when its text changed or a
 * migration was added (its statements attach triggers and policies to every table, so a new table needs them); an
 * object a file no longer defines, or that a removed file defined, is dropped. Migration tools record migrations,
 * not repeatable routines, hence this small runner. What a file defines is read from its own CREATE statements
 * (`definedNames`), which these files write one way: `CREATE OR REPLACE FUNCTION|VIEW|TRIGGER name`.
 *
 * Rolling deploys: old and new processes share one database. The first new process to start applies the changed
 * files under the migration lock, so old processes run the new bodies from then on; a change that old code cannot
 * live with (a dropped function it still calls, a changed signature) goes out in two deploys: first add, then remove.
 */

const ROUTINES = join(import.meta.dir, 'sql')
const JOURNAL = join(import.meta.dir, 'migrations', 'meta', '_journal.json')

/** How the runner reaches the database: `exec` runs a whole file, `query` one statement with parameters. */
export interface RoutineSession {
  exec(text: string): Promise<unknown>
  query<T>(text: string, params?: unknown[]): Promise<T[]>
}

interface Defined {
  functions: string[]
  views: string[]
  triggers: { name: string; table: string }[]
}

/** The objects a file creates by name: functions and views, and triggers with their table. */
export function definedNames(text: string): Defined {
  const functions = [...text.matchAll(/^\s*CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+([a-z_][a-z0-9_]*)\s*\(/gim)].map((m) => m[1].toLowerCase())
  const views = [...text.matchAll(/^\s*CREATE\s+(?:OR\s+REPLACE\s+)?VIEW\s+([a-z_][a-z0-9_]*)/gim)].map((m) => m[1].toLowerCase())
  const triggers = [...text.matchAll(/^\s*CREATE\s+(?:OR\s+REPLACE\s+)?TRIGGER\s+([a-z_][a-z0-9_]*)[\s\S]*?\bON\s+([a-z_][a-z0-9_]*)/gim)].map((m) => ({
    name: m[1].toLowerCase(),
    table: m[2].toLowerCase(),
  }))
  return { functions: [...new Set(functions)], views: [...new Set(views)], triggers }
}

/** What is recorded for a file: its functions by full signature, so an old one can be dropped exactly. */
interface Recorded {
  functions: string[]
  views: string[]
  triggers: { name: string; table: string }[]
}

const ident = (name: string) => `"${name.replace(/"/g, '""')}"`

async function record(session: RoutineSession, defined: Defined): Promise<Recorded> {
  const functions = defined.functions.length
    ? (
        await session.query<{ sig: string }>(
          `select p.oid::regprocedure::text as sig from pg_proc p where p.pronamespace = current_schema()::regnamespace and p.proname = any($1::text[]) order by 1`,
          [`{${defined.functions.join(',')}}`],
        )
      ).map((r) => r.sig)
    : []
  return { functions, views: defined.views, triggers: defined.triggers }
}

/** Drops what `before` holds and `now` does not: triggers first, then views, then functions. */
async function dropGone(session: RoutineSession, before: Recorded, now: Recorded, log: (line: string) => void) {
  const gone = <T>(list: T[], keep: T[], key: (x: T) => string) => list.filter((x) => !keep.some((k) => key(k) === key(x)))
  for (const t of gone(before.triggers, now.triggers, (x) => `${x.name} ${x.table}`)) {
    log(`dropping trigger ${t.name} on ${t.table}`)
    await session.exec(`DROP TRIGGER IF EXISTS ${ident(t.name)} ON ${ident(t.table)}`)
  }
  for (const v of gone(before.views, now.views, (x) => x)) {
    log(`dropping view ${v}`)
    await session.exec(`DROP VIEW IF EXISTS ${ident(v)}`)
  }
  for (const f of gone(before.functions, now.functions, (x) => x)) {
    log(`dropping function ${f}`)
    // The signature is Postgres's own text of an existing function (regprocedure), never ours.
    await session.exec(`DROP FUNCTION IF EXISTS ${f}`)
  }
}

/** Applies the routine files that changed, drops what is no longer defined, and records each file. */
export async function applyRoutines(session: RoutineSession, log: (line: string) => void = () => {}) {
  await session.exec(`CREATE TABLE IF NOT EXISTS routine_files (
    name text PRIMARY KEY, digest text NOT NULL, objects jsonb NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
  const schema = readFileSync(JOURNAL, 'utf8')
  const files = readdirSync(ROUTINES)
    .filter((f) => f.endsWith('.sql'))
    .sort()
  const known = new Map((await session.query<{ name: string; digest: string; objects: Recorded }>(`select name, digest, objects from routine_files`)).map((r) => [r.name, r]))
  for (const name of files) {
    const text = readFileSync(join(ROUTINES, name), 'utf8')
    const digest = createHash('sha256').update(schema).update('\0').update(text).digest('hex')
    const prior = known.get(name)
    if (prior?.digest === digest) continue
    await session.exec(text)
    const now = await record(session, definedNames(text))
    if (prior) await dropGone(session, typeof prior.objects === 'string' ? JSON.parse(prior.objects) : prior.objects, now, log)
    await session.query(
      `insert into routine_files (name, digest, objects, applied_at) values ($1, $2, $3::text::jsonb, now())
       on conflict (name) do update set digest = excluded.digest, objects = excluded.objects, applied_at = excluded.applied_at`,
      [name, digest, JSON.stringify(now)],
    )
    log(`applied db/sql/${name}`)
  }
  for (const [name, prior] of known) {
    if (files.includes(name)) continue
    await dropGone(session, typeof prior.objects === 'string' ? JSON.parse(prior.objects) : prior.objects, { functions: [], views: [], triggers: [] }, log)
    await session.query(`delete from routine_files where name = $1`, [name])
    log(`removed db/sql/${name}`)
  }
}
