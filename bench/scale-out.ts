/**
 * The API and ingest figures of bench/http.ts and bench/ingest.ts on SQLite, on PostgreSQL with one
 * instance, on PostgreSQL with two, and on PostgreSQL with one instance reached through a proxy that
 * adds 1 ms each way (bench/latency-proxy.ts: a database on another host), in one run on one
 * machine, printed side by side
 * (docs/scale-out.md "What it costs"). Each figure comes from the benchmark's own run; this script
 * starts one throwaway PostgreSQL cluster for all of them (or uses BENCH_PG_URL), runs the six
 * benchmarks one after the other, and reads their tables.
 * Usage: `bun run bench/scale-out.ts` (knobs of both benchmarks pass through; see bench/README.md).
 */
import { resolve } from 'node:path'
import { startLatencyProxy } from './latency-proxy'

const ROOT = resolve(import.meta.dir, '..')
/** `delayed`: the database reached through bench/latency-proxy.ts, LATENCY_MS added each way. */
const STORES: { label: string; env: Record<string, string>; delayed?: boolean }[] = [
  { label: 'SQLite', env: {} },
  { label: 'PostgreSQL ×1', env: { BENCH_DATABASE: 'postgres', BENCH_INSTANCES: '1' } },
  { label: 'PostgreSQL ×2', env: { BENCH_DATABASE: 'postgres', BENCH_INSTANCES: '2' } },
  { label: 'PostgreSQL ×1, +1 ms each way', env: { BENCH_DATABASE: 'postgres', BENCH_INSTANCES: '1' }, delayed: true },
]
const LATENCY_MS = 1

/** A throwaway cluster for all runs (each benchmark creates and drops a database of its own on it). */
function startCluster(): { url: string; stop: () => void } {
  if (process.env.BENCH_PG_URL) return { url: process.env.BENCH_PG_URL, stop: () => {} }
  const out = Bun.spawnSync(['bash', '-c', 'source scripts/lib.sh >/dev/null && start_test_postgres >&2 && echo "$GPUHQ_TEST_PG_URL $PG_TEST_DIR $PG_BIN"'], {
    cwd: ROOT,
    stderr: 'inherit',
  })
  const [url, dir, bin] = out.stdout.toString().trim().split(' ')
  if (!url || !dir || !bin) throw new Error('could not start PostgreSQL (set BENCH_PG_URL)')
  return {
    url,
    stop: () => {
      Bun.spawnSync(['bash', '-c', `source scripts/lib.sh >/dev/null && PG_TEST_DIR=${dir} PG_BIN=${bin} stop_test_postgres`], { cwd: ROOT })
    },
  }
}

/** Runs one benchmark; answers its standard output (its progress lines go to our stderr). */
async function run(script: string, env: Record<string, string>): Promise<string> {
  const child = Bun.spawn([process.execPath, 'run', script], { cwd: ROOT, env: { ...process.env, ...env }, stdout: 'pipe', stderr: 'inherit' })
  const text = await new Response(child.stdout).text()
  if ((await child.exited) !== 0) throw new Error(`${script} (${JSON.stringify(env)}) exited with ${child.exitCode}:\n${text}`)
  return text
}

const cells = (line: string) =>
  line
    .split('|')
    .slice(1, -1)
    .map((c) => c.trim())

/**
 * bench/http.ts: per scenario, gpuhq's req/s, p50, the CPU per request of the service and of the
 * database server (µs), and the ratio to its bare baseline; and the /healthz row under a slow
 * statement.
 */
function httpFigures(text: string): Map<string, string> {
  const out = new Map<string, string>()
  let scenario = ''
  let mine = ''
  for (const line of text.split('\n')) {
    if (!line.startsWith('| ')) continue
    const c = cells(line)
    if (c[0]?.startsWith('GET /healthz while')) {
      out.set(c[0], `p50 ${c[2]} ms, p99 ${c[3]} ms, max ${c[4]} ms`)
      continue
    }
    const [name, server, rps, p50, , cpu, dbCpu] = c
    if (name) scenario = name
    if (server?.startsWith('gpuhq') && server !== 'gpuhq / bare')
      mine = `${rps} req/s, p50 ${p50} ms, CPU ${cpu}${dbCpu && dbCpu !== '0' ? ` + ${dbCpu} db` : ''} µs/req`
    if (server === 'gpuhq / bare' && scenario) out.set(scenario, `${mine} (${rps} of bare)`)
  }
  return out
}

/** bench/ingest.ts: GPU samples a second through the WebSocket path, and its ratio to each baseline. */
function ingestFigures(text: string): Map<string, string> {
  const out = new Map<string, string>()
  const lines = text.split('\n').filter((l) => l.startsWith('| '))
  const ours = lines.find((l) => l.startsWith('| gpuhq: WebSocket'))
  if (ours) out.set('ingest: GPU samples/s through the agent WebSocket', cells(ours)[1]!)
  lines.forEach((l, i) => {
    if (!l.startsWith('| baseline:')) return
    const [label, rate] = cells(l)
    const ratio = lines[i + 1] ? cells(lines[i + 1]!)[1] : '?'
    out.set(`ingest: ${label!.replace(/^baseline: /, 'baseline, ')}`, `${rate} (gpuhq ${ratio})`)
  })
  return out
}

const cluster = startCluster()
const target = new URL(cluster.url)
const proxy = startLatencyProxy({ target: { hostname: target.hostname, port: Number(target.port) }, delayMs: LATENCY_MS })
const delayedUrl = new URL(cluster.url)
delayedUrl.port = String(proxy.port)
const columns: Map<string, string>[] = []
try {
  process.stderr.write(`== round trip of SELECT 1: ${await roundTrip(cluster.url)} ms direct, ${await roundTrip(delayedUrl.toString())} ms through the proxy\n`)
  for (const store of STORES) {
    const url = store.delayed ? delayedUrl.toString() : cluster.url
    const env: Record<string, string> = { ...store.env, ...(store.env.BENCH_DATABASE ? { BENCH_PG_URL: url } : {}) }
    process.stderr.write(`== ${store.label}: bench/http.ts\n`)
    const http = httpFigures(await run('bench/http.ts', env))
    const column = new Map(http)
    if (!store.delayed) {
      process.stderr.write(`== ${store.label}: bench/ingest.ts\n`)
      for (const [k, v] of ingestFigures(await run('bench/ingest.ts', { ...env, BENCH_ONLY: 'ingest' }))) column.set(k, v)
    }
    columns.push(column)
  }
} finally {
  proxy.stop()
  cluster.stop()
}

/** Milliseconds per `SELECT 1` round trip on one connection (the median of 200). */
async function roundTrip(url: string): Promise<string> {
  const sql = new Bun.SQL(url, { max: 1 })
  try {
    await sql.unsafe('SELECT 1')
    const times: number[] = []
    for (let i = 0; i < 200; i++) {
      const t = performance.now()
      await sql.unsafe('SELECT 1')
      times.push(performance.now() - t)
    }
    times.sort((a, b) => a - b)
    return times[100]!.toFixed(2)
  } finally {
    await sql.close()
  }
}

const rows = [...new Set(columns.flatMap((c) => [...c.keys()]))]
console.log(`| figure | ${STORES.map((s) => s.label).join(' | ')} |`)
console.log(`|---|${STORES.map(() => '---:').join('|')}|`)
for (const row of rows) console.log(`| ${row} | ${columns.map((c) => c.get(row) ?? '—').join(' | ')} |`)
process.exit(0)
