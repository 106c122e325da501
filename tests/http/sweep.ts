import { expect } from 'bun:test'
import { sql } from 'drizzle-orm'
import { ALL_SCOPES } from '../../src/platform/access'
import { PROBLEM_CODE_LIST } from '../../src/platform/problem'
import { mintPat, newTenant, setPlan } from '../support/access'
import type { TestApp } from '../support/app'
import { report } from '../support/commands'
import { withSession } from '../support/accounts'
import { enrolAgent, RawAgent } from '../support/fleet'
import { enableAccess } from '../support/mcp'

/**
 * What the input sweeps (query-values.test.ts, nul.test.ts) share: the operations of the served
 * OpenAPI document (GET /api/v1/openapi.json, so a route added later is swept without a test
 * naming it), values that pass each schema, and a populated tenant to call them with.
 */

export type Schema = Record<string, any>
export type Operation = { method: string; path: string; op: Schema; params: Schema[] }

/** Resolves a local `$ref` of the document. */
export function deref(doc: Schema, schema: Schema | undefined): Schema | undefined {
  let s = schema
  for (let i = 0; s?.$ref && i < 10; i++)
    s = s.$ref
      .split('/')
      .slice(1)
      .reduce((o: Schema, k: string) => o?.[k], doc)
  return s
}

/** Every operation of the document (but the test-only ones under /api/v1/_test and pages outside the API), each with its parameters resolved. */
export async function sweptOperations(app: TestApp): Promise<{ doc: Schema; operations: Operation[] }> {
  const doc = (await (await app.fetch('/api/v1/openapi.json')).json()) as Schema
  const operations: Operation[] = []
  for (const [path, item] of Object.entries<Schema>(doc.paths))
    for (const [method, op] of Object.entries<Schema>(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue
      if (path.startsWith('/api/v1/_test/') || path.startsWith('/app/') || path.startsWith('/problems')) continue
      const params = ((op.parameters ?? []) as Schema[]).map((p) => deref(doc, p)!)
      operations.push({ method: method.toUpperCase(), path, op, params })
    }
  return { doc, operations }
}

/** The alternatives a schema allows (anyOf / oneOf members, or itself). */
function alternatives(doc: Schema, schema: Schema | undefined): Schema[] {
  const s = deref(doc, schema)
  if (!s) return []
  const alts = [...(s.anyOf ?? []), ...(s.oneOf ?? [])]
  return alts.length ? alts.flatMap((a) => alternatives(doc, a)) : [s]
}

/** A value that passes `schema` (as JSON), preferring the simplest alternative; `ids` fills uuid fields by name. */
export function validValue(doc: Schema, schema: Schema | undefined, name = '', ids: Record<string, string> = {}, depth = 0): unknown {
  const s = deref(doc, schema)
  if (!s || depth > 8) return null
  if (s.const !== undefined) return s.const
  if (s.enum) return s.enum.find((v: unknown) => v !== null) ?? s.enum[0]
  if (s.default !== undefined && !(s.anyOf || s.oneOf)) return s.default
  const alts = alternatives(doc, s)
  const pick = alts.find((a) => a.type !== 'null' && a.format !== 'integer') ?? alts[0]!
  if (pick !== s) return validValue(doc, { ...pick, ...(s.minimum !== undefined ? { minimum: s.minimum } : {}) }, name, ids, depth + 1)
  const type = Array.isArray(s.type) ? s.type.find((t: string) => t !== 'null') : s.type
  switch (type) {
    case 'integer':
    case 'number':
      return s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : 1)
    case 'boolean':
      return true
    case 'array':
      return s.minItems ? Array.from({ length: s.minItems }, () => validValue(doc, s.items, name, ids, depth + 1)) : []
    case 'object': {
      const out: Record<string, unknown> = {}
      for (const req of s.required ?? []) out[req] = validValue(doc, s.properties?.[req], req, ids, depth + 1)
      return out
    }
    default:
      if (s.format === 'uuid') return ids[name] ?? '00000000-0000-4000-8000-000000000000'
      if (s.format === 'date') return '2026-11-20'
      if (s.format === 'date-time') return '2026-11-20T00:00:00Z'
      if (s.format === 'email') return 'someone@example.com'
      if (s.format === 'uri') return 'https://example.com/'
      if (s.pattern === '^[a-z][a-z0-9_-]{1,63}$' || s.pattern === '^[a-z][a-z0-9_]{1,63}$') return 'pro'
      return 'x'.repeat(Math.max(1, s.minLength ?? 1))
  }
}

/**
 * A tenant with something in every area a read can show: two enrolled servers (one with a live
 * agent that sent telemetry), a finished command with a log, a group, and a PAT with every scope.
 */
export type Populated = {
  /** A PAT with every scope. */
  token: string
  /** The owner's session cookie header, for cookie-only operations. */
  cookie: Record<string, string>
  /** The server's agent credential, and the tenant's AI-assistant token. */
  agentToken: string
  mcpToken: string
  tenantId: string
  serverId: string
  commandId: string
  logId: string
  groupId: string
  agent: RawAgent
}

export async function populatedTenant(app: TestApp): Promise<Populated> {
  const owner = await newTenant(app, 'sweep')
  await setPlan(app, owner.tenantId, 'pro')
  const { token } = await mintPat(app, owner, { name: 'sweep', scopes: ALL_SCOPES })
  const auth = { authorization: `Bearer ${token}` }
  const ownerLike = { tenantId: owner.tenantId, userId: owner.userId, email: owner.email, session: owner.session, headers: auth }
  const enrolled = await enrolAgent(app, ownerLike)
  await enrolAgent(app, ownerLike)
  const { agent } = await RawAgent.start(app, enrolled.agent_token)
  agent.heartbeat()
  agent.telemetry(
    { 0: { temperature_c: 61, utilization_pct: 97.5, fan_pct: 40, power_w: 320 }, 1: { temperature_c: 58, utilization_pct: 12 } },
    { cpu_usage_pct: 22 },
  )
  const group = await app.fetch('/api/v1/groups', { method: 'POST', json: { name: 'sweep group' }, headers: auth })
  expect(group.status).toBe(201)
  const made = await app.fetch('/api/v1/commands', {
    method: 'POST',
    json: { server_id: enrolled.server_id, type: 'diagnostics.run', params: {} },
    headers: auth,
  })
  expect(made.status).toBe(201)
  const command = { id: ((await made.json()) as { command_id: string }).command_id }
  await agent.waitFor((f) => f.type === 'command' && f.command_id === command.id)
  expect(
    await report(
      agent,
      { type: 'command.accepted', command_id: command.id },
      { type: 'command.started', command_id: command.id },
      { type: 'command.log', command_id: command.id, text: 'nvidia-smi: all GPUs healthy' },
      { type: 'command.finished', command_id: command.id, status: 'succeeded', result: { ok: true } },
    ),
  ).toEqual([])
  const view = (await (await app.fetch(`/api/v1/commands/${command.id}`, { headers: auth })).json()) as {
    log_ref?: string | null
    error?: { log_ref?: string | null } | null
  }
  const logRow = (await app.deps.db.get(sql`SELECT id FROM command_logs WHERE command_id = ${command.id}`)) as { id: string } | null
  const access = await enableAccess(app, owner)
  return {
    token,
    cookie: withSession(owner.session),
    agentToken: enrolled.agent_token,
    mcpToken: access.token,
    tenantId: owner.tenantId,
    serverId: enrolled.server_id,
    commandId: command.id,
    logId: logRow?.id ?? view.log_ref ?? '00000000-0000-4000-8000-000000000000',
    groupId: ((await group.json()) as { id: string }).id,
    agent,
  }
}

/** The operation's path, its parameters filled with the populated tenant's ids where the path names their kind, else an id of nothing. */
export function concretePath(o: Operation, t: Populated, override: Record<string, string> = {}): string {
  const kind = o.path.split('/')[3]
  const byKind: Record<string, string> = { servers: t.serverId, commands: t.commandId, groups: t.groupId }
  return o.path.replace(/\{(\w+)\}/g, (_, n: string) => {
    if (override[n] !== undefined) return encodeURIComponent(override[n]!)
    if (n === 'log_id') return t.logId
    if (n === 'day') return '2026-11-20'
    if (n === 'server_id') return t.serverId
    if (n === 'id' && byKind[kind!]) return byKind[kind!]!
    const p = o.params.find((x) => x.in === 'path' && x.name === n)
    const v = p ? validValue({}, p.schema, n) : 'x'
    return encodeURIComponent(String(v))
  })
}

/** The credentials an operation takes: the owner's cookie for cookie-only ones, the agent's or the AI token for theirs, none for public ones, else the PAT. */
export function credentialsFor(o: Operation, t: Populated): Record<string, string> {
  const spec = (o.op['x-gpuhq-access'] ?? {}) as Record<string, unknown>
  if (spec.public) return {}
  if (spec.agent) return { authorization: `Bearer ${t.agentToken}` }
  if (spec.mcp) return { authorization: `Bearer ${t.mcpToken}` }
  if (spec.cookieOnly) return t.cookie
  return { authorization: `Bearer ${t.token}` }
}

/**
 * What every 4xx must be: a problem document (application/problem+json) of the closed code set
 * whose status is the response's, and for 422 at least one field error with a JSON Pointer. Answers
 * the failure, or null.
 */
export async function problemFailure(res: Response): Promise<string | null> {
  const type = res.headers.get('content-type') ?? ''
  if (type.startsWith('text/event-stream')) {
    await res.body?.cancel()
    return res.status >= 500 ? `${res.status} event stream` : null
  }
  const text = await res.text()
  if (res.status >= 500) return `${res.status} ${text.slice(0, 300)}`
  if (res.status < 400) return null
  if (isOAuthError(res, text)) return null
  if (type !== 'application/problem+json') return `${res.status} as ${type}: ${text.slice(0, 200)}`
  let doc: { status?: number; code?: string; errors?: { path?: unknown; code?: unknown }[] }
  try {
    doc = JSON.parse(text)
  } catch {
    return `${res.status} problem document is not JSON: ${text.slice(0, 200)}`
  }
  if (doc.status !== res.status || !(PROBLEM_CODE_LIST as readonly string[]).includes(doc.code ?? ''))
    return `${res.status} bad problem document: ${text.slice(0, 300)}`
  if (res.status === 422) {
    if (!doc.errors?.length) return `422 without field errors: ${text.slice(0, 300)}`
    for (const e of doc.errors)
      if (typeof e.path !== 'string' || (e.path !== '' && !e.path.startsWith('/')) || typeof e.code !== 'string')
        return `422 with a bad field error: ${text.slice(0, 300)}`
  }
  return null
}

/**
 * The one documented exception to "every error is a problem document" (docs/conventions.md): the
 * OAuth endpoints under /mcp answer refusals as RFC 6749 §5.2 / RFC 7591 §3.2.2 errors,
 * `application/json` with an `error` code.
 */
export function isOAuthError(res: Response, text: string): boolean {
  if (!new URL(res.url).pathname.includes('/mcp/') || !(res.headers.get('content-type') ?? '').startsWith('application/json')) return false
  try {
    return typeof (JSON.parse(text) as { error?: unknown }).error === 'string'
  } catch {
    return false
  }
}
