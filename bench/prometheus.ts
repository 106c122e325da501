/**
 * Prometheus scrape benchmark: GET /metrics/prometheus's body (scrapeMetrics, as the route builds
 * it) for one tenant of BENCH_SERVERS servers with BENCH_GPUS GPUs each, every GPU with the eight
 * readings of the agent protocol, beside the two reads it starts with alone, and the longest the
 * event loop went without a turn while a scrape ran (a 1 ms interval's largest gap). Never part of
 * the test run. Usage: `bun run bench/prometheus.ts` (see bench/README.md).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { exposedServers, LATEST_SLICE, latestGpuMetricsOf } from '../src/modules/fleet'
import { scrapeMetrics } from '../src/modules/prometheus'
import { benchDeps } from './support'

const FLEETS = (process.env.BENCH_SERVERS ?? '30,2000').split(',').map(Number)
const GPUS = Number(process.env.BENCH_GPUS ?? 8)
const RUNS = Number(process.env.BENCH_RUNS ?? 7)
const READINGS = ['temperature_c', 'hotspot_temperature_c', 'memory_temperature_c', 'utilization_pct', 'power_w', 'memory_used_mb', 'fan_pct', 'clock_sm_mhz']
const HOST = ['cpu_usage_pct', 'memory_used_pct', 'disk_used_pct', 'net_rx_mbps', 'net_tx_mbps']

const dir = mkdtempSync(join(tmpdir(), 'gpuhq-bench-prometheus-'))
const ms = (t: number) => `${t.toFixed(1)} ms`
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

try {
  const env = {
    NODE_ENV: 'test',
    DATA_DIR: dir,
    DATABASE_URL: `file:${join(dir, 'gpuhq.db')}`,
    SECRET_KEY: 'c'.repeat(64),
    PUBLIC_URL: 'http://127.0.0.1',
    LOG_LEVEL: 'warn',
  }
  const deps = await benchDeps(env, { warnings: true })
  // SQLite only (a file in a temp dir): the fixtures go in bulk over bun:sqlite's own connection,
  // while nothing else of this process uses it; what is timed goes through the data layer.
  const sqlite = deps.database.sqlite!
  console.log(`bun ${Bun.version}, ${cpus().length} cores; fleets of ${FLEETS.join(' and ')} servers × ${GPUS} GPUs, ${READINGS.length} readings each\n`)
  const rows: string[] = []
  for (const servers of FLEETS) {
    // Fixtures in bulk SQL: a tenant on pro, its servers online with an inventory, their latest readings.
    const tenantId = deps.newId()
    const now = deps.clock.nowUs()
    const gpus = JSON.stringify(Array.from({ length: GPUS }, (_, i) => ({ index: i, model: 'NVIDIA GeForce RTX 4090', memory_mb: 24564, uuid: `GPU-${i}` })))
    sqlite.transaction(() => {
      sqlite.prepare("INSERT INTO tenants (id, name, plan_code, account_state, created_at) VALUES (?, 'bench', 'pro', 'active', ?)").run(tenantId, now)
      const server = sqlite.prepare(
        "INSERT INTO servers (id, tenant_id, name, created_at, gpus, gpu_count, gpu_model, presence, last_seen_at) VALUES (?, ?, ?, ?, ?, ?, 'NVIDIA GeForce RTX 4090', 'online', ?)",
      )
      const latest = sqlite.prepare('INSERT INTO server_latest_metrics (server_id, gpu_index, metric, value, t) VALUES (?, ?, ?, ?, ?)')
      for (let s = 0; s < servers; s++) {
        const id = deps.newId()
        server.run(id, tenantId, `rig-${s}`, now, gpus, GPUS, now)
        for (let g = 0; g < GPUS; g++) for (const m of READINGS) latest.run(id, g, m, Math.round(Math.random() * 1000) / 10, now)
        for (const m of HOST) latest.run(id, -1, m, 12.5, now)
      }
    })()
    sqlite.exec('ANALYZE')
    const actor = {
      kind: 'system',
      via: 'system',
      tenantId,
      userId: null,
      role: null,
      scopes: null,
      serverAllowlist: null,
      tenant: { planCode: 'pro', accountState: 'active' },
    } as const
    const reads: number[] = []
    const whole: number[] = []
    const held: number[] = []
    let body = ''
    for (let r = 0; r < RUNS; r++) {
      let t0 = performance.now()
      const ids = (await exposedServers(deps.db, tenantId)).map((s) => s.id)
      for (let i = 0; i < ids.length; i += LATEST_SLICE) await latestGpuMetricsOf(deps.db, ids.slice(i, i + LATEST_SLICE))
      reads.push(performance.now() - t0)
      // The lag monitor: a 1 ms interval; the longest gap between its ticks (or from the last tick
      // to the end) is the longest the scrape held the event loop at a stretch.
      let last = performance.now()
      let worst = 0
      const monitor = setInterval(() => {
        const now = performance.now()
        worst = Math.max(worst, now - last)
        last = now
      }, 1)
      t0 = performance.now()
      // The body as the server sends it: chunk by chunk (decoded to text afterwards, untimed).
      const chunks: Uint8Array[] = []
      const reader = (await scrapeMetrics({ deps, actor })).getReader()
      for (let c = await reader.read(); !c.done; c = await reader.read()) chunks.push(c.value)
      whole.push(performance.now() - t0)
      clearInterval(monitor)
      held.push(Math.max(worst, performance.now() - last))
      body = Buffer.concat(chunks).toString('utf8')
    }
    const lines = body.split('\n').length - 1
    const gzip = Bun.gzipSync(body).byteLength
    console.log(
      `${servers} servers: scrape ${whole.map(ms).join(', ')}; reads alone ${reads.map(ms).join(', ')}; event loop held at most ${held.map(ms).join(', ')}`,
    )
    rows.push(
      `| ${servers.toLocaleString('en')} × ${GPUS} GPUs | ${lines.toLocaleString('en')} | ${(body.length / 1e6).toFixed(2)} MB / ${(gzip / 1e6).toFixed(2)} MB | ${ms(median(reads))} | ${ms(median(whole))} | ${ms(Math.max(...held))} |`,
    )
  }
  console.log(
    `\n| fleet | lines | text / gzip | the two reads alone (median of ${RUNS}) | whole scrape body (median of ${RUNS}) | event loop held at most (of ${RUNS}) |`,
  )
  console.log('|---|---|---|---|---|---|')
  for (const r of rows) console.log(r)
  await deps.database.close()
} finally {
  rmSync(dir, { recursive: true, force: true })
}
