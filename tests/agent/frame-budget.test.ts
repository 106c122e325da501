import { afterAll, beforeAll, expect, test } from 'bun:test'
import { FRAME_BURST, STRIKES_BEFORE_CLOSE } from '../../src/modules/agent/agent.ws'
import { startTestApp, type TestApp } from '../support/app'
import { advance, enrolAgent, newOwner, RawAgent, stopApp, type Owner } from '../support/fleet'
import { BASE, HOUR, iso, rawCount, runJob, setNow } from '../telemetry/helpers'

/**
 * Issue 34 (6): the frame budget (docs/agent.md "Limits on the session": bursts of 1200 frames,
 * then 20 a second) belongs to the server, not to the session, so reconnecting does not refill it
 * (20 reconnecting sessions once stored 24,000 samples in 6 s). Counted, not timed: the test clock
 * flows with real time, so what the budget may have refilled while the test ran is read from the
 * service clock and allowed for, never waited for. Every telemetry frame sent here carries one
 * value in range and one out of range, so the service answers each frame it takes with a
 * `value_out_of_range` error frame and each it refuses with `rate_limited`: the answers tell when it
 * has handled them all, and the stored samples how many it took.
 */

let app: TestApp
let owner: Owner
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  await setNow(app, BASE + HOUR)
  owner = await newOwner(app, 'budget', 'pro')
})
afterAll(() => stopApp(app))

let sent = 0

/** Sends `n` one-sample frames (distinct instants) on a new session and waits for an answer to each, or for the session to be closed. */
async function session(agentToken: string, n: number): Promise<{ taken: number; refused: number; closeCode: number | null }> {
  const agent = await RawAgent.connect(app, agentToken)
  for (let i = 0; i < n; i++) {
    // Distinct instants, in the past: a sample sent again for the same instant would replace, not add.
    const t = iso(BASE + HOUR - 1_000_000 - ++sent * 1000)
    agent.send({ type: 'telemetry', samples: [{ t, scope: 'host', values: { cpu_usage_pct: 50, memory_used_pct: 1e9 } }] })
  }
  const answered = agent.waitFor(() => agent.errors().length >= n, 20_000).catch(() => null)
  await Promise.race([answered, agent.closed])
  const codes = agent.errors().map((f) => f.code)
  await agent.close()
  return {
    taken: codes.filter((c) => c === 'value_out_of_range').length,
    refused: codes.filter((c) => c === 'rate_limited').length,
    closeCode: agent.closeCode,
  }
}

/** Frames the budget may have refilled since `sinceUs` on the service clock (20 a second), rounded up. */
const refilledSince = (sinceUs: number) => Math.ceil(((app.deps.clock.nowUs() - sinceUs) / 1_000_000) * 20) + 1

test('reconnecting sessions share one budget per server: five sessions of 400 frames store the burst, not 2000', async () => {
  const e = await enrolAgent(app, owner)
  const other = await enrolAgent(app, owner)
  const before = await rawCount(app, e.server_id)
  const t0 = app.deps.clock.nowUs()
  const results = []
  for (let i = 0; i < 5; i++) results.push(await session(e.agent_token, 400))
  const refill = refilledSince(t0)
  // 400 + 400 + 400 take the burst; the fourth session is refused (but for what refilled meanwhile)
  // and closed after its strikes; the fifth inherits the strikes and is closed at its first refusal.
  expect(results.slice(0, 3).map((r) => r.taken)).toEqual([400, 400, 400])
  const taken = results.reduce((n, r) => n + r.taken, 0)
  expect(taken).toBeGreaterThanOrEqual(FRAME_BURST)
  expect(taken).toBeLessThanOrEqual(FRAME_BURST + refill)
  expect(results[3]!.refused).toBeGreaterThanOrEqual(STRIKES_BEFORE_CLOSE)
  expect(results.slice(3).map((r) => r.closeCode)).toEqual([4429, 4429])
  await runJob(app, 'presence.sweep')
  expect((await rawCount(app, e.server_id)) - before).toBe(taken)

  // Another server of the same tenant has its own budget.
  expect((await session(other.agent_token, 10)).taken).toBe(10)
})

test('the budget refills with the service clock, not with a reconnect: 10 s later a new session gets about 200 frames', async () => {
  const e = await enrolAgent(app, owner)
  // From before the first session: the budget is empty at the first session's last refusal, which
  // comes before any instant read after it, so what refilled since then is within what refilled
  // since t0 (read after the session, t0 missed the refill between that refusal and the read).
  const t0 = app.deps.clock.nowUs()
  const first = await session(e.agent_token, FRAME_BURST + 50)
  expect(first.taken).toBeGreaterThanOrEqual(FRAME_BURST)
  expect(first.refused).toBeGreaterThan(0)
  await runJob(app, 'presence.sweep')
  const before = await rawCount(app, e.server_id)
  await advance(app, 10)
  const next = await session(e.agent_token, 300)
  expect(next.taken).toBeGreaterThanOrEqual(200)
  expect(next.taken).toBeLessThanOrEqual(refilledSince(t0))
  expect(next.refused).toBeGreaterThan(0)
  await runJob(app, 'presence.sweep')
  expect((await rawCount(app, e.server_id)) - before).toBe(next.taken)
})
