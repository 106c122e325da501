/**
 * Mixed load: API reads and writes while agents heartbeat, before and during an hourly charge run
 * that books 10,000 tenants. Prints the API's p50/p99/max latency in each phase, so what a charge run
 * does to everyone else shows as a number. Never part of the test run.
 *
 *   bun run bench/mixed.ts
 *   knobs: BENCH_TENANTS=10000 BENCH_SERVERS_PER_TENANT=10 BENCH_AGENTS=200 BENCH_CONCURRENCY=8
 *          BENCH_CPU_PROF=<dir> (the service writes a CPU profile there when it stops)
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { generateSecret, hashSecret } from '../src/platform/secrets'
import { US_PER_HOUR } from '../src/platform/time'
import { benchDeps, freePort, proAccount, waitFor } from './support'

const TENANTS = Number(process.env.BENCH_TENANTS ?? 10_000)
const SERVERS_PER_TENANT = Number(process.env.BENCH_SERVERS_PER_TENANT ?? 10)
const AGENTS = Number(process.env.BENCH_AGENTS ?? 200)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8)
const BEFORE_SECONDS = 5
const AFTER_SECONDS = 3
const ROOT = resolve(import.meta.dir, '..')
const PASSWORD = 'correct horse battery staple 42'
const CPU_PROF = process.env.BENCH_CPU_PROF

const dir = mkdtempSync(join(tmpdir(), 'gpuhq-bench-mixed-'))
const port = freePort()
const env: Record<string, string> = {
  PATH: process.env.PATH ?? '',
  NODE_ENV: 'test',
  TEST_CLOCK: 'true', // the job-run endpoint and the probes resource
  PORT: String(port),
  DATA_DIR: dir,
  DATABASE_URL: `file:${join(dir, 'gpuhq.db')}`,
  SECRET_KEY: 'c'.repeat(64),
  PUBLIC_URL: `http://127.0.0.1:${port}`,
  LOG_LEVEL: 'info',
  JOBS_ENABLED: 'false',
  RATE_LIMIT_TOKEN_PER_MINUTE: '1000000',
  RATE_LIMIT_TENANT_WRITES_PER_MINUTE: '1000000',
}
const base = `http://127.0.0.1:${port}`

type Sample = { at: number; ms: number; ok: boolean }

const { ticket, agentTokens } = await prepare()
const service = Bun.spawn([process.execPath, ...(CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`] : []), 'run', 'src/main.ts'], {
  cwd: ROOT,
  env,
  stdout: 'ignore',
  stderr: 'inherit',
})
try {
  await waitFor(`${base}/readyz`)
  const pat = await personalAccessToken()
  const agents = await Promise.all(agentTokens.map(openAgent))
  let beats = 0
  const heartbeat = setInterval(() => {
    for (const a of agents) a.send(JSON.stringify({ type: 'heartbeat', seq: ++beats }))
  }, 1000)

  const reads: Sample[] = []
  const writes: Sample[] = []
  let stop = false
  let n = 0
  const loop = async (i: number) => {
    while (!stop) {
      const write = i % 2 === 1
      const started = performance.now()
      let ok = false
      try {
        const res = write
          ? await fetch(`${base}/api/v1/_test/probes`, {
              method: 'POST',
              headers: { 'content-type': 'application/json', 'idempotency-key': `mixed-${++n}` },
              body: JSON.stringify({ value: `v${n}` }),
            })
          : await fetch(`${base}/api/v1/servers?limit=50`, { headers: { authorization: `Bearer ${pat}` } })
        await res.arrayBuffer()
        ok = res.status === (write ? 201 : 200)
      } catch {
        ok = false
      }
      ;(write ? writes : reads).push({ at: started, ms: performance.now() - started, ok })
    }
  }
  const loops = Array.from({ length: CONCURRENCY }, (_, i) => loop(i))
  await Bun.sleep(1000) // warm-up, not counted
  const t0 = performance.now()
  await Bun.sleep(BEFORE_SECONDS * 1000)
  const chargeStart = performance.now()
  const run = await fetch(`${base}/api/v1/_test/jobs/billing.charge/run`, { method: 'POST' })
  const chargeEnd = performance.now()
  const outcome = (await run.json()) as { outcome?: string; detail?: string }
  await Bun.sleep(AFTER_SECONDS * 1000)
  stop = true
  await Promise.all(loops)
  clearInterval(heartbeat)
  for (const a of agents) a.close()

  // A request belongs to the charge run when any part of it overlapped the run: one that began just
  // before and waited through the run is what the run cost it.
  const phase = (list: Sample[], from: number, to: number) => list.filter((s) => s.at < to && s.at + s.ms > from)
  const stats = (list: Sample[]) => {
    const ms = list.map((s) => s.ms).sort((a, b) => a - b)
    const pct = (p: number) => ms[Math.min(ms.length - 1, Math.floor((p / 100) * ms.length))] ?? Number.NaN
    return { n: list.length, errors: list.filter((s) => !s.ok).length, p50: pct(50), p99: pct(99), max: ms.at(-1) ?? Number.NaN }
  }
  console.log(
    `bun ${Bun.version}, ${cpus().length} cores; ${TENANTS.toLocaleString('en')} tenants × ${SERVERS_PER_TENANT} servers to charge; ${AGENTS} agents heartbeating every second; ${CONCURRENCY} API loops (half GET /servers with a PAT, 50 rows; half POST with an Idempotency-Key)\n`,
  )
  console.log(`charge run: ${(chargeEnd - chargeStart).toFixed(0)} ms, ${outcome.outcome}: ${outcome.detail}\n`)
  console.log('| phase | requests | req/s | p50 ms | p99 ms | max ms | errors |\n|---|---:|---:|---:|---:|---:|---:|')
  for (const [name, list] of [
    ['reads', reads],
    ['writes', writes],
  ] as const) {
    for (const [label, from, to] of [
      ['before the charge run', t0, Math.min(chargeStart, ...[...reads, ...writes].filter((x) => x.at + x.ms > chargeStart).map((x) => x.at))],
      ['during the charge run', chargeStart, chargeEnd],
      ['after it', chargeEnd, chargeEnd + AFTER_SECONDS * 1000],
    ] as const) {
      const s = stats(phase(list, from, to))
      const seconds = (to - from) / 1000
      console.log(
        `| ${name}, ${label} | ${s.n} | ${(s.n / seconds).toFixed(0)} | ${s.p50.toFixed(2)} | ${s.p99.toFixed(2)} | ${s.max.toFixed(2)} | ${s.errors} |`,
      )
    }
  }

  /** The owner sets a password (signed in), then creates a read-only personal access token. */
  async function personalAccessToken(): Promise<string> {
    const json = { 'content-type': 'application/json' }
    const reset = await fetch(`${base}/api/v1/auth/password-reset/complete`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ ticket, password: PASSWORD }),
    })
    const cookie = /^([^=]+=[^;]+)/.exec(reset.headers.get('set-cookie') ?? '')?.[1]
    if (reset.status !== 200 || !cookie) throw new Error(`password reset answered ${reset.status}`)
    const created = await fetch(`${base}/api/v1/tokens`, {
      method: 'POST',
      headers: { ...json, cookie },
      body: JSON.stringify({ name: 'bench', scopes: ['servers:read'] }),
    })
    if (created.status !== 201) throw new Error(`POST /tokens answered ${created.status}`)
    return ((await created.json()) as { token: string }).token
  }
} finally {
  service.kill('SIGTERM')
  await Promise.race([service.exited, Bun.sleep(15_000)])
  if (service.exitCode === null && service.signalCode === null) service.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
}
process.exit(0)

/** A WebSocket agent session: hello, then whatever the caller sends. */
async function openAgent(token: string): Promise<WebSocket> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/api/v1/agent/ws`, { headers: { authorization: `Bearer ${token}` } } as unknown as string[])
  await new Promise<void>((res, rej) => {
    ws.onopen = () =>
      ws.send(JSON.stringify({ type: 'hello', agent_version: '1.4.0', hostname: 'bench', gpus: [{ index: 0, model: 'NVIDIA GeForce RTX 4090' }] }))
    ws.onmessage = (e) => {
      if ((JSON.parse(String(e.data)) as { type: string }).type === 'welcome') res()
    }
    ws.onclose = (e) => rej(new Error(`agent session closed (${e.code})`))
  })
  return ws
}

/**
 * Before the service starts, in bulk SQL: TENANTS starter tenants with SERVERS_PER_TENANT servers
 * each and a 100 USD balance, every hour booked up to two hours ago (so the run books exactly one
 * hour for each); and the API tenant (pro) with AGENTS enrolled servers and their credentials.
 */
async function prepare(): Promise<{ ticket: string; agentTokens: string[] }> {
  const deps = await benchDeps(env)
  // SQLite only (a file in a temp dir): the fixtures go in bulk over bun:sqlite's own connection,
  // before the service starts and while nothing else of this process uses it.
  const sqlite = deps.database.sqlite!
  const now = deps.clock.nowUs()
  const due = Math.floor(now / US_PER_HOUR) * US_PER_HOUR - 2 * US_PER_HOUR
  const enrolled = due - 24 * US_PER_HOUR
  sqlite.transaction(() => {
    const tenant = sqlite.prepare("INSERT INTO tenants (id, name, plan_code, account_state, created_at) VALUES (?, ?, 'starter', 'active', ?)")
    const server = sqlite.prepare('INSERT INTO servers (id, tenant_id, name, created_at) VALUES (?, ?, ?, ?)')
    const entry = sqlite.prepare(
      "INSERT INTO ledger_entries (id, tenant_id, seq, kind, amount_micros, balance_after_micros, occurred_at, detail, created_at) VALUES (?, ?, 1, 'topup', 100000000, 100000000, ?, 'opening top-up', ?)",
    )
    const balance = sqlite.prepare('INSERT INTO balances (tenant_id, balance_micros, last_seq, updated_at) VALUES (?, 100000000, 1, ?)')
    for (let i = 0; i < TENANTS; i++) {
      const id = deps.newId()
      tenant.run(id, `tenant ${i}`, enrolled)
      for (let s = 0; s < SERVERS_PER_TENANT; s++) server.run(deps.newId(), id, `rig-${i}-${s}`, enrolled)
      entry.run(deps.newId(), id, enrolled, enrolled)
      balance.run(id, enrolled)
    }
    sqlite.prepare("INSERT INTO billing_state (key, charged_until, updated_at) VALUES ('charges', ?, ?)").run(due, enrolled)
  })()
  const { tenantId, ticket } = await proAccount(deps)
  const agentTokens: string[] = []
  const insert = sqlite.prepare(
    `INSERT INTO servers (id, tenant_id, name, created_at, hostname, fingerprint, agent_version, gpus, gpu_count, gpu_model, agent_token_hash, enrolled_at)
     VALUES (?, ?, ?, ?, ?, ?, '1.4.0', ?, 1, 'NVIDIA GeForce RTX 4090', ?, ?)`,
  )
  const gpus = JSON.stringify([{ index: 0, model: 'NVIDIA GeForce RTX 4090', memory_mb: 24564 }])
  sqlite.transaction(() => {
    for (let i = 0; i < AGENTS; i++) {
      const token = generateSecret('gpuhq_agt_')
      const host = `agent-${String(i).padStart(4, '0')}`
      insert.run(deps.newId(), tenantId, host, now, host, `sha256:${host}`, gpus, hashSecret(token), now)
      agentTokens.push(token)
    }
  })()
  sqlite.exec('ANALYZE')
  deps.durable.stop()
  await deps.database.close()
  return { ticket, agentTokens }
}
