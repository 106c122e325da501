import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ALL_SCOPES, type AccessSpec } from '../../src/platform/access'
import { call, insertServer, mintPat, newTenant, setPlan, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'

/**
 * Issue 13 (2): a server_allowlist holds wherever a server id arrives. Table-driven over the OpenAPI
 * document, so a route added later is swept without being named here: every operation that takes a
 * server id in its path, query or body (at any depth) is called by a token allowlisted to S1 with
 * S2's id (same tenant, outside the allowlist) and must answer 404 like a foreign id; every read
 * such a token may make must not mention S2 at all.
 */

type Operation = { method: string; path: string; spec: AccessSpec; op: Record<string, any> }
type Schema = Record<string, any>
const SERVER_ID_FIELDS = new Set(['server_id', 'server_ids'])

let app: TestApp
let owner: Member
let s1: string
let s2: string
let token: string
let operations: Operation[]

/** Resolves a local `$ref` of the document. */
function deref(doc: Schema, schema: Schema | undefined): Schema | undefined {
  let s = schema
  for (let i = 0; s?.$ref && i < 10; i++)
    s = s.$ref
      .split('/')
      .slice(1)
      .reduce((o: Schema, k: string) => o?.[k], doc)
  return s
}

/**
 * Bodies that carry `foreign` in one server-id field each, found anywhere in the schema (object
 * properties, array items, unions), the rest of the body left empty: the allowlist is checked before
 * validation, so no other field matters.
 */
function bodiesWith(doc: Schema, schema: Schema | undefined, foreign: string, depth = 0): unknown[] {
  const s = deref(doc, schema)
  if (!s || depth > 8) return []
  const out: unknown[] = []
  for (const alt of [...(s.anyOf ?? []), ...(s.oneOf ?? []), ...(s.allOf ?? [])]) out.push(...bodiesWith(doc, alt, foreign, depth + 1))
  if (s.type === 'array' || s.items) for (const inner of bodiesWith(doc, s.items, foreign, depth + 1)) out.push([inner])
  for (const [name, prop] of Object.entries<Schema>(s.properties ?? {})) {
    if (SERVER_ID_FIELDS.has(name)) out.push({ [name]: name === 'server_ids' ? [foreign] : foreign })
    for (const inner of bodiesWith(doc, prop, foreign, depth + 1)) out.push({ [name]: inner })
  }
  return out
}

type Probe = { key: string; where: string; method: string; path: string; json?: unknown }

function probesFor(doc: Schema, o: Operation, foreign: string): Probe[] {
  const key = `${o.method} ${o.path}`
  const spec = o.spec as Extract<AccessSpec, { role: string }>
  const params: Schema[] = (o.op.parameters ?? []).map((p: Schema) => deref(doc, p))
  const pathParams = params.filter((p) => p.in === 'path').map((p) => p.name as string)
  const serverParams = pathParams.filter((n) => SERVER_ID_FIELDS.has(n) || n === spec.serverParam)
  const fill = (name: string) => (serverParams.includes(name) ? foreign : '00000000-0000-4000-8000-000000000000')
  const url = o.path.replace(/^\/api\/v1/, '').replace(/\{(\w+)\}/g, (_, n: string) => (n === 'day' ? '2026-11-22' : fill(n)))
  const probes: Probe[] = []
  if (serverParams.length) probes.push({ key, where: `path :${serverParams.join(', :')}`, method: o.method, path: url })
  for (const q of params.filter((p) => p.in === 'query' && SERVER_ID_FIELDS.has(p.name)))
    probes.push({ key, where: `query ${q.name}`, method: o.method, path: `${url}?${q.name}=${foreign}` })
  const bodySchema = o.op.requestBody?.content?.['application/json']?.schema
  for (const json of bodiesWith(doc, bodySchema, foreign)) probes.push({ key, where: `body ${JSON.stringify(json)}`, method: o.method, path: url, json })
  return probes
}

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newTenant(app, 'sweep')
  await setPlan(app, owner.tenantId, 'pro')
  s1 = await insertServer(app, owner.tenantId, 'allowed rig')
  s2 = await insertServer(app, owner.tenantId, 'other rig')
  // S2 leaves traces a careless read could show: a command and an event of its own.
  const made = await call(app, 'POST', '/commands', owner, { json: { server_id: s2, type: 'diagnostics.run', params: {} } })
  expect(made.status).toBe(201)
  token = (await mintPat(app, owner, { name: 'allowlisted', scopes: ALL_SCOPES, server_allowlist: [s1] })).token
  const doc = (await (await app.fetch('/api/v1/openapi.json')).json()) as Schema
  operations = []
  for (const [path, item] of Object.entries<Schema>(doc.paths))
    for (const [method, op] of Object.entries<Schema>(item)) {
      const spec = op['x-gpuhq-access'] as AccessSpec | undefined
      if (!spec || 'public' in spec || 'agent' in spec || (spec as { cookieOnly?: boolean }).cookieOnly) continue
      operations.push({ method: method.toUpperCase(), path, spec, op })
    }
  ;(globalThis as { __sweepDoc?: Schema }).__sweepDoc = doc
})
afterAll(() => app.close())

describe('a token with a server_allowlist', () => {
  test('every operation that takes a server id answers for one outside the allowlist as for one that does not exist: 404 in a path or body, nothing in a query filter', async () => {
    const doc = (globalThis as { __sweepDoc?: Schema }).__sweepDoc!
    const probes = operations.flatMap((o) => probesFor(doc, o, s2))
    // The sweep must reach at least today's places, or it proves nothing.
    const swept = new Set(probes.map((p) => `${p.key} ${p.where.split(' ')[0]}`))
    for (const known of [
      'GET /api/v1/servers/{id} path',
      'GET /api/v1/servers/{id}/metrics path',
      'POST /api/v1/commands body',
      'GET /api/v1/commands query',
      'POST /api/v1/tokens/init body',
      'PATCH /api/v1/servers/{id} path',
    ])
      expect(swept).toContain(known)
    const failures: string[] = []
    for (const p of probes) {
      const res = await call(app, p.method, p.path, token, { json: p.json })
      const body = await res.text()
      if (p.where.startsWith('query')) {
        // A filter outside the allowlist matches nothing: the answer is the one for an id that does
        // not exist (no oracle telling which ids are the tenant's servers), and never shows S2.
        const nobody = await call(app, p.method, p.path.replace(s2, '0190f000-0000-7000-8000-000000000000'), token, { json: p.json })
        const nobodyBody = await nobody.text()
        if (
          res.status !== nobody.status ||
          body.toLowerCase().includes(s2) ||
          body.replace(/"request_id":"[^"]*"|"instance":"[^"]*"/g, '') !== nobodyBody.replace(/"request_id":"[^"]*"|"instance":"[^"]*"/g, '')
        )
          failures.push(`${p.key} (${p.where}): ${res.status} ${body.slice(0, 200)} vs ${nobody.status} ${nobodyBody.slice(0, 200)}`)
      } else if (res.status !== 404 || !body.includes('"not_found"')) failures.push(`${p.key} (${p.where}): ${res.status} ${body.slice(0, 200)}`)
    }
    expect(failures).toEqual([])
  })

  test('the same operations still serve a server inside the allowlist', async () => {
    expect((await call(app, 'GET', `/servers/${s1}`, token)).status).toBe(200)
    expect((await call(app, 'GET', `/commands?server_id=${s1}`, token)).status).toBe(200)
    const bound = await call(app, 'POST', '/tokens/init', token, { json: { server_id: s1 } })
    expect(bound.status).toBe(201)
  })

  test('cannot mint an unbound init token, which would enrol a server no allowlist names', async () => {
    const res = await call(app, 'POST', '/tokens/init', token, { json: {} })
    expect(res.status).toBe(403)
    expect(((await res.json()) as { code: string }).code).toBe('forbidden')
  })

  test('is refused tenant-wide money and audit reads rather than shown other servers', async () => {
    for (const path of ['/billing', '/billing/ledger', '/billing/charges/2026-11-22.csv', '/audit']) {
      const res = await call(app, 'GET', path, token)
      expect({ path, status: res.status }).toEqual({ path, status: 403 })
    }
  })

  test('no read it may make mentions a server outside its allowlist', async () => {
    const leaks: string[] = []
    let read = 0
    for (const o of operations.filter((x) => x.method === 'GET' && !/\{/.test(x.path.replace('{day}', '')))) {
      const res = await call(app, 'GET', o.path.replace(/^\/api\/v1/, '').replace('{day}', '2026-11-22'), token)
      const text = await readAnswer(res)
      if (res.status === 200) read++
      if (text.toLowerCase().includes(s2)) leaks.push(`${o.path}: ${text.slice(0, 200)}`)
    }
    expect(read).toBeGreaterThan(5)
    expect(leaks).toEqual([])
  })
})

/**
 * A read's text. A live event stream never ends by itself: it is read up to its first event
 * (stream.open, which every stream starts with), then dropped. tests/events/ follow it further.
 */
async function readAnswer(res: Response): Promise<string> {
  if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) return res.text()
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  let text = ''
  while (!/event: stream\.open\n[\s\S]*?\n\n/.test(text)) {
    const { done, value } = await reader.read()
    if (done) break
    text += decoder.decode(value, { stream: true })
  }
  await reader.cancel()
  return text
}
