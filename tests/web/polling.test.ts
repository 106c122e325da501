import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { enrolAgent, RawAgent, type Owner } from '../support/fleet'
import { expectClean, signedInOwner, startConsole, WAIT, type ConsoleSession } from '../support/browser'

/**
 * Without the live event stream (a service that answers 404 for it, or a proxy that drops it) the
 * console polls the fleet snapshot with its ETag and still shows presence change (web/lib/live.ts).
 */

let c: ConsoleSession
let owner: Owner

beforeAll(async () => {
  c = await startConsole()
  // The browser is told the stream does not exist, as an older gpuhq would answer.
  await c.context.route('**/api/v1/events/stream', (route) =>
    route.fulfill({ status: 404, contentType: 'application/problem+json', body: JSON.stringify({ title: 'Not found', status: 404, code: 'not_found' }) }),
  )
  owner = await signedInOwner(c)
}, 120_000)
afterAll(() => c?.close())

describe('without the event stream', () => {
  test('the fleet polls its snapshot (mostly 304) and shows a server come online and go offline', async () => {
    const { page } = c
    await page.locator('.live', { hasText: 'Updated every' }).waitFor({ timeout: WAIT })
    const enrolled = await enrolAgent(c.app, owner, { hostname: 'rig-polled' })
    const { agent } = await RawAgent.start(c.app, enrolled.agent_token)
    agent.heartbeat()
    const row = page.locator(`tr[data-server="${enrolled.server_id}"]`)
    await row.locator('.badge', { hasText: 'online' }).waitFor({ timeout: WAIT })
    agent.ws.close()
    await agent.closed
    await row.locator('.badge', { hasText: 'offline' }).waitFor({ timeout: WAIT })
    const polls = c.requests.filter((u) => new URL(u).pathname === '/api/v1/servers').length
    expect(polls).toBeGreaterThanOrEqual(3)
  }, 120_000)

  test('loaded nothing from outside the service, logged no error and broke no policy', () => {
    expectClean(c)
  })
})
