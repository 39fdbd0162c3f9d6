import { describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { openDatabase } from '../../db/client'
import { applyRoutines, definedNames, type RoutineSession } from '../../db/routines'
import { postgresTest } from '../helpers'

const session = (client: postgres.Sql): RoutineSession => ({
  exec: (text) => client.unsafe(text),
  query: async (text, params = []) => (await client.unsafe(text, params as never[])) as never,
})

/** The suite's database as a start leaves it: migrated, every routine file applied and recorded. */
async function started() {
  const database = await openDatabase({ url: process.env.TEST_DATABASE_URL!, poolMax: 1 })
  await database.close()
  return postgres(process.env.TEST_DATABASE_URL!, { max: 1, onnotice: () => {} })
}

const exists = async (client: postgres.Sql, fn: string) => (await client`select to_regprocedure(${fn}) is not null as present`)[0].present as boolean

describe('database routines', () => {
  postgresTest('applied once per change: an unchanged start applies nothing', async () => {
    const client = await started()
    try {
      const lines: string[] = []
      await applyRoutines(session(client), (line) => lines.push(line))
      expect(lines).toEqual([])
      const recorded = await client`select name from routine_files order by name`
      expect(recorded.map((r) => r.name)).toContain('ledger.sql')
      const [{ objects }] = await client`select objects from routine_files where name = 'ledger.sql'`
      expect(objects.functions.some((f: string) => f.startsWith('ledger_transition('))).toBe(true)
    } finally {
      await client.end({ timeout: 1 })
    }
  })

  postgresTest('an object a changed file no longer defines is dropped, and so is everything of a removed file', async () => {
    const client = await started()
    try {
      await client.unsafe(`create function routine_probe_renamed() returns int language sql as 'select 1'`)
      await client.unsafe(`create function routine_probe_removed(a int) returns int language sql as 'select a'`)
      // As if mesas.sql once defined routine_probe_renamed (since renamed) and a file since deleted defined the other.
      await client`update routine_files set digest = 'changed',
        objects = jsonb_set(objects, '{functions}', objects->'functions' || '["routine_probe_renamed()"]') where name = 'mesas.sql'`
      await client`insert into routine_files (name, digest, objects) values ('zz_removed.sql', 'x', ${client.json({ functions: ['routine_probe_removed(integer)'], views: [], triggers: [] })})`
      const lines: string[] = []
      await applyRoutines(session(client), (line) => lines.push(line))
      expect(lines).toEqual([
        'dropping function routine_probe_renamed()',
        'applied db/sql/mesas.sql',
        'dropping function routine_probe_removed(integer)',
        'removed db/sql/zz_removed.sql',
      ])
      expect(await exists(client, 'routine_probe_renamed()')).toBe(false)
      expect(await exists(client, 'routine_probe_removed(integer)')).toBe(false)
      const [{ objects }] = await client`select objects from routine_files where name = 'mesas.sql'`
      expect(objects.functions).not.toContain('routine_probe_renamed()')
      expect((await client`select count(*)::int as n from routine_files where name = 'zz_removed.sql'`)[0].n).toBe(0)
    } finally {
      await client.end({ timeout: 1 })
    }
  })
})

describe('what a routine file defines', () => {
  test('functions, views and triggers with their table, read from the CREATE statements', () => {
    const text = `CREATE OR REPLACE FUNCTION a_fn(x int) RETURNS int LANGUAGE sql AS $$ select x $$;
create or replace view b_view as select 1;
CREATE OR REPLACE TRIGGER c_trg
  BEFORE UPDATE ON some_table FOR EACH ROW EXECUTE FUNCTION a_fn();
  -- CREATE FUNCTION inside a comment is not at a line start after code
SELECT 1;`
    expect(definedNames(text)).toEqual({ functions: ['a_fn'], views: ['b_view'], triggers: [{ name: 'c_trg', table: 'some_table' }] })
  })
})
