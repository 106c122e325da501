import { expect } from 'bun:test'
import { sql } from 'drizzle-orm'
import { createAccount } from '../../src/modules/accounts'
import type { Role } from '../../src/platform/access'
import { formatTimestamp } from '../../src/platform/time'
import { GOOD_PASSWORD, newEmail, sessionFrom, withSession } from './accounts'
import type { TestApp } from './app'

/**
 * Helpers for the access tests: members of any role, PATs, servers and tenant states, all made the
 * way a user or the operator would make them (operator ticket + real HTTP sign-in), except for the
 * few rows no HTTP operation writes yet (servers, roles other than owner, plan and account state),
 * which go straight into the real database.
 *
 * Members of another role: `createAccount` (the operator path) makes a user with its own tenant; the
 * user is moved into the target tenant with the wanted role, the stray empty tenant is deleted, and
 * the user sets a password with the ticket, which signs them in. No code of ours is bypassed for the
 * sign-in itself.
 */

export type Member = { userId: string; tenantId: string; email: string; role: Role; session: string }
export type Caller = Member | string | null

async function completeTicket(app: TestApp, ticket: string): Promise<string> {
  const res = await app.fetch('/api/v1/auth/password-reset/complete', { method: 'POST', json: { ticket, password: GOOD_PASSWORD } })
  expect(res.status).toBe(200)
  const session = sessionFrom(res)
  expect(session).not.toBeNull()
  return session!
}

/** A new tenant on the free plan and its owner, signed in. */
export async function newTenant(app: TestApp, tag = 'owner'): Promise<Member> {
  const email = newEmail(tag)
  const { tenantId, userId, ticket } = await createAccount({ deps: app.deps, input: { email, tenantName: `${tag} rigs` } })
  return { userId, tenantId, email, role: 'owner', session: await completeTicket(app, ticket) }
}

/** A member with `role` in `tenantId`, signed in (see the note at the top of this file). */
export async function addMember(app: TestApp, tenantId: string, role: Role): Promise<Member> {
  const email = newEmail(role)
  const made = await createAccount({ deps: app.deps, input: { email, tenantName: 'stray' } })
  await app.deps.db.run(sql`UPDATE users SET tenant_id = ${tenantId}, role = ${role} WHERE id = ${made.userId}`)
  await app.deps.db.run(sql`DELETE FROM tenants WHERE id = ${made.tenantId}`)
  return { userId: made.userId, tenantId, email, role, session: await completeTicket(app, made.ticket) }
}

export async function setRole(app: TestApp, userId: string, role: Role): Promise<void> {
  await app.deps.db.run(sql`UPDATE users SET role = ${role} WHERE id = ${userId}`)
}

export async function setPlan(app: TestApp, tenantId: string, plan: string | null): Promise<void> {
  await app.deps.db.run(sql`UPDATE tenants SET plan_code = ${plan} WHERE id = ${tenantId}`)
}

export async function setAccountState(app: TestApp, tenantId: string, state: 'active' | 'grace' | 'frozen'): Promise<void> {
  await app.deps.db.run(sql`UPDATE tenants SET account_state = ${state} WHERE id = ${tenantId}`)
}

/** An enrolled server of the tenant (the fleet feature will make these through the agent). */
export async function insertServer(app: TestApp, tenantId: string, name = 'rig'): Promise<string> {
  const id = app.deps.newId()
  await app.deps.db.run(sql`INSERT INTO servers (id, tenant_id, name, created_at) VALUES (${id}, ${tenantId}, ${name}, ${app.deps.clock.nowUs()})`)
  return id
}

/** Enrolled servers of the tenant named `names`, inserted one after the other; their ids in that order. */
export async function insertServers(app: TestApp, tenantId: string, names: string[]): Promise<string[]> {
  const ids: string[] = []
  for (const name of names) ids.push(await insertServer(app, tenantId, name))
  return ids
}

/** The service's "now" in microseconds (the test clock, same process). */
export const serviceNowUs = (app: TestApp) => app.deps.clock.nowUs()
export const timestampIn = (app: TestApp, seconds: number) => formatTimestamp(serviceNowUs(app) + Math.round(seconds * 1_000_000))

/** Headers that present a member's session cookie, a bearer token, or nothing. */
function credentials(caller: Caller): Record<string, string> {
  if (caller === null) return {}
  if (typeof caller === 'string') return { authorization: `Bearer ${caller}` }
  return withSession(caller.session)
}

/** One request to /api/v1 as `caller`. */
export function call(
  app: TestApp,
  method: string,
  path: string,
  caller: Caller,
  opts: { json?: unknown; headers?: Record<string, string> } = {},
): Promise<Response> {
  // A path outside the API (the MCP gateway at /mcp) is given whole, with its leading slash doubled: `//mcp`.
  const url = path.startsWith('//') ? path.slice(1) : `/api/v1${path}`
  return app.fetch(url, { method, json: opts.json, headers: { ...credentials(caller), ...opts.headers } })
}

export type MintedPat = {
  id: string
  token: string
  name: string
  prefix: string
  user_id: string
  scopes: string[]
  server_allowlist: string[] | null
  expires_at: string | null
  created_at: string
  last_used_at: string | null
}

/** Mints a PAT with the member's session; the body defaults to just a name. */
export async function mintPat(app: TestApp, member: Member, body: Record<string, unknown> = {}): Promise<MintedPat> {
  const res = await call(app, 'POST', '/tokens', member, { json: { name: 'test token', ...body } })
  const text = await res.text()
  expect({ status: res.status, body: text }).toMatchObject({ status: 201 })
  return JSON.parse(text) as MintedPat
}

export type AuditItem = {
  id: string
  actor: { kind: string; id: string | null }
  operation: string
  target: { kind: string; id: string | null } | null
  ip: string | null
  user_agent: string | null
  outcome: 'succeeded' | 'denied' | 'failed'
  status: number | null
  request_id: string | null
  created_at: string
}

/** Every audit row the caller can see with these filters, following next_cursor to the end. */
export async function auditRows(app: TestApp, caller: Caller, query: Record<string, string> = {}): Promise<AuditItem[]> {
  const out: AuditItem[] = []
  let cursor: string | null = null
  do {
    const qs = new URLSearchParams({ ...query, limit: '200', ...(cursor ? { cursor } : {}) })
    const res = await call(app, 'GET', `/audit?${qs}`, caller)
    expect(res.status).toBe(200)
    const page = (await res.json()) as { items: AuditItem[]; next_cursor: string | null }
    out.push(...page.items)
    cursor = page.next_cursor
  } while (cursor)
  return out
}

/** Changes one character of a token at `index` to another character of the same alphabet. */
export function mutateAt(token: string, index: number): string {
  const c = token[index]!
  const replacement = c === 'A' ? 'B' : c === '0' ? '1' : c === 'a' ? 'b' : 'A'
  return token.slice(0, index) + replacement + token.slice(index + 1)
}
