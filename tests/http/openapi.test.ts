import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import SwaggerParser from '@apidevtools/swagger-parser'
import { createApp } from '../../src/app'
import { startTestApp, type TestApp } from '../support/app'

/**
 * The OpenAPI document is generated from the same TypeBox schemas that validate requests; these
 * tests hold it to the route table, so no route goes undocumented and every one documents its errors.
 */

// The document itself, and the Swagger UI page with its files (src/modules/system/docs.routes.ts).
const isDocRoute = (key: string) => key === 'GET /api/v1/openapi.json' || /^GET \/api\/v1\/docs(\/[^/]+)?$/.test(key)
const PROBLEM_REF = '#/components/schemas/Problem'
// The OAuth endpoints answer errors as the OAuth RFCs say (docs/conventions.md "Errors"): marked x-gpuhq-errors: oauth.
const OAUTH_REF = '#/components/schemas/OAuthError'

type Operation = {
  operationId?: string
  parameters?: { name: string; in: string; required?: boolean }[]
  requestBody?: { content: Record<string, { schema?: unknown }> }
  responses: Record<string, { description: string; content?: Record<string, { schema?: { $ref?: string } }> }>
}
type Doc = { openapi: string; paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> } }

let app: TestApp
let doc: Doc
let routes: { method: string; path: string; hasBody: boolean }[]

beforeAll(async () => {
  app = await startTestApp()
  const res = await app.fetch('/api/v1/openapi.json')
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toStartWith('application/json')
  doc = (await res.json()) as Doc
  // The same route table the server answers from, built as tests/support/app.ts builds the app.
  routes = createApp(app.deps, app.runner)
    .routes.filter((r) => r.method !== 'ALL' && r.method !== 'WS' && !isDocRoute(`${r.method} ${r.path}`))
    .map((r) => ({ method: r.method, path: r.path, hasBody: !!(r.hooks as { body?: unknown } | undefined)?.body }))
})
afterAll(() => app.close())

const toOpenApiPath = (path: string) => path.replace(/:([^/.]+)/g, '{$1}')
const operationOf = (r: { method: string; path: string }) => doc.paths[toOpenApiPath(r.path)]?.[r.method.toLowerCase()]

describe('the OpenAPI document', () => {
  test('is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toStartWith('3.1')
    // swagger-parser checks 3.1 documents against the OpenAPI 3.1 schema; the tests below add the
    // semantic checks it leaves out for 3.x (path parameters, unique operationIds).
    const complaint = await SwaggerParser.validate(structuredClone(doc) as never).then(
      () => '',
      (e: Error) => e.message,
    )
    expect(complaint).toBe('')
  })

  test('documents every route of the app, and no route the app does not have', () => {
    expect(routes.length).toBeGreaterThan(5)
    const missing = routes.filter((r) => !operationOf(r)).map((r) => `${r.method} ${r.path}`)
    expect(missing).toEqual([])

    const known = new Set(routes.map((r) => `${r.method.toLowerCase()} ${toOpenApiPath(r.path)}`))
    const extra: string[] = []
    for (const [path, ops] of Object.entries(doc.paths))
      for (const method of Object.keys(ops)) if (!known.has(`${method} ${path}`)) extra.push(`${method} ${path}`)
    expect(extra).toEqual([])
  })

  test('gives every operation a success response and at least one problem response', () => {
    const bad: string[] = []
    for (const r of routes) {
      const responses = operationOf(r)!.responses ?? {}
      const statuses = Object.keys(responses)
      // 101 Switching Protocols is the success of the agent's WebSocket upgrade.
      if (!statuses.some((s) => /^(2\d\d|101)$/.test(s))) bad.push(`${r.method} ${r.path}: no 2xx`)
      const problems = statuses.filter((s) => /^[45]\d\d$/.test(s))
      if (problems.length === 0) bad.push(`${r.method} ${r.path}: no 4xx/5xx`)
      const oauth = (operationOf(r) as { 'x-gpuhq-errors'?: string })['x-gpuhq-errors'] === 'oauth'
      for (const s of problems) {
        const content = responses[s]!.content ?? {}
        const schemas = Object.values(content).map((m) => m.schema?.$ref)
        const oauthError = oauth && (schemas.includes(OAUTH_REF) || 'text/html' in content)
        if (!schemas.includes(PROBLEM_REF) && !oauthError) bad.push(`${r.method} ${r.path}: ${s} is not a problem document`)
      }
    }
    expect(bad).toEqual([])
  })

  test('declares the problem document with the closed set of codes', () => {
    const problem = doc.components.schemas.Problem as { required: string[]; properties: { code: { enum: string[] } } }
    expect(problem.required).toEqual(expect.arrayContaining(['type', 'title', 'status', 'code']))
    expect(problem.properties.code.enum).toContain('validation_failed')
    expect(problem.properties.code.enum).toContain('temporarily_unavailable')
  })

  test('declares every path parameter of every route', () => {
    const bad: string[] = []
    for (const r of routes) {
      const declared = (operationOf(r)!.parameters ?? []).filter((p) => p.in === 'path')
      const names = [...r.path.matchAll(/:([^/.]+)/g)].map((m) => m[1]!)
      for (const name of names) if (!declared.some((p) => p.name === name && p.required)) bad.push(`${r.method} ${r.path}: {${name}}`)
      if (declared.length !== names.length) bad.push(`${r.method} ${r.path}: ${declared.length} path parameters declared`)
    }
    expect(bad).toEqual([])
  })

  test('documents the JSON schema of every request body', () => {
    const bad = routes
      .filter((r) => r.hasBody)
      .filter((r) => !operationOf(r)!.requestBody?.content?.['application/json']?.schema)
      .map((r) => `${r.method} ${r.path}`)
    expect(bad).toEqual([])
  })

  test('gives every operation a unique operationId', () => {
    const ids = routes.map((r) => operationOf(r)!.operationId)
    for (const id of ids) expect(typeof id).toBe('string')
    expect(new Set(ids).size).toBe(ids.length)
  })
})

describe('the interactive documentation', () => {
  test('is an HTML page that loads the OpenAPI document', async () => {
    const res = await app.fetch('/api/v1/docs')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toStartWith('text/html')
    const html = await res.text()
    expect(html).toMatch(/<html/i)
    expect(html).toContain('/api/v1/openapi.json')
  })
})
