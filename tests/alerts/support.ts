import { expect } from 'bun:test'
import { call, type Caller, type Member } from '../support/access'
import type { TestApp } from '../support/app'
import type { Owner } from '../support/fleet'

/** Helpers of the alerts tests: every read and write goes through real HTTP as a member or a token. */

export type Incident = {
  id: string
  kind: string
  cause_key: string
  severity: 'info' | 'warning' | 'critical'
  state: 'open' | 'acknowledged' | 'resolved'
  server_id: string | null
  marketplace: string | null
  title: string
  detail: string
  opened_at: string
  last_seen_at: string
  occurrences: number
  acknowledged_at: string | null
  acknowledged_by: string | null
  resolved_at: string | null
  resolved_by: string | null
  resolution: string | null
  notifications: { id: string; category: string; title: string; created_at: string }[]
}
export type Page = { items: Incident[]; next_cursor: string | null }

/** An owner made by the fleet helpers, as the access helpers' caller. */
export const asMember = (o: Owner): Member => ({ userId: o.userId, tenantId: o.tenantId, email: o.email, role: 'owner', session: o.session })

async function json<T>(res: Response, status = 200): Promise<T> {
  const text = await res.text()
  expect({ status: res.status, body: text }).toMatchObject({ status })
  return JSON.parse(text) as T
}

/** One page of GET /alerts. */
export async function alertsPage(app: TestApp, caller: Caller, query: Record<string, string> = {}): Promise<Page> {
  return json<Page>(await call(app, 'GET', `/alerts?${new URLSearchParams(query)}`, caller))
}

/** Every incident GET /alerts lists with these filters, following next_cursor. */
export async function alerts(app: TestApp, caller: Caller, query: Record<string, string> = {}): Promise<Incident[]> {
  const out: Incident[] = []
  let cursor: string | null = null
  do {
    const page: Page = await alertsPage(app, caller, { ...query, limit: '200', ...(cursor ? { cursor } : {}) })
    out.push(...page.items)
    cursor = page.next_cursor
  } while (cursor)
  return out
}

export async function alert(app: TestApp, caller: Caller, id: string): Promise<Incident> {
  return json<Incident>(await call(app, 'GET', `/alerts/${id}`, caller))
}

export async function acknowledge(app: TestApp, caller: Caller, id: string): Promise<Incident> {
  return json<Incident>(await call(app, 'POST', `/alerts/${id}/acknowledge`, caller))
}

export async function resolve(app: TestApp, caller: Caller, id: string, body?: { note?: string }): Promise<Incident> {
  return json<Incident>(await call(app, 'POST', `/alerts/${id}/resolve`, caller, { json: body }))
}

/** Runs a scheduled job now through the test clock's route; answers its detail. */
export async function runJob(app: TestApp, job: string): Promise<string> {
  const body = await json<{ outcome: string; detail: string }>(await app.fetch(`/api/v1/_test/jobs/${job}/run`, { method: 'POST' }))
  expect(body.outcome).toBe('succeeded')
  return body.detail
}

export const evaluate = (app: TestApp) => runJob(app, 'alerts.evaluate')

/** What a run of alerts.evaluate reports when the state it saw had not changed since the last run. */
export const NOTHING_CHANGED = '0 incidents opened, 0 repeats counted, 0 resolved, 0 linked to new notifications'

export async function advance(app: TestApp, seconds: number): Promise<void> {
  await json(await app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } }))
}

/** Polls until `check` answers something (an async reaction, such as a WebSocket closing, has run); at most 5 s. */
export async function waitFor<T>(check: () => Promise<T | null | undefined>, what: string): Promise<T> {
  for (let i = 0; i < 250; i++) {
    const v = await check()
    if (v !== null && v !== undefined) return v
    await Bun.sleep(20)
  }
  throw new Error(`still waiting for ${what} after 5 s`)
}
