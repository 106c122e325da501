import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../support/app'
import { closeAllAgents } from '../support/fleet'
import {
  concretePath,
  credentialsFor,
  populatedTenant,
  problemFailure,
  sweptOperations,
  validValue,
  type Operation,
  type Populated,
  type Schema,
} from './sweep'

/**
 * Issue 34 (8): no query value reaches a 500. Table-driven over the served OpenAPI document: every
 * query parameter of every operation gets malformed values (wrong types, huge and negative numbers,
 * NaN, 1e308, empty, very long, unknown enum values, repeated, too many items), the operation's
 * other required parameters valid, from a PAT of a populated tenant. Every answer is below 500,
 * and every 4xx a problem document; a 422 names the parameter (or the query as a whole).
 */

let app: TestApp
let tenant: Populated
let doc: Schema
let operations: Operation[]

beforeAll(async () => {
  // No request-rate limit: the sweep sends thousands of requests on the (frozen) test clock.
  app = await startTestApp({ LOG_LEVEL: 'error', RATE_LIMIT_TOKEN_PER_MINUTE: '0', RATE_LIMIT_TENANT_WRITES_PER_MINUTE: '0' })
  tenant = await populatedTenant(app)
  ;({ doc, operations } = await sweptOperations(app))
})
afterAll(async () => {
  await closeAllAgents()
  await app.close()
})

/** Values no query parameter of ours should take, whatever its type. */
const MALFORMED = [
  '',
  ' ',
  'abc',
  '-1',
  '0',
  '-0',
  '1.5',
  '1e308',
  '-1e308',
  '1e-308',
  'NaN',
  'Infinity',
  '-Infinity',
  '0x10',
  '9'.repeat(400),
  '9007199254740993',
  // Long, yet inside what Bun reads of a request line (16 KiB; past it Bun answers a bare 431, below).
  'x'.repeat(8_000),
  'not_a_known_value',
  'true',
  'null',
  '[]',
  '{}',
  '00000000-0000-4000-8000-000000000000',
  'ZZZZZZZZ-0000-4000-8000-000000000000',
  '2026-13-45',
  '2026-02-30T25:61:00Z',
  '💥\u202e',
  'a.b',
  'gpu.temp',
]

type Probe = { op: string; param: string; value: string; query: string }

/** The operation's required query parameters, valid, as search params. */
function baseQuery(o: Operation, without: string): URLSearchParams {
  const q = new URLSearchParams()
  for (const p of o.params)
    if (p.in === 'query' && p.required && p.name !== without) {
      const v = validValue(doc, p.schema, p.name, { server_id: tenant.serverId, group_id: tenant.groupId })
      for (const item of Array.isArray(v) ? v : [v]) q.append(p.name, String(item))
    }
  return q
}

function probesOf(o: Operation): Probe[] {
  const out: Probe[] = []
  const op = `${o.method} ${o.path}`
  for (const p of o.params.filter((x) => x.in === 'query')) {
    const name = p.name as string
    const valid = String(validValue(doc, p.schema, name, { server_id: tenant.serverId, group_id: tenant.groupId }) ?? 'x')
    const qs = (values: string[]) => {
      const q = baseQuery(o, name)
      for (const v of values) q.append(name, v)
      return q.toString()
    }
    for (const v of MALFORMED) out.push({ op, param: name, value: JSON.stringify(v.slice(0, 40)), query: qs([v]) })
    // Repeated: two different values, a valid one then a bad one, the bad one then a valid one, and far more than any maxItems.
    out.push({ op, param: name, value: 'repeated valid values', query: qs([valid, valid]) })
    out.push({ op, param: name, value: 'valid then bad', query: qs([valid, 'gpu.temp']) })
    out.push({ op, param: name, value: 'bad then valid', query: qs(['1e308', valid]) })
    out.push({ op, param: name, value: '25 repeats', query: qs(Array.from({ length: 25 }, () => valid)) })
    out.push({ op, param: name, value: '200 repeats', query: qs(Array.from({ length: 200 }, (_, i) => `${valid}${i % 2 ? '' : 'x'}`)) })
    // Bracketed and encoded forms some clients send.
    out.push({ op, param: `${name}[]`, value: 'bracketed', query: `${baseQuery(o, name)}&${encodeURIComponent(`${name}[]`)}=${encodeURIComponent(valid)}` })
    out.push({ op, param: name, value: 'broken percent-encoding', query: `${baseQuery(o, name)}&${name}=%E0%A4%A` })
  }
  return out
}

describe('every query parameter of every operation in the OpenAPI document', () => {
  test('answers malformed values with a problem document, never a 5xx', async () => {
    const probes = operations.flatMap((o) => probesOf(o).map((p) => ({ o, p })))
    // The sweep must reach today's query parameters, or it proves nothing.
    const swept = new Set(probes.map(({ p }) => `${p.op} ${p.param}`))
    for (const known of [
      'GET /api/v1/servers/{id}/metrics metric',
      'GET /api/v1/servers/{id}/metrics gpu_index',
      'GET /api/v1/servers limit',
      'GET /api/v1/billing/ledger range',
    ])
      expect(swept).toContain(known)
    expect(probes.length).toBeGreaterThan(2000)

    const failures: string[] = []
    const statuses = new Map<number, number>()
    for (const { o, p } of probes) {
      const res = await app.fetch(`${concretePath(o, tenant)}?${p.query}`, {
        method: o.method,
        headers: { ...credentialsFor(o, tenant), ...(o.method === 'GET' ? {} : { 'content-type': 'application/json' }) },
        body: o.method === 'GET' || o.method === 'DELETE' ? undefined : '{}',
      })
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
      const status = res.status
      const text = status === 422 ? await res.clone().text() : ''
      const failure = await problemFailure(res)
      if (failure) failures.push(`${p.op} ${p.param}=${p.value}: ${failure}`)
      else if (status === 422) {
        // The pointer names the parameter (or the query as a whole, or another parameter the value conflicts with).
        const pointers = (JSON.parse(text).errors as { path: string }[]).map((e) => e.path)
        const names = new Set([
          ...o.params.filter((x) => x.in === 'query' || x.in === 'path').map((x) => x.name as string),
          ...new URLSearchParams(p.query).keys(),
        ])
        for (const ptr of pointers)
          if (ptr !== '' && !names.has(decodeURIComponent(ptr.split('/')[1]!.replace(/~1/g, '/').replace(/~0/g, '~'))))
            failures.push(`${p.op} ${p.param}=${p.value}: pointer ${ptr} names no parameter`)
      }
    }
    if (process.env.SWEEP_DUMP) await Bun.write(process.env.SWEEP_DUMP, failures.join('\n'))
    expect(failures).toEqual([])
    // Most of them are refused (the rest are values the parameter accepts, e.g. "0" for an offset).
    expect(statuses.get(422) ?? 0).toBeGreaterThan(probes.length / 3)
  }, 600_000)
})

describe('a query value that fails', () => {
  const errorsOf = async (query: string) => {
    const res = await app.fetch(`/api/v1/servers/${tenant.serverId}/metrics?${query}`, { headers: { authorization: `Bearer ${tenant.token}` } })
    const text = await res.text()
    expect({ query, status: res.status, type: res.headers.get('content-type') }).toEqual({ query, status: 422, type: 'application/problem+json' })
    return JSON.parse(text).errors as { path: string; code: string }[]
  }

  test('an item of a query array points at the item (GET /servers/{id}/metrics?metric=gpu.temp was a 500)', async () => {
    expect(await errorsOf('metric=gpu.temp')).toEqual([{ path: '/metric/0', code: 'pattern' }])
    expect(await errorsOf('metric=temperature_c&metric=B')).toEqual([{ path: '/metric/1', code: 'pattern' }])
    expect(await errorsOf(Array.from({ length: 21 }, (_, i) => `metric=m${i}_x`).join('&'))).toEqual([{ path: '/metric', code: 'too_many_items' }])
  })

  test('a coerced number points at its parameter', async () => {
    expect(await errorsOf('gpu_index=1e308')).toEqual([{ path: '/gpu_index', code: 'too_large' }])
    expect(await errorsOf('gpu_index=-1')).toEqual([{ path: '/gpu_index', code: 'too_small' }])
    expect((await errorsOf('gpu_index=NaN'))[0]!.path).toBe('/gpu_index')
    expect(await errorsOf('resolution=2m')).toEqual([{ path: '/resolution', code: 'invalid_value' }])
  })

  test("a request line longer than Bun reads (16 KiB) gets Bun's bare 431, never a 5xx", async () => {
    const res = await app.fetch(`/api/v1/servers?q=${'x'.repeat(20_000)}`, { headers: { authorization: `Bearer ${tenant.token}` } })
    expect(res.status).toBe(431)
  })
})
