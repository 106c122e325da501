import { afterAll, beforeAll, expect, test } from 'bun:test'
import { gunzipSync } from 'node:zlib'
import { sql } from 'drizzle-orm'
import { isPostgres } from '../../db/client'
import { call, mintPat, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { newOwner, stopApp, type Owner } from '../support/fleet'
import { parseExposition, promtool, samplesOf } from './exposition'

/**
 * Issue 42, the scrape of a large fleet (docs/prometheus.md "Large fleets"): the body is streamed
 * (sent in chunks as it is written, so no Content-Length), read back whole it is the exposition of
 * every GPU of every server, including those past the first slice of servers read at a time, and
 * gzip-encoded it is the same bytes. On SQLite the latest readings are a WITHOUT ROWID table.
 */

const SERVERS = 260 // more than one read's slice (LATEST_SLICE, 250)
const GPUS = 2
const READINGS = ['temperature_c', 'hotspot_temperature_c', 'memory_temperature_c', 'utilization_pct', 'power_w', 'memory_used_mb', 'fan_pct', 'clock_sm_mhz']

let app: TestApp
let owner: Owner
let token: string
const ids: string[] = []
/** The temperature each GPU reported: server index × 1000 + GPU index + 0.5. */
const temperature = (s: number, g: number) => s * 1000 + g + 0.5

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newOwner(app, 'prom-large', 'pro')
  const member: Member = { userId: owner.userId, tenantId: owner.tenantId, email: owner.email, role: 'owner', session: owner.session }
  token = (await mintPat(app, member, { scopes: ['servers:read'] })).token
  const now = app.deps.clock.nowUs()
  const gpus = JSON.stringify(Array.from({ length: GPUS }, (_, i) => ({ index: i, model: 'NVIDIA GeForce RTX 4090', memory_mb: 24564 })))
  for (let s = 0; s < SERVERS; s++) {
    const id = app.deps.newId()
    ids.push(id)
    await app.deps.db.run(
      sql`INSERT INTO servers (id, tenant_id, name, created_at, gpus, gpu_count, gpu_model, presence, last_seen_at)
          VALUES (${id}, ${owner.tenantId}, ${`rig-${String(s).padStart(3, '0')}`}, ${now}, ${gpus}, ${GPUS}, 'NVIDIA GeForce RTX 4090', 'online', ${now})`,
    )
    const rows = []
    for (let g = 0; g < GPUS; g++) for (const m of READINGS) rows.push(sql`(${id}, ${g}, ${m}, ${m === 'temperature_c' ? temperature(s, g) : 50}, ${now})`)
    await app.deps.db.run(sql`INSERT INTO server_latest_metrics (server_id, gpu_index, metric, value, t) VALUES ${sql.join(rows, sql`, `)}`)
  }
})
afterAll(async () => {
  await stopApp(app)
})

test('a large fleet is streamed: no Content-Length, every GPU of every server, the same bytes gzip-encoded', async () => {
  const plain = await call(app, 'GET', '/metrics/prometheus', token, { headers: { 'accept-encoding': 'identity' } })
  expect(plain.status).toBe(200)
  expect(plain.headers.get('content-length')).toBeNull()
  const text = await plain.text()
  expect(promtool(['check', 'metrics'], text)).toEqual({ code: 0, output: '' })
  const parsed = parseExposition(text)
  const temperatures = samplesOf(parsed, 'gpuhq_gpu_temperature_celsius')
  expect(temperatures).toHaveLength(SERVERS * GPUS)
  // In name order (rig-000 …), each GPU's own reading, past the first slice of servers too.
  expect(temperatures.map((x) => [x.labels.server, x.labels.gpu, x.value])).toEqual(
    ids.flatMap((id, s) => Array.from({ length: GPUS }, (_, g) => [id, String(g), String(temperature(s, g))])),
  )
  for (const family of ['gpuhq_gpu_power_watts', 'gpuhq_gpu_sm_clock_hertz', 'gpuhq_gpu_memory_total_bytes'])
    expect(samplesOf(parsed, family)).toHaveLength(SERVERS * GPUS)

  const zipped = await fetch(`${app.url}/api/v1/metrics/prometheus`, {
    headers: { authorization: `Bearer ${token}`, 'accept-encoding': 'gzip' },
    decompress: false,
  } as RequestInit)
  expect(zipped.headers.get('content-encoding')).toBe('gzip')
  expect(gunzipSync(new Uint8Array(await zipped.arrayBuffer())).toString()).toBe(text)
})

test('SQLite keeps the latest readings in their primary key (WITHOUT ROWID)', async () => {
  if (isPostgres(app.deps.db)) return // a heap with its primary key index there (docs/scale-out.md)
  const rows = await app.deps.db.all<{ sql: string }>(sql`SELECT sql FROM sqlite_master WHERE name = 'server_latest_metrics'`)
  expect(rows[0]?.sql).toMatch(/\)\s*WITHOUT ROWID,\s*STRICT$/)
})
