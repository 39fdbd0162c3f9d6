/**
 * Finding a client by name: `GET /api/clients?search=` for a company of 50,000 clients among four others of 50,000
 * (250,000 clients, two accounts each, loaded after the index was made, as a branch migrating its data meets it),
 * on real Postgres, with the `clients_search` index (company, and trigrams of name and description;
 * db/schema/clients.ts) and then, in the same throwaway database, without it. The figure is the time to the page's
 * JSON text (`listClients`, the route's one statement, as the route runs it) for words from rare to common, each
 * beside the unfiltered first page measured in the same rounds, which walks the (company, name) index and stops after
 * 50 rows: the fastest page there is. A word of two letters has no trigram and is read row by row (service.ts): it is
 * held to the same word without the index instead.
 *
 * The words: a description one client has ("aguja"), a surname about one client in forty carries ("fernández"), a
 * description word one in five carries ("mayorista"), two letters most names hold ("ar"), and a name typed whole
 * ("gómez, lucía"). Rounds interleave the words, so every word meets the same prepared statement after it has turned
 * generic (after five runs) as the server's long-lived connections meet it; each word's figure is its median.
 *
 *   bun bench/search.ts   (env: BENCH_ADMIN_URL, BENCH_SEARCH_CLIENTS=50000, BENCH_SEARCH_OTHERS=4, BENCH_SEARCH_ROUNDS=25)
 */
import postgres from 'postgres'
import { openDatabase } from '../db/client'
import { listClients } from '../server/modules/clients/service'
import type { Caller } from '../server/access/caller'
import { envNumber, figure, percentile, printFigures, type Figure } from './lib/common'
import { createBenchDatabase } from './lib/database'
import { newCompany } from './lib/tenants'

const CLIENTS = envNumber('BENCH_SEARCH_CLIENTS', 50_000)
const OTHERS = envNumber('BENCH_SEARCH_OTHERS', 4)
const ROUNDS = envNumber('BENCH_SEARCH_ROUNDS', 25)
const SHORT = 'ar'
const WORDS = ['aguja', 'fernández', 'mayorista', SHORT, 'gómez, lucía']

const list = (items: string[]) => `(array[${items.map((s) => `'${s}'`).join(',')}])`
const SURNAMES = list(['González', 'Rodríguez', 'Gómez', 'Fernández', 'López', 'Díaz', 'Martínez', 'Pérez', 'García', 'Sánchez', 'Romero', 'Sosa', 'Torres', 'Álvarez', 'Ruiz', 'Ramírez', 'Flores', 'Acosta', 'Benítez', 'Medina', 'Suárez', 'Herrera', 'Aguirre', 'Giménez', 'Gutiérrez', 'Pereyra', 'Rojas', 'Molina', 'Castro', 'Ortiz', 'Silva', 'Núñez', 'Luna', 'Juárez', 'Cabrera', 'Ríos', 'Ferreyra', 'Godoy', 'Morales', 'Domínguez'])
const GIVEN = list(['María', 'Juan', 'Lucía', 'Carlos', 'Ana', 'Jorge', 'Laura', 'Luis', 'Silvia', 'Diego', 'Marta', 'Pablo', 'Claudia', 'Martín', 'Andrea', 'Sergio', 'Paula', 'Gustavo', 'Valeria', 'Hernán'])
const SEGMENTS = list(['Importador mayorista', 'Exportador', 'Comercio minorista', 'Productor agropecuario', 'Distribuidor mayorista', 'Particular', 'Turista', 'Financiera', 'Inmobiliaria', 'Estudio contable'])
const CITIES = list(['Buenos Aires', 'Rosario', 'Córdoba', 'Mendoza', 'La Plata', 'Mar del Plata', 'Salta', 'Tucumán', 'Neuquén', 'Bahía Blanca'])

/** `count` clients of each company, two accounts each, written in bulk with triggers off (seeding is no tenant's work). */
async function seed(sql: postgres.Sql, companies: number[], count: number) {
  await sql.begin(async (tx) => {
    await tx`set local session_replication_role = replica`
    await tx.unsafe(`insert into clients (company_id, name, description, type)
      select c, ${SURNAMES}[1 + floor(random() * 40)::int] || ', ' || ${GIVEN}[1 + floor(random() * 20)::int],
             ${SEGMENTS}[1 + floor(random() * 10)::int] || ', ' || ${CITIES}[1 + floor(random() * 10)::int], 1
      from unnest($1::int[]) c, generate_series(1, ${count})`, [companies])
    await tx.unsafe(`insert into accounts (company_id, client_id, name, currency_name)
      select cl.company_id, cl.id, v.cur, v.cur from clients cl cross join (values ('ARS'), ('USD')) v(cur)`)
  })
}

async function main() {
  const db = await createBenchDatabase('fos_bench_search')
  const database = await openDatabase({ url: db.url, poolMax: 2 })
  const owner = postgres(db.url, { max: 1, onnotice: () => {} })
  const figures: Figure[] = []
  try {
    const t0 = performance.now()
    const tenant = (await newCompany(database, 'Buscada')).companyId
    const others: number[] = []
    for (let i = 0; i < OTHERS; i++) others.push((await newCompany(database, `Otra ${i + 1}`)).companyId)
    await seed(owner, [tenant, ...others], CLIENTS)
    // The one needle, in the tenant only.
    await owner`update clients set description = 'Aguja en el pajar' where id = (select min(id) + 31337 from clients where company_id = ${tenant})`
    await owner.unsafe('analyze clients, accounts')
    console.log(`seeded ${((OTHERS + 1) * CLIENTS).toLocaleString('en')} clients in ${((performance.now() - t0) / 1000).toFixed(1)} s`)

    const caller: Caller = { companyId: tenant, keyId: 0, employee: null, modules: { mesas: false, ventanilla: false } }
    const page = (search?: string) => listClients(database.db, caller, { page: 1, pageSize: 50, ...(search && { search }) })
    const counts = new Map<string, number>()
    for (const w of WORDS) counts.set(w, JSON.parse(await page(w)).count)

    const measure = async (label: string) => {
      const times = new Map<string, number[]>([['', []], ...WORDS.map((w) => [w, []] as [string, number[]])])
      for (let round = 0; round < ROUNDS; round++)
        for (const w of ['', ...WORDS]) {
          const started = performance.now()
          await page(w || undefined)
          times.get(w)!.push(performance.now() - started)
        }
      const median = (w: string) => percentile(times.get(w)!.sort((a, b) => a - b), 50)
      const base = median('')
      console.log(`${label}: unfiltered first page ${base.toFixed(1)} ms (median of ${ROUNDS})`)
      for (const w of WORDS) {
        const m = median(w)
        console.log(`  search=${JSON.stringify(w)} (${counts.get(w)!.toLocaleString('en')} matches): ${m.toFixed(1)} ms, p95 ${percentile(times.get(w)!, 95).toFixed(1)} ms`)
      }
      return { base, median }
    }

    // As migrated first; then the same rounds with the index dropped, in this throwaway database.
    const shipped = await measure('with clients_search (as migrated)')
    await owner.unsafe('drop index clients_search')
    await owner.unsafe('analyze clients')
    const without = await measure('without clients_search')
    for (const w of WORDS) {
      const matches = `${counts.get(w)!.toLocaleString('en')} matches`
      // A word with a trigram is held to the unfiltered page; a shorter one is read row by row on purpose, and is
      // held to the same word without the index.
      if (w === SHORT) figures.push(figure(`clients search "${w}" (${matches}) vs the same without clients_search, median`, shipped.median(w), without.median(w), 'ms', 'ratio <= 1.5'))
      else figures.push(figure(`clients search "${w}" (${matches}) vs the unfiltered page, median`, shipped.median(w), shipped.base, 'ms', 'ratio <= 4'))
      figures.push(figure(`clients search "${w}" (${matches}) without clients_search vs the unfiltered page, median`, without.median(w), without.base, 'ms'))
    }
  } finally {
    await owner.end({ timeout: 5 })
    await database.close()
    await db.drop()
  }
  printFigures(figures)
}

await main()
