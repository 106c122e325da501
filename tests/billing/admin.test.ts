import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { auditRows, type Member } from '../support/access'
import { startTestApp, TEST_PUBLIC_URL, TEST_SECRET_KEY, type TestApp } from '../support/app'
import { addServers, clockTo, expectedHourly, getBilling, getJson, ledgerAll, micros, payer, runCharges, US_PER_MINUTE, utcUs } from '../support/billing'

/**
 * The operator's billing commands as a person runs them: scripts/admin.ts as a child process on the
 * app's database. Each prints what it did; bad input gets one clear line on stderr and exit code 2.
 */
let app: TestApp
let owner: Member
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  await clockTo(app, utcUs(2027, 9, 6, 10, 20))
  owner = await payer(app, 'starter', 'operator')
})
afterAll(() => app.close())

// Each admin() call starts a Bun process: a fraction of a second on an idle machine, seconds on a
// loaded two-core one, and a test here makes up to 9 of them, one after another.
const PROCESS_TEST_MS = 120_000

function admin(...args: string[]) {
  const env = {
    ...process.env,
    NODE_ENV: 'test',
    TEST_CLOCK: 'true',
    DATA_DIR: app.dir,
    DATABASE_URL: app.databaseUrl,
    SECRET_KEY: TEST_SECRET_KEY,
    PUBLIC_URL: TEST_PUBLIC_URL,
    LOG_LEVEL: 'warn',
  }
  const p = Bun.spawnSync([process.execPath, 'run', 'scripts/admin.ts', ...args], { env, cwd: join(import.meta.dir, '../..') })
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() }
}
/** Refused: exit 2 and exactly one line on stderr that says `message`. */
function expectRefused(r: ReturnType<typeof admin>, message: string | RegExp) {
  expect({ code: r.code, out: r.out }).toEqual({ code: 2, out: '' })
  const lines = r.err.trimEnd().split('\n')
  expect({ lines: lines.length, err: r.err }).toMatchObject({ lines: 1 })
  expect(lines[0]).toStartWith('admin: ')
  if (typeof message === 'string') expect(lines[0]).toContain(message)
  else expect(lines[0]).toMatch(message)
}

describe('scripts/admin adjust', () => {
  test(
    'a credit and a debit become adjustment rows on the ledger, each printed with the new balance and audited',
    async () => {
      const credit = admin('adjust', '--tenant', owner.tenantId, '--amount', '25.00', '--reason', 'goodwill credit')
      expect({ code: credit.code, err: credit.err }).toEqual({ code: 0, err: '' })
      expect(credit.out).toMatch(new RegExp(`^adjusted tenant ${owner.tenantId} by 25\\.00 USD; balance now 25\\.00 USD \\(ledger entry [0-9a-f-]{36}\\)\\n$`))
      const debit = admin('adjust', '--tenant', owner.tenantId, '--amount', '-7.5', '--reason', 'hardware fee')
      expect({ code: debit.code, err: debit.err }).toEqual({ code: 0, err: '' })
      expect(debit.out).toContain('by -7.50 USD; balance now 17.50 USD')
      const equals = admin('adjust', '--tenant', owner.tenantId, '--amount=-0.50', '--reason', 'rounding')
      expect(equals.out).toContain('balance now 17.00 USD')

      const rows = await ledgerAll(app, owner)
      expect(rows.map((r) => [r.kind, r.amount_usd, r.balance_after_usd])).toEqual([
        ['adjustment', '-0.50', '17.00'],
        ['adjustment', '-7.50', '17.50'],
        ['adjustment', '25.00', '25.00'],
      ])
      expect(rows[2]!.detail).toContain('goodwill credit')
      expect(credit.out).toContain(rows[2]!.id)
      expect((await getBilling(app, owner)).balance_usd).toBe('17.00')
      const audit = await auditRows(app, owner, { operation: 'billing.adjust' })
      expect(audit.map((a) => a.actor.kind)).toEqual(['system', 'system', 'system'])
    },
    PROCESS_TEST_MS,
  )

  test(
    'bad input is refused with one clear line and exit 2, and books nothing',
    async () => {
      const before = (await ledgerAll(app, owner)).length
      const t = owner.tenantId
      expectRefused(admin('adjust', '--tenant', t, '--amount', 'ten', '--reason', 'x'), 'ten')
      expectRefused(admin('adjust', '--tenant', t, '--amount', '1.1234567', '--reason', 'x'), '1.1234567')
      expectRefused(admin('adjust', '--tenant', t, '--amount', '0', '--reason', 'x'), 'zero')
      expectRefused(admin('adjust', '--tenant', t, '--amount', '5.00'), '--reason is required')
      expectRefused(admin('adjust', '--tenant', t, '--amount', '5.00', '--reason', '   '), 'reason')
      expectRefused(admin('adjust', '--amount', '5.00', '--reason', 'x'), '--tenant is required')
      expectRefused(admin('adjust', '--tenant', '0190a1b2-0000-7000-8000-000000000000', '--amount', '5.00', '--reason', 'x'), 'no tenant')
      expectRefused(admin('adjust', '--tenant', t, '--amount', '5.00', '--reason', 'x', '--dry-run'), "Unknown option '--dry-run'")
      expectRefused(admin('adjust', '--tenant', t, '--reason', 'x', '--amount'), '--amount')
      expect(await ledgerAll(app, owner)).toHaveLength(before)
    },
    PROCESS_TEST_MS,
  )
})

describe('scripts/admin set-plan, plans and plan', () => {
  test(
    'plans lists the catalogue: code, label, price, server limit and features',
    () => {
      const r = admin('plans')
      expect(r.code).toBe(0)
      const lines = r.out.trimEnd().split('\n')
      expect(lines[0]).toMatch(/^free\s+Free\s+price=0\.00 USD\/server\/month\s+servers_max=1\s+features=-$/)
      expect(lines[1]).toMatch(/^starter\s+Starter\s+price=2\.00 .*servers_max=10\s+features=-$/)
      expect(lines[2]).toMatch(/^pro\s+Pro\s+price=4\.00 .*servers_max=unlimited\s+features=strategy,ai_access$/)
      expect(lines[3]).toMatch(/^enterprise\s+Enterprise\s+price=contract .*servers_max=unlimited/)
    },
    PROCESS_TEST_MS,
  )

  test(
    'set-plan moves a tenant to another plan (audited) and none removes the assignment',
    async () => {
      const t = await payer(app, 'free', 'moving')
      const r = admin('set-plan', '--tenant', t.tenantId, '--plan', 'pro')
      expect({ code: r.code, out: r.out }).toEqual({ code: 0, out: `tenant ${t.tenantId} is now on plan pro\n` })
      expect((await getJson(app, t, '/plans/current')).plan.code).toBe('pro')
      expect((await getBilling(app, t)).tariff.plan).toBe('pro')
      expect((await auditRows(app, t, { operation: 'plans.set' }))[0]!.actor.kind).toBe('system')
      expect(admin('set-plan', '--tenant', t.tenantId, '--plan', 'none').out).toBe(`tenant ${t.tenantId} is now on no plan\n`)
      expect((await getJson(app, t, '/plans/current')).plan).toBeNull()
      expectRefused(admin('set-plan', '--tenant', t.tenantId, '--plan', 'platinum'), 'no plan platinum')
      expectRefused(admin('set-plan', '--tenant', 'nobody', '--plan', 'pro'), 'no tenant nobody')
      expectRefused(admin('set-plan', '--tenant', t.tenantId), '--plan is required')
    },
    PROCESS_TEST_MS,
  )

  test(
    'plan creates a catalogue entry that GET /plans shows and the hourly charge uses, and edits it later',
    async () => {
      const made = admin('plan', '--code', 'team', '--label', 'Team', '--price', '3.00', '--servers-max', '50', '--features', 'strategy')
      expect({ code: made.code, out: made.out }).toEqual({ code: 0, out: 'created plan team: Team, 3.00 USD per server per month, servers_max 50\n' })
      const edited = admin('plan', '--code', 'team', '--price', '3.50')
      expect(edited.out).toBe('updated plan team: Team, 3.50 USD per server per month, servers_max 50\n')
      const team = (await getJson(app, null, '/plans')).items.find((p: { code: string }) => p.code === 'team')
      expect(team).toMatchObject({ label: 'Team', monthly_price_per_server_usd: '3.50', contract_priced: false })
      expect(team.capabilities).toMatchObject({ 'fleet.servers.max': 50, strategy: true, ai_access: false, fleet: true })

      const t = await payer(app, 'free', 'team')
      admin('set-plan', '--tenant', t.tenantId, '--plan', 'team')
      await addServers(app, t.tenantId, 4)
      const hour = Math.floor(app.deps.clock.nowUs() / 3_600_000_000) * 3_600_000_000
      await clockTo(app, hour + 80 * US_PER_MINUTE)
      await runCharges(app)
      const [charge] = await ledgerAll(app, t, { kind: 'charge' })
      expect(micros(charge!.amount_usd)).toBe(-expectedHourly(3_500_000, 4, 30))
      expect(charge!.detail).toContain('team')

      expect(admin('plan', '--code', 'team', '--price', 'contract').out).toContain('contract-priced')
      expect((await getJson(app, null, '/plans')).items.find((p: { code: string }) => p.code === 'team').contract_priced).toBe(true)
    },
    PROCESS_TEST_MS,
  )

  test(
    'plan refuses a bad code, a new plan without label and price, a negative price, a bad limit or an unknown feature',
    () => {
      expectRefused(admin('plan', '--code', 'Team', '--label', 'X', '--price', '1.00'), 'plan code')
      expectRefused(admin('plan', '--code', 'gold', '--price', '1.00'), '--label and --price')
      expectRefused(admin('plan', '--code', 'gold', '--label', 'Gold', '--price', '-1.00'), 'negative')
      expectRefused(admin('plan', '--code', 'gold', '--label', 'Gold', '--price', 'cheap'), 'cheap')
      expectRefused(admin('plan', '--code', 'gold', '--label', 'Gold', '--price', '1.00', '--servers-max', 'lots'), '--servers-max')
      expectRefused(admin('plan', '--code', 'gold', '--label', 'Gold', '--price', '1.00', '--features', 'teleport'), 'unknown feature teleport')
      expectRefused(admin('plan', '--label', 'Gold'), '--code is required')
      expect(admin('plans').out).not.toContain('gold')
    },
    PROCESS_TEST_MS,
  )
})
