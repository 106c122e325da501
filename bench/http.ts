/**
 * HTTP benchmark: the real gpuhq against bare Bun baselines, on loopback, same load generator.
 * Never part of the test run. Usage: `bun run bench/http.ts` (see bench/README.md).
 *
 * The servers run as child processes so the load generator (this process) never shares their
 * event loop; `bun run bench/http.ts bare <port> <db>` is the bare baseline server itself.
 */
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { freePort, waitFor } from './support'

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const WARMUP_SECONDS = 1
const ROOT = resolve(import.meta.dir, '..')

if (process.argv[2] === 'bare') bareServer(Number(process.argv[3]), process.argv[4]!)
else await main()

/** The honest baseline: Bun.serve, one JSON route, and one INSERT into WAL + synchronous=FULL. */
function bareServer(port: number, dbPath: string) {
  const db = new Database(dbPath, { create: true, strict: true })
  db.exec('PRAGMA journal_mode = WAL')
  db.exec('PRAGMA synchronous = FULL')
  db.exec('PRAGMA busy_timeout = 10000')
  db.exec('CREATE TABLE IF NOT EXISTS probes (id TEXT PRIMARY KEY, value TEXT NOT NULL, version INTEGER NOT NULL, created_at INTEGER NOT NULL) STRICT')
  const insert = db.prepare('INSERT INTO probes (id, value, version, created_at) VALUES ($id, $value, 1, $created_at)')
  Bun.serve({
    port,
    hostname: '127.0.0.1',
    async fetch(request) {
      const path = new URL(request.url).pathname
      if (path === '/healthz') return Response.json({ status: 'ok' })
      if (path === '/insert' && request.method === 'POST') {
        const body = (await request.json()) as { value?: unknown }
        if (typeof body.value !== 'string') return Response.json({ error: 'value' }, { status: 422 })
        const row = { id: Bun.randomUUIDv7(), value: body.value, created_at: Date.now() * 1000 }
        insert.run(row)
        return Response.json({ ...row, version: 1, created_at: new Date(row.created_at / 1000).toISOString() }, { status: 201 })
      }
      return new Response('not found', { status: 404 })
    },
  })
  process.on('SIGTERM', () => process.exit(0))
}

type Result = { name: string; requests: number; errors: number; rps: number; p50: number; p99: number }
type Target = { label: string; url: string; init: (n: number) => RequestInit; expect: number }

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'gpuhq-bench-'))
  const gpuhqPort = freePort()
  const barePort = freePort()
  const children = [
    Bun.spawn([process.execPath, 'run', 'src/main.ts'], {
      cwd: ROOT,
      stdout: 'ignore', // the per-request log line is still written, as in production
      stderr: 'inherit',
      env: {
        PATH: process.env.PATH ?? '',
        NODE_ENV: 'test',
        TEST_CLOCK: 'true', // mounts the test-only probes resource this benchmark writes
        PORT: String(gpuhqPort),
        DATA_DIR: dir,
        DATABASE_URL: `file:${join(dir, 'gpuhq.db')}`,
        SECRET_KEY: 'c'.repeat(64),
        LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
        JOBS_ENABLED: 'false',
      },
    }),
    Bun.spawn([process.execPath, 'run', import.meta.path, 'bare', String(barePort), join(dir, 'bare.db')], {
      cwd: ROOT,
      stdout: 'inherit',
      stderr: 'inherit',
    }),
  ]
  try {
    const gpuhq = `http://127.0.0.1:${gpuhqPort}`
    const bare = `http://127.0.0.1:${barePort}`
    await waitFor(`${gpuhq}/readyz`)
    await waitFor(`${bare}/healthz`)
    const run = Date.now().toString(36)
    const get: RequestInit = { method: 'GET' }
    const post = (value: string, key?: string): RequestInit => ({
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
      body: JSON.stringify({ value }),
    })
    const healthz = { label: 'bare Bun.serve', url: `${bare}/healthz`, init: () => get, expect: 200 }
    const insert = { label: 'bare Bun + INSERT', url: `${bare}/insert`, init: (n: number) => post(`v-${run}-${n}`), expect: 201 }
    const scenarios: [string, Target, Target][] = [
      ['GET /healthz', { label: 'gpuhq', url: `${gpuhq}/healthz`, init: () => get, expect: 200 }, healthz],
      [
        'POST probe, unique Idempotency-Key',
        { label: 'gpuhq', url: `${gpuhq}/api/v1/_test/probes`, init: (n) => post(`v-${run}-${n}`, `k-${run}-${n}`), expect: 201 },
        insert,
      ],
      ['POST probe, no Idempotency-Key', { label: 'gpuhq', url: `${gpuhq}/api/v1/_test/probes`, init: (n) => post(`w-${run}-${n}`), expect: 201 }, insert],
    ]
    console.log(`bun ${Bun.version}, ${cpus().length} cores, ${CONCURRENCY} concurrent loops, ${WARMUP_SECONDS} s warm-up + ${SECONDS} s measured per row\n`)
    // Each bare baseline is measured once and compared with every gpuhq row that uses it.
    const baselines = new Map<Target, Result>()
    const rows: [string, Result, Result][] = []
    for (const [name, ours, theirs] of scenarios) {
      const mine = await load(ours)
      if (!baselines.has(theirs)) baselines.set(theirs, await load(theirs))
      rows.push([name, mine, baselines.get(theirs)!])
    }
    printTable(rows)
  } finally {
    for (const c of children) c.kill('SIGTERM')
    await Promise.race([Promise.all(children.map((c) => c.exited)), Bun.sleep(5000)])
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Closed loop: CONCURRENCY loops, each sending its next request when the previous answered. */
async function load(target: Target): Promise<Result> {
  let n = 0
  const drive = async (seconds: number, record: boolean) => {
    const latencies: number[] = []
    let errors = 0
    const end = performance.now() + seconds * 1000
    const loop = async () => {
      while (performance.now() < end) {
        const started = performance.now()
        try {
          const res = await fetch(target.url, { ...target.init(n++), signal: AbortSignal.timeout(10_000) })
          await res.arrayBuffer()
          if (res.status !== target.expect) errors++
        } catch {
          errors++
        }
        if (record) latencies.push(performance.now() - started)
      }
    }
    const began = performance.now()
    await Promise.all(Array.from({ length: CONCURRENCY }, loop))
    return { latencies, errors, elapsed: (performance.now() - began) / 1000 }
  }
  await drive(WARMUP_SECONDS, false)
  const { latencies, errors, elapsed } = await drive(SECONDS, true)
  latencies.sort((a, b) => a - b)
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? NaN
  process.stderr.write(`  measured ${target.label} ${target.url}\n`)
  return { name: target.label, requests: latencies.length, errors, rps: latencies.length / elapsed, p50: pct(50), p99: pct(99) }
}

function printTable(rows: [string, Result, Result][]) {
  const head = ['scenario', 'server', 'req/s', 'p50 ms', 'p99 ms', 'errors']
  const lines: string[][] = []
  for (const [name, ours, theirs] of rows) {
    lines.push([name, ours.name, ours.rps.toFixed(0), ours.p50.toFixed(2), ours.p99.toFixed(2), String(ours.errors)])
    lines.push(['', theirs.name, theirs.rps.toFixed(0), theirs.p50.toFixed(2), theirs.p99.toFixed(2), String(theirs.errors)])
    lines.push([
      '',
      'gpuhq / bare',
      `${(ours.rps / theirs.rps).toFixed(2)}×`,
      `${(ours.p50 / theirs.p50).toFixed(2)}×`,
      `${(ours.p99 / theirs.p99).toFixed(2)}×`,
      '',
    ])
  }
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)))
  const fmt = (cells: string[]) => '| ' + cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ') + ' |'
  console.log(fmt(head))
  console.log('|' + widths.map((w, i) => (i < 2 ? '-'.repeat(w + 2) : '-'.repeat(w + 1) + ':')).join('|') + '|')
  for (const l of lines) console.log(fmt(l))
}
