import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { loadConfig } from '../src/config'
import { buildDeps } from '../src/deps'
import { createApp } from '../src/app'
import { startServer } from '../src/server'
import { JobRunner } from '../src/platform/jobs'
import { jobs } from '../jobs'
import { withTransaction } from '../db/client'
import { proAccount, freePort } from '../bench/support'

const dir = mkdtempSync(join(tmpdir(), 'inproc-'))
const port = freePort()
const env = {
  PATH: process.env.PATH ?? '', NODE_ENV: 'test', TEST_CLOCK: 'true', PORT: String(port), DATA_DIR: dir,
  DATABASE_URL: `file:${join(dir, 'gpuhq.db')}`, SECRET_KEY: 'c'.repeat(64), LOG_LEVEL: 'info', JOBS_ENABLED: 'false',
  RATE_LIMIT_TOKEN_PER_MINUTE: '1000000', RATE_LIMIT_TENANT_WRITES_PER_MINUTE: '1000000',
}
const deps = await buildDeps(loadConfig(env))
const { tenantId, ticket } = await proAccount(deps)
const now = deps.clock.nowUs()
const gpus = JSON.stringify(Array.from({ length: 8 }, (_, index) => ({ index, model: 'NVIDIA GeForce RTX 4090', memory_mb: 24564 })))
await withTransaction(deps.db, async (tx) => {
  for (let i = 0; i < 50; i++) {
    const host = `rig-${String(i).padStart(3, '0')}`
    await tx.run(sql`INSERT INTO servers (id, tenant_id, name, created_at, hostname, fingerprint, agent_version, gpus, gpu_count, gpu_model, agent_token_hash, enrolled_at)
      VALUES (${deps.newId()}, ${tenantId}, ${host}, ${now}, ${host}, ${`sha256:${host}`}, '1.4.0', ${gpus}, 8, 'NVIDIA GeForce RTX 4090', ${`unused-${i}`}, ${now})`)
  }
})
let handler: (r: Request, srv: unknown) => Promise<Response> = null as never
const realServe = Bun.serve
;(Bun as { serve: unknown }).serve = (opts: { fetch: typeof handler }) => { handler = opts.fetch; return realServe(opts as never) }
const fake = { requestIP: () => ({ address: '127.0.0.1' }) }
const app = createApp(deps, new JobRunner(deps, jobs))
const { url } = startServer(app, deps, { port })
const server = { fetch: (r: Request) => handler(r, fake) }
const reset = await fetch(`${url}/api/v1/auth/password-reset/complete`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ticket, password: 'correct horse battery staple 42' }) })
const cookie = /^([^=]+=[^;]+)/.exec(reset.headers.get('set-cookie') ?? '')![1]!
const created = await fetch(`${url}/api/v1/tokens`, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: JSON.stringify({ name: 'b', scopes: ['servers:read'] }) })
const pat = ((await created.json()) as { token: string }).token
const first = await fetch(`${url}/api/v1/servers?limit=50`, { headers: { authorization: `Bearer ${pat}` } })
const etag = first.headers.get('etag')!
await first.arrayBuffer()

async function time(name: string, make: () => Request, expect: number, n = 40000) {
  for (let i = 0; i < 3000; i++) await (await server.fetch(make())).arrayBuffer()
  const t = performance.now()
  const c = process.cpuUsage()
  for (let i = 0; i < n; i++) {
    const r = await server.fetch(make())
    if (r.status !== expect) throw new Error(`${name}: ${r.status}`)
    await r.arrayBuffer()
    if (i % 64 === 0) await new Promise((r) => setImmediate(r))
  }
  const cpu = process.cpuUsage(c)
  const g = globalThis as any
  if (g.__aen) console.error('epoch read µs', (g.__ae * 1000) / g.__aen); g.__ae = 0; g.__aen = 0
  console.error(`${name}: ${(((performance.now() - t) * 1000) / n).toFixed(1)} µs wall, ${((cpu.user + cpu.system) / n).toFixed(1)} µs cpu`)
}
if (process.env.READS) {
  const { findSnapshotHead } = await import('../src/modules/fleet/fleet.repository')
  const { readAuthEpoch } = await import('../src/platform/auth-epoch')
  for (let round = 0; round < 2; round++) {
    let t = performance.now()
    for (let i = 0; i < 100000; i++) await findSnapshotHead(deps.db, tenantId)
    console.error('head', ((performance.now() - t) * 1000) / 100000)
    t = performance.now()
    for (let i = 0; i < 100000; i++) await readAuthEpoch(deps.db)
    console.error('epoch', ((performance.now() - t) * 1000) / 100000)
    const raw = deps.database.sqlite!.prepare('SELECT n FROM auth_epoch WHERE id = 1')
    t = performance.now()
    for (let i = 0; i < 100000; i++) raw.values()
    console.error('raw epoch', ((performance.now() - t) * 1000) / 100000)
    const raw2 = deps.database.sqlite!.prepare('SELECT generated_at, data_as_of, dirty FROM fleet_snapshots WHERE tenant_id = ?')
    t = performance.now()
    for (let i = 0; i < 100000; i++) raw2.values(tenantId)
    console.error('raw head', ((performance.now() - t) * 1000) / 100000)
  }
}
const which = (process.env.ONLY ?? 'bare,healthz,304,200').split(',')
for (let round = 0; round < 2; round++) {
  if (which.includes('bare')) await time('new Request only', () => new Request(`${url}/nothing`), 404, 0)
  if (which.includes('healthz')) await time('healthz', () => new Request(`${url}/healthz`), 200)
  if (which.includes('304')) await time('304', () => new Request(`${url}/api/v1/servers?limit=50`, { headers: { authorization: `Bearer ${pat}`, 'if-none-match': etag } }), 304)
  if (which.includes('200i')) await time('200 identity', () => new Request(`${url}/api/v1/servers?limit=50`, { headers: { authorization: `Bearer ${pat}` } }), 200)
  if (which.includes('200')) await time('200 zstd', () => new Request(`${url}/api/v1/servers?limit=50`, { headers: { authorization: `Bearer ${pat}`, 'accept-encoding': 'gzip, deflate, br, zstd' } }), 200)
}
process.exit(0)
