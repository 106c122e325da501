import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { gunzipSync } from 'node:zlib'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { ALL_SCOPES } from '../../src/platform/access'
import { call, insertServer, mintPat, type Caller, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { adjust } from '../support/billing'
import { closeAllAgents, enrolAgent, newOwner, ok, RawAgent, stopApp, type Owner } from '../support/fleet'
import { iso, micros, usOf } from '../support/wire'
import { familiesOf, parseExposition, promtool, samplesOf, sampleValue, type Parsed } from './exposition'

/**
 * Issue 23, GET /metrics/prometheus (docs/prometheus.md): scraped as Prometheus scrapes it (its
 * Accept header, a bearer token, gzip), validated and linted by `promtool check metrics`, then read
 * back value by value against the JSON API's own answers: presence, the latest GPU readings from a
 * real agent session, a rental marketplace_a reports and what it accrued today, the balance and how
 * long it lasts. Scopes decide the families, an allowlist narrows every per-server series, another
 * tenant never shows.
 */

const KEY_A = 'vast-prometheus-key-0123456789abcdef'
const VAST_OWNER = 7272
/** A fixed instant in the future of the real clock, mid-day UTC, so the earnings stay on one day. */
const BASE = Date.UTC(2031, 4, 14, 10, 0, 0) * 1000
/** What Prometheus 2.x sends (scrape.acceptHeader): the text format 0.0.4 is one it takes. */
const PROMETHEUS_ACCEPT =
  'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'
const MIB = 1024 * 1024
const RTX = 'NVIDIA GeForce RTX 4090'
/** Quotes, backslashes and a line feed: every character the format escapes in a label value. */
const AWKWARD_NAME = 'rack 7 "B" \\ back\nslash'

let simA: MarketplaceASim
let app: TestApp
let owner: Owner
let member: Member
let stranger: Owner
let a: string // online, two GPUs reporting, rented on marketplace_a, accruing earnings
let b: string // reported once, then its session closed: offline
let c: string // never connected, a name full of characters to escape
let strangerServer: string
let agentA: RawAgent
const tokens: Record<string, string> = {}

const clock = async (json: Record<string, unknown>) => ok(app.fetch('/api/v1/_test/clock', { method: 'POST', json }))
async function job(name: string): Promise<void> {
  const r = await ok<{ outcome: string; detail: string }>(app.fetch(`/api/v1/_test/jobs/${name}/run`, { method: 'POST' }))
  expect(r.outcome).toBe('succeeded')
}
const asMember = (o: Owner): Member => ({ userId: o.userId, tenantId: o.tenantId, email: o.email, role: 'owner', session: o.session })
const twoGpus = [
  { index: 0, model: RTX, memory_mb: 24564 },
  { index: 1, model: RTX, memory_mb: 24564 },
]

type Scrape = { status: number; type: string | null; text: string }
async function scrape(caller: Caller): Promise<Scrape> {
  const res = await call(app, 'GET', '/metrics/prometheus', caller, { headers: { accept: PROMETHEUS_ACCEPT } })
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() }
}
/** A scrape that must succeed and pass `promtool check metrics` (parse and lint), read back. */
async function scrapeValid(caller: Caller): Promise<Parsed & { text: string }> {
  const s = await scrape(caller)
  expect({ status: s.status, body: s.text.slice(0, 300) }).toMatchObject({ status: 200 })
  expect(s.type).toBe(CONTENT_TYPE)
  expect(promtool(['check', 'metrics'], s.text)).toEqual({ code: 0, output: '' })
  return { ...parseExposition(s.text), text: s.text }
}
/** Exact decimal seconds → microseconds (no float). */
function usOfSeconds(text: string): number {
  const [whole, frac = ''] = text.split('.')
  return Number(whole) * 1_000_000 + Number(frac.padEnd(6, '0'))
}

beforeAll(async () => {
  simA = await startMarketplaceA({ rateScale: 0, owners: [{ id: VAST_OWNER, email: 'host@example.com', keys: [{ key: KEY_A, label: 'prom' }] }] })
  app = await startTestApp({ LOG_LEVEL: 'silent', MARKETPLACE_A_API_URL: simA.url })
  await clock({ now: iso(BASE) })
  owner = await newOwner(app, 'prom', 'pro')
  member = asMember(owner)
  stranger = await newOwner(app, 'prom-stranger', 'pro')
  strangerServer = await insertServer(app, stranger.tenantId, 'stranger rig')

  const enrolledA = await enrolAgent(app, owner, { gpus: twoGpus })
  const enrolledB = await enrolAgent(app, owner, { gpus: twoGpus })
  a = enrolledA.server_id
  b = enrolledB.server_id
  // Names a member may choose (quotes, a backslash); the line feed only an older row could hold.
  await ok(await call(app, 'PATCH', `/servers/${a}`, member, { json: { name: 'rig "A" \\ east' } }))
  c = await insertServer(app, owner.tenantId, AWKWARD_NAME)

  // marketplace_a rents A's two cards at 0.50 USD per GPU-hour; half an hour of accrual.
  simA.putMachine(VAST_OWNER, 801, { hostname: 'rig-801', listed: true, num_gpus: 2, gpu_name: 'RTX 4090', listed_gpu_cost: 0.5 })
  simA.addRental(801, { kind: 'on_demand', gpus: 2, running: true })
  await ok(await call(app, 'PUT', '/marketplaces/marketplace_a', member, { json: { api_key: KEY_A } }))
  await ok(await call(app, 'POST', '/marketplaces/links', member, { json: { server_id: a, marketplace: 'marketplace_a', external_machine_id: '801' } }), 201)
  await job('marketplaces.sync')
  await job('earnings.sample')
  await clock({ advance_seconds: 1800 })
  await job('marketplaces.sync')
  await job('earnings.sample')

  // B reports, then its session closes: offline at once, its readings still stored.
  const { agent: agentB } = await RawAgent.start(app, enrolledB.agent_token, { gpus: twoGpus })
  agentB.heartbeat()
  agentB.telemetry({ 0: { temperature_c: 50, utilization_pct: 10 } }, undefined, iso(app.deps.clock.nowUs()))
  await agentB.barrier()
  await agentB.close()

  agentA = (await RawAgent.start(app, enrolledA.agent_token, { gpus: twoGpus })).agent
  agentA.heartbeat()
  agentA.telemetry(
    {
      0: {
        temperature_c: 61.5,
        hotspot_temperature_c: 70,
        memory_temperature_c: 80,
        utilization_pct: 70.5,
        power_w: 312.4,
        memory_used_mb: 20000,
        fan_pct: 35,
        clock_sm_mhz: 2520,
      },
      1: { temperature_c: 72, utilization_pct: 33.33, power_w: null, fan_pct: 100 },
    },
    { cpu_usage_pct: 12, temperature_c: 150 },
    iso(app.deps.clock.nowUs()),
  )
  await agentA.barrier()
  await job('presence.sweep') // writes what the sessions sent

  await adjust(app, owner.tenantId, '12.000001', 'prometheus test balance')

  const mint = async (name: string, body: Record<string, unknown>) => {
    tokens[name] = (await mintPat(app, member, { name, ...body })).token
  }
  await mint('all', { scopes: ALL_SCOPES })
  await mint('servers', { scopes: ['servers:read'] })
  await mint('marketplaces', { scopes: ['marketplaces:read'] })
  await mint('billing', { scopes: ['billing:read'] })
  await mint('commands', { scopes: ['commands:read', 'commands:write', 'notifications:read', 'strategy:read', 'audit:read'] })
  await mint('allowlisted', { scopes: ALL_SCOPES, server_allowlist: [a] })
  await mint('allowlisted billing', { scopes: ['billing:read'], server_allowlist: [a] })
  tokens.stranger = (await mintPat(app, asMember(stranger), { name: 'stranger', scopes: ALL_SCOPES })).token
}, 120_000)

afterAll(async () => {
  await closeAllAgents()
  await stopApp(app)
  await simA.stop()
})

describe('GET /metrics/prometheus, as Prometheus scrapes it', () => {
  test('a PAT gets the text format 0.0.4 that promtool parses and lints clean, HELP and TYPE for every family', async () => {
    const p = await scrapeValid(tokens.all!)
    expect(familiesOf(p).length).toBeGreaterThan(10)
    for (const name of familiesOf(p)) {
      expect(name).toMatch(/^gpuhq_[a-z0-9_]+$/)
      expect(p.helps.get(name)?.length ?? 0).toBeGreaterThan(10)
      // Counters (the lifetime ECC counts, the Xids) and only they end in _total, as promtool's lint wants.
      expect(p.types.get(name)).toBe(name.endsWith('_total') ? 'counter' : 'gauge')
    }
    for (const s of p.samples) expect(p.types.has(s.name)).toBe(true)
  })

  test('presence: online 1 or 0 per server, and the last heartbeat to the microsecond', async () => {
    const p = await scrapeValid(tokens.all!)
    expect(sampleValue(p, 'gpuhq_server_online', { server: a })).toBe('1')
    expect(sampleValue(p, 'gpuhq_server_online', { server: b })).toBe('0')
    expect(sampleValue(p, 'gpuhq_server_online', { server: c })).toBe('0')
    const detail = await ok<{ last_seen_at: string }>(await call(app, 'GET', `/servers/${a}`, member))
    expect(usOfSeconds(sampleValue(p, 'gpuhq_server_last_seen_timestamp_seconds', { server: a }))).toBe(usOf(detail.last_seen_at))
    expect(samplesOf(p, 'gpuhq_server_last_seen_timestamp_seconds', { server: c })).toEqual([])
  })

  test('the latest GPU readings in base units, labelled by server, name, gpu and model', async () => {
    const p = await scrapeValid(tokens.all!)
    const gpu0 = { server: a, name: 'rig "A" \\ east', gpu: '0', model: RTX }
    expect(sampleValue(p, 'gpuhq_gpu_temperature_celsius', gpu0)).toBe('61.5')
    expect(sampleValue(p, 'gpuhq_gpu_hotspot_temperature_celsius', gpu0)).toBe('70')
    expect(sampleValue(p, 'gpuhq_gpu_memory_temperature_celsius', gpu0)).toBe('80')
    expect(sampleValue(p, 'gpuhq_gpu_utilization_ratio', gpu0)).toBe('0.705')
    expect(sampleValue(p, 'gpuhq_gpu_power_watts', gpu0)).toBe('312.4')
    expect(sampleValue(p, 'gpuhq_gpu_memory_used_bytes', gpu0)).toBe(String(20000 * MIB))
    expect(sampleValue(p, 'gpuhq_gpu_memory_total_bytes', gpu0)).toBe(String(24564 * MIB))
    expect(sampleValue(p, 'gpuhq_gpu_fan_speed_ratio', gpu0)).toBe('0.35')
    expect(sampleValue(p, 'gpuhq_gpu_sm_clock_hertz', gpu0)).toBe('2520000000')
    const gpu1 = { server: a, gpu: '1' }
    expect(sampleValue(p, 'gpuhq_gpu_temperature_celsius', gpu1)).toBe('72')
    expect(sampleValue(p, 'gpuhq_gpu_utilization_ratio', gpu1)).toBe('0.3333')
    expect(sampleValue(p, 'gpuhq_gpu_fan_speed_ratio', gpu1)).toBe('1')
    // An unknown reading (null) is no sample, never a zero; host readings are not a GPU's.
    expect(samplesOf(p, 'gpuhq_gpu_power_watts', gpu1)).toEqual([])
    expect(p.samples.filter((s) => s.labels.gpu !== undefined && !/^\d+$/.test(s.labels.gpu))).toEqual([])
    expect(samplesOf(p, 'gpuhq_gpu_temperature_celsius', { server: a })).toHaveLength(2)
    // An offline server's last readings are not its state now; its inventory still is.
    expect(p.samples.filter((s) => s.labels.server === b && s.name !== 'gpuhq_gpu_memory_total_bytes' && s.name.startsWith('gpuhq_gpu_'))).toEqual([])
    expect(samplesOf(p, 'gpuhq_gpu_memory_total_bytes', { server: b })).toHaveLength(2)
  })

  test('rentals running per server and marketplace, and earnings accrued today exactly as GET /marketplaces/earnings has them', async () => {
    const p = await scrapeValid(tokens.all!)
    expect(sampleValue(p, 'gpuhq_server_rented', { server: a })).toBe('1')
    expect(sampleValue(p, 'gpuhq_server_rented', { server: b })).toBe('0')
    expect(samplesOf(p, 'gpuhq_server_rental_running').map((s) => s.labels)).toEqual([{ server: a, name: 'rig "A" \\ east', marketplace: 'marketplace_a' }])
    const earnings = await ok<{ items: { day: string; server_id: string; marketplace: string; earn_usd_accrued: string }[] }>(
      await call(app, 'GET', '/marketplaces/earnings?days=1', tokens.all!),
    )
    const today = new Date(app.deps.clock.nowUs() / 1000).toISOString().slice(0, 10)
    const row = earnings.items.find((r) => r.server_id === a && r.day === today && r.marketplace === 'marketplace_a')!
    expect(micros(row.earn_usd_accrued)).toBeGreaterThan(0)
    expect(sampleValue(p, 'gpuhq_earnings_accrued_today_usd', { server: a, marketplace: 'marketplace_a' })).toBe(row.earn_usd_accrued)
    expect(samplesOf(p, 'gpuhq_earnings_accrued_today_usd')).toHaveLength(1)
  })

  test('the balance is the exact decimal of its micro-USD, and the time it lasts follows GET /billing', async () => {
    const s = await scrapeValid(tokens.billing!)
    expect(s.text.split('\n')).toContain('gpuhq_balance_usd 12.000001')
    const billing = await ok<{ balance_usd: string; estimate: { per_day_usd: string | null }; days_left: number | null }>(
      await call(app, 'GET', '/billing', member),
    )
    expect(billing.balance_usd).toBe('12.000001')
    const perDay = micros(billing.estimate.per_day_usd)
    expect(perDay).toBeGreaterThan(0)
    const left = Number(sampleValue(s, 'gpuhq_balance_time_left_seconds'))
    expect(left).toBe(Number((12_000_001n * 86_400n) / BigInt(perDay)))
    expect(Math.floor(left / 86_400)).toBe(billing.days_left!)
  })

  test("a server's name keeps its quotes, backslashes and line feeds through the format's escapes", async () => {
    const p = await scrapeValid(tokens.servers!)
    expect(p.text).toContain(`name="rack 7 \\"B\\" \\\\ back\\nslash"`)
    expect(p.text).toContain(`name="rig \\"A\\" \\\\ east"`)
    expect(samplesOf(p, 'gpuhq_server_online', { server: c })[0]!.labels.name).toBe(AWKWARD_NAME)
  })

  test('gzip, which Prometheus asks for, compresses the answer', async () => {
    const res = await fetch(`${app.url}/api/v1/metrics/prometheus`, {
      headers: { authorization: `Bearer ${tokens.all}`, accept: PROMETHEUS_ACCEPT, 'accept-encoding': 'gzip' },
      decompress: false,
    } as RequestInit)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-encoding')).toBe('gzip')
    const text = gunzipSync(new Uint8Array(await res.arrayBuffer())).toString()
    expect(promtool(['check', 'metrics'], text)).toEqual({ code: 0, output: '' })
  })
})

const FLEET = /^gpuhq_(server_online|server_last_seen_timestamp_seconds|gpu_.*)$/
const MARKETS = /^gpuhq_(server_rented|server_rental_running|earnings_.*)$/
const BALANCE = /^gpuhq_balance_.*$/

describe('who sees what', () => {
  test('scopes decide the families: servers:read presence and GPUs, marketplaces:read rentals and earnings, billing:read the balance', async () => {
    const all = familiesOf(await scrapeValid(tokens.all!))
    expect(all.every((n) => FLEET.test(n) || MARKETS.test(n) || BALANCE.test(n))).toBe(true)
    for (const [token, pattern] of [
      ['servers', FLEET],
      ['marketplaces', MARKETS],
      ['billing', BALANCE],
    ] as const) {
      const families = familiesOf(await scrapeValid(tokens[token]!))
      expect({ token, families }).toEqual({ token, families: all.filter((n) => pattern.test(n)) })
    }
    // A browser session sees what its role may read: everything here.
    expect(familiesOf(await scrapeValid(member))).toEqual(all)
  })

  test('a token with none of those scopes is refused: 403 forbidden', async () => {
    const s = await scrape(tokens.commands!)
    expect(s.status).toBe(403)
    expect(JSON.parse(s.text)).toMatchObject({ code: 'forbidden' })
  })

  test("a PAT's allowlist narrows every per-server series to its servers, and the tenant-wide balance is left out", async () => {
    const p = await scrapeValid(tokens.allowlisted!)
    const perServer = p.samples.filter((s) => s.labels.server !== undefined)
    expect(perServer.length).toBeGreaterThan(10)
    expect([...new Set(perServer.map((s) => s.labels.server))]).toEqual([a])
    expect(p.samples.filter((s) => s.labels.server === undefined)).toEqual([])
    for (const id of [b, c, strangerServer]) expect(p.text).not.toContain(id)
    expect(familiesOf(p).filter((n) => BALANCE.test(n))).toEqual([])
    // Its servers' series are all there: the same values as the tenant-wide scrape shows for A.
    const full = await scrapeValid(tokens.all!)
    const ofA = (x: Parsed) => x.samples.filter((s) => s.labels.server === a).map((s) => `${s.name}${JSON.stringify(s.labels)} ${s.value}`)
    expect(ofA(p).sort()).toEqual(ofA(full).sort())
  })

  test('an allowlisted token with only billing:read has nothing it may see: 403', async () => {
    const s = await scrape(tokens['allowlisted billing']!)
    expect(s.status).toBe(403)
    expect(JSON.parse(s.text)).toMatchObject({ code: 'forbidden' })
  })

  test("another tenant's servers never appear, either way", async () => {
    const mine = await scrapeValid(tokens.all!)
    expect(mine.text).not.toContain(strangerServer)
    expect(new Set(mine.samples.filter((s) => s.labels.server).map((s) => s.labels.server))).toEqual(new Set([a, b, c]))
    const theirs = await scrapeValid(tokens.stranger!)
    expect(sampleValue(theirs, 'gpuhq_server_online', { server: strangerServer })).toBe('0')
    for (const id of [a, b, c]) expect(theirs.text).not.toContain(id)
    expect(theirs.text.split('\n')).toContain('gpuhq_balance_usd 0.00')
  })

  test('without credentials, or with an unknown token: 401 with WWW-Authenticate', async () => {
    for (const caller of [null, 'gpuhq_pat_not-a-real-token']) {
      const res = await call(app, 'GET', '/metrics/prometheus', caller)
      expect(res.status).toBe(401)
      expect(res.headers.get('content-type')).toBe('application/problem+json')
      expect(res.headers.get('www-authenticate')).toContain('Bearer')
    }
  })
})
