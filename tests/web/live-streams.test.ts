import { afterAll, beforeAll, expect, test } from 'bun:test'
import { liveHub } from '../../src/modules/live'
import { expectClean, journey, open, signedInOwner, startConsole, WAIT, type ConsoleSession } from '../support/browser'
import type { Request } from 'playwright-core'
import { eventually, type Owner } from '../support/fleet'

/**
 * The console keeps one event stream open (web/lib/live.ts). A stream the page stopped when a member
 * left a live page used to schedule a retry anyway, and that retry opened a second stream beside
 * the next page's, never aborted: over HTTP/1.1 a browser keeps six connections per origin, so
 * after a few pages every request of the console queued behind leaked streams (a group created on
 * the fleet page stayed "Working…"). Counted, not timed: the page's clock is fast-forwarded past
 * every retry, and the streams are counted on both ends.
 */

let c: ConsoleSession
let owner: Owner
/** Stream requests the browser made since the watch began, and those of them still open. */
let opened = 0
const openStreams = new Set<Request>()

beforeAll(async () => {
  c = await startConsole()
  owner = await signedInOwner(c)
  const isStream = (url: string) => new URL(url).pathname === '/api/v1/events/stream'
  c.context.on('request', (r) => {
    if (!isStream(r.url())) return
    opened++
    openStreams.add(r)
  })
  c.context.on('requestfinished', (r) => openStreams.delete(r))
  c.context.on('requestfailed', (r) => openStreams.delete(r))
  // A clock the test can move: timers still run in real time until it is fast-forwarded.
  await c.page.clock.install()
  await c.page.reload({ timeout: WAIT })
  await c.page.getByRole('heading', { level: 1, name: 'Fleet' }).waitFor({ timeout: WAIT })
}, 120_000)
afterAll(() => c?.close())

test(
  'moving between live pages keeps one event stream open, on the browser and on the service',
  () =>
    journey(c, async () => {
      const streams = () => liveHub(c.app.deps).count(owner.tenantId)
      for (let i = 0; i < 6; i++) {
        await open(c, '/commands', 'Commands')
        await open(c, '/', 'Fleet')
      }
      // Past every retry a stopped stream could have scheduled (at most 32 s), then one more read
      // whose request follows any stream those retries opened.
      await c.page.clock.fastForward(120_000)
      const read = c.page.waitForResponse((r) => new URL(r.url()).pathname === '/api/v1/commands', { timeout: WAIT })
      await open(c, '/commands', 'Commands')
      await read
      // The counts below say what stayed open when it does not settle.
      await eventually(() => openStreams.size === 1 && streams() === 1).catch(() => {})
      expect(openStreams.size).toBe(1)
      expect(streams()).toBe(1)
      // Each page switch opened one stream and closed the one before: no more than that.
      expect(opened).toBeLessThanOrEqual(2 * 6 + 2)
    }),
  180_000,
)

test('loaded nothing from outside the service, logged no error and broke no policy', () => {
  expectClean(c)
})
