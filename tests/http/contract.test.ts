import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { join } from 'node:path'
import { loadCredential } from '../../agent/lib/credential'
import { FormatRegistry } from '@sinclair/typebox'
import Ajv2020 from 'ajv/dist/2020'
import { DemoClient } from '../../scripts/demo/client'
import { backdateFleet, backfillEarnings, backfillTelemetry, openingBalance } from '../../scripts/demo/history'
import { type DemoMarkets, reportVastEarnings, startDemoMarkets } from '../../scripts/demo/markets'
import { arrangeFleet, configureAccount, connectMarketplaces, createOwner, demoSignIn, fundAccount, mintToken, upgradeToPro } from '../../scripts/demo/seed'
import { enrolFleet } from '../../scripts/demo/agents'
import { startTestApp, type TestApp } from '../support/app'
import { UNLIMITED_REPORTS } from '../reports/support'
import { connectClient, enableAccess } from '../support/mcp'

/**
 * Issue 36 (finding 2): every answer matches what the served OpenAPI document says of it. The
 * tenant is populated by the demo's own seeding (scripts/demo/: the owner, sandbox top-ups, the
 * pro plan, a token, a dozen enrolled servers in groups, both marketplace simulators with links and
 * offers, a pricing policy, notification settings, a command, a week of telemetry and earnings, then
 * the jobs' first runs). Every request the seeding sends is a write checked here too; then every GET
 * of the document is called with the credential its `x-gpuhq-access` names. Each answer's status
 * must be documented for the operation, its Content-Type one the document lists for that status,
 * and a JSON body must validate (ajv, JSON Schema 2020-12, the formats the service itself checks).
 *
 * The table is the document: a new route is called without a test of its own. Its path parameters
 * come from the schema (enum, examples, a date) or from the first item of the list at the path's
 * prefix (GET /servers → /servers/{id}); only a parameter neither gives needs a line in PARAMS.
 */

type Schema = Record<string, unknown>
type Parameter = { name: string; in: string; required?: boolean; schema: Schema }
type MediaType = { schema?: Schema }
type Operation = {
  parameters?: Parameter[]
  responses: Record<string, { content?: Record<string, MediaType> }>
  'x-gpuhq-access'?: Record<string, unknown>
}
type Doc = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } }
type Exchange = { method: string; path: string; query: string; status: number; contentType: string | null; body: string }

const READY_MS = 600_000
/** The jobs the demo runs once before its schedule starts (scripts/demo.ts), so every read has rows. */
const FIRST_RUNS = ['metrics.rollup', 'marketplaces.sync', 'earnings.sample', 'strategy.suggest', 'billing.charge', 'alerts.evaluate', 'fleet.snapshot']
/** The test clock's own routes (TEST_CLOCK=true only) are not the API under contract. */
const SKIPPED = [/^\/api\/v1\/_test\//]
/** GETs that answer something other than 2xx here, and why (the answer must still be a documented one). */
const NOT_2XX: Record<string, string> = {
  '/api/v1/agent/ws': 'the agent session is a WebSocket upgrade; a plain GET is refused',
  '/mcp': 'the MCP endpoint offers no standalone stream: GET answers 405 (MCP Streamable HTTP)',
  '/api/v1/mcp/authorize': 'the consent page needs an OAuth request (client_id, redirect_uri, challenge) in its query',
  // A test app serves no agent executable unless its test builds one (tests/support/app.ts): the
  // documented 404 says the operator has not built it (docs/agent.md "The single executable").
  '/agent/gpuhq-agent-linux-x64': 'no executable built for this test app: the documented 404',
  '/agent/gpuhq-agent-linux-x64.sha256': 'no executable built for this test app: the documented 404',
  '/agent/gpuhq-agent-linux-arm64': 'no executable built for this test app: the documented 404',
  '/agent/gpuhq-agent-linux-arm64.sha256': 'no executable built for this test app: the documented 404',
}

let app: TestApp
let markets: DemoMarkets
let doc: Doc
let cookie = ''
let aiToken = ''
let agentToken = ''
const writes: Exchange[] = []
const reads: Exchange[] = []
const unresolved: string[] = []
/** Path parameter values the seeding learned (by parameter name), for ids no list at the path's prefix gives. */
const known = new Map<string, string>()

// ajv with the string formats the service validates with (src/platform/formats.ts registers them).
const ajv = new Ajv2020({ strict: false, allErrors: true })
for (const [name, check] of FormatRegistry.Entries()) ajv.addFormat(name, { validate: (v: string) => check(v) })
const compiled = new Map<Schema, ReturnType<typeof ajv.compile>>()
function validatorOf(schema: Schema) {
  let v = compiled.get(schema)
  if (!v) {
    // The document's $refs point at #/components/schemas/…: the schema is checked inside a copy of
    // them. A schema named with $id (TypeBox's) appears inline in several operations: the names go.
    v = ajv.compile(withoutIds({ ...schema, components: { schemas: doc.components.schemas } }) as Schema)
    compiled.set(schema, v)
  }
  return v
}

const withoutIds = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(withoutIds)
    : value && typeof value === 'object'
      ? Object.fromEntries(
          Object.entries(value)
            .filter(([k]) => k !== '$id')
            .map(([k, v]) => [k, withoutIds(v)]),
        )
      : value

/** The document's operation for a concrete method and path (a literal segment wins over a parameter). */
function operationFor(method: string, path: string): { template: string; op: Operation } | null {
  let best: { template: string; op: Operation; params: number } | null = null
  for (const [template, ops] of Object.entries(doc.paths)) {
    const op = ops[method.toLowerCase()]
    if (!op) continue
    const names: string[] = []
    const pattern = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{([^}]+)\}/g, (_, n: string) => {
      names.push(n)
      return '([^/]+)'
    })
    if (!new RegExp(`^${pattern}$`).test(path)) continue
    if (!best || names.length < best.params) best = { template, op, params: names.length }
  }
  return best
}

const baseType = (contentType: string | null) => (contentType ?? '').split(';')[0]!.trim().toLowerCase()

/** Why an answer does not match the document, or null when it does. */
function mismatch(x: Exchange): string | null {
  const found = operationFor(x.method, x.path)
  if (!found) return `${x.method} ${x.path}: no operation in the document`
  const response = found.op.responses[String(x.status)]
  const where = `${x.method} ${found.template}${x.query} → ${x.status}`
  if (!response) return `${where}: status not documented (${Object.keys(found.op.responses).join(', ')}): ${x.body.slice(0, 300)}`
  const content = response.content ?? {}
  if (Object.keys(content).length === 0) return x.body === '' ? null : `${where}: documented without a body, answered ${x.body.length} bytes`
  const type = baseType(x.contentType)
  const media = Object.entries(content).find(([k]) => baseType(k) === type)
  if (!media) return `${where}: Content-Type ${x.contentType} is not one of ${Object.keys(content).join(', ')}`
  if (!/^application\/([a-z.+-]+\+)?json$/.test(type) || !media[1].schema) return null
  let body: unknown
  try {
    body = JSON.parse(x.body)
  } catch {
    return `${where}: the body is not JSON: ${x.body.slice(0, 200)}`
  }
  const validate = validatorOf(media[1].schema)
  if (validate(body)) return null
  const errors = (validate.errors ?? []).slice(0, 5).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`)
  return `${where}: the body fails its schema: ${errors.join('; ')}`
}

async function record(into: Exchange[], method: string, url: URL, res: Response): Promise<void> {
  const streaming = baseType(res.headers.get('content-type')) === 'text/event-stream'
  into.push({
    method,
    path: url.pathname,
    query: url.search,
    status: res.status,
    contentType: res.headers.get('content-type'),
    // A stream does not end: its status and type are what is checked.
    body: streaming ? '' : await res.text(),
  })
  if (streaming) await res.body?.cancel()
}

/** Runs `seed` with every request to the app recorded (the seeding's writes), from whichever helper sends it. */
async function recording<T>(seed: () => Promise<T>): Promise<T> {
  const realFetch = globalThis.fetch
  const origin = new URL(app.url).origin
  const pending: Promise<void>[] = []
  globalThis.fetch = Object.assign(async (input: string | URL | Request, init?: RequestInit) => {
    const res = await realFetch(input, init)
    const url = new URL(input instanceof Request ? input.url : String(input))
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase()
    if (url.origin === origin && method !== 'GET') pending.push(record(writes, method, url, res.clone() as Response))
    return res
  }, realFetch) as typeof fetch
  try {
    return await seed()
  } finally {
    globalThis.fetch = realFetch
    await Promise.all(pending)
  }
}

/** Rows no seeding step leaves on a fleet whose agents are not running: an incident and a command log. */
async function fixtureRows(tenantId: string, serverId: string, commandId: string): Promise<void> {
  const now = app.deps.clock.nowUs()
  await app.deps.db.run(sql`INSERT INTO alert_incidents (id, tenant_id, kind, cause_key, severity, server_id, title, detail, state, opened_at, last_seen_at, occurrences, notification_ids)
     VALUES (${app.deps.newId()}, ${tenantId}, 'offline', ${`offline:${serverId}`}, 'critical', ${serverId}, 'Server offline: rig-01', 'offline: session closed', 'open', ${now}, ${now}, 1, '[]')`)
  const logId = app.deps.newId()
  await app.deps.db.run(
    sql`INSERT INTO command_logs (id, command_id, text, bytes, truncated, updated_at) VALUES (${logId}, ${commandId}, ${'ok\n'}, 3, 0, ${now})`,
  )
  known.set('log_id', logId)
}

beforeAll(async () => {
  markets = await startDemoMarkets()
  // Every report is read once per enum value and media type here: the expensive-read limits
  // (tests/reports/cost.test.ts covers them) are off, so the answers are the reports themselves.
  app = await startTestApp({ LOG_LEVEL: 'silent', MARKETPLACE_A_API_URL: markets.a.url, MARKETPLACE_B_API_URL: markets.b.url, ...UNLIMITED_REPORTS })
  doc = (await (await app.fetch('/api/v1/openapi.json')).json()) as Doc
  await recording(async () => {
    const api = new DemoClient(app.url)
    const owner = await createOwner(app.deps, api, demoSignIn())
    await openingBalance(app.deps, owner.tenantId, app.deps.clock.nowUs())
    await upgradeToPro(owner.member)
    const pat = api.as({ bearer: await mintToken(owner.member) })
    const ids = await enrolFleet(pat, app.url, app.dir, 'silent')
    await arrangeFleet(pat, ids)
    const linkedAt = await connectMarketplaces(pat, ids)
    await configureAccount(pat, ids)
    const now = app.deps.clock.nowUs()
    await backdateFleet(app.deps, owner.tenantId, ids, now)
    expect((await app.runner.run('billing.charge', `contract:${app.deps.newId()}`)).outcome).toBe('succeeded')
    await fundAccount(owner.member)
    await backfillTelemetry(app.deps, ids, now)
    reportVastEarnings(markets, await backfillEarnings(app.deps, owner.tenantId, ids, linkedAt, now, app.deps.clock.nowUs()))
    for (const job of FIRST_RUNS) expect({ job, run: (await app.runner.run(job, `contract:${app.deps.newId()}`)).outcome }).toEqual({ job, run: 'succeeded' })

    // The owner's own browser session, as the console signs in.
    const signedIn = await api.send('POST', '/auth/sessions', { email: owner.email, password: owner.password })
    expect(signedIn.status).toBe(201)
    cookie = signedIn.headers.get('set-cookie')!.split(';')[0]!
    // What the demo does not make: an AI-assistant token and a connected client (OAuth), a delivery.
    const member = { userId: '', tenantId: owner.tenantId, email: owner.email, role: 'owner' as const, session: cookie.split('=')[1]! }
    aiToken = (await enableAccess(app, member)).token
    known.set('client_id', (await connectClient(app, member)).client.client_id)
    const test = await pat.call<{ deliveries: { id: string }[] }>('POST', '/notifications/test', { channels: ['email'] })
    known.set('delivery_id', test.deliveries[0]!.id)
    // What the demo does not make either: a bulk change (its preview too), left for the bulk.run job (not run here).
    const bulk = { marketplace: 'marketplace_a', action: 'reprice', server_ids: [ids.get('rig-01')!], price_gpu_hour: '0.61' }
    await pat.call('POST', '/bulk-operations/preview', bulk)
    await pat.call('POST', '/bulk-operations', bulk, 202)
    // An agent's own credential (the demo's enrolment saved it where the agent keeps it), for the agent's operations.
    agentToken = loadCredential(join(app.dir, 'agents', 'rig-01')).agent_token
    const commands = await pat.get<{ items: { command_id: string }[] }>('/commands')
    await fixtureRows(owner.tenantId, ids.get('rig-01')!, commands.items[0]!.command_id)
    // A drain (docs/marketplaces.md "Drain"), which the demo does not start.
    await pat.call('POST', `/servers/${ids.get('rig-01')}/drain`, { reason: 'contract' }, 201)
  })
}, READY_MS)
afterAll(async () => {
  await app?.close()
  await markets?.stop()
})

/** The value of a path parameter: from its schema, an earlier answer, or the list at the path's prefix. */
async function parameterValue(template: string, resolved: string, p: Parameter): Promise<string | null> {
  const s = p.schema
  if (Array.isArray(s.enum)) return String(s.enum[0])
  if (Array.isArray(s.examples)) return String(s.examples[0])
  if (s.format === 'date') return new Date(app.deps.clock.nowUs() / 1000).toISOString().slice(0, 10)
  if (known.has(p.name)) return known.get(p.name)!
  const special = PARAMS[`${template} ${p.name}`]
  if (special) return special()
  // The list at the prefix: GET /api/v1/servers for /api/v1/servers/{id}.
  const prefix = resolved.slice(0, resolved.indexOf(`{${p.name}}`)).replace(/\/$/, '')
  const res = await asOwner(prefix)
  if (res.status !== 200) return null
  const body = (await res.json()) as Record<string, unknown>
  // The item's field of the parameter's name, else its id: `id`, or `command_id` in a list of commands.
  const singular = prefix.split('/').pop()!.replace(/ies$/, 'y').replace(/s$/, '')
  for (const value of Object.values(body))
    if (Array.isArray(value) && value[0] && typeof value[0] === 'object') {
      const item = value[0] as Record<string, unknown>
      const v = item[p.name] ?? item.id ?? item[`${singular}_id`]
      if (typeof v === 'string') return v
    }
  return null
}

/** Path parameters no schema or list gives. */
const PARAMS: Record<string, () => Promise<string | null>> = {
  // The console's files, as its page names them.
  '/app/{file} file': async () => (await (await asOwner('/')).text()).match(/\/app\/([^"'?]+)/)?.[1] ?? null,
  // The sandbox's checkout of the top-up the demo leaves open.
  '/sandbox/checkout/{invoice_id} invoice_id': async () => {
    const topups = (await (await asOwner('/api/v1/billing/topups')).json()) as { items: { checkout_url: string | null }[] }
    const url = topups.items.find((t) => t.checkout_url?.includes('/sandbox/checkout/'))?.checkout_url
    return url ? url.split('/').pop()! : null
  },
}

/** Required query parameters: from the schema, or by name. */
async function queryValue(p: Parameter): Promise<string | null> {
  if (Array.isArray(p.schema.enum)) return String(p.schema.enum[0])
  if (p.name === 'server_id') return parameterValue('/api/v1/servers/{id}', '/api/v1/servers/{id}', { name: 'id', in: 'path', schema: {} })
  if (p.name === 'plan') return 'pro'
  return null
}

function credentialFor(op: Operation): Record<string, string> {
  const access = op['x-gpuhq-access'] ?? {}
  if ('public' in access) return {}
  if ('mcp' in access) return { authorization: `Bearer ${aiToken}` }
  if ('agent' in access) return { authorization: `Bearer ${agentToken}` }
  return { cookie }
}

/** A read as the owner (the browser session), to find parameter values. */
const asOwner = (path: string) => app.fetch(path, { headers: { cookie } })

describe('the OpenAPI contract', () => {
  test('every request the demo seeding sent was answered as the document says', () => {
    expect(writes.length).toBeGreaterThan(30)
    expect(writes.map(mismatch).filter((m) => m !== null)).toEqual([])
  })

  test('every GET of the document answers, on a populated tenant, what the document says of it', async () => {
    for (const [template, ops] of Object.entries(doc.paths)) {
      const op = ops.get
      if (!op || SKIPPED.some((re) => re.test(template))) continue
      // Every value of an enum path parameter (each report); one value of any other.
      let paths = [template]
      for (const p of (op.parameters ?? []).filter((x) => x.in === 'path')) {
        const values = Array.isArray(p.schema.enum) ? p.schema.enum.map(String) : [await parameterValue(template, paths[0]!, p)]
        if (values[0] === null) {
          unresolved.push(`${template}: no value for {${p.name}} (give one in PARAMS)`)
          paths = []
          break
        }
        paths = paths.flatMap((path) => values.map((v) => path.replace(`{${p.name}}`, encodeURIComponent(v!))))
      }
      const query = new URLSearchParams()
      for (const p of (op.parameters ?? []).filter((x) => x.in === 'query' && x.required)) {
        const value = await queryValue(p)
        if (value === null) unresolved.push(`${template}: no value for the required query parameter ${p.name}`)
        else query.set(p.name, value)
      }
      // Each media type the success lists beside the first is asked for by Accept (a report as CSV).
      const accepts = [undefined, ...Object.keys(op.responses['200']?.content ?? {}).slice(1)]
      for (const path of paths)
        for (const accept of accepts) {
          const url = new URL(`${app.url}${path}${query.size ? `?${query}` : ''}`)
          const headers = { ...credentialFor(op), ...(accept ? { accept } : {}) }
          await record(reads, 'GET', url, await app.fetch(url.pathname + url.search, { headers }))
        }
    }
    expect(unresolved).toEqual([])
    expect(reads.length).toBeGreaterThan(60)
    expect(reads.map(mismatch).filter((m) => m !== null)).toEqual([])
    const refused = reads
      .filter((r) => r.status >= 300 && !NOT_2XX[operationFor('GET', r.path)!.template])
      .map((r) => `${r.path}${r.query} → ${r.status}: ${r.body.slice(0, 200)}`)
    expect(refused).toEqual([])
    // The reports were each asked for as JSON and as CSV, and answered both.
    const reports = reads.filter((r) => r.path.startsWith('/api/v1/reports/')).map((r) => `${r.path} ${baseType(r.contentType)}`)
    expect(reports).toHaveLength(8)
    expect(reports).toContain('/api/v1/reports/margin text/csv')
  }, 120_000)
})

describe('the OpenAPI contract of writes the seeding does not send', () => {
  test('acknowledging and resolving an incident, cancelling a command, revoking a token and disconnecting a client answer as documented', async () => {
    const list = async <T>(path: string) => ((await (await asOwner(path)).json()) as { items: T[] }).items
    const incident = (await list<{ id: string }>('/api/v1/alerts'))[0]!.id
    const command = (await list<{ command_id: string }>('/api/v1/commands'))[0]!.command_id
    const token = (await (await asOwner('/api/v1/tokens')).json()) as { items: { id: string }[] }
    const sent: Exchange[] = []
    for (const [method, path, json] of [
      ['POST', `/api/v1/alerts/${incident}/acknowledge`, undefined],
      ['POST', `/api/v1/alerts/${incident}/resolve`, { note: 'fixed the cable' }],
      ['POST', `/api/v1/commands/${command}/cancel`, undefined],
      ['DELETE', `/api/v1/tokens/${token.items[0]!.id}`, undefined],
      ['DELETE', `/api/v1/mcp/clients/${known.get('client_id')}`, undefined],
      // Refusals are answers too: a group without a name, an unknown group.
      ['POST', '/api/v1/groups', { name: '' }],
      ['GET', `/api/v1/groups/${app.deps.newId()}`, undefined],
    ] as const) {
      const url = new URL(`${app.url}${path}`)
      await record(sent, method, url, await app.fetch(path, { method, headers: { cookie }, json }))
    }
    expect(sent.map((x) => `${x.method} ${x.status}`)).toEqual(['POST 200', 'POST 200', 'POST 200', 'DELETE 204', 'DELETE 204', 'POST 422', 'GET 404'])
    expect(sent.map(mismatch).filter((m) => m !== null)).toEqual([])
  })
})

describe('the document, as the spec names its operations', () => {
  const templateKey = (path: string) => path.replace(/\{[^}]+\}/g, '{}')

  test('no two paths differ only by the names of their parameters (OpenAPI forbids it)', () => {
    const seen = new Map<string, string>()
    const clashes: string[] = []
    for (const path of Object.keys(doc.paths)) {
      const other = seen.get(templateKey(path))
      if (other) clashes.push(`${other} and ${path}`)
      seen.set(templateKey(path), path)
    }
    expect(clashes).toEqual([])
  })

  test('GET /reports/{report} is one operation, the reports its enum', () => {
    const reports = Object.keys(doc.paths).filter((p) => p.startsWith('/api/v1/reports'))
    expect(reports).toEqual(['/api/v1/reports/{report}'])
    const parameter = doc.paths['/api/v1/reports/{report}']!.get!.parameters!.find((p) => p.name === 'report')!
    expect(parameter).toMatchObject({ in: 'path', required: true, schema: { enum: ['utilisation', 'earnings', 'spend', 'margin'] } })
  })

  test("each report holds a token to the report's own scope; an unknown report is 404; days is the margin's alone", async () => {
    const minted = await app.fetch('/api/v1/tokens', { method: 'POST', headers: { cookie }, json: { name: 'fleet only', scopes: ['servers:read'] } })
    expect(minted.status).toBe(201)
    const bearer = { authorization: `Bearer ${((await minted.json()) as { token: string }).token}` }
    expect((await app.fetch('/api/v1/reports/utilisation', { headers: bearer })).status).toBe(200)
    const spend = await app.fetch('/api/v1/reports/spend', { headers: bearer })
    expect({ status: spend.status, code: ((await spend.json()) as { code: string }).code }).toEqual({ status: 403, code: 'forbidden' })
    const unknown = await app.fetch('/api/v1/reports/profit', { headers: { cookie } })
    expect({ status: unknown.status, code: ((await unknown.json()) as { code: string }).code }).toEqual({ status: 404, code: 'not_found' })
    const days = await app.fetch('/api/v1/reports/utilisation?days=3', { headers: { cookie } })
    expect({ status: days.status, errors: ((await days.json()) as { errors: unknown[] }).errors }).toEqual({
      status: 422,
      errors: [{ path: '/days', code: 'not_allowed' }],
    })
  })
})
