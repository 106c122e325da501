import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { TOOLS } from '../../src/modules/mcp/tools'
import { startTestApp, type TestApp } from '../support/app'

/**
 * Issue 20: every AI-assistant tool is one operation of the public API. Table-driven over the tool
 * catalogue and the OpenAPI document: the operation exists, a read tool is a GET and a write tool
 * is not, and the scope the tool declares (which decides `allowed`) is the one the route's access
 * declaration names. A tool added later is checked the same way.
 */

const ID = '00000000-0000-4000-8000-000000000001'
let app: TestApp
type Operation = { 'x-gpuhq-access'?: { scope?: string }; 'x-gpuhq-scope-by-parameter'?: Record<string, Record<string, string>> }
let doc: { paths: Record<string, Record<string, Operation>> }
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  doc = (await (await app.fetch('/api/v1/openapi.json')).json()) as typeof doc
})
afterAll(() => app.close())

/** The OpenAPI path template a concrete path and method match (a literal path before a parameterised one). */
function templateOf(path: string, method: string): string | undefined {
  const matching = Object.keys(doc.paths).filter((t) => new RegExp(`^${t.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(path) && doc.paths[t]![method])
  return matching.sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0))[0]
}

/** The scope of one value of a path parameter (GET /reports/{report}: each report its own). */
function scopeByParameter(op: Operation, template: string, path: string): string | undefined {
  const names = [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!)
  const values = new RegExp(`^${template.replace(/\{[^}]+\}/g, '([^/]+)')}$`).exec(path)?.slice(1) ?? []
  for (const [name, scopes] of Object.entries(op['x-gpuhq-scope-by-parameter'] ?? {})) {
    const value = values[names.indexOf(name)]
    if (value !== undefined && scopes[value]) return scopes[value]
  }
  return undefined
}

describe('the tool catalogue', () => {
  test('each tool is a documented operation with the same scope, read tools GET and write tools not', () => {
    const args = { server_id: ID, command_id: ID, marketplace: 'marketplace_a', metric: ['gpu.temperature_c'], type: 'reboot', offer: {} }
    const rows = TOOLS.map((t) => {
      const r = t.request(args as never, { nowUs: Date.now() * 1000 })
      const path = `/api/v1${r.path}`
      const template = templateOf(path, r.method.toLowerCase())
      const op = template ? doc.paths[template]![r.method.toLowerCase()] : undefined
      return {
        tool: t.name,
        operation: op ? `${r.method} ${template}` : `missing: ${r.method} ${path}`,
        scope: op?.['x-gpuhq-access']?.scope ?? (template && op ? scopeByParameter(op, template, path) : undefined),
        read: r.method === 'GET',
      }
    })
    expect(rows.filter((r) => r.operation.startsWith('missing'))).toEqual([])
    expect(rows.map((r) => [r.tool, r.scope])).toEqual(TOOLS.map((t) => [t.name, t.scope]))
    expect(rows.map((r) => [r.tool, r.read])).toEqual(TOOLS.map((t) => [t.name, t.mode === 'read']))
    expect(new Set(TOOLS.map((t) => t.name)).size).toBe(TOOLS.length)
    for (const t of TOOLS) expect(t.name).toMatch(/^[A-Za-z0-9_.-]{1,128}$/)
  })
})
