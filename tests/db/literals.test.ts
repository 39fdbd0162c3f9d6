import { describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { inlineParameters, literal, splitPlaceholders } from '../../db/literals'
import { inlining } from '../../db/client'
import { postgresTest } from '../helpers'

describe('placeholders', () => {
  test('only $n tokens of their own are placeholders', () => {
    const text = `select $1, '$2 it''s', E'\\'$3', "a$4""$5", $tag$ $6 $tag$, $$ $7 $$, a$8, $9 -- $10
      /* $11 /* $12 */ $13 */ $14`
    expect(splitPlaceholders(text).filter((p) => typeof p === 'number')).toEqual([1, 9, 14])
  })

  test('text without placeholders comes back whole', () => {
    expect(splitPlaceholders('select 1')).toEqual(['select 1'])
  })

  test('a value is never read as SQL', () => {
    expect(inlineParameters('select $1', ["x'; drop table t; --"])).toBe(`select 'x''; drop table t; --'`)
    expect(inlineParameters('select $1', ["\\'; drop table t; --"])).toBe(`select  E'\\\\''; drop table t; --'`)
  })

  test('values without a safe literal keep their parameters', () => {
    expect(inlineParameters('select $1', ['a\0b'])).toBeNull()
    expect(inlineParameters('select $1', [{ a: 1 }])).toBeNull()
    expect(inlineParameters('select $1', [undefined])).toBeNull()
    expect(inlineParameters('select $2', ['a'])).toBeNull()
    expect(literal(new Date(Number.NaN))).toBeNull()
  })
})

const url = process.env.TEST_DATABASE_URL

postgresTest('inlined values read back exactly as bound parameters', async () => {
  const bound = postgres(url!, { max: 1, prepare: false, onnotice: () => {} })
  const inlined = inlining(postgres(url!, { max: 1, prepare: false, onnotice: () => {} }))
  try {
    const texts = ["it's", 'back\\slash', "\\'", '$1 $$ $tag$', 'ñandú €  😀', 'line\nbreak', '', ' E\'x\'']
    const cases: [string, unknown[]][] = [
      ...texts.map((t): [string, unknown[]] => ['select $1::text as v', [t]]),
      ['select $1::int as a, $2::numeric as b, $3::float8 as c, $4::int as d', [-1, 1.5, 1e21, null]],
      ['select $1::int -$2 as v', [5, -3]],
      ['select $1::bigint + 1 as v', [2n ** 62n]],
      ['select $1 and not $2 as v', [true, false]],
      ['select $1 as v', [new Date('2026-01-02T03:04:05.678Z')]],
      ['select $1 as v', [Buffer.from([0, 39, 92, 255])]],
      ['select $1::text[] as v', [['a', 'b"c', 'd,e', '{f}', 'g\\h', "i'j", null]]],
      ['select $1::int[] as v', [[[1, 2], [3, 4]]]],
      ['select 5 = any($1) as v', [[4, 5]]],
      ['select set_config($1, $2, false) as v', ['app.test', 7]],
    ]
    for (const [text, params] of cases) {
      expect(inlineParameters(text, params)).not.toBeNull()
      const want = await bound.unsafe(text, params as never[])
      const got = await inlined.unsafe(text, params as never[])
      expect([...got]).toEqual([...want])
    }
    // One statement per text: an inlined text is never sent on the simple protocol.
    await expect(inlined.unsafe('select $1::text; select 1', ['x'])).rejects.toThrow(/multiple commands/)
  } finally {
    await Promise.all([bound.end({ timeout: 1 }), inlined.end({ timeout: 1 })])
  }
})
