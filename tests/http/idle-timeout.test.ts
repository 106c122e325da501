import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Elysia } from 'elysia'
import { HTTP_IDLE_TIMEOUT_SECONDS, startServer, type RunningServer } from '../../src/server'
import { startTestApp, type TestApp } from '../support/app'

/**
 * An answer that takes longer than Bun's default idle timeout (10 s) to compute still reaches its
 * client (docs/operations.md "Timeouts"). Bun counted a connection whose request was being worked
 * on in slices of synchronous work (a charge run on the PostgreSQL bridge gpuhq had then, on a loaded machine) as
 * idle, and closed it with a reset at 10 s. gpuhq's own server wrapper (src/server.ts) around a
 * route that works 12 s in such slices: the client gets the answer. The slices are the route's
 * work, not a wait of the test's.
 */

let app: TestApp
let server: RunningServer
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  const slow = new Elysia().get('/slow', async () => {
    for (let i = 0; i < 6; i++) {
      Bun.sleepSync(2000)
      await new Promise((resolve) => setImmediate(resolve))
    }
    return { done: true }
  })
  server = startServer(slow as never, app.deps, { port: 0, hostname: '127.0.0.1' })
})
afterAll(async () => {
  await server?.stop()
  await app?.close()
})

test('an answer computed in slices for 12 s is delivered, not cut by a reset', async () => {
  expect(HTTP_IDLE_TIMEOUT_SECONDS).toBeGreaterThan(12)
  const res = await fetch(`${server.url}/slow`)
  expect(res.status).toBe(200)
  expect(await res.json()).toEqual({ done: true })
}, 60_000)
