import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { mintPat, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { api, enrolAgent, eventually, newOwner, ok, RawAgent, runJob, serverEvents, stopApp, type Owner } from '../support/fleet'
import { iso, usOf } from '../support/wire'
import { addDays, csvRecords, report, UNLIMITED_REPORTS } from './support'

/**
 * Issue 21, the utilisation report: two enrolled rigs whose agents come online, go quiet (suspect,
 * offline), come back, one decommissioned, the other online across midnight until its session
 * closes; one of them rented on marketplace_a (the accrual's time) and reporting GPU utilisation.
 * The expected figures are computed here from the server events and rows themselves, over days
 * that are over, so nothing depends on when the test runs.
 */

const US = 1_000_000
const HOUR = 3600 * US
const DAY = 24 * HOUR
const KEY_A = 'vast-utilisation-key-0123456789ab'
const VAST_OWNER = 7373

type Figures = {
  tracked_seconds: number
  online_seconds: number
  suspect_seconds: number
  uptime_share: number | null
  rented_seconds: number
  rented_share: number | null
  gpu_utilisation_pct: number | null
}
type Utilisation = {
  report: 'utilisation'
  from: string
  to: string
  timezone: string
  fleet: Figures
  periods: (Figures & { period: string; from_at: string; to_at: string })[]
  servers: (Figures & { server_id: string; name: string; gpu_model: string | null; gpu_count: number })[]
}

let simA: MarketplaceASim
let app: TestApp
let owner: Owner
let caller: Member
let rigA: string
let rigB: string
let dayD: string
let decommissionedAt: number

const job = async (name: string) =>
  expect((await ok<{ outcome: string }>(app.fetch(`/api/v1/_test/jobs/${name}/run`, { method: 'POST' }))).outcome).toBe('succeeded')
const clockTo = async (us: number) => ok(app.fetch('/api/v1/_test/clock', { method: 'POST', json: { now: iso(us) } }))
const advance = async (seconds: number) => ok(app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } }))
const now = () => app.deps.clock.nowUs()

beforeAll(async () => {
  simA = await startMarketplaceA({ rateScale: 0, owners: [{ id: VAST_OWNER, email: 'host@example.com', keys: [{ key: KEY_A, label: 'util' }] }] })
  simA.putMachine(VAST_OWNER, 801, { hostname: 'rig-801', listed: true, num_gpus: 2, gpu_name: 'RTX 4090', listed_gpu_cost: 0.5 })
  simA.addRental(801, { kind: 'on_demand', gpus: 2, running: true })
  app = await startTestApp({ ...UNLIMITED_REPORTS, LOG_LEVEL: 'silent', MARKETPLACE_A_API_URL: simA.url })
  owner = await newOwner(app, 'utilisation', 'pro')
  caller = { ...owner, role: 'owner' }
  // Day D starts tomorrow (UTC); the rigs are enrolled at 01:00.
  const dStart = (Math.floor(now() / DAY) + 1) * DAY
  dayD = new Date(dStart / 1000).toISOString().slice(0, 10)
  await clockTo(dStart + HOUR)
  const a = await enrolAgent(app, owner)
  const rtx3090 = { gpus: [{ index: 0, model: 'NVIDIA GeForce RTX 3090' }] }
  const b = await enrolAgent(app, owner, rtx3090)
  rigA = a.server_id
  rigB = b.server_id
  await ok(await api(app, owner, 'PUT', '/marketplaces/marketplace_a', { json: { api_key: KEY_A } }))
  await ok(await api(app, owner, 'POST', '/marketplaces/links', { json: { server_id: rigA, marketplace: 'marketplace_a', external_machine_id: '801' } }), 201)
  await job('marketplaces.sync')
  await job('earnings.sample')

  const agentA = (await RawAgent.start(app, a.agent_token)).agent
  const agentB = (await RawAgent.start(app, b.agent_token, rtx3090)).agent
  for (const agent of [agentA, agentB]) {
    agent.heartbeat()
    await agent.barrier()
  }
  // GPU utilisation: GPU 0 at 40 then 60 (an hourly average of 50), GPU 1 at 90; two hours later GPU 0 at 20.
  agentA.telemetry({ 0: { utilization_pct: 40 }, 1: { utilization_pct: 90 } }, undefined, iso(now()))
  agentA.telemetry({ 0: { utilization_pct: 60 } }, undefined, iso(now() + US))
  await agentA.barrier()
  await advance(2 * 3600)
  agentA.telemetry({ 0: { utilization_pct: 20 } }, undefined, iso(now()))
  await agentA.barrier()
  await job('metrics.rollup')
  await job('marketplaces.sync')
  await job('earnings.sample')

  // Three quiet hours: both offline at the sweep.
  await advance(3 * 3600)
  await runJob(app, 'presence.sweep')
  // A comes back, is late (suspect), then silent (offline).
  agentA.heartbeat()
  await agentA.barrier()
  await advance(90)
  await runJob(app, 'presence.sweep')
  await advance(600)
  await runJob(app, 'presence.sweep')
  // B comes back for an hour and is decommissioned.
  agentB.heartbeat()
  await agentB.barrier()
  await advance(3600)
  decommissionedAt = usOf((await ok<{ decommissioned_at: string }>(await api(app, owner, 'POST', `/servers/${rigB}/decommission`))).decommissioned_at)
  // A comes back and stays online across midnight until its session closes at 06:00 on D+1.
  agentA.heartbeat()
  await agentA.barrier()
  await clockTo(dStart + DAY + 6 * HOUR)
  await agentA.close()
  await eventually(async () => (await serverEvents(app, owner, rigA, { kind: 'presence.offline', limit: '200' })).items.length === 3)
  // Both days are over when the reports are read.
  await clockTo(dStart + 3 * DAY + HOUR)
})
afterAll(async () => {
  await stopApp(app)
  await simA.stop()
})

/** Presence segments of a server from its events: the state before the first transition is offline. */
async function segments(serverId: string): Promise<{ from: number; to: number; state: string }[]> {
  const events = (await serverEvents(app, owner, serverId, { limit: '200' })).items
    .filter((e) => e.kind.startsWith('presence.'))
    .map((e) => ({ at: usOf(e.created_at), state: e.kind.slice('presence.'.length) }))
    .sort((x, y) => x.at - y.at)
  return events.map((e, i) => ({ from: e.at, to: events[i + 1]?.at ?? Number.POSITIVE_INFINITY, state: e.state }))
}

const overlap = (a0: number, a1: number, b0: number, b1: number) => Math.max(0, Math.min(a1, b1) - Math.max(a0, b0))
const round = (x: number, d: number) => Math.round(x * 10 ** d) / 10 ** d
const dayStart = (date: string) => Date.parse(`${date}T00:00:00Z`) * 1000
const accruedUs = async (serverId: string, from: string, to: string) =>
  (
    (await app.deps.db.get(
      sql`SELECT coalesce(sum(accrued_us), 0) AS us FROM earnings_days WHERE server_id = ${serverId} AND day >= ${from} AND day <= ${to}`,
    )) as { us: number }
  ).us

/** What a server's figures over [from, to] must be, from its events, its enrolment and its accrual rows. */
async function expectedFor(serverId: string, from: string, to: string) {
  const detail = await ok<{ created_at: string; decommissioned_at: string | null }>(await api(app, owner, 'GET', `/servers/${serverId}`))
  const start = Math.max(dayStart(from), usOf(detail.created_at))
  const end = Math.min(dayStart(addDays(to, 1)), detail.decommissioned_at ? usOf(detail.decommissioned_at) : Number.POSITIVE_INFINITY)
  const tracked = Math.max(0, end - start)
  let online = 0
  let suspect = 0
  for (const s of await segments(serverId)) {
    if (s.state === 'online') online += overlap(s.from, s.to, start, end)
    if (s.state === 'suspect') suspect += overlap(s.from, s.to, start, end)
  }
  const rented = await accruedUs(serverId, from, to)
  return {
    tracked_seconds: Math.floor(tracked / US),
    online_seconds: Math.floor(online / US),
    suspect_seconds: Math.floor(suspect / US),
    uptime_share: tracked > 0 ? round(online / tracked, 4) : null,
    rented_seconds: Math.floor(rented / US),
    rented_share: tracked > 0 ? round(Math.min(1, rented / tracked), 4) : null,
    raw: { tracked, online, suspect, rented },
  }
}
const figuresOf = (f: Figures) => ({
  tracked_seconds: f.tracked_seconds,
  online_seconds: f.online_seconds,
  suspect_seconds: f.suspect_seconds,
  uptime_share: f.uptime_share,
  rented_seconds: f.rented_seconds,
  rented_share: f.rented_share,
})
const withoutRaw = ({ raw: _raw, ...f }: Awaited<ReturnType<typeof expectedFor>>) => f

describe('the utilisation report', () => {
  test('each server’s uptime, suspect and rented time are its presence transitions and accrual rows, to the second', async () => {
    const to = addDays(dayD, 1)
    const { body } = await report<Utilisation>(app, caller, 'utilisation', `from=${dayD}&to=${to}`)
    expect(body).toMatchObject({ report: 'utilisation', from: dayD, to, timezone: 'UTC' })
    expect(body.servers.map((s) => s.server_id).sort()).toEqual([rigA, rigB].sort())
    const a = body.servers.find((s) => s.server_id === rigA)!
    const b = body.servers.find((s) => s.server_id === rigB)!
    expect({ model: a.gpu_model, gpus: a.gpu_count }).toEqual({ model: 'NVIDIA GeForce RTX 4090', gpus: 2 })
    expect({ model: b.gpu_model, gpus: b.gpu_count }).toEqual({ model: 'NVIDIA GeForce RTX 3090', gpus: 1 })
    const expA = await expectedFor(rigA, dayD, to)
    const expB = await expectedFor(rigB, dayD, to)
    expect(figuresOf(a)).toEqual(withoutRaw(expA))
    expect(figuresOf(b)).toEqual(withoutRaw(expB))
    // The scenario reached what it is meant to show.
    expect(a.suspect_seconds).toBeGreaterThanOrEqual(600)
    expect(a.rented_seconds).toBeGreaterThan(2 * 3600 - 60)
    expect(b.tracked_seconds).toBe(Math.floor((decommissionedAt - usOf((await ok(await api(app, owner, 'GET', `/servers/${rigB}`))).created_at)) / US))
    expect(a.online_seconds).toBeGreaterThan(a.tracked_seconds / 4)

    // The fleet is the servers together, its shares weighted by time.
    const raw = { tracked: expA.raw.tracked + expB.raw.tracked, online: expA.raw.online + expB.raw.online }
    expect(body.fleet.tracked_seconds).toBe(Math.floor(raw.tracked / US))
    expect(body.fleet.uptime_share).toBe(round(raw.online / raw.tracked, 4))
  })

  test('each day of the fleet is its servers on that day; the CSV holds each server on each day', async () => {
    const to = addDays(dayD, 1)
    const { body } = await report<Utilisation>(app, caller, 'utilisation', `from=${dayD}&to=${to}`)
    const csv = csvRecords((await report<string>(app, caller, 'utilisation', `from=${dayD}&to=${to}&format=csv`)).text)
    expect(csv.length).toBe(2 * 2)
    for (const day of [dayD, to]) {
      const period = body.periods.find((p) => p.period === day)!
      expect(period.from_at).toBe(`${day}T00:00:00.000000Z`)
      const a = await expectedFor(rigA, day, day)
      const b = await expectedFor(rigB, day, day)
      expect(period.tracked_seconds).toBe(Math.floor((a.raw.tracked + b.raw.tracked) / US))
      expect(period.online_seconds).toBe(Math.floor((a.raw.online + b.raw.online) / US))
      expect(period.rented_seconds).toBe(Math.floor((a.raw.rented + b.raw.rented) / US))
      for (const [id, exp] of [
        [rigA, a],
        [rigB, b],
      ] as const) {
        const row = csv.find((r) => r.period === day && r.server_id === id)!
        expect(Number(row.tracked_seconds)).toBe(exp.tracked_seconds)
        expect(Number(row.online_seconds)).toBe(exp.online_seconds)
        expect(Number(row.suspect_seconds)).toBe(exp.suspect_seconds)
        expect(row.uptime_share === '' ? null : Number(row.uptime_share)).toBe(exp.uptime_share)
        expect(Number(row.rented_seconds)).toBe(exp.rented_seconds)
      }
    }
    // A day after the decommission: the server was not under management, and says so with nulls.
    const gone = csv.find((r) => r.period === to && r.server_id === rigB)!
    expect({ tracked: gone.tracked_seconds, share: gone.uptime_share }).toEqual({ tracked: '0', share: '' })
  })

  test('GPU utilisation is the average over the GPU-hours measured', async () => {
    const { body } = await report<Utilisation>(app, caller, 'utilisation', `from=${dayD}&to=${dayD}`)
    // GPU 0: 50 in the first hour and 20 two hours later; GPU 1: 90. Three GPU-hours: (50 + 90 + 20) / 3.
    expect(body.servers.find((s) => s.server_id === rigA)!.gpu_utilisation_pct).toBe(53.3)
    expect(body.servers.find((s) => s.server_id === rigB)!.gpu_utilisation_pct).toBeNull()
    expect(body.fleet.gpu_utilisation_pct).toBe(53.3)
  })

  test('days not begun count nothing: nulls, never zero shares', async () => {
    const later = addDays(dayD, 10)
    const { body } = await report<Utilisation>(app, caller, 'utilisation', `from=${later}&to=${later}`)
    expect(body.fleet).toEqual({
      tracked_seconds: 0,
      online_seconds: 0,
      suspect_seconds: 0,
      uptime_share: null,
      rented_seconds: 0,
      rented_share: null,
      gpu_utilisation_pct: null,
    })
  })

  test('a token limited to one server sees that server alone, in the fleet figures too', async () => {
    const pat = (await mintPat(app, caller, { scopes: ['servers:read'], server_allowlist: [rigA] })).token
    const to = addDays(dayD, 1)
    const { body, text } = await report<Utilisation>(app, pat, 'utilisation', `from=${dayD}&to=${to}`)
    expect(body.servers.map((s) => s.server_id)).toEqual([rigA])
    expect(figuresOf(body.fleet)).toEqual(withoutRaw(await expectedFor(rigA, dayD, to)))
    expect(text).not.toContain(rigB)
    expect((await report<string>(app, pat, 'utilisation', `from=${dayD}&to=${to}&format=csv`)).text).not.toContain(rigB)
  })
  test('once the day is settled its GPU figures come from the stored daily aggregates, the same to the decimal', async () => {
    // Issue 34: days whose hourly rollups can no longer change (older than the raw history, rolled
    // up) are computed once and stored; the answer must not move when they are read from there.
    await advance(3 * 24 * 3600)
    await job('metrics.rollup')
    const stored = async () =>
      (await app.deps.db.get(sql`SELECT count(*) AS n FROM report_gpu_days WHERE server_id = ${rigA} AND metric = 'utilization_pct'`)) as { n: number }
    expect(Number((await stored()).n)).toBe(0)
    const first = await report<Utilisation>(app, caller, 'utilisation', `from=${dayD}&to=${dayD}&group_by=week`)
    expect(Number((await stored()).n)).toBe(1)
    const again = await report<Utilisation>(app, caller, 'utilisation', `from=${dayD}&to=${dayD}&group_by=month`)
    for (const body of [first.body, again.body]) {
      expect(body.servers.find((s) => s.server_id === rigA)!.gpu_utilisation_pct).toBe(53.3)
      expect(body.fleet.gpu_utilisation_pct).toBe(53.3)
    }
  })
})
