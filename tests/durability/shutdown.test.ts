import { afterAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { freePort, freshDataDir, serviceEnv, spawnService, startService, until, waitExit, type Service } from './service'

/**
 * Stopping and refusing to start: SIGTERM lets the requests already in flight finish before the
 * process exits 0, and a configuration mistake stops startup at once with one line naming it.
 */

const services: Service[] = []
const dirs: string[] = []
afterAll(async () => {
  for (const s of services) if (s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill('SIGKILL')
  await Promise.all(services.map((s) => s.exited))
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

function logLines(service: Service): { msg?: string; level?: string; signal?: string }[] {
  return service
    .stdout()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l))
}

describe('SIGTERM', () => {
  test('a request still being received when SIGTERM arrives completes with 201 before the process exits 0', async () => {
    const dir = freshDataDir()
    dirs.push(dir)
    const service = await startService(dir, { LOG_LEVEL: 'info' })
    services.push(service)

    // A body sent in two halves: the second only once the service has begun shutting down.
    const encoder = new TextEncoder()
    let halfSent!: () => void
    const firstHalfSent = new Promise<void>((r) => (halfSent = r))
    let sendRest!: () => void
    const restMaySend = new Promise<void>((r) => (sendRest = r))
    let step = 0
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (step++ === 0) {
          controller.enqueue(encoder.encode('{"value":"sent-while-'))
          halfSent()
          return
        }
        await restMaySend
        controller.enqueue(encoder.encode('stopping"}'))
        controller.close()
      },
    })
    const pending = fetch(`${service.url}/api/v1/_test/probes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      signal: AbortSignal.timeout(10_000),
    })

    await firstHalfSent
    await Bun.sleep(200) // the connection is accepted and the request is being read
    service.proc.kill('SIGTERM')
    expect(await until(() => service.stdout().includes('"msg":"shutting down"'), 30_000)).toBe(true)
    await Bun.sleep(300)
    expect(service.proc.exitCode).toBeNull() // still draining, not gone
    sendRest()

    const res = await pending
    expect(res.status).toBe(201)
    const probe = (await res.json()) as { id: string; value: string }
    expect(probe.value).toBe('sent-while-stopping')

    expect(await waitExit(service)).toBe(0)
    const lines = logLines(service)
    expect(lines.map((l) => l.msg)).toContain('stopped')
    expect(lines.find((l) => l.msg === 'stopped')?.signal).toBe('SIGTERM')
    expect(lines.filter((l) => l.level === 'error')).toEqual([])

    // What it acknowledged while stopping is in the database it closed.
    const db = new Database(join(dir, 'gpuhq.db'), { readonly: true })
    const row = db.query('SELECT value FROM test_probes WHERE id = ?').get(probe.id) as { value: string } | null
    db.close()
    expect(row?.value).toBe('sent-while-stopping')
  }, 20_000)
})

describe('an invalid configuration', () => {
  const cases: [string, Record<string, string>][] = [
    ['PORT', { PORT: 'abc' }],
    ['DATABASE_URL', { DATABASE_URL: 'postgres://127.0.0.1' }],
    // Nothing listens on the discard port: the database cannot be reached.
    ['DATABASE_URL', { DATABASE_URL: 'postgres://gpuhq@127.0.0.1:9/gpuhq' }],
    ['SECRET_KEY', { SECRET_KEY: 'abcd' }],
    ['TEST_CLOCK', { NODE_ENV: 'production', PAYMENT_PROVIDERS: '' }],
  ]
  for (const [variable, env] of cases)
    test(`a wrong ${variable} stops startup with a non-zero exit and one stderr line naming ${variable}`, async () => {
      const dir = freshDataDir()
      dirs.push(dir)
      const service = spawnService({ ...serviceEnv(dir, freePort()), ...env })
      services.push(service)
      const code = await waitExit(service)
      expect(code).not.toBe('timeout')
      expect(code).not.toBe(0)
      const lines = service.stderr().trim().split('\n')
      expect(lines).toHaveLength(1)
      expect(lines[0]).toContain(variable)
      expect(service.stdout()).not.toContain('listening')
    })
})
