import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { newOwner, type Owner } from '../support/fleet'
import { startTestApp, type TestApp } from '../support/app'
import { holdWriteLock } from '../support/write-lock'

/**
 * Issue 13 (6): while another process holds the write lock, the service never blocks its event
 * loop waiting for it. A write retries with pauses that yield, then answers 503
 * temporarily_unavailable with Retry-After; /healthz and reads keep answering meanwhile; once the
 * lock is released the same request succeeds.
 */

let app: TestApp
let owner: Owner
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newOwner(app, 'busy')
})
afterAll(() => app.close())

const patchMe = (locale: string) => app.fetch('/api/v1/me', { method: 'PATCH', headers: owner.headers, json: { locale } })

describe('a busy database', () => {
  test('a write answers 503 with Retry-After while /healthz keeps answering', async () => {
    const lock = await holdWriteLock(app)
    try {
      let written = false
      const write = patchMe('de').then((r) => {
        written = true
        return r
      })
      // The event loop is not held while the write waits: /healthz answers meanwhile (counted, not
      // timed: the write is still waiting for the lock when these answers come back).
      let answeredWhileWaiting = 0
      for (let i = 0; i < 5; i++) {
        const res = await app.fetch('/healthz')
        expect(res.status).toBe(200)
        if (!written) answeredWhileWaiting++
      }
      expect(answeredWhileWaiting).toBeGreaterThan(0)
      const res = await write
      expect(res.status).toBe(503)
      expect(res.headers.get('retry-after')).toBe('1')
      const doc = (await res.json()) as { code: string; status: number }
      expect(doc).toMatchObject({ code: 'temporarily_unavailable', status: 503 })
    } finally {
      await lock.release()
    }
  })

  test('authentication on a busy database is neither a parse error nor a failure: reads still answer', async () => {
    // Far enough ahead that the session's last-seen stamp is due: that write is skipped, not fatal.
    expect((await app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: 600 } })).status).toBe(200)
    const lock = await holdWriteLock(app)
    try {
      const me = await app.fetch('/api/v1/me', { headers: owner.headers })
      expect(me.status).toBe(200)
      const post = await app.fetch('/api/v1/me', { method: 'PATCH', headers: owner.headers, json: { locale: 'fr' } })
      const doc = (await post.json()) as { code: string }
      expect(post.status).toBe(503)
      expect(doc.code).toBe('temporarily_unavailable')
    } finally {
      await lock.release()
    }
  })

  test('a write that meets the lock for a moment succeeds once it is released, without the client retrying', async () => {
    const lock = await holdWriteLock(app)
    const write = patchMe('es')
    await Bun.sleep(60)
    await lock.release()
    const res = await write
    expect(res.status).toBe(200)
    expect(((await res.json()) as { locale: string }).locale).toBe('es')
  })
})

describe('a busy database and the jobs', () => {
  test('a job that meets the lock for a moment runs once it is released', async () => {
    const lock = await holdWriteLock(app)
    const run = app.runner.run('idempotency.gc', 'busy-1')
    await Bun.sleep(60)
    await lock.release()
    expect((await run).outcome).toBe('succeeded')
  })

  test('a job that meets the lock throughout is refused, and is not left "already running" afterwards', async () => {
    const lock = await holdWriteLock(app)
    try {
      await expect(app.runner.run('idempotency.gc', 'busy-2')).rejects.toThrow(/locked|busy/i)
    } finally {
      await lock.release()
    }
    expect((await app.runner.run('idempotency.gc', 'busy-3')).outcome).toBe('succeeded')
  })
})
