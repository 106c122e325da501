import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { MAX_JSON_DEPTH } from '../../src/platform/json-depth'
import { canonicalJson } from '../../src/platform/idempotency'
import { api, enrolAgent, newOwner, type Owner } from '../support/fleet'
import { startTestApp, type TestApp } from '../support/app'

/**
 * Issue 13 (5): no input answers 5xx. Table-driven over the OpenAPI document, so operations added
 * later are covered too: every JSON operation gets a 10,000-deep body at its top level and inside
 * each of its fields, with an Idempotency-Key, and answers 422 `too_deep` with a pointer to where the
 * nesting went past the limit, quickly and without holding the process.
 */

type Schema = Record<string, any>
const DEPTH = 10_000
const deep = (n = DEPTH) => JSON.parse('['.repeat(n) + ']'.repeat(n)) as unknown
const deepText = (n = DEPTH) => '['.repeat(n) + ']'.repeat(n)

let app: TestApp
let owner: Owner
let agentToken: string
let mcpToken: string
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent', SIGNUP_ENABLED: 'true' })
  owner = await newOwner(app, 'deep', 'pro')
  agentToken = (await enrolAgent(app, owner)).agent_token
  mcpToken = ((await (await api(app, owner, 'PUT', '/mcp/access', { json: { enabled: true } })).json()) as { token: string }).token
})
afterAll(() => app.close())

function deref(doc: Schema, s: Schema | undefined): Schema | undefined {
  let out = s
  for (let i = 0; out?.$ref && i < 10; i++)
    out = out.$ref
      .split('/')
      .slice(1)
      .reduce((o: Schema, k: string) => o?.[k], doc)
  return out
}

describe('deeply nested JSON', () => {
  test('every JSON operation answers 422 too_deep with a pointer, at the top level and inside every field', async () => {
    const doc = (await (await app.fetch('/api/v1/openapi.json')).json()) as Schema
    const cases: { name: string; path: string; method: string; headers: Record<string, string>; body: string; pointer: string; oauth: boolean }[] = []
    for (const [path, item] of Object.entries<Schema>(doc.paths))
      for (const [method, op] of Object.entries<Schema>(item)) {
        const schema = deref(doc, op.requestBody?.content?.['application/json']?.schema)
        if (!schema) continue
        const access = op['x-gpuhq-access'] ?? {}
        const auth: Record<string, string> = access.public
          ? {}
          : access.agent
            ? { authorization: `Bearer ${agentToken}` }
            : access.mcp
              ? { authorization: `Bearer ${mcpToken}` }
              : owner.headers
        const headers = { ...auth, 'content-type': 'application/json', 'idempotency-key': `deep-${cases.length}` }
        const url = path.replace(/\{(\w+)\}/g, (_: string, n: string) => (n === 'day' ? '2026-11-22' : '00000000-0000-4000-8000-000000000000'))
        const oauth = op['x-gpuhq-errors'] === 'oauth'
        cases.push({
          name: `${method.toUpperCase()} ${path} (top level)`,
          path: url,
          method,
          headers,
          body: deepText(),
          pointer: `/0`.repeat(MAX_JSON_DEPTH),
          oauth,
        })
        for (const field of Object.keys(schema.properties ?? {}))
          cases.push({
            name: `${method.toUpperCase()} ${path} /${field}`,
            path: url,
            method,
            headers,
            body: `{"${field}":${deepText()}}`,
            pointer: `/${field}${'/0'.repeat(MAX_JSON_DEPTH - 1)}`,
            oauth,
          })
      }
    // The table must reach today's operations, or it proves nothing.
    expect(cases.some((c) => c.name === 'POST /api/v1/commands /params')).toBe(true)
    expect(cases.length).toBeGreaterThan(40)

    const failures: string[] = []
    for (const c of cases) {
      const res = await fetch(app.url + c.path, { method: c.method.toUpperCase(), headers: c.headers, body: c.body })
      const text = await res.text()
      let doc: { code?: string; errors?: { path: string; code: string }[] } = {}
      try {
        doc = JSON.parse(text)
      } catch {}
      // The OAuth endpoints answer the RFCs' error body (docs/conventions.md "Errors"), the pointer in its description.
      const refused = c.oauth
        ? res.status === 400 && /^invalid_/.test(String((doc as { error?: unknown }).error)) && text.includes(`${c.pointer}: too_deep`)
        : res.status === 422 && doc.code === 'validation_failed' && doc.errors?.[0]?.code === 'too_deep' && doc.errors[0].path === c.pointer
      if (!refused) failures.push(`${c.name}: ${res.status} ${text.slice(0, 160)}`)
    }
    expect(failures).toEqual([])
  })

  test('a body exactly at the limit is parsed and validated as usual', async () => {
    const res = await fetch(`${app.url}/api/v1/commands`, {
      method: 'POST',
      headers: { ...owner.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ server_id: '00000000-0000-4000-8000-000000000000', type: 'diagnostics.run', params: { a: deep(MAX_JSON_DEPTH - 2) } }),
    })
    const doc = (await res.json()) as { errors?: { code: string }[] }
    expect(doc.errors?.some((e) => e.code === 'too_deep') ?? false).toBe(false)
  })

  test('brackets inside strings do not count, and keys with / and ~ are escaped in the pointer', async () => {
    const inString = JSON.stringify({ name: '['.repeat(500) })
    const ok = await fetch(`${app.url}/api/v1/me`, { method: 'PATCH', headers: { ...owner.headers, 'content-type': 'application/json' }, body: inString })
    expect(((await ok.json()) as { errors?: { code: string }[] }).errors?.[0]?.code).not.toBe('too_deep')
    const res = await fetch(`${app.url}/api/v1/me`, {
      method: 'PATCH',
      headers: { ...owner.headers, 'content-type': 'application/json' },
      body: `{"a/b~c":${deepText(200)}}`,
    })
    const doc = (await res.json()) as { errors: { path: string; code: string }[] }
    expect(doc.errors[0]).toEqual({ path: `/a~1b~0c${'/0'.repeat(MAX_JSON_DEPTH - 1)}`, code: 'too_deep' })
  })

  test('canonical JSON of any depth never overflows the stack', () => {
    expect(canonicalJson(deep(100_000)).length).toBe(200_000)
    expect(canonicalJson({ b: [1, { d: 2, c: [] }], a: null })).toBe('{"a":null,"b":[1,{"c":[],"d":2}]}')
  })
})

describe('problem documents for any input', () => {
  test('a problem page for any slug answers 200 or 404, never 500', async () => {
    for (const slug of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'not_found'])
      expect({ slug, status: (await app.fetch(`/problems/${slug}`)).status }).toEqual({ slug, status: slug === 'not_found' ? 200 : 404 })
  })

  test("every problem's title names the status it was sent with", async () => {
    const wrongMethod = await app.fetch('/api/v1/me', { method: 'PUT', headers: owner.headers })
    expect(wrongMethod.status).toBe(405)
    expect(((await wrongMethod.json()) as { title: string }).title).toBe('Method not allowed')
    const wrongType = await app.fetch('/api/v1/me', { method: 'PATCH', headers: { ...owner.headers, 'content-type': 'text/plain' }, body: 'x' })
    expect(wrongType.status).toBe(415)
    expect(((await wrongType.json()) as { title: string }).title).toBe('Unsupported media type')
  })
})
