import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../support/app'
import { mutateAt } from '../support/access'
import {
  api,
  enrolAgent,
  eventually,
  fleetRowCounts,
  getServer,
  httpsHello,
  listServers,
  newOwner,
  ok,
  RawAgent,
  rawUpgrade,
  runJob,
  type Owner,
  stopApp,
} from '../support/fleet'
import { expectProblem } from '../support/problem'

/** docs/fleet.md "HTTPS hello" and "The session": the credential, hello/welcome, one session per server, bad frames. */

let app: TestApp
let owner: Owner
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newOwner(app, 'session', 'pro')
})
afterAll(() => stopApp(app))

describe('the HTTPS hello', () => {
  test('answers 204, is shown on the server detail as last_hello_at, and never makes the server online', async () => {
    const e = await enrolAgent(app, owner)
    expect((await getServer(app, owner, e.server_id)).last_hello_at).toBeNull()
    const res = await httpsHello(app, e.agent_token, { hostname: 'hello-host', agent_version: '1.5.0' })
    expect(res.status).toBe(204)
    expect(await res.text()).toBe('')
    await runJob(app, 'presence.sweep')
    const server = await getServer(app, owner, e.server_id)
    expect(server.last_hello_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/)
    expect(server).toMatchObject({ presence: 'offline', last_seen_at: null, hostname: 'hello-host', agent_version: '1.5.0' })
    const row = (await listServers(app, owner)).items.find((r) => r.id === e.server_id)!
    expect(row.presence).toBe('offline')
  })

  test('refuses a missing or wrong credential with 401, a member session with 403, and an old agent with 426', async () => {
    const e = await enrolAgent(app, owner)
    await expectProblem(await app.fetch('/api/v1/agent/hello', { method: 'POST', json: {} }), 401, 'unauthorized')
    await expectProblem(await httpsHello(app, mutateAt(e.agent_token, 15)), 401, 'unauthorized')
    await expectProblem(await api(app, owner, 'POST', '/agent/hello', { json: { agent_version: '1.4.0', hostname: 'x', gpus: [] } }), 403, 'forbidden')
    await expectProblem(await httpsHello(app, e.agent_token, { agent_version: '0.3.0' }), 426, 'unsupported_agent_version')
    expect((await getServer(app, owner, e.server_id)).last_hello_at).toBeNull()
  })
})

describe('opening the session', () => {
  test('a bad credential is refused before the upgrade with an HTTP 401 problem document', async () => {
    const e = await enrolAgent(app, owner)
    for (const authorization of [null, 'Bearer ', 'Bearer gpuhq_agt_nope', `Bearer ${mutateAt(e.agent_token, 12)}`, `Basic ${btoa('a:b')}`]) {
      const res = await rawUpgrade(app, authorization)
      expect({ authorization, status: res.status }).toEqual({ authorization, status: 401 })
      expect(res.headers).toMatch(/content-type: application\/problem\+json/i)
      expect(res.headers).toMatch(/www-authenticate: Bearer/i)
      expect(JSON.parse(res.body)).toMatchObject({ status: 401, code: 'unauthorized' })
    }
    expect((await rawUpgrade(app, `Bearer ${e.agent_token}`)).status).toBe(101)
    // The WebSocket client sees the refusal as a session that never opened.
    await expect(RawAgent.connect(app, mutateAt(e.agent_token, 12))).rejects.toThrow(/closed before opening/)
  })

  test('a plain GET without an upgrade answers 426', async () => {
    const e = await enrolAgent(app, owner)
    const res = await app.fetch('/api/v1/agent/ws', { headers: { authorization: `Bearer ${e.agent_token}` } })
    expect(res.status).toBe(426)
  })

  test('hello is answered by welcome with the server id and the intervals of the enrolment', async () => {
    const e = await enrolAgent(app, owner)
    const { agent, welcome } = await RawAgent.start(app, e.agent_token, {
      hostname: 'from-hello',
      gpus: [
        { index: 1, model: 'NVIDIA H100' },
        { index: 0, model: 'NVIDIA H100' },
      ],
    })
    expect(welcome).toEqual({
      type: 'welcome',
      server_id: e.server_id,
      heartbeat_interval_s: e.heartbeat_interval_s,
      telemetry_interval_s: e.telemetry_interval_s,
    })
    const server = await getServer(app, owner, e.server_id)
    expect(server).toMatchObject({ hostname: 'from-hello', gpu_count: 2, gpu_model: 'NVIDIA H100', presence: 'offline' })
    expect(server.gpus.map((g: { index: number }) => g.index)).toEqual([0, 1])
    await agent.close()
  })

  test('a second session for the same server closes the first with 4409 and takes over', async () => {
    const e = await enrolAgent(app, owner)
    const first = (await RawAgent.start(app, e.agent_token)).agent
    first.heartbeat()
    await first.barrier()
    const second = (await RawAgent.start(app, e.agent_token)).agent
    const closed = await Promise.race([first.closed, Bun.sleep(3000).then(() => null)])
    expect(closed?.code).toBe(4409)
    expect(second.open).toBe(true)
    second.heartbeat()
    await second.barrier()
    // The replaced session's end does not take the server offline: the new one holds it.
    const server = await getServer(app, owner, e.server_id)
    expect(server.presence).toBe('online')
    await second.close()
    await eventually(async () => (await getServer(app, owner, e.server_id)).presence === 'offline')
  })
})

describe('a frame the service cannot accept', () => {
  const now = () => new Date().toISOString()
  const big = (bytes: number) => {
    const head = '{"type":"heartbeat","seq":1,"pad":"'
    return head + 'x'.repeat(bytes - head.length - 2) + '"}'
  }
  const bad: [string, string | Record<string, unknown>, string][] = [
    ['malformed JSON', '{"type":"heartbeat",', 'invalid_json'],
    ['a JSON array', '[1,2]', 'validation_failed'],
    ['a frame without a type', { seq: 1 }, 'validation_failed'],
    ['an unknown type', { type: 'reboot_now' }, 'unknown_type'],
    ['a heartbeat with a string seq', { type: 'heartbeat', seq: '7' }, 'validation_failed'],
    ['a telemetry sample with a bad scope', { type: 'telemetry', samples: [{ t: now(), scope: 'rack', values: {} }] }, 'validation_failed'],
    [
      'a telemetry sample with a bad timestamp',
      { type: 'telemetry', samples: [{ t: 'yesterday', scope: 'host', values: { cpu_usage_pct: 3 } }] },
      'validation_failed',
    ],
    ['a GPU sample without gpu_index', { type: 'telemetry', samples: [{ t: now(), scope: 'gpu', values: { temperature_c: 60 } }] }, 'validation_failed'],
    ['a string metric value', { type: 'telemetry', samples: [{ t: now(), scope: 'gpu', gpu_index: 0, values: { temperature_c: '61' } }] }, 'validation_failed'],
    [
      'a non-finite metric value',
      `{"type":"telemetry","samples":[{"t":"${now()}","scope":"gpu","gpu_index":0,"values":{"temperature_c":1e999}}]}`,
      'validation_failed',
    ],
    ['a metric name outside the pattern', { type: 'telemetry', samples: [{ t: now(), scope: 'host', values: { 'CPU Usage': 3 } }] }, 'validation_failed'],
    ['an event with an unknown severity', { type: 'event', kind: 'gpu_lost', severity: 'apocalyptic', message: 'x' }, 'validation_failed'],
    ['a frame over 256 KiB', big(256 * 1024 + 1), 'frame_too_large'],
  ]

  test.each(bad)('%s gets an error frame; the session stays open, other sessions are unaffected and nothing is stored', async (_name, frame, code) => {
    const e = await enrolAgent(app, owner)
    const bystanderEnrolment = await enrolAgent(app, owner)
    const { agent } = await RawAgent.start(app, e.agent_token)
    const bystander = (await RawAgent.start(app, bystanderEnrolment.agent_token)).agent
    const before = await fleetRowCounts(app)

    const error = await agent.expectError(frame)
    expect(error).toMatchObject({ type: 'error', code })
    expect(typeof error.message).toBe('string')
    await agent.barrier()
    expect(agent.open).toBe(true)
    expect(await fleetRowCounts(app)).toEqual(before)
    expect(bystander.open).toBe(true)
    expect(bystander.frames.map((f) => f.type)).toEqual(['welcome'])

    // Both sessions still work: a heartbeat on each brings its server online.
    agent.heartbeat()
    bystander.heartbeat()
    await Promise.all([agent.barrier(), bystander.barrier()])
    expect((await getServer(app, owner, e.server_id)).presence).toBe('online')
    expect((await getServer(app, owner, bystanderEnrolment.server_id)).presence).toBe('online')
    await Promise.all([agent.close(), bystander.close()])
  })

  test('a frame of exactly 256 KiB is accepted', async () => {
    const e = await enrolAgent(app, owner)
    const { agent } = await RawAgent.start(app, e.agent_token)
    agent.sendRaw(big(256 * 1024))
    await agent.barrier()
    expect(agent.errors()).toEqual([])
    expect((await getServer(app, owner, e.server_id)).presence).toBe('online')
    await agent.close()
  })

  test('a command frame for a command that does not exist gets an error frame and the session stays open', async () => {
    const e = await enrolAgent(app, owner)
    const { agent } = await RawAgent.start(app, e.agent_token)
    const error = await agent.expectError({ type: 'command.accepted', command_id: '01a00000-0000-7000-8000-000000000000' })
    expect(error.type).toBe('error')
    await agent.barrier()
    expect(agent.open).toBe(true)
    await agent.close()
  })

  test('an agent event is stored as a typed server event under agent.<kind>', async () => {
    const e = await enrolAgent(app, owner)
    const { agent } = await RawAgent.start(app, e.agent_token)
    agent.event('gpu_fell_off_bus', 'critical', 'GPU 1 fell off the bus', { gpu_index: 1 })
    await agent.barrier()
    const page = await ok<{ items: { kind: string; severity: string; message: string; data: unknown }[] }>(
      await api(app, owner, 'GET', `/servers/${e.server_id}/events?kind=agent.gpu_fell_off_bus`),
    )
    expect(page.items).toEqual([
      expect.objectContaining({ kind: 'agent.gpu_fell_off_bus', severity: 'critical', message: 'GPU 1 fell off the bus', data: { gpu_index: 1 } }),
    ])
    await agent.close()
  })
})
