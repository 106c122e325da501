/**
 * Telemetry benchmark: GPU samples per second through the real agent WebSocket path into SQLite,
 * beside raw batched bun:sqlite inserts of the same rows, and the latency of a 7-day, 8-GPU
 * metrics query on a server with a week of data. Never part of the test run; loopback only.
 * Usage: `bun run bench/ingest.ts` (see bench/README.md).
 *
 * BENCH_DATABASE=postgres runs gpuhq on a fresh PostgreSQL database (docs/scale-out.md) and
 * BENCH_INSTANCES=2 as two instances on it, the agents spread over both; the baseline then also
 * inserts the same rows into PostgreSQL, batched. Only the ingest part runs there: the query part
 * writes its week of history straight into the SQLite file.
 */
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { DEFAULT_METRICS } from '../src/modules/telemetry/metrics.model'
import { benchDeps, benchPostgres, freePort, proAccount, waitFor } from './support'

const AGENTS = Number(process.env.BENCH_AGENTS ?? 200)
const GPUS = Number(process.env.BENCH_GPUS ?? 8)
const FRAMES = Number(process.env.BENCH_FRAMES ?? 30) // telemetry frames per agent, one instant each
const QUERIES = Number(process.env.BENCH_QUERIES ?? 200)
const BASELINE_BATCH = Number(process.env.BENCH_BATCH ?? 5000) // rows per transaction
/** A directory: the service runs with `--cpu-prof-md --cpu-prof-dir=<dir>` and writes its profile there on exit. */
const CPU_PROF_DIR = process.env.BENCH_CPU_PROF ? resolve(process.env.BENCH_CPU_PROF) : null
/** Which parts run (comma-separated, default all): `ingest`, `7d`, `48h`; one part at a time gives a profile of that part alone. */
const POSTGRES = process.env.BENCH_DATABASE === 'postgres'
const INSTANCES = Math.max(1, Number(process.env.BENCH_INSTANCES ?? 1))
const ONLY = new Set((POSTGRES ? 'ingest' : (process.env.BENCH_ONLY ?? 'ingest,7d,48h')).split(',').map((p) => p.trim()))
/**
 * Where "now" sits in the hour for the query part: a list of minutes (default `2,55`), each a
 * placement of its own (a fresh server, its week of history laid out back from that instant, the
 * service's test clock moved forward to it first), or `now` for the real clock as it is. The
 * 7-day answer's last point is the running hour, computed from its raw samples, so its cost
 * depends on the minute: 2 is the best case and 59 the worst (the most raw samples of the hour,
 * and the most after the 5-minute watermark, 4 minutes). A placement whose requests run past the
 * hour says so: its figures are not that minute's.
 */
const MINUTES: (number | null)[] = (process.env.BENCH_MINUTES ?? '2,59').split(',').map((m) => {
  if (m.trim() === 'now') return null
  const minute = Number(m)
  if (!Number.isInteger(minute) || minute < 0 || minute > 59) throw new Error(`BENCH_MINUTES: ${m} is not a minute (0-59) or "now"`)
  return minute
})
const DEADLINE_MS = 180_000
const ROOT = resolve(import.meta.dir, '..')
const US = 1_000_000
const PASSWORD = 'correct horse battery staple 42'

const GPU_METRICS = [
  'temperature_c',
  'hotspot_temperature_c',
  'memory_temperature_c',
  'utilization_pct',
  'memory_used_mb',
  'power_w',
  'fan_pct',
  'clock_sm_mhz',
]
const HOST_METRICS = ['cpu_usage_pct', 'memory_used_pct', 'disk_used_pct', 'net_rx_mbps', 'net_tx_mbps', 'power_w', 'hashrate']
const ROWS_PER_FRAME = GPUS * GPU_METRICS.length + HOST_METRICS.length

const iso = (us: number) => {
  const ms = Math.floor(us / 1000)
  return `${new Date(ms).toISOString().slice(0, 23)}${String(us - ms * 1000).padStart(3, '0')}Z`
}
const value = (i: number, k: number) => 20 + ((i * 31 + k * 17) % 60) + k / 8

const dir = mkdtempSync(join(tmpdir(), 'gpuhq-bench-ingest-'))
const ports = Array.from({ length: INSTANCES }, () => freePort())
const bases = ports.map((p) => `http://127.0.0.1:${p}`)
const base = bases[0]!
const pg = POSTGRES ? await benchPostgres() : null
const env = {
  PATH: process.env.PATH ?? '',
  NODE_ENV: 'test',
  TEST_CLOCK: 'true', // mounts POST /_test/jobs/{job}/run, used to run metrics.rollup once
  PORT: String(ports[0]),
  PUBLIC_URL: base,
  DATA_DIR: dir,
  DATABASE_URL: pg?.url ?? `file:${join(dir, 'gpuhq.db')}`,
  SECRET_KEY: 'd'.repeat(64),
  LOG_LEVEL: 'info',
  JOBS_ENABLED: 'false',
}
const profiling = CPU_PROF_DIR ? ['--cpu-prof-md', `--cpu-prof-dir=${CPU_PROF_DIR}`] : []
const children: ReturnType<typeof Bun.spawn>[] = []
const watchdog = setTimeout(() => {
  console.error(`bench: gave up after ${DEADLINE_MS / 1000} s`)
  for (const c of children) c.kill('SIGKILL')
  process.exit(1)
}, DEADLINE_MS * 2)

try {
  // One at a time: the first migrates the database, the others find it migrated.
  for (const [i, port] of ports.entries()) {
    children.push(
      Bun.spawn([process.execPath, ...profiling, 'run', 'src/main.ts'], {
        cwd: ROOT,
        env: { ...env, PORT: String(port) },
        stdout: 'ignore',
        stderr: 'inherit',
      }),
    )
    await waitFor(`${bases[i]}/readyz`)
  }
  console.log(
    `bun ${Bun.version}, ${cpus().length} cores; ${AGENTS} agents × ${GPUS} GPUs, ${FRAMES} frames each (${GPU_METRICS.length} GPU metrics per GPU + ${HOST_METRICS.length} host metrics per frame)`,
  )
  console.log(`gpuhq on ${POSTGRES ? `PostgreSQL, ${INSTANCES} instance${INSTANCES > 1 ? 's (agents spread over them)' : ''}` : 'SQLite'}\n`)
  const cookie = await owner()
  if (ONLY.has('ingest')) {
    const agents = await enrol(cookie, AGENTS)
    const ingest = await ingestThroughWebSockets(agents)
    const baselines = [baselineInserts()]
    if (pg) baselines.push(await baselinePostgres(pg.url))
    printIngest(ingest, baselines)
  }
  if (ONLY.has('7d') || ONLY.has('48h')) for (const minute of MINUTES) await queryBenchmark(cookie, minute)
} finally {
  clearTimeout(watchdog)
  for (const child of children) {
    child.kill('SIGTERM') // the service drains and exits 0, writing its CPU profile when asked to
    await Promise.race([child.exited, Bun.sleep(CPU_PROF_DIR ? 60_000 : 10_000)])
    if (child.exitCode === null) child.kill('SIGKILL')
    else if (CPU_PROF_DIR) console.log(`service exited with ${child.exitCode}; CPU profile in ${CPU_PROF_DIR}`)
  }
  await pg?.stop()
  rmSync(dir, { recursive: true, force: true })
}
process.exit(0)

/** A pro-plan tenant (room for every server) and its owner's session cookie, over real HTTP. */
async function owner(): Promise<string> {
  const deps = await benchDeps(env)
  const { ticket } = await proAccount(deps, `bench-${Date.now()}@example.test`)
  await deps.database.close()
  const res = await post('/api/v1/auth/password-reset/complete', { ticket, password: PASSWORD })
  const cookie = /^([^=]+=[^;]+)/.exec(res.headers.get('set-cookie') ?? '')?.[1]
  if (res.status !== 200 || !cookie) throw new Error(`password reset answered ${res.status}`)
  return cookie
}

type Agent = { serverId: string; token: string }

/** How many metric_samples rows the database holds now, as another connection sees them. */
function rowCounter(): { now: () => Promise<number>; close: () => Promise<void> } {
  if (pg) {
    const sql = new Bun.SQL(pg.url, { max: 1 })
    return {
      now: async () => Number((await sql`SELECT count(*) AS n FROM metric_samples`)[0].n),
      close: () => sql.close(),
    }
  }
  const reader = new Database(join(dir, 'gpuhq.db'), { readonly: true })
  return {
    now: async () => (reader.query('SELECT coalesce(max(rowid), 0) AS n FROM metric_samples').get() as { n: number }).n,
    close: async () => reader.close(),
  }
}

async function enrol(cookie: string, n: number, gpus = GPUS): Promise<Agent[]> {
  const out: Agent[] = []
  for (let i = 0; i < n; i++) {
    const init = (await (await post('/api/v1/tokens/init', {}, { cookie })).json()) as { token: string }
    const body = {
      init_token: init.token,
      agent_version: '1.4.0',
      hostname: `bench-${i}`,
      fingerprint: `sha256:bench-${i}-${Date.now()}`,
      gpus: Array.from({ length: gpus }, (_, index) => ({ index, model: 'NVIDIA GeForce RTX 4090' })),
    }
    const res = await post('/api/v1/agent/register', body)
    if (res.status !== 201) throw new Error(`register answered ${res.status}: ${await res.text()}`)
    const r = (await res.json()) as { server_id: string; agent_token: string }
    out.push({ serverId: r.server_id, token: r.agent_token })
  }
  return out
}

type IngestResult = { gpuSamples: number; rows: number; seconds: number; sendSeconds: number }

/**
 * Every agent opens its session, says hello, then sends its frames back to back, each followed by
 * an unknown-type frame whose `error` answer proves the telemetry frame before it was handled (the
 * protocol has no telemetry ack). The clock stops when the last row is in the database, as a
 * separate connection sees it. With several instances, agent i talks to instance i mod n.
 */
async function ingestThroughWebSockets(agents: Agent[]): Promise<IngestResult> {
  const sockets = await Promise.all(agents.map((a, i) => openSession(a.token, bases[i % bases.length]!)))
  const counter = rowCounter()
  const rowsNow = counter.now
  const before = await rowsNow()
  const expected = before + agents.length * FRAMES * ROWS_PER_FRAME
  const t0 = Date.now() * 1000 - (FRAMES * 10 + 600) * US
  const started = performance.now()
  await Promise.all(
    sockets.map(async (s, a) => {
      for (let f = 0; f < FRAMES; f++) {
        const t = iso(t0 + f * 10 * US + a)
        const samples: Record<string, unknown>[] = Array.from({ length: GPUS }, (_, g) => ({
          t,
          scope: 'gpu',
          gpu_index: g,
          values: Object.fromEntries(GPU_METRICS.map((m, k) => [m, value(f + g, k)])),
        }))
        samples.push({ t, scope: 'host', values: Object.fromEntries(HOST_METRICS.map((m, k) => [m, value(f, k)])) })
        s.ws.send(JSON.stringify({ type: 'telemetry', samples }))
        await s.ack(f)
      }
    }),
  )
  const sent = performance.now()
  while ((await rowsNow()) < expected) {
    if (performance.now() - started > DEADLINE_MS) throw new Error(`only ${(await rowsNow()) - before} of ${expected - before} rows arrived`)
    await Bun.sleep(20)
  }
  const done = performance.now()
  await counter.close()
  await Promise.all(sockets.map((s) => s.close()))
  return { gpuSamples: agents.length * FRAMES * GPUS, rows: expected - before, seconds: (done - started) / 1000, sendSeconds: (sent - started) / 1000 }
}

async function openSession(token: string, at: string) {
  const ws = new WebSocket(`${at.replace('http', 'ws')}/api/v1/agent/ws`, { headers: { authorization: `Bearer ${token}` } } as unknown as string[])
  const waiting = new Map<string, () => void>()
  let welcomed: () => void
  const welcome = new Promise<void>((r) => (welcomed = r))
  ws.addEventListener('message', (e) => {
    const f = JSON.parse(String(e.data)) as { type: string; message?: string }
    if (f.type === 'welcome') return welcomed()
    const key = f.type === 'error' ? /ack_\d+$/.exec(f.message ?? '')?.[0] : undefined
    if (key && waiting.has(key)) {
      waiting.get(key)!()
      waiting.delete(key)
    } else if (f.type === 'error') console.error('bench: unexpected error frame', f)
  })
  await new Promise<void>((res, rej) => {
    ws.addEventListener('open', () => res())
    ws.addEventListener('close', (e) => rej(new Error(`session closed (${e.code})`)))
  })
  ws.send(
    JSON.stringify({
      type: 'hello',
      agent_version: '1.4.0',
      hostname: 'bench',
      gpus: Array.from({ length: GPUS }, (_, index) => ({ index, model: 'NVIDIA GeForce RTX 4090' })),
    }),
  )
  await welcome
  return {
    ws,
    ack: (n: number) =>
      new Promise<void>((res) => {
        waiting.set(`ack_${n}`, res)
        ws.send(JSON.stringify({ type: `ack_${n}` }))
      }),
    close: () =>
      new Promise<void>((res) => {
        ws.addEventListener('close', () => res())
        ws.close(1000)
      }),
  }
}

type BaselineResult = { label: string; rows: number; seconds: number }

/** The rows of the baselines: what the agents send, one series per agent, metric and GPU. */
function baselineRows(): [number, number, number][] {
  const rows: [number, number, number][] = []
  const t0 = Date.now() * 1000
  for (let a = 0; a < AGENTS; a++)
    for (let f = 0; f < FRAMES; f++) {
      const t = t0 + f * 10 * US + a
      for (let g = 0; g < GPUS; g++)
        for (let k = 0; k < GPU_METRICS.length; k++) rows.push([a * ROWS_PER_FRAME + g * GPU_METRICS.length + k + 1, t, value(f + g, k)])
      for (let k = 0; k < HOST_METRICS.length; k++) rows.push([a * ROWS_PER_FRAME + GPUS * GPU_METRICS.length + k + 1, t, value(f, k)])
    }
  return rows
}

/**
 * The same rows into a table of the same shape in a database of its own on the same PostgreSQL
 * server, with one multi-row INSERT per BASELINE_BATCH rows, each its own transaction (committed
 * durably, as the service's are).
 */
async function baselinePostgres(url: string): Promise<BaselineResult> {
  const sql = new Bun.SQL(url, { max: 1 })
  await sql.unsafe('CREATE TABLE bench_samples (series_id integer NOT NULL, t bigint NOT NULL, value double precision, PRIMARY KEY (series_id, t))')
  await sql.unsafe('CREATE INDEX bench_samples_t ON bench_samples (t)')
  const rows = baselineRows()
  // Three arrays unnested: one statement of three parameters however many rows it carries.
  const started = performance.now()
  for (let i = 0; i < rows.length; i += BASELINE_BATCH) {
    const slice = rows.slice(i, i + BASELINE_BATCH)
    await sql`INSERT INTO bench_samples (series_id, t, value) SELECT * FROM unnest(${sql.array(
      slice.map((r) => r[0]),
      'INTEGER',
    )}, ${sql.array(
      slice.map((r) => r[1]),
      'BIGINT',
    )}, ${sql.array(
      slice.map((r) => r[2]),
      'DOUBLE PRECISION',
    )})`
  }
  const seconds = (performance.now() - started) / 1000
  await sql.unsafe('DROP TABLE bench_samples')
  await sql.close()
  return { label: `batched PostgreSQL INSERT … SELECT unnest, ${BASELINE_BATCH} rows per statement`, rows: rows.length, seconds }
}

/** The same rows into the same table shape with the same pragmas, batched, on a fresh file. */
function baselineInserts(): BaselineResult {
  const db = new Database(join(dir, 'baseline.db'), { create: true, strict: true })
  db.exec('PRAGMA journal_mode = WAL')
  // The service's pragmas (db/durability.ts): commits visible at once, the WAL fsynced apart from
  // them (the ingest clock stops when the rows are visible, so neither side waits for that fsync).
  db.exec('PRAGMA synchronous = NORMAL')
  db.exec('CREATE TABLE metric_samples (series_id integer NOT NULL, t integer NOT NULL, value real, PRIMARY KEY(series_id, t)) STRICT')
  db.exec('CREATE INDEX metric_samples_t ON metric_samples (t)')
  const insert = db.prepare('INSERT INTO metric_samples (series_id, t, value) VALUES (?, ?, ?)')
  const rows = baselineRows()
  const batch = db.transaction((slice: [number, number, number][]) => {
    for (const r of slice) insert.run(r[0], r[1], r[2])
  })
  const started = performance.now()
  for (let i = 0; i < rows.length; i += BASELINE_BATCH) batch.immediate(rows.slice(i, i + BASELINE_BATCH))
  const seconds = (performance.now() - started) / 1000
  db.close()
  return { label: `batched bun:sqlite INSERT, ${BASELINE_BATCH} rows per transaction`, rows: rows.length, seconds }
}

function printIngest(r: IngestResult, baselines: BaselineResult[]) {
  const ours = r.gpuSamples / r.seconds
  const store = POSTGRES ? `PostgreSQL${INSTANCES > 1 ? `, ${INSTANCES} instances` : ''}` : 'SQLite'
  console.log('| ingest | GPU samples/s | rows/s | GPU samples | rows | seconds |')
  console.log('|---|---:|---:|---:|---:|---:|')
  console.log(
    `| gpuhq: WebSocket → group commit → ${store} | ${ours.toFixed(0)} | ${(r.rows / r.seconds).toFixed(0)} | ${r.gpuSamples} | ${r.rows} | ${r.seconds.toFixed(2)} (frames all handled after ${r.sendSeconds.toFixed(2)}) |`,
  )
  for (const b of baselines) {
    const theirs = ((b.rows / ROWS_PER_FRAME) * GPUS) / b.seconds
    console.log(
      `| baseline: ${b.label} | ${theirs.toFixed(0)} | ${(b.rows / b.seconds).toFixed(0)} | ${(b.rows / ROWS_PER_FRAME) * GPUS} | ${b.rows} | ${b.seconds.toFixed(2)} |`,
    )
    console.log(`| gpuhq / that baseline | ${(ours / theirs).toFixed(2)}× | | | | |`)
  }
  const fleet = (10_000 * GPUS) / 10
  console.log(
    `\nA fleet of 10,000 servers × ${GPUS} GPUs reporting every 10 s sends ${fleet} GPU samples/s; the measured ingest rate is ${((ours / fleet) * 100).toFixed(0)} % of that.\n`,
  )
}

/**
 * A server with a week of history for 8 GPUs: series, 5-minute and hourly rollups written straight
 * into SQLite for the 7 days up to two hours ago, plus a raw tail of the last two hours at one
 * sample per 10 s, which the rollup job (run once over HTTP) turns into the recent buckets. Then,
 * for the last 7 days and the last 48 hours at the default metric set, 2 × QUERIES sequential
 * requests (alternately without encoding and with `Accept-Encoding: gzip`, timed until the body as
 * sent has been read), each with `from` moved by 1 µs so none is answered from the 60 s cache; and
 * QUERIES reads, in this process on the same file, of the rollup rows such an answer is made of
 * through one prepared statement: the least the answer can cost.
 */
async function queryBenchmark(cookie: string, minute: number | null) {
  const [server] = await enrol(cookie, 1, 8)
  const H = 3600 * US
  const now = minute === null ? Date.now() * 1000 : await placeClock(minute)
  const placedAt = performance.now()
  const db = new Database(join(dir, 'gpuhq.db'), { strict: true })
  db.exec('PRAGMA busy_timeout = 10000')
  const tailFrom = Math.floor((now - 2 * H) / H) * H
  const weekFrom = Math.floor((now - 7 * 24 * H) / H) * H
  const series: number[] = []
  const addSeries = db.prepare('INSERT INTO metric_series (server_id, gpu_index, metric) VALUES (?, ?, ?) RETURNING id')
  const addRollup = db.prepare(
    'INSERT INTO metric_rollups (series_id, grain, bucket, min, max, avg, p50, p95, last, samples) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  )
  const addSample = db.prepare('INSERT INTO metric_samples (series_id, t, value) VALUES (?, ?, ?)')
  let rollups = 0
  let samples = 0
  const started = performance.now()
  db.transaction(() => {
    for (let g = 0; g < 8; g++) for (const m of GPU_METRICS) series.push((addSeries.get(server!.serverId, g, m) as { id: number }).id)
    for (const m of HOST_METRICS) series.push((addSeries.get(server!.serverId, -1, m) as { id: number }).id)
    series.forEach((id, k) => {
      for (const grain of [300, 3600]) {
        for (let b = weekFrom; b < tailFrom; b += grain * US) {
          const avg = 50 + 20 * Math.sin(b / (7200 * US) + k)
          addRollup.run(id, grain, b, avg - 5, avg + 5, avg, avg, avg + 4, avg + 1, grain / 10)
          rollups++
        }
      }
      for (let t = tailFrom; t < now; t += 10 * US) {
        addSample.run(id, t, 50 + 20 * Math.sin(t / (7200 * US) + k))
        samples++
      }
    })
    // Written behind the service's back, the raw tail is late for a rollup run of an earlier
    // placement: ask for a redo from its start, as the group commit does for late samples.
    db.prepare('UPDATE rollup_watermarks SET redo_from = min(coalesce(redo_from, ?1), ?1) WHERE done_until > ?1').run(tailFrom)
  }).immediate()
  const place = `minute ${new Date(now / 1000).getUTCMinutes()} of the hour${minute === null ? ' (real clock)' : ' (BENCH_MINUTES)'}`
  console.log(
    `query benchmark at ${place}: 1 server, 8 GPUs, ${series.length} series; ${rollups} 5-minute and hourly rollups written directly for 7 days, ${samples} raw samples for the last ${((now - tailFrom) / H).toFixed(1)} h (${((performance.now() - started) / 1000).toFixed(1)} s to write)`,
  )
  db.close()

  const t = performance.now()
  const job = (await (await post('/api/v1/_test/jobs/metrics.rollup/run', {})).json()) as { outcome: string; detail: string }
  console.log(
    `metrics.rollup, first run over every raw sample (${samples} of this server + the ingest run's): ${job.outcome} in ${((performance.now() - t) / 1000).toFixed(2)} s (${job.detail})\n`,
  )

  const reader = new Database(join(dir, 'gpuhq.db'), { readonly: true })
  const defaultSeries = (
    reader
      .query(`SELECT id FROM metric_series WHERE server_id = ? AND metric IN (SELECT value FROM json_each(?))`)
      .values(server!.serverId, JSON.stringify(DEFAULT_METRICS)) as number[][]
  ).map((r) => r[0]!)
  // What the service reads for one answer once the rollups are up to date: the stored buckets of
  // the default series at the answer's grain, nothing else (the running bucket aside).
  const rollupRows = reader.prepare(
    `SELECT series_id, bucket, min, max, avg, p50, p95, last FROM metric_rollups
     WHERE series_id IN (SELECT value FROM json_each(?1)) AND grain = ?2 AND bucket >= ?3 AND bucket < ?4`,
  )
  const rows: QueryRow[] = []
  for (const [key, label, rangeUs, grain] of [
    ['7d', 'last 7 days at 1h', 7 * 24 * H, 3600],
    ['48h', 'last 48 hours at 5m', 48 * H, 300],
  ] as const) {
    if (!ONLY.has(key)) continue
    const to = iso(now)
    const url = (i: number) =>
      `${base}/api/v1/servers/${server!.serverId}/metrics?from=${encodeURIComponent(iso(now - rangeUs + i))}&to=${encodeURIComponent(to)}`
    // 1 µs apart: never the cached answer. Odd requests ask for gzip, even ones for no encoding.
    const plain: number[] = []
    const gzip: number[] = []
    let plainBytes = 0
    let gzipBytes = 0
    let encoding = 'none'
    let seriesCount = 0
    let points = 0
    for (let i = 0; i < 2 * QUERIES; i++) {
      const compressed = i % 2 === 1
      const t0 = performance.now()
      const res = await fetch(url(i), {
        headers: { cookie, 'accept-encoding': compressed ? 'gzip' : 'identity' },
        decompress: false,
      } as RequestInit)
      const body = new Uint8Array(await res.arrayBuffer())
      const ms = performance.now() - t0
      if (res.status !== 200) throw new Error(`metrics answered ${res.status}: ${new TextDecoder().decode(body.slice(0, 300))}`)
      if (compressed) {
        gzip.push(ms)
        gzipBytes = body.byteLength
        encoding = res.headers.get('content-encoding') ?? 'none'
      } else {
        plain.push(ms)
        plainBytes = body.byteLength
        if (i === 0) {
          const answer = JSON.parse(new TextDecoder().decode(body)) as { series: { points: unknown[] }[] }
          seriesCount = answer.series.length
          points = answer.series[0]?.points.length ?? 0
        }
      }
    }
    const first = Math.floor((now - rangeUs) / (grain * US)) * grain * US
    const raw: number[] = []
    let rawRows = 0
    const ids = JSON.stringify(defaultSeries)
    for (let i = 0; i < QUERIES; i++) {
      const t0 = performance.now()
      rawRows = rollupRows.values(ids, grain, first, now).length
      raw.push(performance.now() - t0)
    }
    const end = now + (performance.now() - placedAt) * 1000
    if (Math.floor(end / H) !== Math.floor(now / H)) console.log(`warning: the ${key} requests ran into the next hour; not a figure of ${place}`)
    rows.push({ label, seriesCount, points, plain, gzip, plainBytes, gzipBytes, encoding, raw, rawRows })
  }
  reader.close()
  printQueries(rows, place)
}

/**
 * Moves the service's test clock forward to the next instant at `minute` past an hour (at least a
 * few seconds ahead, as it only moves forward) and answers it: the query part then runs as it
 * would at that minute, its data laid out back from there.
 */
async function placeClock(minute: number): Promise<number> {
  const H = 3600 * US
  const res = await post('/api/v1/_test/clock', { advance_seconds: 0 })
  const { now } = (await res.json()) as { now: string }
  if (res.status !== 200) throw new Error(`the test clock answered ${res.status}`)
  const current = Date.parse(`${now.slice(0, 23)}Z`) * 1000
  let target = Math.floor(current / H) * H + minute * 60 * US
  if (target < current + 5 * US) target += H
  const moved = await post('/api/v1/_test/clock', { now: iso(target) })
  if (moved.status !== 200) throw new Error(`moving the test clock answered ${moved.status}: ${await moved.text()}`)
  return target
}

type QueryRow = {
  label: string
  seriesCount: number
  points: number
  plain: number[]
  gzip: number[]
  plainBytes: number
  gzipBytes: number
  encoding: string
  raw: number[]
  rawRows: number
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]!
}

function kib(bytes: number): string {
  return `${(bytes / 1024).toFixed(0)} KiB`
}

function printQueries(rows: QueryRow[], place: string) {
  console.log(`| query (default metric set), ${QUERIES} sequential requests each, ${place} | p50 | p95 | max | body |`)
  console.log('|---|---:|---:|---:|---:|')
  for (const r of rows) {
    const line = (what: string, xs: number[], body: string) =>
      console.log(`| ${what} | ${pct(xs, 0.5).toFixed(1)} ms | ${pct(xs, 0.95).toFixed(1)} ms | ${Math.max(...xs).toFixed(1)} ms | ${body} |`)
    line(`${r.label} (${r.seriesCount} series × ${r.points} points): gpuhq, no encoding`, r.plain, kib(r.plainBytes))
    line(`… gpuhq, Accept-Encoding: gzip`, r.gzip, `${kib(r.gzipBytes)} (${r.encoding})`)
    line(`… raw SQL: prepared SELECT of the same ${r.rawRows} rollup rows, .values()`, r.raw, '')
    console.log(
      `| … gpuhq / raw SQL, p50 | ${(pct(r.plain, 0.5) / pct(r.raw, 0.5)).toFixed(1)}× (gzip ${(pct(r.gzip, 0.5) / pct(r.raw, 0.5)).toFixed(1)}×) | | | |`,
    )
  }
}

function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
}
