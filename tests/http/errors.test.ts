import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { Elysia, t } from 'elysia'
import { PROBLEM_CODE_LIST } from '../../src/platform/problem'
import { platform } from '../../src/platform/http'
import { PageQuery } from '../../src/platform/schemas'
import { startServer, type RunningServer } from '../../src/server'
import type { App } from '../../src/app'
import { startTestApp, type TestApp } from '../support/app'
import { expectProblem, SPEC_PROBLEM_CODES, UUID } from '../support/problem'

/** Every error the service answers is an RFC 9457 problem document (docs/conventions.md "Errors: problem documents"). */

const PROBES = '/api/v1/_test/probes'
const MiB = 1024 * 1024

let app: TestApp
beforeAll(async () => {
  app = await startTestApp()
})
afterAll(() => app.close())

const post = (body: Bun.BodyInit, contentType?: string) =>
  app.fetch(PROBES, { method: 'POST', body, headers: contentType ? { 'content-type': contentType } : {} })

describe('problem documents', () => {
  test('the service knows exactly the closed set of problem codes the specification lists', () => {
    expect([...PROBLEM_CODE_LIST].sort()).toEqual([...SPEC_PROBLEM_CODES].sort())
  })

  test('an unknown route answers 404 not_found', async () => {
    const doc = await expectProblem(await app.fetch('/no/such/route'), 404, 'not_found')
    expect(doc.instance).toBe('/no/such/route')
  })

  test('a method the route does not have answers 405 with an Allow header listing the real methods', async () => {
    const del = await app.fetch('/healthz', { method: 'DELETE' })
    expect(del.headers.get('allow')).toBe('GET, HEAD')
    await expectProblem(del, 405, 'not_found')

    const get = await app.fetch(PROBES)
    expect(get.headers.get('allow')).toBe('POST')
    await expectProblem(get, 405, 'not_found')

    const put = await app.fetch(`${PROBES}/${crypto.randomUUID()}`, { method: 'PUT', json: { value: 'x' } })
    expect(put.headers.get('allow')!.split(', ').sort()).toEqual(['GET', 'HEAD', 'PATCH'])
    await expectProblem(put, 405, 'not_found')
  })

  test('a body over 1 MiB announced by Content-Length answers 413 payload_too_large', async () => {
    const body = JSON.stringify({ value: 'a'.repeat(MiB) })
    await expectProblem(await post(body, 'application/json'), 413, 'payload_too_large')
  })

  test('a streamed body without Content-Length that grows past 1 MiB answers 413 payload_too_large', async () => {
    const chunk = new Uint8Array(64 * 1024).fill(0x61)
    let sent = 0
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent > MiB + chunk.length) return controller.close()
        controller.enqueue(chunk)
        sent += chunk.length
      },
    })
    const res = await fetch(app.url + PROBES, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit)
    await expectProblem(res, 413, 'payload_too_large')
  })

  test('a body over 64 MiB gets the same 413 problem document, not a bare 413 from Bun', async () => {
    // Bun's maxRequestBodySize used to be 64 MiB, past which Bun itself answered 413 with no body.
    const huge = new Uint8Array(65 * MiB).fill(0x61)
    const res = await post(huge, 'application/json')
    expect(res.headers.get('content-type')).toBe('application/problem+json')
    await expectProblem(res, 413, 'payload_too_large')
  })

  test('a body just under the limit is read and validated, not refused as too large', async () => {
    const body = JSON.stringify({ value: 'a'.repeat(MiB - 64) })
    const doc = await expectProblem(await post(body, 'application/json'), 422, 'validation_failed')
    expect(doc.errors).toEqual([{ path: '/value', code: 'too_long' }])
  })

  test('text, form and multipart bodies sent to a JSON operation answer 415 validation_failed', async () => {
    const form = new FormData()
    form.set('value', 'x')
    const cases: [Bun.BodyInit, string | undefined][] = [
      ['{"value":"x"}', 'text/plain'],
      ['value=x', 'application/x-www-form-urlencoded'],
      [form, undefined],
    ]
    for (const [body, type] of cases) {
      const res = await post(body, type)
      expect(res.headers.get('accept-post')).toBe('application/json')
      const doc = await expectProblem(res, 415, 'validation_failed')
      expect(doc.errors).toEqual([{ path: '', code: 'unsupported_media_type' }])
    }
    const rows = (await app.deps.db.get(sql`SELECT count(*) AS n FROM test_probes`)) as { n: number }
    expect(rows.n).toBe(0)
  })

  test('malformed JSON answers 422 invalid_json at the document root', async () => {
    for (const body of ['{"value":', '{value: "x"}', "{'value':'x'}", '{"value":"x"} trailing']) {
      const doc = await expectProblem(await post(body, 'application/json'), 422, 'validation_failed')
      expect(doc.errors).toEqual([{ path: '', code: 'invalid_json' }])
    }
  })

  test('a JSON body that is not valid UTF-8 answers 422 invalid_json at the document root', async () => {
    const bytes = new Uint8Array([...new TextEncoder().encode('{"value":"'), 0xff, 0xfe, 0xc3, ...new TextEncoder().encode('"}')])
    const doc = await expectProblem(await post(bytes, 'application/json'), 422, 'validation_failed')
    expect(doc.errors).toEqual([{ path: '', code: 'invalid_json' }])
  })
})

describe('validation errors point at the offending field', () => {
  const invalid = async (json: unknown) => (await expectProblem(await app.fetch(PROBES, { method: 'POST', json }), 422, 'validation_failed')).errors

  test('a missing required field is reported as required at its pointer', async () => {
    expect(await invalid({})).toEqual([{ path: '/value', code: 'required' }])
  })

  test('a field the operation does not know is reported as unknown_field', async () => {
    expect(await invalid({ value: 'x', colour: 'red' })).toEqual([{ path: '/colour', code: 'unknown_field' }])
  })

  test('a field of the wrong type is reported at its pointer', async () => {
    const errors = await invalid({ value: 42 })
    expect(errors).toHaveLength(1)
    expect(errors![0]!.path).toBe('/value')
  })

  test('a string over its maximum length is reported as too_long and one that is empty as too_short', async () => {
    expect(await invalid({ value: 'x'.repeat(1025) })).toEqual([{ path: '/value', code: 'too_long' }])
    expect(await invalid({ value: '' })).toEqual([{ path: '/value', code: 'too_short' }])
  })

  test('a body that is not an object is reported at the document root', async () => {
    expect((await invalid([]))![0]!.path).toBe('')
    expect((await invalid('x'))![0]!.path).toBe('')
  })

  test('a path parameter that is not a UUID is reported at its pointer', async () => {
    const get = await expectProblem(await app.fetch(`${PROBES}/not-a-uuid`), 422, 'validation_failed')
    expect(get.errors).toEqual([{ path: '/id', code: 'format' }])
    const patch = await app.fetch(`${PROBES}/12345`, { method: 'PATCH', json: { value: 'x' } })
    expect((await expectProblem(patch, 422, 'validation_failed')).errors).toEqual([{ path: '/id', code: 'format' }])
  })

  test('a problem document lists at most 100 field errors', async () => {
    const many: Record<string, number> = {}
    for (let i = 0; i < 150; i++) many[`field_${i}`] = i
    const errors = await invalid(many)
    expect(errors).toHaveLength(100)
    expect(new Set(errors!.map((e) => e.path)).size).toBe(100)
    expect(errors).toContainEqual({ path: '/value', code: 'required' })
  })
})

describe('validation errors on query parameters', () => {
  // No operation of the app takes a query string yet; this mounts the shared list query (limit,
  // cursor) on a route behind the real platform plugin and the real server wrapper.
  let server: RunningServer
  beforeAll(() => {
    const list = new Elysia()
      .use(platform(app.deps, { allowedMethods: () => ['GET', 'HEAD'], checkAccess: async () => {} }))
      .get('/list', ({ query }) => query, { query: t.Object(PageQuery) })
    server = startServer(list as unknown as App, app.deps, { port: 0, hostname: '127.0.0.1' })
  })
  afterAll(() => server.stop())

  const query = async (qs: string) => {
    const res = await fetch(`${server.url}/list?${qs}`)
    return (await expectProblem(res, 422, 'validation_failed')).errors
  }

  test('a valid query passes and the page size defaults to 50', async () => {
    const res = await fetch(`${server.url}/list?cursor=abc`)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ cursor: 'abc', limit: 50 })
  })

  test('an out-of-range page size is reported at /limit', async () => {
    expect(await query('limit=0')).toEqual([{ path: '/limit', code: 'too_small' }])
    expect(await query('limit=201')).toEqual([{ path: '/limit', code: 'too_large' }])
  })

  test('a page size that is not a number is reported at /limit', async () => {
    const errors = await query('limit=many')
    expect(errors!.map((e) => e.path)).toEqual(['/limit'])
  })

  test('an empty or over-long cursor is reported at /cursor', async () => {
    expect(await query('cursor=')).toEqual([{ path: '/cursor', code: 'too_short' }])
    expect(await query(`cursor=${'c'.repeat(513)}`)).toEqual([{ path: '/cursor', code: 'too_long' }])
  })
})

describe('unexpected failures', () => {
  test('an unexpected failure answers 500 temporarily_unavailable with a request id and no internals', async () => {
    const broken = await startTestApp()
    await broken.deps.database.close()
    const res = await broken.fetch(PROBES, { method: 'POST', json: { value: 'x' } })
    const body = await res.clone().text()
    const doc = await expectProblem(res, 500, 'temporarily_unavailable')
    expect(doc.request_id).toMatch(UUID)
    for (const leak of [/stack/i, /\bat .*\(/, /\.ts\b/, /sqlite/i, /\bINSERT\b/i, /\bSELECT\b/i, /closed database/i, /RangeError/])
      expect(body).not.toMatch(leak)
    // The failure is logged with the same request id, so an operator can find it.
    expect(broken.logs.some((l) => l.level === 'error' && l.request_id === doc.request_id)).toBe(true)
    await broken.close().catch(() => {})
  })
})

describe('request ids and problem pages', () => {
  test('every response carries its own X-Request-Id, including 304 and 405', async () => {
    const created = await app.fetch(PROBES, { method: 'POST', json: { value: 'ids' } })
    const { id } = (await created.json()) as { id: string }
    const responses = [
      created,
      await app.fetch('/healthz'),
      await app.fetch(`${PROBES}/${id}`, { headers: { 'if-none-match': '"1"' } }),
      await app.fetch('/healthz', { method: 'DELETE' }),
      await app.fetch('/missing'),
      await post('x', 'text/plain'),
      await app.fetch(PROBES, { method: 'POST', json: {} }),
      await app.fetch('/problems/not_found'),
    ]
    expect(responses.map((r) => r.status)).toEqual([201, 200, 304, 405, 404, 415, 422, 200])
    const ids = responses.map((r) => r.headers.get('x-request-id'))
    for (const rid of ids) expect(rid).toMatch(UUID)
    expect(new Set(ids).size).toBe(ids.length)
  })

  test('every problem code has a human page at its type URL', async () => {
    for (const code of SPEC_PROBLEM_CODES) {
      const res = await app.fetch(`/problems/${code}`)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toStartWith('text/html')
      expect(await res.text()).toContain(code)
    }
  })

  test('the problem index links every problem page', async () => {
    const res = await app.fetch('/problems')
    expect(res.status).toBe(200)
    const html = await res.text()
    for (const code of SPEC_PROBLEM_CODES) expect(html).toContain(`/problems/${code}`)
  })

  test('an unknown problem code has no page', async () => {
    await expectProblem(await app.fetch('/problems/no_such_code'), 404, 'not_found')
  })
})
