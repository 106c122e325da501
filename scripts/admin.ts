/**
 * Operator commands (docs/operations.md "Operator commands"). Each prints what it did and refuses
 * bad input with one clear line and exit code 2.
 *
 *   scripts/admin create-account --email ann@example.com --tenant-name "Ann's rigs"
 *   scripts/admin tenants
 *   scripts/admin adjust --tenant <id> --amount 25.00 --reason "goodwill credit"
 *   scripts/admin set-plan --tenant <id> --plan starter
 *   scripts/admin plans
 *   scripts/admin plan --code team --label Team --price 3.00 --servers-max 50 [--features strategy,ai_access]
 *   scripts/admin unsettled-payments [--all]
 *   scripts/admin settle-payment --id <id> (--credit | --refunded) --reason "paid twice; kept as balance"
 *   DATABASE_URL=postgres://… scripts/admin migrate-to-postgres --from data/gpuhq.db
 */
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { ConfigError, loadConfig } from '../src/config'
import { DEFAULT_BUSY_TIMEOUT_MS, openDatabase, pendingMigrations } from '../db/client'
import { copySqliteToPostgres } from '../db/pg/copy'
import { buildDeps } from '../src/deps'
import { createLogger } from '../src/platform/logger'
import { ProblemError } from '../src/platform/problem'
import { DomainError } from '../src/platform/domain-error'
import { formatTimestamp } from '../src/platform/time'
import { createAccount, tenantsOverview, ADMIN_TICKET_TTL_SECONDS } from '../src/modules/accounts'
import { adjustBalance, balanceOf } from '../src/modules/billing'
import { listPlans, upsertPlan } from '../src/modules/plans'
import { setTenantPlan } from '../src/modules/subscription'
import { formatMoney, formatNullableMoney } from '../src/platform/money'
import { listUnsettledPayments, settleUnsettledPayment } from '../src/modules/payments'
import { loadPublicUrl } from '../src/modules/testing'

const USAGE = `usage:
  scripts/admin create-account --email <address> --tenant-name <name>
      creates a tenant on the free plan and its owner; prints a one-time ticket to set the password
  scripts/admin tenants
      lists tenants with their plan, account state and balance
  scripts/admin adjust --tenant <id> --amount <USD, negative to debit> --reason <text>
      writes a ledger adjustment (credit or debit)
  scripts/admin set-plan --tenant <id> --plan <code|none>
      assigns a catalogue plan (none: no plan assignment)
  scripts/admin plans
      lists the plan catalogue
  scripts/admin plan --code <code> [--label <label>] [--price <USD per server per month|contract>]
                     [--servers-max <n|unlimited>] [--features <strategy,ai_access>]
      creates or edits a catalogue entry
  scripts/admin unsettled-payments [--all]
      lists finished payments that credited nothing (a top-up is credited at most once); --all
      includes settled ones
  scripts/admin settle-payment --id <id> (--credit | --refunded) --reason <text>
      settles one: --credit books its amount as an adjustment, --refunded records that it was
      refunded at the provider (nothing booked)
  DATABASE_URL=postgres://… scripts/admin migrate-to-postgres --from <SQLite file>
      copies every row of a stopped SQLite deployment into the empty PostgreSQL database of
      DATABASE_URL, in one transaction (docs/operations.md "Moving to PostgreSQL")`

function fail(message: string): never {
  console.error(`admin: ${message}`)
  process.exit(2)
}

/** "--amount -7.50" is a value, not an option: parseArgs only takes it written "--amount=-7.50". */
function joinNegativeValues(args: string[]): string[] {
  const out: string[] = []
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!
    const next = args[i + 1]
    if (a.startsWith('--') && !a.includes('=') && next !== undefined && /^-\d/.test(next)) {
      out.push(`${a}=${next}`)
      i++
    } else out.push(a)
  }
  return out
}

const [command, ...given] = process.argv.slice(2)
const rest = joinNegativeValues(given)
if (!command || command === 'help' || command === '--help') {
  console.log(USAGE)
  process.exit(command ? 0 : 2)
}

let config: ReturnType<typeof loadConfig>
try {
  config = loadConfig()
} catch (e) {
  if (e instanceof ConfigError) fail(`invalid configuration: ${e.message}`)
  throw e
}
const deps = await buildDeps(config, {
  log: createLogger(
    'warn',
    () => new Date().toISOString(),
    (l) => console.error(l),
  ),
  busyTimeoutMs: DEFAULT_BUSY_TIMEOUT_MS,
  // An operator command prints "done" after its write: each commit fsyncs before it returns.
  groupCommit: false,
})

/**
 * Where the service answers, for the links a command prints: PUBLIC_URL when this shell sets it,
 * else the address the service last started with on this database (its PUBLIC_URL, or
 * http://localhost:PORT), else this shell's default from PORT.
 */
async function serviceUrl(): Promise<string> {
  if (process.env.PUBLIC_URL) return config.publicUrl
  return (await loadPublicUrl(deps.db)) ?? config.publicUrl
}

try {
  if (command === 'create-account') {
    const { values } = parseArgs({ args: rest, options: { email: { type: 'string' }, 'tenant-name': { type: 'string' } }, strict: true })
    if (!values.email) fail('--email is required')
    if (!values['tenant-name']) fail('--tenant-name is required')
    const r = await createAccount({ deps, input: { email: values.email, tenantName: values['tenant-name'] } })
    const base = await serviceUrl()
    console.log(`created tenant ${r.tenantId} ("${values['tenant-name']}", plan free) with owner ${r.email} (user ${r.userId})`)
    console.log(`one-time ticket to set the password (valid ${ADMIN_TICKET_TTL_SECONDS / 3600} h): ${r.ticket}`)
    console.log('set it, which signs you in (curl -c keeps the session cookie in the file jar; send it with -b jar):')
    console.log(
      `  curl -s -c jar -X POST ${base}/api/v1/auth/password-reset/complete -H 'content-type: application/json' -d '{"ticket":"${r.ticket}","password":"<new password>"}'`,
    )
  } else if (command === 'tenants') {
    const rows = await tenantsOverview({ deps })
    if (rows.length === 0) console.log('no tenants')
    for (const t of rows)
      console.log(
        `${t.id}  plan=${t.planCode ?? '-'}  state=${t.accountState}  balance=${formatMoney(await balanceOf(deps.db, t.id))}  created=${formatTimestamp(t.createdAt)}  ${t.name}`,
      )
  } else if (command === 'adjust') {
    const { values } = parseArgs({ args: rest, options: { tenant: { type: 'string' }, amount: { type: 'string' }, reason: { type: 'string' } }, strict: true })
    if (!values.tenant) fail('--tenant is required')
    if (!values.amount) fail('--amount is required')
    if (!values.reason) fail('--reason is required')
    const row = await adjustBalance({ deps, input: { tenantId: values.tenant, amount: values.amount, reason: values.reason } })
    console.log(
      `adjusted tenant ${values.tenant} by ${formatMoney(row.amountMicros)} USD; balance now ${formatMoney(row.balanceAfterMicros)} USD (ledger entry ${row.id})`,
    )
  } else if (command === 'set-plan') {
    const { values } = parseArgs({ args: rest, options: { tenant: { type: 'string' }, plan: { type: 'string' } }, strict: true })
    if (!values.tenant) fail('--tenant is required')
    if (!values.plan) fail('--plan is required')
    await setTenantPlan({ deps, input: { tenantId: values.tenant, plan: values.plan === 'none' ? null : values.plan } })
    console.log(`tenant ${values.tenant} is now on ${values.plan === 'none' ? 'no plan' : `plan ${values.plan}`}`)
  } else if (command === 'plans') {
    for (const p of await listPlans(deps.db))
      console.log(
        `${p.code}  ${p.label}  price=${p.priceMicrosPerServerMonth === null ? 'contract' : formatMoney(p.priceMicrosPerServerMonth)} USD/server/month  servers_max=${p.serversMax ?? 'unlimited'}  features=${p.features.join(',') || '-'}`,
      )
  } else if (command === 'plan') {
    const { values } = parseArgs({
      args: rest,
      options: {
        code: { type: 'string' },
        label: { type: 'string' },
        price: { type: 'string' },
        'servers-max': { type: 'string' },
        features: { type: 'string' },
      },
      strict: true,
    })
    if (!values.code) fail('--code is required')
    const r = await upsertPlan({
      deps,
      input: { code: values.code, label: values.label, price: values.price, serversMax: values['servers-max'], features: values.features },
    })
    console.log(
      `${r.created ? 'created' : 'updated'} plan ${r.plan.code}: ${r.plan.label}, ${r.plan.priceMicrosPerServerMonth === null ? 'contract-priced' : `${formatMoney(r.plan.priceMicrosPerServerMonth)} USD per server per month`}, servers_max ${r.plan.serversMax ?? 'unlimited'}`,
    )
  } else if (command === 'unsettled-payments') {
    const { values } = parseArgs({ args: rest, options: { all: { type: 'boolean' } }, strict: true })
    const rows = await listUnsettledPayments({ deps, all: values.all ?? false })
    if (rows.length === 0) console.log(values.all ? 'no unsettled payments recorded' : 'no unsettled payments')
    for (const r of rows)
      console.log(
        `${r.id}  tenant=${r.tenantId}  topup=${r.topupId}  payment=${r.provider}:${r.paymentId}  amount=${formatNullableMoney(r.amountMicros) ?? 'unknown'}  reason=${r.reason}  recorded=${formatTimestamp(r.recordedAt)}` +
          (r.settledAt === null
            ? '  open'
            : `  settled=${r.settlement} ${formatTimestamp(r.settledAt)}${r.settlementEntryId ? ` (ledger entry ${r.settlementEntryId})` : ''}`),
      )
  } else if (command === 'settle-payment') {
    const { values } = parseArgs({
      args: rest,
      options: { id: { type: 'string' }, credit: { type: 'boolean' }, refunded: { type: 'boolean' }, reason: { type: 'string' } },
      strict: true,
    })
    if (!values.id) fail('--id is required')
    if (!values.credit === !values.refunded) fail('give exactly one of --credit or --refunded')
    if (!values.reason) fail('--reason is required')
    const r = await settleUnsettledPayment({ deps, input: { id: values.id, settlement: values.credit ? 'credited' : 'refunded', reason: values.reason } })
    console.log(
      r.settlement === 'credited'
        ? `settled payment ${r.provider}:${r.paymentId}: credited ${formatMoney(r.amountMicros!)} USD to tenant ${r.tenantId} (ledger entry ${r.settlementEntryId})`
        : `settled payment ${r.provider}:${r.paymentId}: recorded as refunded at the provider; nothing booked`,
    )
  } else if (command === 'migrate-to-postgres') {
    const { values } = parseArgs({ args: rest, options: { from: { type: 'string' } }, strict: true })
    if (!config.postgresUrl) fail('DATABASE_URL must name the PostgreSQL database to fill (postgres://…)')
    if (!values.from) fail('--from <SQLite file> is required')
    const path = resolve(values.from.replace(/^file:/, ''))
    if (!existsSync(path)) fail(`no SQLite database at ${path}`)
    const source = openDatabase(path, { busyTimeoutMs: DEFAULT_BUSY_TIMEOUT_MS })
    try {
      const pending = await pendingMigrations(source)
      if (pending > 0) fail(`${path} lacks ${pending} migration(s) of this build: start this build on it once, stop it, then copy`)
      const copied = await copySqliteToPostgres(source.sqlite!, deps.database.postgres!)
      for (const t of copied) if (t.rows > 0) console.log(`${t.table}: ${t.rows} rows`)
      console.log(`copied ${copied.reduce((s, t) => s + t.rows, 0)} rows of ${copied.length} tables from ${path} into ${config.databasePath}`)
    } catch (e) {
      if (e instanceof Error && /not empty/.test(e.message)) fail(e.message)
      throw e
    } finally {
      await source.close()
    }
  } else {
    fail(`unknown command "${command}"\n${USAGE}`)
  }
} catch (e) {
  if (e instanceof ProblemError) fail(e.detail ?? e.message)
  if (e instanceof DomainError) fail(e.message)
  if (e instanceof TypeError && (/parseArgs|Unknown option/i.test(String(e)) || String((e as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS')))
    fail(e.message.replace(/\s*\n\s*/g, ' '))
  throw e
} finally {
  await deps.database.close()
}
