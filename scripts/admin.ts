/**
 * Operator commands (decisions.md, "Operator commands"). Each prints what it did and refuses bad
 * input with one clear line and exit code 2.
 *
 *   scripts/admin create-account --email ann@example.com --tenant-name "Ann's rigs"
 *   scripts/admin tenants
 */
import { parseArgs } from 'node:util'
import { ConfigError, loadConfig } from '../src/config'
import { buildDeps } from '../src/deps'
import { createLogger } from '../src/platform/logger'
import { ProblemError } from '../src/platform/problem'
import { formatTimestamp } from '../src/platform/time'
import { createAccount, tenantsOverview, ADMIN_TICKET_TTL_SECONDS } from '../src/modules/accounts/admin.service'

const USAGE = `usage:
  scripts/admin create-account --email <address> --tenant-name <name>
      creates a tenant on the free plan and its owner; prints a one-time ticket to set the password
  scripts/admin tenants
      lists tenants with their plan and account state`

function fail(message: string): never {
  console.error(`admin: ${message}`)
  process.exit(2)
}

const [command, ...rest] = process.argv.slice(2)
if (!command || command === 'help' || command === '--help') {
  console.log(USAGE)
  process.exit(command ? 0 : 2)
}

let config
try {
  config = loadConfig()
} catch (e) {
  if (e instanceof ConfigError) fail(`invalid configuration: ${e.message}`)
  throw e
}
const deps = buildDeps(config, { log: createLogger('warn', () => new Date().toISOString(), (l) => console.error(l)) })

try {
  if (command === 'create-account') {
    const { values } = parseArgs({ args: rest, options: { email: { type: 'string' }, 'tenant-name': { type: 'string' } }, strict: true })
    if (!values.email) fail('--email is required')
    if (!values['tenant-name']) fail('--tenant-name is required')
    const r = createAccount({ deps, input: { email: values.email, tenantName: values['tenant-name'] } })
    console.log(`created tenant ${r.tenantId} ("${values['tenant-name']}", plan free) with owner ${r.email} (user ${r.userId})`)
    console.log(`one-time ticket to set the password (valid ${ADMIN_TICKET_TTL_SECONDS / 3600} h): ${r.ticket}`)
    console.log('set it with:')
    console.log(
      `  curl -s -X POST ${config.publicUrl}/api/v1/auth/password-reset/complete -H 'content-type: application/json' -d '{"ticket":"${r.ticket}","password":"<new password>"}'`,
    )
  } else if (command === 'tenants') {
    const rows = tenantsOverview({ deps })
    if (rows.length === 0) console.log('no tenants')
    for (const t of rows) console.log(`${t.id}  plan=${t.planCode ?? '-'}  state=${t.accountState}  created=${formatTimestamp(t.createdAt)}  ${t.name}`)
  } else {
    fail(`unknown command "${command}"\n${USAGE}`)
  }
} catch (e) {
  if (e instanceof ProblemError) fail(e.detail ?? e.message)
  if (e instanceof TypeError && /parseArgs|Unknown option/i.test(String(e))) fail(String(e.message))
  throw e
} finally {
  deps.sqlite.close()
}
