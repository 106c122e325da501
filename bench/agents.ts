/**
 * Agent-session benchmark: many raw agent sessions (real WebSockets) against one real gpuhq process.
 * Never part of the test run. Usage: `bun run bench/agents.ts` (see bench/README.md).
 *
 * It prints:
 *   - server memory per session (VmRSS of the service process before and after opening them),
 *   - heartbeats handled per second (a burst from every session, timed until the last one is
 *     written to the database),
 *   - the time for presence to settle after a mass reconnect (close all, reopen all, one heartbeat
 *     each, presence.sweep through the test-clock route, until all N are online in the database and
 *     on GET /dashboard).
 *
 * The N servers are inserted straight into a fresh database before the service starts (rows with
 * known agent-token hashes, the way enrolment stores them), on a tenant on the unlimited `pro`
 * plan; a small sample is also enrolled through POST /agent/register to show that path's rate.
 * Everything runs on 127.0.0.1; every wait has a deadline; the temp dir is removed at the end.
 * The sessions' client ends live in BENCH_CLIENT_PROCS child processes (bench/agents-client.ts),
 * so only the service holds one socket per session in one process.
 */
import { Database } from 'bun:sqlite'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { generateSecret, hashSecret } from '../src/platform/secrets'
import { benchDeps, freePort, proAccount } from './support'
import type { ClientCommand, ClientReply } from './agents-client'

const ASKED = Number(process.env.BENCH_AGENTS ?? 10_000)
const OPEN_CONCURRENCY = Number(process.env.BENCH_OPEN_CONCURRENCY ?? 256)
const BURSTS = Number(process.env.BENCH_BURSTS ?? 2)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10)
const REGISTER_SAMPLE = Number(process.env.BENCH_REGISTER_SAMPLE ?? 100)
/** Any single phase that takes longer than this fails the run (it never hangs). */
const PHASE_DEADLINE_MS = Number(process.env.BENCH_PHASE_DEADLINE_S ?? 300) * 1000
/** The service's heartbeat_interval_s (welcome frame), used while reopened sessions wait for the sweep. */
const HEARTBEAT_INTERVAL_MS = 15_000
/** Sessions per client process (each holds one socket per session). */
const SESSIONS_PER_CLIENT = 5000
/** Descriptors the service needs besides its sessions' sockets (database, WAL, listener, runtime). */
const SERVICE_FD_HEADROOM = 1000
/** When set, the service runs with `--cpu-prof-md --cpu-prof-dir=<dir>` and writes its profile on SIGTERM. */
const CPU_PROF_DIR = process.env.BENCH_CPU_PROF ? resolve(process.env.BENCH_CPU_PROF) : null
const ROOT = resolve(import.meta.dir, '..')
const SECRET_KEY = 'd'.repeat(64)

// File descriptors: the service holds one socket per session, in one process; the client ends are
// spread over child processes. A Bun program cannot raise its own limit, so when the soft limit is
// too low and the hard one allows more, the script runs itself again under `ulimit -n <hard>`
// (the service and the clients inherit it). A count the hard limit cannot carry is lowered to
// the largest it can, and the run says so.
const { soft, hard } = openFileLimits()
const needFds = ASKED + SERVICE_FD_HEADROOM
if (soft < needFds && hard > soft && !process.env.BENCH_REEXEC) {
  const proc = Bun.spawn(['sh', '-c', `ulimit -n ${hard} && exec "$0" run "$1"`, process.execPath, import.meta.path], {
    env: { ...process.env, BENCH_REEXEC: '1' },
    stdio: ['inherit', 'inherit', 'inherit'],
  })
  process.exit(await proc.exited)
}
const N = Math.min(ASKED, soft - SERVICE_FD_HEADROOM)
const LIMIT_NOTE =
  N < ASKED
    ? `${ASKED.toLocaleString('en')} sessions were asked for, but one service process needs a descriptor per session (about ${needFds.toLocaleString('en')}) and this process's open-files limit is ${soft.toLocaleString('en')} (hard ${hard.toLocaleString('en')}); raising the hard limit takes CAP_SYS_RESOURCE (as root: ulimit -n ${needFds}, or LimitNOFILE= in the service unit). This run uses the largest count that fits: ${N.toLocaleString('en')}.`
    : null
if (N < 1) {
  console.error(`bench/agents: the open-files limit ${soft} leaves no room for sessions`)
  process.exit(2)
}
if (LIMIT_NOTE) console.log(`NOTE: ${LIMIT_NOTE}\n`)

type Session = { token: string; serverId: string; hello: string }

/** The client processes, each holding a share of the sessions; every call runs on all of them at once. */
class Clients {
  readonly #procs: ReturnType<typeof Bun.spawn>[] = []
  readonly #waiting = new Map<number, { resolve: () => void; reject: (e: Error) => void }>()
  #next = 1

  constructor(count: number) {
    for (let i = 0; i < count; i++)
      this.#procs.push(
        Bun.spawn([process.execPath, 'run', join(import.meta.dir, 'agents-client.ts')], {
          stdio: ['ignore', 'inherit', 'inherit'],
          ipc: (m: ClientReply) => {
            const w = this.#waiting.get(m.id)
            this.#waiting.delete(m.id)
            if (m.ok) w?.resolve()
            else w?.reject(new Error(`client: ${m.error}`))
          },
        }),
      )
  }

  get count(): number {
    return this.#procs.length
  }

  /** Sends `make(i)` to client i and resolves once every client answered. */
  all(make: (i: number) => Omit<ClientCommand, 'id'>): Promise<void> {
    return Promise.all(
      this.#procs.map(
        (p, i) =>
          new Promise<void>((resolve, reject) => {
            const id = this.#next++
            this.#waiting.set(id, { resolve, reject })
            p.send({ ...make(i), id })
          }),
      ),
    ).then(() => undefined)
  }

  stop(): void {
    for (const p of this.#procs) p.kill()
  }
}

await main()

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'gpuhq-bench-agents-'))
  const port = freePort()
  const url = `http://127.0.0.1:${port}`
  const env = {
    PATH: process.env.PATH ?? '',
    NODE_ENV: 'test',
    TEST_CLOCK: 'true',
    PORT: String(port),
    PUBLIC_URL: url,
    DATA_DIR: dir,
    DATABASE_URL: `file:${join(dir, 'gpuhq.db')}`,
    SECRET_KEY,
    LOG_LEVEL: 'warn',
    JOBS_ENABLED: 'false',
  }
  console.log(
    `bun ${Bun.version}, ${cpus().length} cores, ${N} agent sessions, open files limit ${openFileLimits().soft}, clients in ${Math.max(1, Math.ceil(N / SESSIONS_PER_CLIENT))} processes\n`,
  )

  // 1. The fleet, written before the service starts.
  let t = performance.now()
  let prepared: Awaited<ReturnType<typeof prepareDatabase>>
  try {
    prepared = await prepareDatabase(env, N)
  } catch (e) {
    rmSync(dir, { recursive: true, force: true })
    throw e
  }
  const { sessions, ticket } = prepared
  console.log(`prepared ${N} servers in the database in ${secs(t)} s`)

  const profile = CPU_PROF_DIR ? ['--cpu-prof-md', `--cpu-prof-dir=${CPU_PROF_DIR}`] : []
  const service = Bun.spawn([process.execPath, ...profile, 'run', 'src/main.ts'], { cwd: ROOT, env, stdin: 'ignore', stdout: 'ignore', stderr: 'inherit' })
  const clients = new Clients(Math.max(1, Math.ceil(N / SESSIONS_PER_CLIENT)))
  const db = new Database(join(dir, 'gpuhq.db'), { readonly: true })
  const count = (sql: string, ...params: (string | number)[]) => (db.query(sql).get(...params) as { n: number }).n
  const figures: [string, string][] = []
  const record = (k: string, v: string) => {
    figures.push([k, v])
    console.log(`  ${k}: ${v}`)
  }
  const presence = () => JSON.stringify(db.query(`SELECT presence, count(*) AS n FROM servers WHERE hostname LIKE 'bench-%' GROUP BY presence`).all())
  try {
    await until(async () => (await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) })).status === 200, 20_000, 'the service to be ready')
    const cookie = await signIn(url, ticket)
    const ws = url.replace(/^http/, 'ws') + '/api/v1/agent/ws'
    const share = Math.ceil(N / clients.count)
    await clients.all((i) => ({
      cmd: 'init',
      url: ws,
      sessions: sessions.slice(i * share, (i + 1) * share),
      openConcurrency: Math.max(1, Math.floor(OPEN_CONCURRENCY / clients.count)),
      deadlineMs: PHASE_DEADLINE_MS,
    }))

    // 2. A sample of real enrolments, for the rate of POST /agent/register.
    if (REGISTER_SAMPLE > 0) {
      t = performance.now()
      for (let i = 0; i < REGISTER_SAMPLE; i++) {
        const minted = await fetch(`${url}/api/v1/tokens/init`, { method: 'POST', headers: { cookie, 'content-type': 'application/json' }, body: '{}' })
        if (minted.status !== 201) throw new Error(`POST /tokens/init answered ${minted.status}: ${await minted.text()}`)
        const { token } = (await minted.json()) as { token: string }
        const res = await fetch(`${url}/api/v1/agent/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ init_token: token, ...facts(`sample-${i}`) }),
        })
        if (res.status !== 201) throw new Error(`POST /agent/register answered ${res.status}: ${await res.text()}`)
        await res.arrayBuffer()
      }
      const dt = (performance.now() - t) / 1000
      record('enrolments through HTTP (mint + register, sequential)', `${REGISTER_SAMPLE} in ${dt.toFixed(2)} s = ${(REGISTER_SAMPLE / dt).toFixed(0)}/s`)
    }

    // 3. Memory per session: RSS growth while the second half of the sessions opens (the first
    // half has warmed up what every session shares: compiled code, statement caches, buffers).
    await Bun.sleep(1000)
    const rssBefore = rssKb(service.pid)
    t = performance.now()
    await clients.all(() => ({ cmd: 'open', heartbeatOnWelcome: false, half: 1 }))
    await Bun.sleep(2000)
    const rssHalf = rssKb(service.pid)
    const t2 = performance.now()
    await clients.all(() => ({ cmd: 'open', heartbeatOnWelcome: false, half: 2 }))
    const secondS = (performance.now() - t2) / 1000
    const openS = (performance.now() - t - 2000) / 1000
    await Bun.sleep(2000)
    const rssAfter = rssKb(service.pid)
    let secondHalf = 0
    for (let i = 0; i < clients.count; i++) {
      const mine = Math.max(0, Math.min(share, N - i * share))
      secondHalf += mine - Math.ceil(mine / 2)
    }
    record('sessions opened with hello → welcome', `${N} in ${openS.toFixed(2)} s = ${(N / openS).toFixed(0)}/s (second half ${secondS.toFixed(2)} s)`)
    record('service RSS before / half open / all open', `${mb(rssBefore)} / ${mb(rssHalf)} / ${mb(rssAfter)} MiB`)
    record('service RSS growth per session, all sessions', `${((rssAfter - rssBefore) / N).toFixed(1)} KiB`)
    record(`service RSS growth per session, the second ${secondHalf} (warm)`, `${((rssAfter - rssHalf) / Math.max(1, secondHalf)).toFixed(1)} KiB`)

    // 4. Heartbeats: the first one of each session is a presence transition (group-committed on
    // the short presence wait)...
    t = performance.now()
    await clients.all(() => ({ cmd: 'heartbeat' }))
    await until(
      () => count(`SELECT count(*) AS n FROM servers WHERE presence = 'online' AND hostname LIKE 'bench-%'`) === N,
      PHASE_DEADLINE_MS,
      () => `${N} servers online; presence now ${presence()}`,
    )
    const firstS = (performance.now() - t) / 1000
    record('first heartbeat of every session (offline → online, a presence transition each)', `${firstS.toFixed(2)} s = ${(N / firstS).toFixed(0)}/s`)

    // ... later ones are group-committed (at most a second late, one transaction for all). A single
    // burst shows that latency: from the first send until every heartbeat is in the database.
    for (let b = 0; b < BURSTS; b++) {
      const before = count(`SELECT max(last_seen_at) AS n FROM servers`)
      t = performance.now()
      await clients.all(() => ({ cmd: 'heartbeat' }))
      const sent = performance.now()
      await until(
        () => count(`SELECT count(*) AS n FROM servers WHERE last_seen_at > ? AND hostname LIKE 'bench-%'`, before) === N,
        PHASE_DEADLINE_MS,
        `burst ${b + 1} written`,
      )
      const dt = (performance.now() - t) / 1000
      record(`one burst of ${N} heartbeats: sent / all written`, `${((sent - t) / 1000).toFixed(2)} s / ${dt.toFixed(2)} s`)
      await Bun.sleep(300)
    }
    // Sustained: ROUNDS heartbeats per session back to back. "Handled" is until the service has
    // processed every frame (a barrier frame per session is answered); "written" until the last
    // round is in the database.
    t = performance.now()
    // The last round starts after this instant in every client.
    const lastRoundUs = Date.now() * 1000
    await clients.all(() => ({ cmd: 'rounds', rounds: ROUNDS }))
    await clients.all(() => ({ cmd: 'barrier' }))
    const handled = (performance.now() - t) / 1000
    await until(
      () => count(`SELECT count(*) AS n FROM servers WHERE last_seen_at > ? AND hostname LIKE 'bench-%'`, lastRoundUs) === N,
      PHASE_DEADLINE_MS,
      'the last round written',
    )
    const written = (performance.now() - t) / 1000
    record(`sustained: ${ROUNDS} × ${N} heartbeats, handled by the service`, `${handled.toFixed(2)} s = ${((ROUNDS * N) / handled).toFixed(0)} heartbeats/s`)
    record(`sustained: ${ROUNDS} × ${N} heartbeats, last round written`, `${written.toFixed(2)} s = ${((ROUNDS * N) / written).toFixed(0)} heartbeats/s`)
    record('service RSS after the bursts', `${mb(rssKb(service.pid))} MiB`)

    // 5. The fleet read with N servers online (a dirty snapshot is recomputed on read).
    t = performance.now()
    const dash = await dashboard(url, cookie)
    record(`GET /dashboard after the transitions (recomputes the ${N + REGISTER_SAMPLE}-row snapshot)`, `${ms(t)} ms, online=${dash.online}`)
    t = performance.now()
    await dashboard(url, cookie)
    record('GET /dashboard again (cached snapshot)', `${ms(t)} ms`)
    t = performance.now()
    const page = await fetch(`${url}/api/v1/servers?presence=online&limit=200`, { headers: { cookie } })
    const pageBody = (await page.json()) as { items: unknown[] }
    record('GET /servers?presence=online&limit=200 (cached snapshot, filter + page)', `${ms(t)} ms, ${pageBody.items.length} rows`)

    // 6. Mass reconnect: everyone drops, everyone comes back with one heartbeat.
    t = performance.now()
    await clients.all(() => ({ cmd: 'close' }))
    await until(
      () => count(`SELECT count(*) AS n FROM servers WHERE presence = 'offline' AND hostname LIKE 'bench-%'`) === N,
      PHASE_DEADLINE_MS,
      () => `${N} servers offline after the close; presence now ${presence()}`,
    )
    record(`mass close: all ${N} offline`, `${secs(t)} s`)

    // Reopened sessions keep heartbeating at the protocol's interval, as real agents do: when
    // reopening everything takes longer than 60 s, the sweep rightly marks the earliest ones suspect
    // unless they heartbeat again.
    t = performance.now()
    await clients.all(() => ({ cmd: 'ticker', everyMs: HEARTBEAT_INTERVAL_MS }))
    await clients.all(() => ({ cmd: 'open', heartbeatOnWelcome: true }))
    const reopened = performance.now()
    const swept = await fetch(`${url}/api/v1/_test/jobs/presence.sweep/run`, { method: 'POST' })
    if (swept.status !== 200) throw new Error(`presence.sweep answered ${swept.status}`)
    await until(
      () => count(`SELECT count(*) AS n FROM servers WHERE presence = 'online' AND hostname LIKE 'bench-%'`) === N,
      PHASE_DEADLINE_MS,
      () => `${N} servers online after the reconnect; presence now ${presence()}`,
    )
    const dbSettled = performance.now()
    await until(async () => (await dashboard(url, cookie)).online === N, PHASE_DEADLINE_MS, 'GET /dashboard to show every server online')
    record(`mass reconnect: ${N} sessions reopened with hello + one heartbeat`, `${((reopened - t) / 1000).toFixed(2)} s`)
    record('mass reconnect: all online in the database', `${((dbSettled - t) / 1000).toFixed(2)} s after the first reconnect`)
    record('mass reconnect: all online on GET /dashboard', `${secs(t)} s after the first reconnect`)
    await clients.all(() => ({ cmd: 'ticker', everyMs: null }))
    record('service RSS at the end', `${mb(rssKb(service.pid))} MiB`)
    const errors = count(`SELECT count(*) AS n FROM servers WHERE presence != 'online' AND hostname LIKE 'bench-%'`)
    if (errors) throw new Error(`${errors} servers are not online at the end`)
  } finally {
    clients.stop()
    db.close()
    service.kill('SIGTERM')
    // A clean stop writes what every closed session left (and the CPU profile, when asked for).
    await Promise.race([service.exited, Bun.sleep(60_000)])
    if (service.exitCode === null && service.signalCode === null) {
      console.error('bench/agents: the service did not stop within the wait after SIGTERM; killed')
      service.kill('SIGKILL')
    } else if (service.exitCode !== 0) console.error(`bench/agents: the service stopped with ${service.exitCode ?? service.signalCode}`)
    rmSync(dir, { recursive: true, force: true })
  }
  const width = Math.max(...figures.map(([k]) => k.length))
  console.log('')
  for (const [k, v] of figures) console.log(`${k.padEnd(width)}  ${v}`)
  if (LIMIT_NOTE) console.log(`\nNOTE: ${LIMIT_NOTE}`)
  if (CPU_PROF_DIR) console.log(`\nservice CPU profile written to ${CPU_PROF_DIR}`)
  process.exit(0)
}

/** Migrates a fresh database, creates the tenant (pro plan: no server limit) and N enrolled servers. */
async function prepareDatabase(env: Record<string, string>, n: number): Promise<{ sessions: Session[]; ticket: string }> {
  const deps = await benchDeps(env)
  const { tenantId, ticket } = await proAccount(deps)
  const now = deps.clock.nowUs()
  const gpus = JSON.stringify(facts('x').gpus)
  // SQLite only (a file in a temp dir): N servers in bulk over bun:sqlite's own connection, before the
  // service starts and while nothing else of this process uses it.
  const sqlite = deps.database.sqlite!
  const insert = sqlite.prepare(
    `INSERT INTO servers (id, tenant_id, name, created_at, hostname, fingerprint, agent_version, gpus, gpu_count, gpu_model, agent_token_hash, enrolled_at)
     VALUES (?, ?, ?, ?, ?, ?, '1.4.0', ?, 8, 'NVIDIA GeForce RTX 4090', ?, ?)`,
  )
  const sessions: Session[] = []
  sqlite.transaction(() => {
    for (let i = 0; i < n; i++) {
      const id = deps.newId()
      const token = generateSecret('gpuhq_agt_')
      const host = `bench-${String(i).padStart(6, '0')}`
      insert.run(id, tenantId, host, now, host, `sha256:${host}`, gpus, hashSecret(token), now)
      sessions.push({ token, serverId: id, hello: JSON.stringify({ type: 'hello', ...facts(host) }) })
    }
  })()
  await deps.database.close()
  return { sessions, ticket }
}

function facts(hostname: string) {
  return {
    agent_version: '1.4.0',
    hostname,
    fingerprint: `sha256:${hostname}`,
    public_ip: '203.0.113.7',
    gpus: Array.from({ length: 8 }, (_, i) => ({ index: i, model: 'NVIDIA GeForce RTX 4090', memory_mb: 24564 })),
  }
}

async function signIn(url: string, ticket: string): Promise<string> {
  const res = await fetch(`${url}/api/v1/auth/password-reset/complete`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ticket, password: 'correct horse battery staple 42' }),
  })
  if (res.status !== 200) throw new Error(`sign-in answered ${res.status}: ${await res.text()}`)
  const m = /^(__Host-gpuhq_session=[^;]*)/.exec(res.headers.get('set-cookie') ?? '')
  if (!m) throw new Error('sign-in set no session cookie')
  return m[1]!
}

async function dashboard(url: string, cookie: string): Promise<{ online: number }> {
  const res = await fetch(`${url}/api/v1/dashboard`, { headers: { cookie } })
  if (res.status !== 200) throw new Error(`GET /dashboard answered ${res.status}`)
  return ((await res.json()) as { servers: { online: number } }).servers
}

/** Polls every 20 ms until `check` holds; throws after `ms`. */
async function until(check: () => boolean | Promise<boolean>, ms: number, what: string | (() => string)): Promise<void> {
  const deadline = Date.now() + ms
  for (;;) {
    try {
      if (await check()) return
    } catch {
      // not yet (the service may not listen yet)
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${ms / 1000} s waiting for ${typeof what === 'string' ? what : what()}`)
    await Bun.sleep(20)
  }
}

function rssKb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  if (!m) throw new Error(`no VmRSS for pid ${pid}`)
  return Number(m[1])
}

function openFileLimits(): { soft: number; hard: number } {
  const m = /Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/.exec(readFileSync('/proc/self/limits', 'utf8'))
  const n = (v: string | undefined) => (v === undefined ? 1024 : v === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(v))
  return { soft: n(m?.[1]), hard: n(m?.[2]) }
}

function secs(since: number): string {
  return ((performance.now() - since) / 1000).toFixed(2)
}
function ms(since: number): string {
  return (performance.now() - since).toFixed(0)
}
function mb(kb: number): string {
  return (kb / 1024).toFixed(1)
}
