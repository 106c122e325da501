import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ALL_SCOPES, type AccessSpec } from '../../src/platform/access'
import { call, insertServer, mintPat, newTenant, setPlan, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'

/**
 * Issue 34 (2): what every operation reaches, table-driven over the served OpenAPI document, so a
 * route added later is covered without being named here. Every operation a member or a token can
 * call states it (`reach` in its `x-gpuhq-access`: `server`, `tenant` or `none`; docs/access.md
 * "What an operation reaches"); every tenant-wide one answers a token limited to servers with 403
 * forbidden and `errors[0].code` `tenant_wide`, whatever its body, while the same token without the
 * allowlist is not refused there; and no per-server operation refuses it that way.
 */

type Operation = { method: string; path: string; spec: Extract<AccessSpec, { role: string }> }
type Schema = Record<string, any>
type Problem = { status: number; code: string; errors?: { path: string; code: string }[] }

let app: TestApp
let owner: Member
let s1: string
/** Every scope, limited to s1. */
let limited: string
/** Every scope, no allowlist: the control. */
let unlimited: string
let operations: Operation[]
/** Role-based operations without a reach, by "METHOD /path" (the app would not start; kept for the message). */
let unclassified: string[]

const REACHES = ['server', 'tenant', 'none']
const NOBODY = '0190f000-0000-7000-8000-00000000abcd'

/** A concrete URL for a path template: plausible values, so that only the access check decides. */
function urlOf(path: string): string {
  return path.replace(/^\/api\/v1/, '').replace(/\{(\w+)\}/g, (_, name: string) => {
    if (name === 'marketplace') return 'marketplace_a'
    if (name === 'day') return '2026-11-22'
    if (name === 'provider') return 'sandbox'
    if (name === 'server_id') return s1
    return NOBODY
  })
}

/** Sends the operation as `token` (an empty JSON object as the body of a write) and reads the answer's status and problem. */
async function send(o: Operation, token: string): Promise<{ status: number; problem: Problem | null }> {
  const write = !['GET', 'HEAD'].includes(o.method)
  const res = await call(app, o.method, urlOf(o.path), token, write ? { json: {} } : {})
  const type = res.headers.get('content-type') ?? ''
  // A live stream is not read to its end: its status says enough.
  if (type.startsWith('text/event-stream')) {
    await res.body?.cancel()
    return { status: res.status, problem: null }
  }
  const text = await res.text()
  return { status: res.status, problem: type.startsWith('application/problem+json') ? (JSON.parse(text) as Problem) : null }
}

const refusedAsTenantWide = (r: { status: number; problem: Problem | null }) =>
  r.status === 403 && r.problem?.code === 'forbidden' && r.problem.errors?.[0]?.code === 'tenant_wide'

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newTenant(app, 'reach')
  await setPlan(app, owner.tenantId, 'pro')
  s1 = await insertServer(app, owner.tenantId, 'allowed rig')
  await insertServer(app, owner.tenantId, 'other rig')
  limited = (await mintPat(app, owner, { name: 'one rig', scopes: ALL_SCOPES, server_allowlist: [s1] })).token
  unlimited = (await mintPat(app, owner, { name: 'every rig', scopes: ALL_SCOPES })).token
  const doc = (await (await app.fetch('/api/v1/openapi.json')).json()) as Schema
  operations = []
  unclassified = []
  for (const [path, item] of Object.entries<Schema>(doc.paths))
    for (const [method, op] of Object.entries<Schema>(item)) {
      const spec = op['x-gpuhq-access'] as AccessSpec | undefined
      // public, agent and mcp operations take no PAT at all (docs/access.md).
      if (!spec || !('role' in spec)) continue
      const key = `${method.toUpperCase()} ${path}`
      if (!REACHES.includes((spec as { reach?: string }).reach ?? '')) unclassified.push(key)
      else operations.push({ method: method.toUpperCase(), path, spec })
    }
})
afterAll(() => app.close())

describe('what an operation reaches', () => {
  test('every operation a member or a token can call says it: server, tenant or none', () => {
    expect(unclassified).toEqual([])
    expect(operations.length).toBeGreaterThan(80)
    const reach = (key: string) => operations.find((o) => `${o.method} ${o.path}` === key)?.spec.reach
    // The places issue 34 found reachable, and the areas that span the tenant, stay tenant-wide.
    for (const key of [
      'PUT /api/v1/marketplaces/{marketplace}',
      'DELETE /api/v1/marketplaces/{marketplace}',
      'GET /api/v1/marketplaces/accounts',
      'GET /api/v1/marketplaces/operations',
      'PUT /api/v1/billing/cost-basis',
      'PUT /api/v1/notifications/settings',
      'POST /api/v1/groups',
      'GET /api/v1/billing',
      'GET /api/v1/audit',
    ])
      expect({ key, reach: reach(key) }).toEqual({ key, reach: 'tenant' })
    for (const key of ['GET /api/v1/servers', 'POST /api/v1/marketplaces/links', 'POST /api/v1/strategy/policies', 'POST /api/v1/commands'])
      expect({ key, reach: reach(key) }).toEqual({ key, reach: 'server' })
  })

  test('a write that reaches nothing is cookie-only, so every token write is either per server or tenant-wide', () => {
    const loose = operations.filter((o) => o.spec.reach === 'none' && !['GET', 'HEAD'].includes(o.method) && !o.spec.cookieOnly)
    expect(loose.map((o) => `${o.method} ${o.path}`)).toEqual([])
  })

  test('every tenant-wide operation refuses a token limited to servers: 403 forbidden, errors[0].code tenant_wide, whatever the body', async () => {
    // Cookie-only operations refuse every token already (docs/access.md); the rest are swept.
    const tenantWide = operations.filter((o) => o.spec.reach === 'tenant' && !o.spec.cookieOnly)
    expect(tenantWide.length).toBeGreaterThan(25)
    const failures: string[] = []
    for (const o of tenantWide) {
      const r = await send(o, limited)
      if (!refusedAsTenantWide(r)) failures.push(`${o.method} ${o.path}: ${r.status} ${JSON.stringify(r.problem)}`)
      // The refusal is the allowlist's: the same scopes without one are not refused so.
      const control = await send(o, unlimited)
      if (refusedAsTenantWide(control)) failures.push(`${o.method} ${o.path}: refused to a token without an allowlist`)
    }
    expect(failures).toEqual([])
  })

  test('no per-server operation, nor one that reaches nothing, refuses it as tenant-wide', async () => {
    const rest = operations.filter((o) => o.spec.reach !== 'tenant' && !o.spec.cookieOnly)
    expect(rest.length).toBeGreaterThan(40)
    const failures: string[] = []
    for (const o of rest) {
      const r = await send(o, limited)
      if (refusedAsTenantWide(r) || r.status >= 500) failures.push(`${o.method} ${o.path}: ${r.status} ${JSON.stringify(r.problem)}`)
    }
    expect(failures).toEqual([])
  })

  test('the OpenAPI description of each operation says what a token limited to servers gets there', async () => {
    const doc = (await (await app.fetch('/api/v1/openapi.json')).json()) as Schema
    const text = (o: Operation) => String(doc.paths[o.path][o.method.toLowerCase()].description)
    for (const o of operations) {
      const expected = { server: 'Per server:', tenant: 'Tenant-wide:', none: 'Reaches no server:' }[o.spec.reach]
      expect({ op: `${o.method} ${o.path}`, says: text(o).includes(expected) }).toEqual({ op: `${o.method} ${o.path}`, says: true })
    }
  })
})
