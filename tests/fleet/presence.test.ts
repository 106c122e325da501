import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startTestApp, type TestApp } from '../support/app'
import {
  advance,
  api,
  closeAllAgents,
  enrolAgent,
  eventually,
  getServer,
  listServers,
  newOwner,
  ok,
  RawAgent,
  runJob,
  serverEvents,
  type Owner,
  type ServerEvent,
  stopApp,
} from '../support/fleet'
import { expectProblem } from '../support/problem'
import { agentSessions, fleetRuntime } from '../../src/modules/fleet'
import { withTransaction } from '../../db/client'

/** docs/fleet.md "Presence": heartbeats of the live session only, moved by the test clock and presence.sweep. */

let app: TestApp
let owner: Owner
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newOwner(app, 'presence', 'pro')
})
afterAll(() => stopApp(app))

async function connected() {
  const e = await enrolAgent(app, owner)
  const { agent } = await RawAgent.start(app, e.agent_token)
  return { id: e.server_id, agent }
}

const presenceOf = async (id: string) => (await getServer(app, owner, id)).presence
const rowOf = async (id: string) => (await listServers(app, owner)).items.find((r) => r.id === id)!
const kinds = async (id: string) => (await serverEvents(app, owner, id)).items.map((e) => e.kind)

describe('presence transitions', () => {
  test('an agent with an open session but no heartbeat yet is offline, with last_seen_at null', async () => {
    const { id, agent } = await connected()
    await runJob(app, 'presence.sweep')
    expect(await getServer(app, owner, id)).toMatchObject({ presence: 'offline', last_seen_at: null })
    expect(await rowOf(id)).toMatchObject({ presence: 'offline', last_seen_at: null })
    await agent.close()
  })

  test('the first heartbeat makes the server online at once, sets last_seen_at and records presence.online', async () => {
    const { id, agent } = await connected()
    agent.heartbeat()
    await agent.barrier()
    const server = await getServer(app, owner, id)
    expect(server.presence).toBe('online')
    expect(server.last_seen_at).not.toBeNull()
    expect(await rowOf(id)).toMatchObject({ presence: 'online', last_seen_at: server.last_seen_at })
    const [online] = (await serverEvents(app, owner, id, { kind: 'presence.online' })).items
    expect(online).toMatchObject({ kind: 'presence.online', server_id: id, data: { from: 'offline' } })
    await agent.close()
  })

  test('without heartbeats the server stays online up to 60 s, is suspect after 61 s and offline after 301 s', async () => {
    const { id, agent } = await connected()
    agent.heartbeat()
    await agent.barrier()
    const seen = (await getServer(app, owner, id)).last_seen_at

    await advance(app, 59)
    await runJob(app, 'presence.sweep')
    expect(await presenceOf(id)).toBe('online')

    await advance(app, 2)
    await runJob(app, 'presence.sweep')
    expect(await getServer(app, owner, id)).toMatchObject({ presence: 'suspect', last_seen_at: seen })
    expect((await rowOf(id)).presence).toBe('suspect')

    // The test clock keeps flowing between calls: 299 s of silence plus the time the test takes.
    await advance(app, 238)
    await runJob(app, 'presence.sweep')
    expect(await presenceOf(id)).toBe('suspect')
    await advance(app, 2)
    await runJob(app, 'presence.sweep')
    expect(await getServer(app, owner, id)).toMatchObject({ presence: 'offline', last_seen_at: seen })
    expect((await rowOf(id)).presence).toBe('offline')

    // A sweep with nothing to move changes nothing.
    await runJob(app, 'presence.sweep')
    expect(await kinds(id)).toEqual(['presence.offline', 'presence.suspect', 'presence.online', 'agent.enrolled'])
    await agent.close()
  })

  test('a heartbeat while suspect brings the server back online at once (not with the next batch)', async () => {
    const { id, agent } = await connected()
    agent.heartbeat()
    await agent.barrier()
    await advance(app, 61)
    await runJob(app, 'presence.sweep')
    expect(await presenceOf(id)).toBe('suspect')
    agent.heartbeat()
    await agent.barrier()
    expect(await presenceOf(id)).toBe('online')
    const [back] = (await serverEvents(app, owner, id, { kind: 'presence.online' })).items
    expect(back!.data).toEqual({ from: 'suspect' })
    expect((await rowOf(id)).presence).toBe('online')
    await agent.close()
  })

  test('closing the session makes the server offline at once', async () => {
    const { id, agent } = await connected()
    agent.heartbeat()
    await agent.barrier()
    await agent.close()
    await eventually(async () => (await presenceOf(id)) === 'offline')
    const [offline] = (await serverEvents(app, owner, id)).items
    expect(offline).toMatchObject({ kind: 'presence.offline', severity: 'warning', data: { from: 'online' } })
    expect((await rowOf(id)).presence).toBe('offline')
  })

  test('heartbeats of an online server move last_seen_at forward within about a second (group commit)', async () => {
    const { id, agent } = await connected()
    agent.heartbeat()
    await agent.barrier()
    const first = (await getServer(app, owner, id)).last_seen_at!
    await advance(app, 20)
    agent.heartbeat()
    await agent.barrier()
    const later = await eventually(async () => {
      const s = await getServer(app, owner, id)
      return s.last_seen_at! > first ? s.last_seen_at! : null
    })
    expect(Date.parse(later) - Date.parse(first)).toBeGreaterThanOrEqual(20_000)
    // No new transition for a heartbeat that keeps the server online.
    expect((await serverEvents(app, owner, id, { kind: 'presence.online' })).items).toHaveLength(1)
    await agent.close()
  })
})

describe('the typed durable events of a server', () => {
  test('every transition is an event, newest first, paginated with next_cursor and filtered by kind', async () => {
    const { id, agent } = await connected()
    agent.heartbeat()
    await agent.barrier()
    await advance(app, 61)
    await runJob(app, 'presence.sweep')
    agent.heartbeat()
    await agent.barrier()
    await runJob(app, 'presence.sweep') // writes the buffered heartbeat: suspect → online
    await agent.close()
    await eventually(async () => (await presenceOf(id)) === 'offline')

    const all = (await serverEvents(app, owner, id, { limit: '200' })).items
    expect(all.map((e) => e.kind)).toEqual(['presence.offline', 'presence.online', 'presence.suspect', 'presence.online', 'agent.enrolled'])
    expect(all.map((e) => e.created_at)).toEqual([...all.map((e) => e.created_at)].sort().reverse())
    for (const e of all) {
      expect(e.server_id).toBe(id)
      expect(['info', 'warning', 'error', 'critical']).toContain(e.severity)
    }

    const paged: ServerEvent[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const page: { items: ServerEvent[]; next_cursor: string | null } = await serverEvents(app, owner, id, { limit: '2', ...(cursor ? { cursor } : {}) })
      expect(page.items.length).toBeLessThanOrEqual(2)
      paged.push(...page.items)
      cursor = page.next_cursor
      pages++
    } while (cursor && pages < 10)
    expect(pages).toBe(3)
    expect(paged).toEqual(all)

    const online = (await serverEvents(app, owner, id, { kind: 'presence.online' })).items
    expect(online.map((e) => e.data)).toEqual([{ from: 'suspect' }, { from: 'offline' }])
    expect((await serverEvents(app, owner, id, { kind: 'no.such.kind' })).items).toEqual([])

    const first = await serverEvents(app, owner, id, { limit: '2' })
    await expectProblem(await api(app, owner, 'GET', `/servers/${id}/events?limit=2&cursor=${first.next_cursor!.slice(0, -2)}xx`), 422, 'validation_failed')
    // A cursor of the unfiltered list does not page the filtered one.
    await expectProblem(await api(app, owner, 'GET', `/servers/${id}/events?kind=presence.online&cursor=${first.next_cursor}`), 422, 'validation_failed')
  })
})

describe('telemetry', () => {
  test('samples update the detail telemetry per GPU and host, and the fleet row vitals after the snapshot refresh', async () => {
    const { id, agent } = await connected()
    agent.heartbeat()
    agent.telemetry(
      {
        1: { temperature_c: 71.26, hotspot_temperature_c: 80, memory_temperature_c: 90, fan_pct: 40, utilization_pct: 61 },
        0: { temperature_c: 64, hotspot_temperature_c: 85.5, memory_temperature_c: 88, fan_pct: 77, utilization_pct: 50, power_w: null },
      },
      { cpu_usage_pct: 12.5, nvlink_errors: 0 },
    )
    // An older sample never replaces a newer one.
    agent.telemetry({ 0: { temperature_c: 10 } }, undefined, new Date(Date.now() - 3_600_000).toISOString())
    await agent.barrier()
    await runJob(app, 'presence.sweep') // writes buffered telemetry now instead of up to a second later

    const server = await getServer(app, owner, id)
    expect(server.telemetry.host.cpu_usage_pct.value).toBe(12.5)
    expect(server.telemetry.host.nvlink_errors.value).toBe(0)
    expect(server.telemetry.gpus.map((g: { index: number }) => g.index)).toEqual([0, 1])
    expect(server.telemetry.gpus[0].metrics.temperature_c.value).toBe(64)
    expect(server.telemetry.gpus[0].metrics.power_w.value).toBeNull()
    expect(server.telemetry.gpus[1].metrics.fan_pct.value).toBe(40)
    expect(server.telemetry.gpus[0].metrics.temperature_c.t).toMatch(/Z$/)
    expect(server).toMatchObject({ max_temp_core_c: 71.26, max_temp_hotspot_c: 85.5, max_temp_vram_c: 90, max_fan_pct: 77, avg_util_pct: '55.50' })

    await runJob(app, 'fleet.snapshot')
    const row = await rowOf(id)
    expect(row).toMatchObject({ max_temp_core_c: 71.26, max_temp_hotspot_c: 85.5, max_temp_vram_c: 90, max_fan_pct: 77, avg_util_pct: '55.50' })
    expect(row.avg_util_pct).toMatch(/^-?[0-9]+(\.[0-9]{1,6})?$/)
    expect(row.gpu_vitals).toEqual([
      { index: 0, temp_c: 64, fan_pct: 77 },
      { index: 1, temp_c: 71.3, fan_pct: 40 },
    ])
    await agent.close()
  })

  test('a server without telemetry has null vitals, and one gpu_vitals entry of nulls per GPU it enrolled with', async () => {
    const { id, agent } = await connected()
    await runJob(app, 'fleet.snapshot')
    const row = await rowOf(id)
    expect(row).toMatchObject({ max_temp_core_c: null, max_temp_hotspot_c: null, max_temp_vram_c: null, max_fan_pct: null, avg_util_pct: null })
    expect(row.gpu_vitals).toHaveLength(row.gpu_count)
    expect(row.gpu_vitals.every((v: { temp_c: unknown; fan_pct: unknown }) => v.temp_c === null && v.fan_pct === null)).toBe(true)
    await agent.close()
  })
})

describe('presence steps are group-committed, and no reader sees one late', () => {
  const storedPresence = async (id: string) => ((await app.deps.db.get(sql`SELECT presence FROM servers WHERE id = ${id}`)) as { presence: string }).presence
  /** Resolves once the service has run the session's close handler (the server has no live session). */
  async function closedInService(id: string) {
    const until = Date.now() + 3000
    while (agentSessions(app.deps).isLive(id) && Date.now() < until) await Bun.sleep(1)
    expect(agentSessions(app.deps).isLive(id)).toBe(false)
  }

  test('right after the close, every read shows the server offline, though the step was not written yet', async () => {
    const { id, agent } = await connected()
    agent.heartbeat()
    await agent.barrier()
    expect(await presenceOf(id)).toBe('online')
    const dashboardBefore = (await ok<{ servers: { offline: number } }>(await api(app, owner, 'GET', '/dashboard'))).servers.offline
    const before = Date.now()
    await agent.close()
    await closedInService(id)
    // The step waits in memory (its timer has not run yet): the database still says online…
    expect(await storedPresence(id)).toBe('online')
    // …and the first read writes it before it reads.
    expect(await presenceOf(id)).toBe('offline')
    expect(await storedPresence(id)).toBe('offline')
    expect((await rowOf(id)).presence).toBe('offline')
    expect((await ok<{ servers: { offline: number } }>(await api(app, owner, 'GET', '/dashboard'))).servers.offline).toBe(dashboardBefore + 1)
    const offline = (await serverEvents(app, owner, id, { kind: 'presence.offline' })).items
    expect(offline).toHaveLength(1)
    expect(offline[0]).toMatchObject({ severity: 'warning', data: { from: 'online', reason: 'session closed (1000)' } })
    // Its time is the close's, not the write's.
    expect(Date.parse(offline[0]!.created_at)).toBeGreaterThanOrEqual(before - 5000)
  })

  test('without a read, the timer writes the steps within a fraction of a second', async () => {
    const { id, agent } = await connected()
    agent.heartbeat()
    await agent.barrier()
    await eventually(async () => (await storedPresence(id)) === 'online', undefined, 10)
    await agent.close()
    await closedInService(id)
    await eventually(async () => (await storedPresence(id)) === 'offline', undefined, 10)
  })

  test('close, reconnect and heartbeat in quick succession: each transition recorded once, in order, the server online', async () => {
    const e = await enrolAgent(app, owner)
    const cycles = 3
    for (let i = 0; i < cycles; i++) {
      const { agent } = await RawAgent.start(app, e.agent_token)
      agent.heartbeat()
      await agent.barrier()
      agent.heartbeat() // a second one: keeps it online, no transition
      await agent.barrier()
      if (i < cycles - 1) {
        await agent.close()
        await closedInService(e.server_id)
      }
    }
    expect(await presenceOf(e.server_id)).toBe('online')
    const events = (await serverEvents(app, owner, e.server_id)).items.filter((x) => x.kind.startsWith('presence.'))
    // Newest first: online, offline, online, offline, online.
    expect(events.map((x) => x.kind)).toEqual(['presence.online', 'presence.offline', 'presence.online', 'presence.offline', 'presence.online'])
    const times = events.map((x) => Date.parse(x.created_at))
    expect([...times].sort((a, b) => b - a)).toEqual(times)
    await closeAllAgents()
  })
})

test('the fleet runtime refuses to flush inside a transaction, whose commit or rollback would take its steps along', async () => {
  const runtime = fleetRuntime(app.deps)
  await expect(withTransaction(app.deps.db, () => runtime.flush())).rejects.toThrow('outside any transaction')
  // Outside one it writes as always.
  expect(await runtime.flush()).toEqual([])
})
