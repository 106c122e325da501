import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { generateSecret } from '../../src/platform/secrets'
import { startTestApp, type TestApp } from '../support/app'

/** One structured JSON line per request, and no secret ever reaches the log. */

const PROBES = '/api/v1/_test/probes'

let app: TestApp
beforeAll(async () => {
  app = await startTestApp()
})
afterAll(() => app.close())

type RequestLine = {
  time: string
  level: string
  msg: string
  method: string
  route: string | null
  status: number
  duration_ms: number
  request_id: string
  tenant_id: string | null
}

const requestLines = (requestId: string) => app.logs.filter((l) => l.msg === 'request' && l.request_id === requestId) as unknown as RequestLine[]

/** The single request line of a response, asserted to be exactly one. */
function lineOf(res: Response): RequestLine {
  const lines = requestLines(res.headers.get('x-request-id')!)
  expect(lines).toHaveLength(1)
  return lines[0]!
}

describe('request log lines', () => {
  test('each request writes exactly one line with method, route template, status, duration, request id and tenant', async () => {
    const created = await app.fetch(PROBES, { method: 'POST', json: { value: 'logged' } })
    const { id } = (await created.json()) as { id: string }
    const read = await app.fetch(`${PROBES}/${id}`)

    expect(lineOf(created)).toMatchObject({ level: 'info', method: 'POST', route: PROBES, status: 201, tenant_id: null })
    const line = lineOf(read)
    expect(line).toMatchObject({ method: 'GET', route: `${PROBES}/:id`, status: 200, request_id: read.headers.get('x-request-id') })
    expect(line.route).not.toContain(id)
    expect(typeof line.duration_ms).toBe('number')
    expect(line.duration_ms).toBeGreaterThanOrEqual(0)
    expect('tenant_id' in line).toBe(true)
    expect(Number.isNaN(Date.parse(line.time))).toBe(false)
  })

  test('refused and failed requests are logged with the status they answered', async () => {
    const cases = [
      await app.fetch('/healthz', { method: 'DELETE' }),
      await app.fetch(PROBES, { method: 'POST', json: {} }),
      await app.fetch(PROBES, { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } }),
      await app.fetch(`${PROBES}/${crypto.randomUUID()}`),
      await app.fetch('/no/such/route'),
    ]
    expect(cases.map((r) => lineOf(r).status)).toEqual([405, 422, 415, 404, 404])
    expect(lineOf(cases[3]!).route).toBe(`${PROBES}/:id`)
  })

  test('every line the service writes is one JSON object with a time, a level and a message', async () => {
    await app.fetch('/healthz')
    expect(app.rawLogs.length).toBeGreaterThan(0)
    for (const raw of app.rawLogs) {
      expect(raw).not.toContain('\n')
      const parsed = JSON.parse(raw)
      expect(parsed).toMatchObject({ time: expect.any(String), level: expect.any(String), msg: expect.any(String) })
    }
  })

  test('concurrent requests each get their own line', async () => {
    const responses = await Promise.all(Array.from({ length: 10 }, (_, i) => app.fetch(PROBES, { method: 'POST', json: { value: `c${i}` } })))
    for (const res of responses) expect(lineOf(res).status).toBe(201)
  })
})

describe('secrets never reach the log', () => {
  test('a token sent in the body, a header, the query string and the path does not appear in the log', async () => {
    const secret = generateSecret('gpuhq_pat_')
    expect(secret).toMatch(/^gpuhq_pat_[0-9A-Za-z]{46}$/)
    const before = app.rawLogs.length

    const created = await app.fetch(PROBES, {
      method: 'POST',
      json: { value: secret },
      headers: { authorization: `Bearer ${secret}`, 'x-api-key': secret, 'idempotency-key': secret },
    })
    expect(created.status).toBe(201)
    const { id } = (await created.json()) as { id: string }
    const responses = [
      created,
      await app.fetch(`${PROBES}/${id}?token=${secret}&note=${encodeURIComponent(`Bearer ${secret}`)}`, {
        headers: { cookie: `__Host-gpuhq_session=${secret}` },
      }),
      await app.fetch(`/no/such/${secret}`),
      await app.fetch(PROBES, { method: 'POST', json: { value: secret, extra: secret } }),
      await app.fetch(PROBES, { method: 'POST', body: `{"value":"${secret}"`, headers: { 'content-type': 'application/json' } }),
    ]
    expect(responses.map((r) => r.status)).toEqual([201, 200, 404, 422, 422])
    for (const res of responses) lineOf(res)

    const written = app.rawLogs.slice(before).join('\n')
    expect(written.length).toBeGreaterThan(0)
    // Neither the whole token nor its random part, in any field.
    expect(written).not.toContain(secret)
    expect(written).not.toContain(secret.slice('gpuhq_pat_'.length + 4))
  })

  test('an unexpected failure logs its error without the secret the request carried', async () => {
    const broken = await startTestApp()
    const secret = generateSecret('gpuhq_pat_')
    await broken.deps.database.close()
    const res = await broken.fetch(PROBES, { method: 'POST', json: { value: secret }, headers: { authorization: `Bearer ${secret}` } })
    expect(res.status).toBe(500)
    expect(broken.logs.some((l) => l.level === 'error')).toBe(true)
    expect(broken.rawLogs.join('\n')).not.toContain(secret.slice('gpuhq_pat_'.length + 4))
    await broken.close().catch(() => {})
  })
})
