/**
 * One tenant hammering every report while another tenant reads its fleet (issue 34, finding 3).
 * Prints the bystander's GET /servers latency while idle and while the hammer runs, side by side,
 * from the same run: first with the default limits, then with the expensive-read limits turned off
 * (same database, a second service process), which shows what the reports themselves cost now.
 * Never part of the test run.
 *
 *   bun run bench/reports.ts
 *   knobs: BENCH_SERVERS=20 BENCH_GPUS=8 BENCH_DAYS=366 (the hammering tenant's fleet and history)
 *          BENCH_SECONDS=10 (each phase) BENCH_LOOPS=4 (hammer loops) BENCH_RATE=200 (bystander requests a second)
 *          BENCH_CPU_PROF=<dir>
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { US_PER_DAY, US_PER_HOUR } from '../src/platform/time'
import { benchDeps, freePort, proAccount, waitFor } from './support'

const SERVERS = Number(process.env.BENCH_SERVERS ?? 20)
const GPUS = Number(process.env.BENCH_GPUS ?? 8)
const DAYS = Number(process.env.BENCH_DAYS ?? 366)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const LOOPS = Number(process.env.BENCH_LOOPS ?? 4)
const BYSTANDER_SERVERS = 50
const RATE = Number(process.env.BENCH_RATE ?? 200)
const ROOT = resolve(import.meta.dir, '..')
const PASSWORD = 'correct horse battery staple 42'
const CPU_PROF = process.env.BENCH_CPU_PROF
const REPORTS = ['margin', 'utilisation', 'earnings', 'spend'] as const
const GROUPS = ['day', 'week', 'month'] as const

const dir = mkdtempSync(join(tmpdir(), 'gpuhq-bench-reports-'))
const baseEnv: Record<string, string> = {
  PATH: process.env.PATH ?? '',
  NODE_ENV: 'test',
  DATA_DIR: dir,
  DATABASE_URL: `file:${join(dir, 'gpuhq.db')}`,
  SECRET_KEY: 'c'.repeat(64),
  LOG_LEVEL: 'info',
  JOBS_ENABLED: 'false',
}

type Sample = { at: number; ms: number; status: number }

/** The report URL of the k-th hammer request: a 366-day range ending k days ago, grouping in turn, so each is a cache miss. */
function hammerUrl(base: string, report: string, k: number): string {
  const today = new Date().toISOString().slice(0, 10)
  const day = (back: number) => new Date(Date.parse(`${today}T00:00:00Z`) - back * 86_400_000).toISOString().slice(0, 10)
  return `${base}/api/v1/reports/${report}?from=${day(365 + k)}&to=${day(k)}&group_by=${GROUPS[k % GROUPS.length]}`
}

// The hammerer runs in a child process of its own, so its loops do not share the bystander's
// event loop in this process (only the machine's cores).
if (process.env.BENCH_ROLE === 'hammer') {
  const base = process.env.BENCH_BASE!
  const cookie = process.env.BENCH_COOKIE!
  const until = performance.now() + SECONDS * 1000
  let k = Number(process.env.BENCH_SHIFT ?? 0)
  const answers: Record<string, number> = {}
  await Promise.all(
    Array.from({ length: LOOPS }, async (_, i) => {
      let n = i
      while (performance.now() < until) {
        let status = 0
        let retryAfter = 1
        try {
          const res = await fetch(hammerUrl(base, REPORTS[n++ % REPORTS.length]!, k++ % 2000), { headers: { cookie } })
          await res.arrayBuffer()
          status = res.status
          retryAfter = Number(res.headers.get('retry-after') ?? 1)
        } catch {
          status = 0
        }
        answers[status] = (answers[status] ?? 0) + 1
        // A client that honours Retry-After (BENCH_HONOUR=1) waits as told; the finding's did not.
        if (status === 429 && process.env.BENCH_HONOUR === '1') await Bun.sleep(Math.max(0, Math.min(until - performance.now(), retryAfter * 1000)))
      }
    }),
  )
  process.stdout.write(JSON.stringify(answers))
  process.exit(0)
}

const { bystander, hammerer } = await prepare()
const results: { config: string; idle: Stats; hammer: Stats; after: Stats; hammerAnswers: Map<number, number>; single: Map<string, number> }[] = []
try {
  for (const [config, extra, honour] of [
    ['default limits (20 a minute per caller in bursts of 5, 40 per tenant in bursts of 10)', {}, false],
    ['default limits, the hammerer honouring Retry-After', {}, true],
    [
      'expensive-read limits off',
      { RATE_LIMIT_EXPENSIVE_READS_PER_MINUTE: '0', RATE_LIMIT_TENANT_EXPENSIVE_READS_PER_MINUTE: '0', RATE_LIMIT_SESSION_USER_PER_MINUTE: '0' },
      false,
    ],
  ] as const)
    results.push({ config, ...(await runService(extra, honour)) })
} finally {
  rmSync(dir, { recursive: true, force: true })
}

console.log(
  `bun ${Bun.version}, ${cpus().length} cores. Bystander: GET /servers?limit=50 (PAT, ${BYSTANDER_SERVERS} servers) at a steady ${RATE} a second, latency from when each was due. ` +
    `Hammerer: ${LOOPS} loops over the four reports with its browser session, each request a cache miss (366-day range shifted by a day each time, grouping by day/week/month in turn), ` +
    `on a fleet of ${SERVERS} servers × ${GPUS} GPUs with ${DAYS} days of hourly GPU rollups (power, utilisation), daily accrual rows and hourly charges. ${SECONDS} s per phase.\n`,
)
console.log(
  '| limits | bystander idle before p50 / p95 ms | while hammered p50 / p95 ms | idle after p50 / p95 ms | p95 hammered ÷ idle before | bystander req/s before / hammered | hammerer answers |',
)
console.log('|---|---:|---:|---:|---:|---:|---|')
for (const r of results) {
  const answers = [...r.hammerAnswers].sort(([a], [b]) => a - b).map(([status, n]) => `${n}× ${status}`)
  console.log(
    `| ${r.config} | ${r.idle.p50.toFixed(2)} / ${r.idle.p95.toFixed(2)} | ${r.hammer.p50.toFixed(2)} / ${r.hammer.p95.toFixed(2)} | ${r.after.p50.toFixed(2)} / ${r.after.p95.toFixed(2)} | ${(r.hammer.p95 / r.idle.p95).toFixed(2)}× | ${r.idle.rate.toFixed(0)} / ${r.hammer.rate.toFixed(0)} | ${answers.join(', ')} |`,
  )
}
console.log('\none report alone (366 days by day, a cache miss), ms, before each run:')
for (const [i, r] of results.entries())
  console.log(
    `- ${i === 0 ? 'first run (the daily aggregates not stored yet)' : `run ${i + 1} (stored by the first)`}: ${[...r.single].map(([name, ms]) => `${name} ${ms.toFixed(1)}`).join(', ')}`,
  )
process.exit(0)

type Stats = { n: number; p50: number; p95: number; max: number; rate: number; errors: number }

function stats(list: Sample[], seconds: number): Stats {
  const ms = list.map((s) => s.ms).sort((a, b) => a - b)
  const pct = (p: number) => ms[Math.min(ms.length - 1, Math.floor((p / 100) * ms.length))] ?? Number.NaN
  return {
    n: list.length,
    p50: pct(50),
    p95: pct(95),
    max: ms.at(-1) ?? Number.NaN,
    rate: list.length / seconds,
    errors: list.filter((s) => s.status !== 200).length,
  }
}

async function runService(extra: Record<string, string>, honour: boolean) {
  const port = freePort()
  const base = `http://127.0.0.1:${port}`
  const service = Bun.spawn([process.execPath, ...(CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`] : []), 'run', 'src/main.ts'], {
    cwd: ROOT,
    env: { ...baseEnv, PORT: String(port), PUBLIC_URL: base, ...extra },
    stdout: 'ignore',
    stderr: 'inherit',
  })
  try {
    await waitFor(`${base}/readyz`)
    const pat = await signIn(base, bystander.email, bystander.ticket, true)
    const cookie = await signIn(base, hammerer.email, hammerer.ticket, false)
    let shift = 0
    const nextUrl = (report: string) => hammerUrl(base, report, shift++)

    // Each report alone first (a cache miss each): what one costs.
    const single = new Map<string, number>()
    for (const report of REPORTS) {
      const started = performance.now()
      const res = await fetch(nextUrl(report), { headers: { cookie } })
      await res.arrayBuffer()
      if (res.status !== 200) throw new Error(`${report} answered ${res.status}`)
      single.set(report, performance.now() - started)
    }

    // The bystander sends at a steady rate whatever the answers do (an open loop), and each
    // latency runs from when its request was due: a stalled service shows as every request that
    // waited on it, not as the few a closed loop would have managed to send.
    const reads: Sample[] = []
    const inFlight = new Set<Promise<void>>()
    let stopReads = false
    const readLoop = async () => {
      let due = performance.now()
      while (!stopReads) {
        const at = due
        const p = (async () => {
          let status = 0
          try {
            const res = await fetch(`${base}/api/v1/servers?limit=50`, { headers: { authorization: `Bearer ${pat}` } })
            await res.arrayBuffer()
            status = res.status
          } catch {
            status = 0
          }
          reads.push({ at, ms: performance.now() - at, status })
        })()
        inFlight.add(p)
        void p.then(() => inFlight.delete(p))
        due += 1000 / RATE
        const wait = due - performance.now()
        if (wait > 0) await Bun.sleep(wait)
      }
    }
    const readers = [readLoop()]
    await Bun.sleep(5000) // warm-up, not counted (the first requests, the storing's checkpoint)
    const idleFrom = performance.now()
    await Bun.sleep(SECONDS * 1000)
    const idleTo = performance.now()
    const child = Bun.spawn([process.execPath, 'run', import.meta.path], {
      cwd: ROOT,
      env: {
        ...process.env,
        BENCH_HONOUR: honour ? '1' : '0',
        BENCH_ROLE: 'hammer',
        BENCH_BASE: base,
        BENCH_COOKIE: cookie,
        BENCH_SHIFT: String(shift + 1000),
        BENCH_SECONDS: String(SECONDS),
      },
      stdout: 'pipe',
      stderr: 'inherit',
    })
    // The child's start-up (about 0.1 s) is in the window: a little idle time counted as hammered.
    const hammerFrom = performance.now()
    const out = await new Response(child.stdout).text()
    await child.exited
    const hammerTo = performance.now()
    // Idle again, as a second baseline from the same run: what the machine's other load does to it.
    await Bun.sleep(SECONDS * 1000)
    const afterTo = performance.now()
    stopReads = true
    await Promise.all(readers)
    await Promise.all([...inFlight])
    const within = (from: number, to: number) => reads.filter((s) => s.at >= from && s.at + s.ms <= to)
    const answers = new Map<number, number>(Object.entries(JSON.parse(out) as Record<string, number>).map(([k, v]) => [Number(k), v]))
    return {
      idle: stats(within(idleFrom, idleTo), (idleTo - idleFrom) / 1000),
      hammer: stats(within(hammerFrom, hammerTo), (hammerTo - hammerFrom) / 1000),
      after: stats(within(hammerTo, afterTo), (afterTo - hammerTo) / 1000),
      hammerAnswers: answers,
      single,
    }
  } finally {
    service.kill('SIGTERM')
    await Promise.race([service.exited, Bun.sleep(15_000)])
    if (service.exitCode === null && service.signalCode === null) service.kill('SIGKILL')
  }
}

/**
 * Completes the owner's first sign-in (the password-reset ticket sets a password) and answers the
 * session cookie, or (`pat`) a read-only personal access token made with it.
 */
async function signIn(base: string, email: string, ticket: string, pat: boolean): Promise<string> {
  const json = { 'content-type': 'application/json' }
  let cookie: string | undefined
  const reset = await fetch(`${base}/api/v1/auth/password-reset/complete`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ ticket, password: PASSWORD }),
  })
  if (reset.status === 200) cookie = /^([^=]+=[^;]+)/.exec(reset.headers.get('set-cookie') ?? '')?.[1]
  else {
    // The second service process: the ticket is spent, the password set.
    const login = await fetch(`${base}/api/v1/auth/sessions`, { method: 'POST', headers: json, body: JSON.stringify({ email, password: PASSWORD }) })
    if (login.status !== 201) throw new Error(`sign-in answered ${login.status}: ${await login.text()}`)
    cookie = /^([^=]+=[^;]+)/.exec(login.headers.get('set-cookie') ?? '')?.[1]
  }
  if (!cookie) throw new Error('no session cookie')
  if (!pat) return cookie
  const created = await fetch(`${base}/api/v1/tokens`, {
    method: 'POST',
    headers: { ...json, cookie, origin: base },
    body: JSON.stringify({ name: 'bench', scopes: ['servers:read'] }),
  })
  if (created.status !== 201) throw new Error(`POST /tokens answered ${created.status}`)
  return ((await created.json()) as { token: string }).token
}

/**
 * Before the services start, in bulk SQL: the bystander (pro, BYSTANDER_SERVERS servers) and the
 * hammerer (pro, SERVERS servers of GPUS GPUs enrolled DAYS days ago) with, per server, an hourly
 * rollup of `power_w` and `utilization_pct` per GPU for every hour, a presence transition a day,
 * an accrual row per day, and an hourly charge over all its servers.
 */
async function prepare() {
  const deps = await benchDeps(baseEnv)
  // SQLite only (a file in a temp dir): the fixtures go in bulk over bun:sqlite's own connection,
  // before the services start and while nothing else of this process uses it.
  const sqlite = deps.database.sqlite!
  const now = deps.clock.nowUs()
  const firstDay = Math.floor(now / US_PER_DAY) * US_PER_DAY - (DAYS - 1) * US_PER_DAY
  const lastHour = Math.floor(now / US_PER_HOUR) * US_PER_HOUR
  const bystanderEmail = 'bystander@example.test'
  const hammererEmail = 'hammerer@example.test'
  const b = await proAccount(deps, bystanderEmail, 'Bystander rigs')
  const h = await proAccount(deps, hammererEmail, 'Hammerer rigs')
  sqlite.transaction(() => {
    const server = sqlite.prepare('INSERT INTO servers (id, tenant_id, name, created_at, gpu_count, gpu_model) VALUES (?, ?, ?, ?, ?, ?)')
    for (let i = 0; i < BYSTANDER_SERVERS; i++) server.run(deps.newId(), b.tenantId, `bystander-${i}`, firstDay, 1, 'NVIDIA GeForce RTX 4090')
    const series = sqlite.prepare('INSERT INTO metric_series (server_id, gpu_index, metric) VALUES (?, ?, ?) RETURNING id')
    const rollup = sqlite.prepare(
      'INSERT INTO metric_rollups (series_id, grain, bucket, min, max, avg, p50, p95, last, samples) VALUES (?, 3600, ?, ?, ?, ?, ?, ?, ?, 360)',
    )
    const event = sqlite.prepare(
      "INSERT INTO server_events (id, tenant_id, server_id, kind, severity, message, created_at) VALUES (?, ?, ?, ?, 'info', 'bench', ?)",
    )
    const accrual = sqlite.prepare(
      "INSERT INTO earnings_days (tenant_id, server_id, marketplace, day, accrued_usd_micros, accrued_us, gap_us, samples, platform_usd_micros, by_currency, updated_at) VALUES (?, ?, 'marketplace_a', ?, ?, ?, 0, 96, NULL, ?, ?)",
    )
    const ids: string[] = []
    for (let s = 0; s < SERVERS; s++) {
      const id = deps.newId()
      ids.push(id)
      server.run(id, h.tenantId, `rig-${s}`, firstDay, GPUS, 'NVIDIA GeForce RTX 4090')
      for (let g = 0; g < GPUS; g++) {
        for (const metric of ['power_w', 'utilization_pct']) {
          const seriesId = (series.get(id, g, metric) as { id: number }).id
          for (let t = firstDay; t < lastHour; t += US_PER_HOUR) {
            const v = metric === 'power_w' ? 300 + ((t / US_PER_HOUR + g) % 50) : (t / US_PER_HOUR + s) % 100
            rollup.run(seriesId, t, v, v, v, v, v, v)
          }
        }
      }
      for (let d = firstDay; d < now; d += US_PER_DAY) {
        event.run(deps.newId(), h.tenantId, id, 'presence.online', d + 60_000_000)
        event.run(deps.newId(), h.tenantId, id, 'presence.offline', d + 23 * US_PER_HOUR)
        const date = new Date(d / 1000).toISOString().slice(0, 10)
        const usd = 12_000_000 + s * 1000
        accrual.run(h.tenantId, id, date, usd, 20 * US_PER_HOUR, JSON.stringify({ USD: { amount12: `${usd}000000`, usdMicros: usd } }), now)
      }
    }
    // Hourly charges over the fleet: a calculation and a ledger row per hour.
    const calc = sqlite.prepare(
      "INSERT INTO charge_calculations (id, tenant_id, charge_hour, plan_code, price_micros_per_server_month, days_in_month, servers, server_ids, amount_micros, created_at) VALUES (?, ?, ?, 'pro', 5000000, 30, ?, ?, ?, ?)",
    )
    const entry = sqlite.prepare(
      "INSERT INTO ledger_entries (id, tenant_id, seq, kind, amount_micros, balance_after_micros, occurred_at, charge_hour, detail, calculation_id, created_at) VALUES (?, ?, ?, 'charge', ?, ?, ?, ?, 'hourly charge', ?, ?)",
    )
    const serverIds = JSON.stringify(ids)
    let seq = 0
    let balance = 0
    for (let t = firstDay; t < lastHour; t += US_PER_HOUR) {
      const amount = Math.round((5_000_000 * SERVERS) / 30 / 24)
      const calcId = deps.newId()
      calc.run(calcId, h.tenantId, t, SERVERS, serverIds, amount, t)
      balance -= amount
      entry.run(deps.newId(), h.tenantId, ++seq, -amount, balance, t, t, calcId, t)
    }
    sqlite.prepare('INSERT INTO balances (tenant_id, balance_micros, last_seq, updated_at) VALUES (?, ?, ?, ?)').run(h.tenantId, balance, seq, now)
    // As a running service's metrics.rollup job leaves it: hourly buckets computed up to the last hour.
    sqlite.prepare('INSERT INTO rollup_watermarks (grain, done_until, redo_from, updated_at) VALUES (3600, ?, NULL, ?)').run(lastHour, now)
  })()
  sqlite.exec('ANALYZE')
  deps.durable.stop()
  await deps.database.close()
  return { bystander: { email: bystanderEmail, ticket: b.ticket }, hammerer: { email: hammererEmail, ticket: h.ticket } }
}
