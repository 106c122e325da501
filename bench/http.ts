/**
 * HTTP benchmark: the real gpuhq against bare Bun baselines, on loopback, same load generator.
 * Never part of the test run. Usage: `bun run bench/http.ts` (see bench/README.md).
 *
 * The servers run as child processes so the load generator (this process) never shares their
 * event loop; `bun run bench/http.ts bare <port> <db>` is the bare baseline server itself.
 * BENCH_DATABASE=postgres runs gpuhq on PostgreSQL (docs/scale-out.md), BENCH_INSTANCES=2 as two
 * instances on it, the load spread over both.
 */
import { Database } from 'bun:sqlite'
import { mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { sql } from 'drizzle-orm'
import { withTransaction } from '../db/client'
import { benchDeps, benchPostgres, freePort, proAccount, waitFor } from './support'

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 2)
const ROOT = resolve(import.meta.dir, '..')
const FLEET = 50 // servers on the benchmark tenant: GET /servers answers all of them in one page
const PASSWORD = 'correct horse battery staple 42'
/** BENCH_CPU_PROF=<dir>: the service writes a CPU profile (markdown) there when it stops. */
const CPU_PROF = process.env.BENCH_CPU_PROF
/** BENCH_ONLY=<text>: only the rows whose name contains it. */
const ONLY = process.env.BENCH_ONLY
const POSTGRES = process.env.BENCH_DATABASE === 'postgres'
const INSTANCES = Math.max(1, Number(process.env.BENCH_INSTANCES ?? 1))
/** BENCH_TOKENS=<n>: the GET /servers rows spread over n personal access tokens of the tenant (1: one API client). */
const TOKENS = Math.max(1, Number(process.env.BENCH_TOKENS ?? 1))
/** The slow statement's length for the responsiveness row (BENCH_STALL_MS, 200). */
const STALL_MS = Number(process.env.BENCH_STALL_MS ?? 200)

/**
 * The floor of a 304 and of a 200 (floorOf): its path on the bare server, its token and its
 * snapshot's tag; the 200's body is the page gpuhq answered, as sent (FLOOR_PAGE in the temp dir).
 */
const FLOOR_PATH = '/floor/servers'
const FLOOR_PAGE = 'floor-page'
const FLOOR_TOKEN = 'floor_token_0123456789abcdefghijklmnopqrstuvwxyz'
const FLOOR_TAG = '"floor-snapshot-1"'

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
  const floor = floorOf(db, join(dirname(dbPath), FLOOR_PAGE))
  Bun.serve({
    port,
    hostname: '127.0.0.1',
    async fetch(request) {
      const path = new URL(request.url).pathname
      if (path === '/healthz') return Response.json({ status: 'ok' })
      if (path === FLOOR_PATH) return floor(request, path)
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

/**
 * The floor of a conditional GET by token (bench/README.md "The floor of a 304"): what any
 * implementation of gpuhq's conventions must do for it, each step the cheapest way, and nothing
 * else. The token's SHA-256 and a point read of the credentials' change counter (its verification
 * kept in memory while the counter holds), the caller's rate limit (GCRA in memory), a point read
 * of the snapshot's head, the tag comparison, a request id, the security headers and one JSON log
 * line written to /dev/null (where the benchmark sends gpuhq's). No framework, no routing, no
 * validation, no request state, no group-commit barrier. Without a matching tag it answers the
 * bytes gpuhq sent for the same page, in gpuhq's encoding (`pageFile`, written by main before the
 * rows run; read once): the floor of a 200.
 */
function floorOf(db: Database, pageFile: string) {
  db.exec('CREATE TABLE IF NOT EXISTS floor_epoch (id INTEGER PRIMARY KEY, n INTEGER NOT NULL) STRICT')
  db.exec('CREATE TABLE IF NOT EXISTS floor_tokens (hash TEXT PRIMARY KEY, tenant TEXT NOT NULL) STRICT')
  db.exec('CREATE TABLE IF NOT EXISTS floor_heads (tenant TEXT PRIMARY KEY, etag TEXT NOT NULL) STRICT')
  db.exec('INSERT OR IGNORE INTO floor_epoch VALUES (1, 1)')
  db.prepare('INSERT OR IGNORE INTO floor_tokens VALUES (?, ?)').run(Bun.CryptoHasher.hash('sha256', FLOOR_TOKEN, 'hex'), 'tenant-1')
  db.prepare('INSERT OR IGNORE INTO floor_heads VALUES (?, ?)').run('tenant-1', FLOOR_TAG)
  const epochRead = db.prepare('SELECT n FROM floor_epoch WHERE id = 1')
  const tokenRead = db.prepare('SELECT tenant FROM floor_tokens WHERE hash = ?')
  const headRead = db.prepare('SELECT etag FROM floor_heads WHERE tenant = ?')
  const kept = new Map<string, { epoch: number; tenant: string }>()
  const tat = new Map<string, number>()
  const log = openSync('/dev/null', 'w')
  let page: { bytes: Uint8Array; encoding: string } | null = null
  const pageOf = () => {
    if (!page) {
      const { encoding } = JSON.parse(readFileSync(`${pageFile}.json`, 'utf8')) as { encoding: string }
      page = { bytes: new Uint8Array(readFileSync(pageFile)), encoding }
    }
    return page
  }
  return async (request: Request, path: string): Promise<Response> => {
    const started = performance.now()
    const id = Bun.randomUUIDv7()
    const token = /^Bearer ([\x21-\x7e]{1,512})$/i.exec(request.headers.get('authorization') ?? '')?.[1]
    const hash = token ? Bun.CryptoHasher.hash('sha256', token, 'hex') : ''
    const epoch = (epochRead.get() as { n: number }).n
    let who = kept.get(hash)
    if (!who || who.epoch !== epoch) {
      const row = tokenRead.get(hash) as { tenant: string } | null
      if (!row) return new Response(null, { status: 401, headers: { 'x-request-id': id } })
      kept.set(hash, (who = { epoch, tenant: row.tenant }))
    }
    // GCRA at the benchmark's limit for gpuhq (1,000,000 a minute): refused when a minute's worth is queued.
    const now = Date.now() * 1000
    const next = Math.max(tat.get(hash) ?? now, now) + 60_000_000 / 1_000_000
    if (next - now > 60_000_000) return new Response(null, { status: 429, headers: { 'x-request-id': id, 'retry-after': '1' } })
    tat.set(hash, next)
    await Promise.resolve() // the handler is asynchronous, as gpuhq's is
    const head = headRead.get(who.tenant) as { etag: string }
    const hit = request.headers.get('if-none-match') === head.etag
    const headers = { etag: head.etag, 'x-request-id': id, 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' }
    let response: Response
    if (hit) response = new Response(null, { status: 304, headers })
    else {
      const { bytes, encoding } = pageOf()
      const body = { 'content-type': 'application/json', vary: 'accept-encoding', ...(encoding ? { 'content-encoding': encoding } : {}) }
      response = new Response(bytes, { headers: { ...headers, ...body } })
    }
    const line = { time: new Date().toISOString(), level: 'info', msg: 'request', method: request.method, route: path, path, status: response.status }
    writeSync(
      log,
      `${JSON.stringify({ ...line, duration_ms: Math.round((performance.now() - started) * 100) / 100, request_id: id, tenant_id: who.tenant, ip: '127.0.0.1' })}\n`,
    )
    return response
  }
}

type Result = { name: string; requests: number; errors: number; rps: number; p50: number; p99: number; cpuUs: number; dbCpuUs: number }
/** `url` is a path on every instance of `bases` (requests take turns), or a full URL without them. */
type Target = { label: string; url: string; bases?: string[]; init: (n: number) => RequestInit; expect: number; pids: () => number[] }

/** CPU time (user + system) a process has used, in µs, from /proc (Linux clock ticks of 10 ms); 0 once it is gone. */
function cpuUsOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /, '')
      .split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / 100
  } catch {
    return 0
  }
}

/**
 * The PostgreSQL server's processes on this machine (every backend of the cluster the benchmark
 * uses: run nothing else on PostgreSQL meanwhile), for the database's share of the CPU per request.
 */
function postgresPids(): number[] {
  if (!POSTGRES) return []
  const out: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') out.push(Number(entry))
    } catch {
      // gone meanwhile
    }
  }
  return out
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'gpuhq-bench-'))
  const ports = Array.from({ length: INSTANCES }, () => freePort())
  const barePort = freePort()
  const pg = POSTGRES ? await benchPostgres() : null
  const env = {
    PATH: process.env.PATH ?? '',
    NODE_ENV: 'test',
    TEST_CLOCK: 'true', // mounts the test-only probes resource this benchmark writes
    PORT: String(ports[0]),
    DATA_DIR: dir,
    DATABASE_URL: pg?.url ?? `file:${join(dir, 'gpuhq.db')}`,
    SECRET_KEY: 'c'.repeat(64),
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    JOBS_ENABLED: 'false',
    // The token limit (2400 a minute) would answer 429 within a second of this load: what is
    // measured is the path, limiter included, so the limit is set out of reach instead of off.
    RATE_LIMIT_TOKEN_PER_MINUTE: '1000000',
    RATE_LIMIT_TENANT_WRITES_PER_MINUTE: '1000000',
  }
  const ticket = await prepareFleet(env)
  const profile = CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`] : []
  const bareChild = Bun.spawn([process.execPath, 'run', import.meta.path, 'bare', String(barePort), join(dir, 'bare.db')], {
    cwd: ROOT,
    stdout: 'inherit',
    stderr: 'inherit',
  })
  const instances = ports.map((port) =>
    Bun.spawn([process.execPath, ...profile, 'run', 'src/main.ts'], {
      cwd: ROOT,
      stdout: 'ignore', // the per-request log line is still written, as in production
      stderr: 'inherit',
      env: { ...env, PORT: String(port) },
    }),
  )
  const children = [...instances, bareChild]
  const bases = ports.map((port) => `http://127.0.0.1:${port}`)
  const gpuhqPids = () => instances.map((c) => c.pid)
  const barePids = () => [bareChild.pid]
  try {
    const gpuhq = bases[0]!
    const bare = `http://127.0.0.1:${barePort}`
    for (const base of bases) await waitFor(`${base}/readyz`)
    await waitFor(`${bare}/healthz`)
    const run = Date.now().toString(36)
    const get: RequestInit = { method: 'GET' }
    const post = (value: string, key?: string): RequestInit => ({
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
      body: JSON.stringify({ value }),
    })
    const pats = await personalAccessTokens(gpuhq, ticket, TOKENS)
    const pat = pats[0]!
    const fleet: RequestInit = { method: 'GET', headers: { authorization: `Bearer ${pat}` } }
    const first = await fetch(`${gpuhq}/api/v1/servers?limit=${FLEET}`, fleet)
    const page = (await first.json()) as { items: unknown[] }
    const etag = first.headers.get('etag')
    if (first.status !== 200 || page.items.length !== FLEET || !etag) throw new Error(`GET /servers answered ${first.status} with ${page.items.length} rows`)
    // The floor of a 200 answers the page as gpuhq sent it to the load loops (encoded as they accept).
    const sent = await fetch(`${gpuhq}/api/v1/servers?limit=${FLEET}`, { ...fleet, decompress: false } as RequestInit)
    writeFileSync(join(dir, FLOOR_PAGE), new Uint8Array(await sent.arrayBuffer()))
    writeFileSync(join(dir, `${FLOOR_PAGE}.json`), JSON.stringify({ encoding: sent.headers.get('content-encoding') ?? '' }))
    // Request n goes with token n mod BENCH_TOKENS: one API client, or that many.
    const byToken = (headers: Record<string, string>) =>
      pats.map((p): RequestInit => ({ method: 'GET', headers: { ...headers, authorization: `Bearer ${p}` } }))
    const fleets = byToken({})
    const identities = byToken({ 'accept-encoding': 'identity' })
    // The snapshot is rebuilt once it is 60 s old (SNAPSHOT_TTL_US), with a new tag: each row's
    // loops send the tag read right before the row (a row after the first minute would otherwise
    // measure 200s), and a snapshot that would turn stale during the row is waited out first (its
    // stale answer and then its rebuild each change the tag).
    let conditionals = byToken({ 'if-none-match': etag })
    const rowMs = (WARMUP_SECONDS + SECONDS + 3) * 1000
    const refreshTag = async () => {
      for (let tries = 0; ; tries++) {
        const fresh = await fetch(`${gpuhq}/api/v1/servers?limit=${FLEET}`, fleet)
        const body = (await fresh.json()) as { stale?: boolean; generated_at?: string }
        conditionals = byToken({ 'if-none-match': fresh.headers.get('etag') ?? etag })
        // The service runs on the test clock, which keeps the real time until a test moves it.
        const lasts = Date.parse(body.generated_at ?? '') + 60_000 - Date.now() > rowMs
        if ((!body.stale && lasts) || tries >= 1000) return
        await Bun.sleep(100)
      }
    }
    const healthz = { label: 'bare Bun.serve', pids: barePids, url: `${bare}/healthz`, init: () => get, expect: 200 }
    const floorInit: RequestInit = { method: 'GET', headers: { authorization: `Bearer ${FLOOR_TOKEN}`, 'if-none-match': FLOOR_TAG } }
    const floor = { label: 'the floor of a 304', pids: barePids, url: `${bare}${FLOOR_PATH}`, init: () => floorInit, expect: 304 }
    const floorPageInit: RequestInit = { method: 'GET', headers: { authorization: `Bearer ${FLOOR_TOKEN}` } }
    const floorPage = { label: 'the floor of a 200', pids: barePids, url: `${bare}${FLOOR_PATH}`, init: () => floorPageInit, expect: 200 }
    const insert = { label: 'bare Bun + INSERT', pids: barePids, url: `${bare}/insert`, init: (n: number) => post(`v-${run}-${n}`), expect: 201 }
    const label = `gpuhq${POSTGRES ? ' on PostgreSQL' : ''}${INSTANCES > 1 ? ` ×${INSTANCES}` : ''}`
    const ours = (path: string, init: (n: number) => RequestInit, expect: number): Target => ({ label, pids: gpuhqPids, url: path, bases, init, expect })
    const scenarios: [string, Target, Target][] = [
      ['GET /healthz', ours('/healthz', () => get, 200), healthz],
      ['POST probe, unique Idempotency-Key', ours('/api/v1/_test/probes', (n) => post(`v-${run}-${n}`, `k-${run}-${n}`), 201), insert],
      ['POST probe, no Idempotency-Key', ours('/api/v1/_test/probes', (n) => post(`w-${run}-${n}`), 201), insert],
      [`GET /servers (PAT, ${FLEET} rows)`, ours(`/api/v1/servers?limit=${FLEET}`, (n) => fleets[n % TOKENS]!, 200), healthz],
      [`GET /servers (PAT, ${FLEET} rows, uncompressed)`, ours(`/api/v1/servers?limit=${FLEET}`, (n) => identities[n % TOKENS]!, 200), healthz],
      ['GET /servers, If-None-Match → 304', ours(`/api/v1/servers?limit=${FLEET}`, (n) => conditionals[n % TOKENS]!, 304), healthz],
      // Not a goal row: the same 304 against the floor of its conventions (bench/README.md), and that floor against bare.
      ['GET /servers, If-None-Match → 304, against the floor of a 304', ours(`/api/v1/servers?limit=${FLEET}`, (n) => conditionals[n % TOKENS]!, 304), floor],
      [`GET /servers (PAT, ${FLEET} rows), against the floor of a 200`, ours(`/api/v1/servers?limit=${FLEET}`, (n) => fleets[n % TOKENS]!, 200), floorPage],
    ]
    console.log(
      `bun ${Bun.version}, ${cpus().length} cores, ${CONCURRENCY} concurrent loops, ${WARMUP_SECONDS} s warm-up + ${SECONDS} s measured per row; ${label}\n`,
    )
    // Each bare baseline is measured once and compared with every gpuhq row that uses it.
    const baselines = new Map<Target, Result>()
    const rows: [string, Result, Result][] = []
    for (const [name, ours, theirs] of scenarios) {
      if (ONLY && !name.includes(ONLY)) continue
      await refreshTag()
      const mine = await load(ours)
      if (!baselines.has(theirs)) baselines.set(theirs, await load(theirs))
      rows.push([name, mine, baselines.get(theirs)!])
    }
    printTable(rows)
    // Where the floors stand against bare Bun's /healthz (the goals' baseline), from the same run.
    const bareHealthz = baselines.get(healthz)
    for (const f of [floor, floorPage]) {
      const measured = baselines.get(f)
      if (measured && bareHealthz) console.log(`${f.label} / bare Bun.serve's /healthz: ${(measured.rps / bareHealthz.rps).toFixed(2)}× (req/s)`)
    }
    if (!ONLY || 'GET /healthz while a 200 ms statement runs'.includes(ONLY)) await stallRow(bases)
  } finally {
    for (const c of children) c.kill('SIGTERM')
    await Promise.race([Promise.all(children.map((c) => c.exited)), Bun.sleep(5000)])
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL')
    await pg?.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * Before the service starts: a pro-plan tenant with FLEET enrolled servers, written straight into
 * the migrated file. Returns the owner's password-reset ticket (the first sign-in sets a password).
 */
async function prepareFleet(env: Record<string, string>): Promise<string> {
  const deps = await benchDeps(env)
  const { tenantId, ticket } = await proAccount(deps)
  const now = deps.clock.nowUs()
  const gpus = JSON.stringify(Array.from({ length: 8 }, (_, index) => ({ index, model: 'NVIDIA GeForce RTX 4090', memory_mb: 24564 })))
  // Either database (BENCH_DATABASE): the rows go in through the data layer, in one transaction.
  await withTransaction(deps.db, async (tx) => {
    for (let i = 0; i < FLEET; i++) {
      const host = `rig-${String(i).padStart(3, '0')}`
      await tx.run(
        sql`INSERT INTO servers (id, tenant_id, name, created_at, hostname, fingerprint, agent_version, gpus, gpu_count, gpu_model, agent_token_hash, enrolled_at)
            VALUES (${deps.newId()}, ${tenantId}, ${host}, ${now}, ${host}, ${`sha256:${host}`}, '1.4.0', ${gpus}, 8, 'NVIDIA GeForce RTX 4090', ${`unused-${i}`}, ${now})`,
      )
    }
  })
  deps.durable.stop()
  await deps.database.close()
  return ticket
}

/** The owner sets a password (signed in), then creates `count` read-only personal access tokens. */
async function personalAccessTokens(base: string, ticket: string, count: number): Promise<string[]> {
  const json = { 'content-type': 'application/json' }
  const reset = await fetch(`${base}/api/v1/auth/password-reset/complete`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ ticket, password: PASSWORD }),
  })
  const cookie = /^([^=]+=[^;]+)/.exec(reset.headers.get('set-cookie') ?? '')?.[1]
  if (reset.status !== 200 || !cookie) throw new Error(`password reset answered ${reset.status}`)
  const tokens: string[] = []
  for (let i = 0; i < count; i++) {
    const created = await fetch(`${base}/api/v1/tokens`, {
      method: 'POST',
      headers: { ...json, cookie },
      body: JSON.stringify({ name: `bench ${i + 1}`, scopes: ['servers:read'] }),
    })
    if (created.status !== 201) throw new Error(`POST /tokens answered ${created.status}: ${await created.text()}`)
    tokens.push(((await created.json()) as { token: string }).token)
  }
  return tokens
}

/**
 * The event loop's responsiveness: GET /healthz, one request at a time, while another request runs
 * a statement of STALL_MS back to back (POST /_test/database/slow-statement: pg_sleep on
 * PostgreSQL; a recursive count of that length on SQLite, which holds the event loop). Printed as
 * its own table: the p50, p99 and longest wait of /healthz, and how many slow statements ran.
 */
async function stallRow(bases: string[]) {
  const base = bases[0]!
  let stop = false
  let slow = 0
  const slowLoop = (async () => {
    while (!stop) {
      const r = await fetch(`${base}/api/v1/_test/database/slow-statement`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ms: STALL_MS }),
      })
      await r.arrayBuffer()
      if (r.status !== 200) throw new Error(`slow-statement answered ${r.status}`)
      slow++
    }
  })()
  const latencies: number[] = []
  const end = performance.now() + SECONDS * 1000
  await Bun.sleep(50) // the first slow statement is under way
  while (performance.now() < end) {
    const started = performance.now()
    const r = await fetch(`${base}/healthz`)
    await r.arrayBuffer()
    latencies.push(performance.now() - started)
  }
  stop = true
  await slowLoop
  latencies.sort((a, b) => a - b)
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? NaN
  console.log('')
  console.log(`| scenario | requests | p50 ms | p99 ms | max ms | ${STALL_MS} ms statements run |`)
  console.log('|---|---:|---:|---:|---:|---:|')
  console.log(
    `| GET /healthz while a ${STALL_MS} ms statement runs | ${latencies.length} | ${pct(50).toFixed(2)} | ${pct(99).toFixed(2)} | ${latencies[latencies.length - 1]!.toFixed(2)} | ${slow} |`,
  )
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
          const i = n++
          const url = target.bases ? `${target.bases[i % target.bases.length]}${target.url}` : target.url
          const res = await fetch(url, { ...target.init(i), signal: AbortSignal.timeout(10_000) })
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
  const cpu = () => target.pids().reduce((sum, pid) => sum + cpuUsOf(pid), 0)
  const dbPids = target.label.startsWith('gpuhq') ? postgresPids() : []
  const dbCpu = () => dbPids.reduce((sum, pid) => sum + cpuUsOf(pid), 0)
  const cpuBefore = cpu()
  const dbBefore = dbCpu()
  const { latencies, errors, elapsed } = await drive(SECONDS, true)
  const cpuUs = (cpu() - cpuBefore) / Math.max(1, latencies.length)
  const dbCpuUs = (dbCpu() - dbBefore) / Math.max(1, latencies.length)
  latencies.sort((a, b) => a - b)
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? NaN
  process.stderr.write(`  measured ${target.label} ${target.url}\n`)
  return { name: target.label, requests: latencies.length, errors, rps: latencies.length / elapsed, p50: pct(50), p99: pct(99), cpuUs, dbCpuUs }
}

function printTable(rows: [string, Result, Result][]) {
  const head = ['scenario', 'server', 'req/s', 'p50 ms', 'p99 ms', 'server CPU µs/req', 'database CPU µs/req', 'errors']
  const lines: string[][] = []
  for (const [name, ours, theirs] of rows) {
    lines.push([
      name,
      ours.name,
      ours.rps.toFixed(0),
      ours.p50.toFixed(2),
      ours.p99.toFixed(2),
      ours.cpuUs.toFixed(0),
      ours.dbCpuUs.toFixed(0),
      String(ours.errors),
    ])
    lines.push(['', theirs.name, theirs.rps.toFixed(0), theirs.p50.toFixed(2), theirs.p99.toFixed(2), theirs.cpuUs.toFixed(0), '—', String(theirs.errors)])
    lines.push([
      '',
      theirs.name.startsWith('bare') ? 'gpuhq / bare' : 'gpuhq / floor',
      `${(ours.rps / theirs.rps).toFixed(2)}×`,
      `${(ours.p50 / theirs.p50).toFixed(2)}×`,
      `${(ours.p99 / theirs.p99).toFixed(2)}×`,
      `${(ours.cpuUs / theirs.cpuUs).toFixed(2)}×`,
      '',
      '',
    ])
  }
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)))
  const fmt = (cells: string[]) => '| ' + cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ') + ' |'
  console.log(fmt(head))
  console.log('|' + widths.map((w, i) => (i < 2 ? '-'.repeat(w + 2) : '-'.repeat(w + 1) + ':')).join('|') + '|')
  for (const l of lines) console.log(fmt(l))
}
