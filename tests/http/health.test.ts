import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../support/app'

let app: TestApp
beforeAll(async () => {
  app = await startTestApp()
})
afterAll(() => app.close())

describe('health', () => {
  test('healthz says the process is up', async () => {
    const res = await app.fetch('/healthz')
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ status: 'ok' })
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
  })

  test('readyz says the database answers and every migration is applied', async () => {
    const res = await app.fetch('/readyz')
    expect(res.status).toBe(200)
    const body = (await res.json()) as { status: string; migrations: { applied: number; pending: number } }
    expect(body.status).toBe('ready')
    expect(body.migrations.pending).toBe(0)
    expect(body.migrations.applied).toBeGreaterThan(0)
  })

  test('readyz answers 503 temporarily_unavailable when the database is gone', async () => {
    const other = await startTestApp()
    await other.deps.database.close()
    const res = await other.fetch('/readyz')
    expect(res.status).toBe(503)
    expect(res.headers.get('content-type')).toBe('application/problem+json')
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/)
    expect(((await res.json()) as { code: string }).code).toBe('temporarily_unavailable')
    await other.close().catch(() => {})
  })
})
