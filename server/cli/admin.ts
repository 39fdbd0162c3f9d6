/**
 * The operator CLI: `npm run admin -- <command>` (or `bun run admin <command>` where Bun is installed) on the
 * server's machine, against the server's own database (DATABASE_URL, else the embedded one under DATA_DIR), whether
 * the server runs or not. Every change is one transaction audited with channel `cli`; bad arguments print the usage
 * and exit 2 before the database is opened; `--help` prints it and exits 0.
 */
import { userInfo } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { sql } from 'drizzle-orm'
import { DatabaseSetupError, openDatabase, type Database, type Tx } from '../../db/client'
import { ConfigError, loadConfig } from '../config'
import { issueKey } from '../access/keys'
import { ApiError } from '../lib/errors'
import { DomainEvents, eventTransaction } from '../lib/events'
import { validTimezone } from '../lib/time'
import { companyById, createCompanyRecord, createOwner, createStarterSet, generatePassword, MODULES, resetPassword, setModules, type ModuleName } from '../modules/setup/service'
import { record } from '../modules/webhooks/outbox'

export const USAGE = `Usage: npm run admin -- <command>    (or, where Bun is installed: bun run admin <command>)

  company create --name NAME [--timezone ZONE] [--modules mesas,ventanilla] [--starter]
      Creates a company; prints its id and a new company key (shown only once). --starter adds the
      ready start: caja "Caja principal" (ARS, USD, EUR, BRL), the operation types "Compra de divisas",
      "Venta de divisas", "Ingreso", "Egreso", "Ajuste de caja" and the transaction types "Capital", "Comisión".
  company modules COMPANY_ID [--on mesas,ventanilla] [--off mesas,ventanilla]
      Switches modules on or off.
  key create COMPANY_ID --name NAME
      Issues a company key (shown only once).
  owner create COMPANY_ID --email EMAIL --name NAME
      Creates an owner (company.admin) and prints a generated password (shown only once).
  password reset COMPANY_ID --email EMAIL
      Gives an employee a new generated password (shown only once) and ends their sessions.

Uses DATABASE_URL, or the embedded database under DATA_DIR (default ./data), as the server does.
--help (or -h, or help) prints this and exits 0.
Exit codes: 0 done, 1 refused or failed (nothing written), 2 bad arguments (nothing written).`

/** A wrong command line: the usage is printed with it, and nothing is opened or written. */
export class UsageError extends Error {}

export type Command =
  | { kind: 'company create'; name: string; timezone?: string; modules: ModuleName[]; starter: boolean }
  | { kind: 'company modules'; companyId: number; on: ModuleName[]; off: ModuleName[] }
  | { kind: 'key create'; companyId: number; name: string }
  | { kind: 'owner create'; companyId: number; email: string; name: string }
  | { kind: 'password reset'; companyId: number; email: string }

const OPTIONS = {
  name: { type: 'string' },
  timezone: { type: 'string' },
  modules: { type: 'string' },
  on: { type: 'string' },
  off: { type: 'string' },
  email: { type: 'string' },
  starter: { type: 'boolean' },
} as const

type Options = { [K in Exclude<keyof typeof OPTIONS, 'starter'>]?: string } & { starter?: boolean }

const ALLOWED: Record<Command['kind'], (keyof Options)[]> = {
  'company create': ['name', 'timezone', 'modules', 'starter'],
  'company modules': ['on', 'off'],
  'key create': ['name'],
  'owner create': ['email', 'name'],
  'password reset': ['email'],
}

function companyId(raw: string | undefined): number {
  if (raw === undefined) throw new UsageError('missing COMPANY_ID')
  if (!/^[1-9][0-9]{0,9}$/.test(raw) || Number(raw) > 2147483647) throw new UsageError(`COMPANY_ID must be a positive whole number, got "${raw}"`)
  return Number(raw)
}

function text(value: string | undefined, option: string, max = 200): string {
  if (value === undefined) throw new UsageError(`missing --${option}`)
  const trimmed = value.trim()
  if (!trimmed) throw new UsageError(`--${option} must not be empty`)
  if (trimmed.length > max) throw new UsageError(`--${option} may have at most ${max} characters`)
  return trimmed
}

function email(value: string | undefined): string {
  const e = text(value, 'email', 254)
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(e)) throw new UsageError(`--email must be an e-mail address, got "${e}"`)
  return e.toLowerCase()
}

function modules(value: string | undefined, option: string): ModuleName[] {
  if (value === undefined) return []
  const names = value.split(',').map((m) => m.trim()).filter(Boolean)
  const unknown = names.filter((m) => !(MODULES as readonly string[]).includes(m))
  if (unknown.length) throw new UsageError(`--${option}: unknown module ${unknown.join(', ')} (modules: ${MODULES.join(', ')})`)
  if (!names.length) throw new UsageError(`--${option} needs at least one module (${MODULES.join(', ')})`)
  return [...new Set(names)] as ModuleName[]
}

/** The command a command line asks for, fully checked; anything wrong is a UsageError. */
export function parseCommand(argv: string[]): Command {
  let parsed: { values: Options; positionals: string[] }
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true }) as typeof parsed
  } catch (e) {
    throw new UsageError((e as Error).message)
  }
  const [noun, verb, ...rest] = parsed.positionals
  const kind = `${noun ?? ''} ${verb ?? ''}` as Command['kind']
  if (!(kind in ALLOWED)) throw new UsageError(noun ? `unknown command "${[noun, verb].filter(Boolean).join(' ')}"` : 'missing command')
  const extra = Object.keys(parsed.values).filter((o) => !ALLOWED[kind].includes(o as keyof Options))
  if (extra.length) throw new UsageError(`${kind} takes no ${extra.map((o) => `--${o}`).join(', ')}`)
  const takesId = kind !== 'company create'
  if (rest.length > (takesId ? 1 : 0)) throw new UsageError(`unexpected argument "${rest[takesId ? 1 : 0]}"`)
  const v = parsed.values
  switch (kind) {
    case 'company create': {
      const timezone = v.timezone === undefined ? undefined : v.timezone.trim()
      if (timezone !== undefined && !validTimezone(timezone)) throw new UsageError(`--timezone "${timezone}" is not an IANA time zone (e.g. America/Argentina/Buenos_Aires)`)
      return { kind, name: text(v.name, 'name'), timezone, modules: modules(v.modules, 'modules'), starter: v.starter === true }
    }
    case 'company modules': {
      const id = companyId(rest[0])
      const on = modules(v.on, 'on')
      const off = modules(v.off, 'off')
      if (!on.length && !off.length) throw new UsageError('company modules needs --on or --off')
      const both = on.filter((m) => off.includes(m))
      if (both.length) throw new UsageError(`${both.join(', ')} is both in --on and --off`)
      return { kind, companyId: id, on, off }
    }
    case 'key create':
      return { kind, companyId: companyId(rest[0]), name: text(v.name, 'name', 100) }
    case 'owner create':
      return { kind, companyId: companyId(rest[0]), email: email(v.email), name: text(v.name, 'name') }
    case 'password reset':
      return { kind, companyId: companyId(rest[0]), email: email(v.email) }
  }
}

const onOff = (on: boolean) => (on ? 'on' : 'off')

/**
 * What the CLI's changes announce is recorded in the event feed as the server records it (the starter set's
 * `client.created`, `account.created`); no server process may be running to hear it, and a new company has no
 * webhook endpoint to wake a worker for.
 */
const recordedEvents = () => new DomainEvents().on('*', async (tx, events) => void (await record(tx, events)))

/** Runs a checked command in one transaction; answers the lines to print. */
export async function runCommand(database: Database, command: Command, now = new Date()): Promise<string[]> {
  // The trail says the operator's CLI did it, and which command, as which user of the machine.
  const detail = JSON.stringify({ command: command.kind, user: userInfo().username })
  return eventTransaction(database.db, recordedEvents(), async (tx: Tx) => {
    await tx.execute(sql`select set_config('app.channel', 'cli', true), set_config('app.channel_detail', ${detail}, true)`)
    switch (command.kind) {
      case 'company create': {
        const modules = Object.fromEntries(command.modules.map((m) => [m, true]))
        const company = await createCompanyRecord(tx, { name: command.name, timezone: command.timezone, modules }, now)
        const key = await issueKey(tx, company.id, null, 'cli')
        const starter = command.starter ? await createStarterSet(tx, company) : null
        return [
          `Company ${company.id} created: ${company.name} (${company.timezone}; mesas ${onOff(company.modules.mesas)}, ventanilla ${onOff(company.modules.ventanilla)})`,
          `company_id: ${company.id}`,
          ...(starter
            ? [
                `Starter set: caja "${starter.caja.name}" (client ${starter.caja.id}; ${starter.caja.accounts.map((a) => a.currency_name).join(', ')}), ` +
                  `operation types ${starter.operationTypes.map((t) => `"${t.name}"`).join(', ')}, transaction types ${starter.transactionTypes.map((t) => `"${t.name}"`).join(', ')}`,
              ]
            : []),
          `Company key (shown only now, keep it safe): ${key.key}`,
        ]
      }
      case 'company modules': {
        const company = await setModules(tx, command.companyId, command.on, command.off, now)
        return [`Company ${company.id} modules: mesas ${onOff(company.modules.mesas)}, ventanilla ${onOff(company.modules.ventanilla)}`]
      }
      case 'key create': {
        await companyById(tx, command.companyId)
        const key = await issueKey(tx, command.companyId, null, command.name)
        return [`Company key ${key.id} "${key.name}" for company ${command.companyId} (shown only now, keep it safe): ${key.key}`]
      }
      case 'owner create': {
        await companyById(tx, command.companyId)
        const password = generatePassword()
        const owner = await createOwner(tx, command.companyId, { email: command.email, name: command.name, password }, now)
        return [`Owner ${owner.id} created: ${owner.name} <${owner.email}> in company ${command.companyId}`, `Password (shown only now): ${password}`]
      }
      case 'password reset': {
        await companyById(tx, command.companyId)
        const password = generatePassword()
        const employee = await resetPassword(tx, command.companyId, command.email, password, now)
        return [`New password for ${employee.email} in company ${command.companyId} (shown only now): ${password}`, 'Their open sessions have ended.']
      }
    }
  })
}

/** The whole CLI: answers the exit code; writes to the given streams. */
export async function main(argv: string[], out = (s: string) => console.log(s), err = (s: string) => console.error(s)): Promise<number> {
  // Asked for, the usage is the answer and goes to stdout; only a mistake is an error.
  if (argv.includes('--help') || argv.includes('-h') || argv[0] === 'help') {
    out(USAGE)
    return 0
  }
  let command: Command
  try {
    command = parseCommand(argv)
  } catch (e) {
    if (!(e instanceof UsageError)) throw e
    err(`Error: ${e.message}\n\n${USAGE}`)
    return 2
  }
  let database: Database
  try {
    const config = loadConfig()
    database = await openDatabase({
      url: config.databaseUrl,
      dataDir: config.databaseUrl ? undefined : join(config.dataDir, 'pglite'),
      poolMax: 1,
      poolMode: config.databasePoolMode,
      directUrl: config.databaseDirectUrl,
    })
  } catch (e) {
    if (e instanceof ConfigError || e instanceof DatabaseSetupError) {
      err(`Error: ${e.message}`)
      return 1
    }
    throw e
  }
  try {
    for (const line of await runCommand(database, command)) out(line)
    return 0
  } catch (e) {
    if (!(e instanceof ApiError)) throw e
    err(`Error: ${e.message}${e.details ? ` (${JSON.stringify(e.details)})` : ''}; nothing was changed.`)
    return 1
  } finally {
    await database.close()
  }
}

if (import.meta.main) process.exit(await main(process.argv.slice(2)))
