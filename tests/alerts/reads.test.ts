import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { addMember, auditRows, call, type Caller, type Member, mintPat, newTenant } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { onlineServer } from '../support/commands'
import { closeAllAgents, newOwner, type Owner } from '../support/fleet'
import { acknowledge, advance, alert, alerts, alertsPage, asMember, type Incident, resolve, waitFor } from './support'

/**
 * Issue 21, reading and handling incidents: GET /alerts newest first with its filters and cursor
 * pages, GET /alerts/{id}, acknowledge and resolve with their rules and audit rows, and who may do
 * what: roles and scopes, a token's server allowlist, another tenant. The incidents come from real
 * causes: errors two agents report over their WebSockets, and one of them going offline.
 */

let app: TestApp
let owner: Owner
let me: Member
let viewer: Member
let operator: Member
let serverA: string
let serverB: string
/** Newest first: B offline, B xid, A fatal (critical), A ecc, A xid. */
let all: Incident[]

async function problem(res: Response, status: number, code: string) {
  const body = (await res.json()) as { status: number; code: string; errors?: { path: string; code: string }[] }
  expect({ status: res.status, code: body.code }).toEqual({ status, code })
  return body
}

beforeAll(async () => {
  app = await startTestApp()
  owner = await newOwner(app, 'alerts-reads', 'pro')
  me = asMember(owner)
  viewer = await addMember(app, owner.tenantId, 'viewer')
  operator = await addMember(app, owner.tenantId, 'operator')
  const a = await onlineServer(app, owner)
  const b = await onlineServer(app, owner)
  serverA = a.server_id
  serverB = b.server_id
  b.agent.heartbeat()
  await b.agent.barrier()
  for (const [agent, kind, severity] of [
    [a.agent, 'xid', 'error'],
    [a.agent, 'ecc', 'error'],
    [a.agent, 'fatal', 'critical'],
    [b.agent, 'xid', 'error'],
  ] as const) {
    await advance(app, 10)
    agent.event(kind, severity, `${kind} reported`)
    await agent.barrier()
  }
  await advance(app, 10)
  await b.agent.close()
  all = await waitFor(async () => {
    const l = await alerts(app, me)
    return l.length === 5 ? l : null
  }, 'five incidents')
})
afterAll(async () => {
  await closeAllAgents()
  await app.close()
})

const causes = (list: Incident[]) => list.map((i) => i.cause_key)

describe('listing incidents', () => {
  test('newest first; each filter narrows the list and filters combine', async () => {
    expect(causes(all)).toEqual([
      `offline:${serverB}`,
      `agent_error:${serverB}:agent.xid`,
      `agent_error:${serverA}:agent.fatal`,
      `agent_error:${serverA}:agent.ecc`,
      `agent_error:${serverA}:agent.xid`,
    ])
    expect(causes(await alerts(app, me, { kind: 'agent_error' }))).toEqual(causes(all.slice(1)))
    expect(causes(await alerts(app, me, { kind: 'offline' }))).toEqual(causes(all.slice(0, 1)))
    expect(causes(await alerts(app, me, { server_id: serverB }))).toEqual(causes(all.slice(0, 2)))
    expect(causes(await alerts(app, me, { server_id: serverB, kind: 'agent_error' }))).toEqual(causes(all.slice(1, 2)))
    expect(causes(await alerts(app, me, { severity: 'critical' }))).toEqual(causes([all[0]!, all[2]!]))
    expect(causes(await alerts(app, me, { since: all[3]!.opened_at }))).toEqual(causes(all.slice(0, 4)))
    expect(causes(await alerts(app, me, { until: all[3]!.opened_at }))).toEqual(causes(all.slice(4)))
    expect(causes(await alerts(app, me, { since: all[3]!.opened_at, until: all[1]!.opened_at }))).toEqual(causes(all.slice(2, 4)))
    expect(await alerts(app, me, { marketplace: 'marketplace_a' })).toEqual([])
  })

  test('pages follow next_cursor to the end without a repeat; a cursor belongs to its filters', async () => {
    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const page = await alertsPage(app, me, { limit: '2', ...(cursor ? { cursor } : {}) })
      seen.push(...page.items.map((i) => i.id))
      cursor = page.next_cursor
      pages++
    } while (cursor)
    expect(pages).toBe(3)
    expect(seen).toEqual(all.map((i) => i.id))
    const first = await alertsPage(app, me, { limit: '2' })
    const res = await call(app, 'GET', `/alerts?limit=2&kind=agent_error&cursor=${encodeURIComponent(first.next_cursor!)}`, me)
    expect((await problem(res, 422, 'validation_failed')).errors?.[0]).toEqual({ path: '/cursor', code: 'invalid_cursor' })
  })

  test('a filter that is not one is 422 naming it', async () => {
    expect((await problem(await call(app, 'GET', '/alerts?since=yesterday', me), 422, 'validation_failed')).errors?.[0]).toEqual({
      path: '/since',
      code: 'format',
    })
    expect((await problem(await call(app, 'GET', '/alerts?until=2026-13-01T00:00:00Z', me), 422, 'validation_failed')).errors?.[0]?.path).toBe('/until')
    expect((await problem(await call(app, 'GET', '/alerts?state=closed', me), 422, 'validation_failed')).errors?.[0]?.path).toBe('/state')
    expect((await problem(await call(app, 'GET', '/alerts?kind=fire', me), 422, 'validation_failed')).errors?.[0]?.path).toBe('/kind')
    expect((await problem(await call(app, 'GET', `/alerts/not-an-id`, me), 422, 'validation_failed')).errors?.[0]?.path).toBe('/id')
  })
})

describe('acknowledging and resolving', () => {
  test('the state filters follow them: open, acknowledged, resolved, unresolved', async () => {
    const [, , , ecc, xid] = all
    await acknowledge(app, operator, xid!.id)
    await resolve(app, operator, ecc!.id)
    expect(causes(await alerts(app, me, { state: 'open' }))).toEqual(causes(all.slice(0, 3)))
    expect(causes(await alerts(app, me, { state: 'acknowledged' }))).toEqual([xid!.cause_key])
    expect(causes(await alerts(app, me, { state: 'resolved' }))).toEqual([ecc!.cause_key])
    expect(causes(await alerts(app, me, { state: 'unresolved' }))).toEqual(causes([...all.slice(0, 3), xid!]))
  })

  test('resolving by hand keeps the note and the member, is audited, and answers a resolved incident unchanged', async () => {
    const fatal = all[2]!
    const done = await resolve(app, me, fatal.id, { note: 'card replaced' })
    expect(done).toMatchObject({ state: 'resolved', resolved_by: owner.userId, resolution: 'card replaced', acknowledged_at: null })
    expect(await resolve(app, operator, fatal.id, { note: 'something else' })).toEqual(done)
    expect(await alert(app, viewer, fatal.id)).toEqual(done)
    const rows = (await auditRows(app, me, { operation: 'alerts.resolve' })).filter((r) => r.target?.id === fatal.id)
    expect(rows.map((r) => [r.actor.kind, r.actor.id, r.outcome])).toEqual([
      ['user', operator.userId, 'succeeded'],
      ['user', owner.userId, 'succeeded'],
    ])
    const refused = await call(app, 'POST', `/alerts/${fatal.id}/acknowledge`, operator)
    await problem(refused, 409, 'conflict')
    expect((await auditRows(app, me, { operation: 'POST /api/v1/alerts/:id/acknowledge' })).map((r) => [r.outcome, r.status])).toEqual([['failed', 409]])
  })

  test('a note must be text a person reads, and the body takes nothing else', async () => {
    const target = all[1]!.id
    expect(
      (await problem(await call(app, 'POST', `/alerts/${target}/resolve`, me, { json: { note: 'ok\u202Eexe' } }), 422, 'validation_failed')).errors?.[0],
    ).toEqual({
      path: '/note',
      code: 'pattern',
    })
    expect(
      (await problem(await call(app, 'POST', `/alerts/${target}/resolve`, me, { json: { state: 'resolved' } }), 422, 'validation_failed')).errors?.[0],
    ).toEqual({
      path: '/state',
      code: 'unknown_field',
    })
    expect((await alert(app, me, target)).state).toBe('open')
  })
})

describe('who may read and handle incidents', () => {
  test('a viewer reads them but may not acknowledge or resolve; an operator may', async () => {
    const target = all[1]!.id
    expect((await alert(app, viewer, target)).id).toBe(target)
    await problem(await call(app, 'POST', `/alerts/${target}/acknowledge`, viewer), 403, 'forbidden')
    await problem(await call(app, 'POST', `/alerts/${target}/resolve`, viewer, { json: {} }), 403, 'forbidden')
    expect((await acknowledge(app, operator, target)).state).toBe('acknowledged')
  })

  test('a token reads with notifications:read and acknowledges or resolves with notifications:write', async () => {
    const target = all[0]!.id
    const servers = (await mintPat(app, me, { name: 'servers only', scopes: ['servers:read'] })).token
    const reader = (await mintPat(app, me, { name: 'reader', scopes: ['notifications:read'] })).token
    const handler = await mintPat(app, me, { name: 'handler', scopes: ['notifications:read', 'notifications:write'] })
    await problem(await call(app, 'GET', '/alerts', servers), 403, 'forbidden')
    expect((await alertsPage(app, reader)).items).toHaveLength(5)
    await problem(await call(app, 'POST', `/alerts/${target}/acknowledge`, reader), 403, 'forbidden')
    const acked = await acknowledge(app, handler.token, target)
    // A token acts for the member who made it.
    expect(acked).toMatchObject({ state: 'acknowledged', acknowledged_by: owner.userId })
    const rows = (await auditRows(app, me, { operation: 'alerts.acknowledge' })).filter((r) => r.target?.id === target)
    expect(rows.map((r) => [r.actor.kind, r.actor.id])).toEqual([['pat', handler.id]])
  })

  test("a token limited to one server sees that server's incidents only; the others answer 404 wherever they are named", async () => {
    const token = (await mintPat(app, me, { name: 'server A', scopes: ['notifications:read', 'notifications:write'], server_allowlist: [serverA] })).token
    const seen = await alerts(app, token)
    expect(seen.map((i) => i.server_id)).toEqual([serverA, serverA, serverA])
    const listed = await call(app, 'GET', '/alerts?limit=200', token)
    expect((await listed.text()).includes(serverB)).toBe(false)
    expect(await alerts(app, token, { server_id: serverB })).toEqual([])
    const ofB = all[0]!.id
    await problem(await call(app, 'GET', `/alerts/${ofB}`, token), 404, 'not_found')
    await problem(await call(app, 'POST', `/alerts/${ofB}/acknowledge`, token), 404, 'not_found')
    await problem(await call(app, 'POST', `/alerts/${ofB}/resolve`, token, { json: {} }), 404, 'not_found')
    expect((await alert(app, token, all[4]!.id)).server_id).toBe(serverA)
  })

  test("another tenant's incident is a plain 404, and its list is its own", async () => {
    const stranger: Caller = await newTenant(app, 'alerts-stranger')
    const id = all[0]!.id
    await problem(await call(app, 'GET', `/alerts/${id}`, stranger), 404, 'not_found')
    await problem(await call(app, 'POST', `/alerts/${id}/acknowledge`, stranger), 404, 'not_found')
    await problem(await call(app, 'POST', `/alerts/${id}/resolve`, stranger, { json: { note: 'not mine' } }), 404, 'not_found')
    expect(await alerts(app, stranger)).toEqual([])
    expect(await alert(app, me, id)).toMatchObject({ id, resolved_at: null })
  })
})
