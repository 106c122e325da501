/**
 * `scripts/start --demo` (docs/demo.md): gpuhq on a fresh demo database with everything in it at
 * once. Both marketplace simulators and a dozen simulated servers run inside this process; the
 * account is made through the service's own API; the past week is backfilled; then the jobs run
 * on their real schedules, in real time. SIGTERM or Ctrl-C stops everything cleanly.
 */
import { ConfigError, loadConfig } from '../src/config'
import { listenFailure, type Service, startService } from '../src/service'
import { type DemoFleet, enrolFleet, runFleet } from './demo/agents'
import { DemoClient } from './demo/client'
import { DemoDirError, demoDir, freshDemoDir } from './demo/dir'
import { backdateFleet, backfillEarnings, backfillTelemetry, openingBalance } from './demo/history'
import { churnRentals, type DemoMarkets, meterVastEarnings, reportRenterProblem, reportVastEarnings, startDemoMarkets } from './demo/markets'
import { DEMO_SERVERS } from './demo/plan'
import { arrangeFleet, configureAccount, connectMarketplaces, createOwner, demoSignIn, fundAccount, mintToken, upgradeToPro } from './demo/seed'

const USAGE = 'usage: scripts/start --demo   (DEMO_DIR picks the demo directory, default ./data/demo; PORT the port, default 8080)'
/** How often a renter comes or goes on one of the listed machines. */
const CHURN_MS = 150_000
/** How often the marketplace_a simulator's meter adds what the running rentals earned to its report. */
const METER_MS = 60_000
/** The jobs run once, in this order, before the schedule takes over: so everything shows at once. */
const FIRST_RUNS = ['metrics.rollup', 'marketplaces.sync', 'earnings.sample', 'strategy.suggest', 'billing.charge', 'alerts.evaluate', 'fleet.snapshot']

const say = (line: string) => console.error(`gpuhq demo: ${line}`)
function fail(line: string, code = 2): never {
  console.error(`gpuhq demo: ${line}`)
  process.exit(code)
}

if (process.argv.length > 2) fail(`unknown argument ${process.argv[2]}\n${USAGE}`)
const env = process.env
if (env.NODE_ENV === 'production') fail('refusing to run with NODE_ENV=production: the demo enables the sandbox payment provider and simulators')

let dir: string
try {
  dir = demoDir(env)
  freshDemoDir(dir)
} catch (e) {
  if (e instanceof DemoDirError) fail(e.message)
  throw e
}
say(`building a fresh demo in ${dir} (wiped at every demo start; nothing persists)`)

const signIn = demoSignIn()
const markets: DemoMarkets = await startDemoMarkets()
let config: ReturnType<typeof loadConfig>
try {
  const {
    SECRET_KEY: _key,
    SMTP_URL: _smtp,
    TELEGRAM_BOT_TOKEN: _bot,
    TELEGRAM_UPDATES: _updates,
    NOWPAYMENTS_API_KEY: _np,
    NOWPAYMENTS_IPN_SECRET: _ipn,
    CAPTCHA_SECRET: _captcha,
    ...kept
  } = env
  config = loadConfig({
    ...kept,
    NODE_ENV: 'development',
    DATA_DIR: dir,
    DATABASE_URL: `file:${dir}/gpuhq.db`,
    TEST_CLOCK: 'false',
    JOBS_ENABLED: 'true',
    PAYMENT_PROVIDERS: 'sandbox',
    MARKETPLACE_A_API_URL: markets.a.url,
    MARKETPLACE_B_API_URL: markets.b.url,
    MARKETPLACE_PACE_PERCENT: '10',
    LOG_LEVEL: env.LOG_LEVEL || 'warn',
    // Published to the web console, which signs straight in (refused in production, like the demo).
    DEMO_EMAIL: signIn.email,
    DEMO_PASSWORD: signIn.password,
  })
} catch (e) {
  await markets.stop()
  if (e instanceof ConfigError) fail(`invalid configuration: ${e.message}`)
  throw e
}

let service: Service
try {
  service = await startService(config)
} catch (e) {
  await markets.stop()
  const line = listenFailure(e, config.port)
  if (line) fail(line.replace(/^gpuhq: /, ''), 1)
  throw e
}
const { deps, runner } = service

let fleet: DemoFleet | null = null
let stopChurn = () => {}
let stopMeter = () => {}
let stopping = false
async function shutdown(signal: string, code = 0) {
  if (stopping) return
  stopping = true
  say(`stopping (${signal})`)
  stopChurn()
  stopMeter()
  await fleet?.stop()
  await service.stop()
  await markets.stop()
  process.exit(code)
}
process.on('SIGTERM', () => void shutdown('SIGTERM'))
process.on('SIGINT', () => void shutdown('SIGINT'))

try {
  const api = new DemoClient(service.url)
  const owner = await createOwner(deps, api, signIn)
  await openingBalance(deps, owner.tenantId, deps.clock.nowUs())
  await upgradeToPro(owner.member)
  const token = await mintToken(owner.member)
  const pat = api.as({ bearer: token })

  say(`enrolling ${DEMO_SERVERS.length} simulated servers through their agents …`)
  const ids = await enrolFleet(pat, service.url, dir, config.logLevel)
  await arrangeFleet(pat, ids)
  fleet = await runFleet(pat, ids, dir, config.logLevel, say)

  say('connecting both marketplace simulators, linking machines, publishing offers …')
  const linkedAt = await connectMarketplaces(pat, ids)
  await configureAccount(pat, ids)

  say('backfilling a week of history (telemetry, rentals, hourly charges) …')
  const now = deps.clock.nowUs()
  await backdateFleet(deps, owner.tenantId, ids, now)
  // The week's hourly charges, booked before today's top-ups: the ledger's balances after chain.
  const charged = await runner.run('billing.charge', `demo:${deps.newId()}`)
  if (charged.outcome !== 'succeeded') say(`warning: booking the week's charges ${charged.outcome}: ${charged.detail}`)
  await fundAccount(owner.member)
  await backfillTelemetry(deps, ids, now)
  // The week's rentals up to this moment, accrued by gpuhq and reported by the Vast simulator from
  // the same rentals; from here on the simulator's meter and the earnings.sample job each go on.
  const historyUntil = deps.clock.nowUs()
  reportVastEarnings(markets, await backfillEarnings(deps, owner.tenantId, ids, linkedAt, now, historyUntil))
  stopMeter = meterVastEarnings(markets, historyUntil / 1000, METER_MS)
  // One renter report, which the first sync below turns into an alert (docs/demo.md).
  reportRenterProblem(markets, deps.clock.nowUs())
  for (const job of FIRST_RUNS) {
    const run = await runner.run(job, `demo:${deps.newId()}`)
    if (run.outcome !== 'succeeded') say(`warning: the first ${job} run ${run.outcome}: ${run.detail}`)
  }
  if (stopping) await new Promise(() => {})
  runner.start()
  stopChurn = churnRentals(markets, CHURN_MS)

  const base = config.publicUrl
  console.error(
    [
      '',
      `gpuhq demo listening on ${base} — console: ${base}/ — API docs: ${base}/api/v1/docs`,
      `  console:  ${base}/   (opens signed in as the demo owner)`,
      '  This is a demo: a fresh database in its own directory, wiped at the next demo start; nothing persists.',
      `  sign in:  ${owner.email}  /  ${owner.password}   (POST ${base}/api/v1/auth/sessions)`,
      `  token:    ${token}`,
      '            (every scope; shown once: use it as  -H "authorization: Bearer <token>")',
      `  try:      curl -sS -H "authorization: Bearer ${token}" ${base}/api/v1/servers`,
      '  Stop with Ctrl-C.',
      '',
    ].join('\n'),
  )
} catch (e) {
  if (stopping) await new Promise(() => {})
  console.error(`gpuhq demo: could not build the demo: ${e instanceof Error ? e.message : String(e)}`)
  await shutdown('failure', 1)
}
