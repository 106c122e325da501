import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { startTestApp, type TestApp } from '../support/app'
import { advance, enrolAgent, getServer, newOwner, RawAgent, stopApp, type Frame, type Owner } from '../support/fleet'
import { FRAME_BURST, STRIKES_BEFORE_CLOSE } from '../../src/modules/agent/agent.ws'
import { MAX_METRIC_NAMES_PER_SERVER } from '../../src/modules/telemetry/ingest'

/**
 * What one agent session may cost the service: the payload Bun buffers, frames per second,
 * metric names per server, and how long a dead peer holds its socket (docs/agent.md "Limits").
 */

let app: TestApp
let owner: Owner
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newOwner(app, 'limits', 'pro')
})
afterAll(() => stopApp(app))

/** Sends `n` frames of unknown types: each is answered by one error frame, accepted or refused. */
async function sendUnknown(agent: RawAgent, n: number): Promise<Frame[]> {
  const since = agent.frames.length
  for (let i = 0; i < n; i++) agent.send({ type: `probe_${i}` })
  const until = Date.now() + 20_000
  while (agent.frames.length - since < n && agent.open && Date.now() < until) await Bun.sleep(10)
  return agent.frames.slice(since)
}

describe('the payload limit', () => {
  test('a frame far over 256 KiB is refused from its header: that session is closed with 1009, others go on', async () => {
    const e = await enrolAgent(app, owner)
    const bystander = (await RawAgent.start(app, (await enrolAgent(app, owner)).agent_token)).agent
    const { agent } = await RawAgent.start(app, e.agent_token)
    agent.sendRaw(`{"type":"heartbeat","seq":1,"pad":"${'x'.repeat(1024 * 1024)}"}`)
    const closed = await Promise.race([agent.closed, Bun.sleep(5000).then(() => null)])
    expect(closed?.code).toBe(1009)
    bystander.heartbeat()
    await bystander.barrier()
    expect(bystander.errors()).toEqual([])
    expect((await getServer(app, owner, e.server_id)).presence).toBe('offline')
    await bystander.close()
  })
})

describe('the frame rate', () => {
  test('past the burst a frame gets a rate_limited error frame and is dropped; the session stays open and refills with time', async () => {
    const e = await enrolAgent(app, owner)
    const { agent } = await RawAgent.start(app, e.agent_token)
    const answers = await sendUnknown(agent, FRAME_BURST + 60)
    expect(answers).toHaveLength(FRAME_BURST + 60)
    const codes = answers.map((f) => f.code)
    // hello took one frame of the burst.
    expect(codes.slice(0, FRAME_BURST - 1).every((c) => c === 'unknown_type')).toBe(true)
    const refused = answers.filter((f) => f.code === 'rate_limited')
    expect(refused.length).toBeGreaterThan(0)
    expect(refused[0]).toMatchObject({ type: 'error', code: 'rate_limited', message: expect.any(String) })
    expect(agent.open).toBe(true)

    await advance(app, 60)
    agent.heartbeat()
    await agent.barrier()
    expect((await getServer(app, owner, e.server_id)).presence).toBe('online')
    await agent.close()
  })

  test('a session that keeps sending past the limit is closed with 4429', async () => {
    const e = await enrolAgent(app, owner)
    const { agent } = await RawAgent.start(app, e.agent_token)
    await sendUnknown(agent, FRAME_BURST + STRIKES_BEFORE_CLOSE + 200)
    const closed = await Promise.race([agent.closed, Bun.sleep(5000).then(() => null)])
    expect(closed?.code).toBe(4429)
  })
})

describe('metric names per server', () => {
  const names = Array.from({ length: MAX_METRIC_NAMES_PER_SERVER }, (_, i) => `m_${i}`)
  const telemetry = (agent: RawAgent, metrics: string[], scope: 'host' | 'gpu' = 'host') => {
    const t = new Date().toISOString()
    const samples = []
    for (let i = 0; i < metrics.length; i += 64)
      samples.push({ t, scope, ...(scope === 'gpu' ? { gpu_index: 0 } : {}), values: Object.fromEntries(metrics.slice(i, i + 64).map((m, j) => [m, j])) })
    agent.send({ type: 'telemetry', samples })
  }

  test(`a server's ${MAX_METRIC_NAMES_PER_SERVER} names are accepted, a new one past them is refused with an error frame, known ones still pass, across sessions`, async () => {
    const e = await enrolAgent(app, owner)
    const first = (await RawAgent.start(app, e.agent_token)).agent
    telemetry(first, names)
    await first.barrier()
    expect(first.errors()).toEqual([])

    const refused = await first.expectError({
      type: 'telemetry',
      samples: [{ t: new Date().toISOString(), scope: 'host', values: { m_0: 1, invented_name: 2 } }],
    })
    expect(refused).toMatchObject({ type: 'error', code: 'metric_limit_reached' })
    expect(refused.message).toContain('invented_name')
    // The same names on a GPU are the same names.
    telemetry(first, names.slice(0, 10), 'gpu')
    await first.barrier()
    expect(first.errors()).toHaveLength(1)
    await first.close()

    // A new session (the names are read back from the stored series) keeps the cap.
    const second = (await RawAgent.start(app, e.agent_token)).agent
    expect(
      await second.expectError({ type: 'telemetry', samples: [{ t: new Date().toISOString(), scope: 'gpu', gpu_index: 1, values: { another_name: 1 } }] }),
    ).toMatchObject({ code: 'metric_limit_reached' })
    telemetry(second, ['m_255'])
    await second.barrier()
    expect(second.errors()).toHaveLength(1)
    await second.close()
    const detail = await getServer(app, owner, e.server_id)
    expect(Object.keys(detail.telemetry.host)).toHaveLength(MAX_METRIC_NAMES_PER_SERVER)
    expect(detail.telemetry.host).not.toHaveProperty('invented_name')
  })

  test('the cap is per server', async () => {
    const e = await enrolAgent(app, owner)
    const { agent } = await RawAgent.start(app, e.agent_token)
    telemetry(agent, ['invented_name', ...names.slice(0, 20)])
    await agent.barrier()
    expect(agent.errors()).toEqual([])
    await agent.close()
  })
})

describe('the idle timeout', () => {
  test('a peer that sends nothing and answers no ping is closed; a quiet one that answers pings stays', async () => {
    const idle = await startTestApp({ LOG_LEVEL: 'silent', AGENT_IDLE_TIMEOUT_SECONDS: '4' })
    try {
      const o = await newOwner(idle, 'idle', 'pro')
      const dead = await enrolAgent(idle, o)
      const quiet = await RawAgent.connect(idle, (await enrolAgent(idle, o)).agent_token)
      const { hostname, port } = new URL(idle.url)
      const started = Date.now()
      const closedAfter = await new Promise<number>((resolve, reject) => {
        const sock = connect({ host: hostname, port: Number(port) })
        const t = setTimeout(() => {
          sock.destroy()
          reject(new Error('still open after 30 s'))
        }, 30_000)
        sock.on('close', () => {
          clearTimeout(t)
          resolve(Date.now() - started)
        })
        sock.on('error', () => {})
        // Reads whatever arrives (the 101, then pings) and never answers.
        sock.on('data', () => {})
        sock.write(
          `GET /api/v1/agent/ws HTTP/1.1\r\nHost: ${hostname}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer ${dead.agent_token}\r\n\r\n`,
        )
      })
      expect(closedAfter).toBeGreaterThanOrEqual(4000)
      expect(quiet.open).toBe(true)
      await quiet.close()
    } finally {
      await idle.close()
    }
  }, 40_000)
})
