import { expect } from 'bun:test'
import type { SQL } from 'drizzle-orm'
import { formatTimestamp } from '../../src/platform/time'
import type { TestApp } from './app'
import { api, enrolAgent, eventually, ok, RawAgent, type Frame, type Owner } from './fleet'

/**
 * Helpers for the command tests. Every step goes through real HTTP and a real agent WebSocket
 * session (RawAgent from fleet.ts); nothing of ours is mocked.
 */

export type CommandView = Record<string, any> & {
  command_id: string
  server_id: string
  type: string
  delivery_status: string
  execution_status: string
  queue_reason: string | null
  version: number
}
export type TimelineEntry = { id: string; at: string; axis: string; from: string | null; to: string; note: string | null }

/** POST /commands as the owner (raw response). */
export function postCommand(app: TestApp, owner: Owner, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Response> {
  return api(app, owner, 'POST', '/commands', { json: body, headers })
}

/** Creates a command and answers it (201 expected). */
export function issue(
  app: TestApp,
  owner: Owner,
  serverId: string,
  type = 'diagnostics.run',
  params: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): Promise<CommandView> {
  return ok<CommandView>(postCommand(app, owner, { server_id: serverId, type, params, ...extra }), 201)
}

export async function getCommand(app: TestApp, owner: Owner, id: string): Promise<CommandView> {
  return ok<CommandView>(await api(app, owner, 'GET', `/commands/${id}`))
}

export function cancelCommand(app: TestApp, owner: Owner, id: string, headers: Record<string, string> = {}): Promise<Response> {
  return api(app, owner, 'POST', `/commands/${id}/cancel`, { headers })
}

/** The whole timeline of a command, following next_cursor. */
export async function timeline(app: TestApp, owner: Owner, id: string, limit = 200): Promise<TimelineEntry[]> {
  const out: TimelineEntry[] = []
  let cursor: string | null = null
  do {
    const qs = new URLSearchParams({ limit: String(limit), ...(cursor ? { cursor } : {}) })
    const page: { items: TimelineEntry[]; next_cursor: string | null } = await ok(await api(app, owner, 'GET', `/commands/${id}/timeline?${qs}`))
    out.push(...page.items)
    cursor = page.next_cursor
  } while (cursor)
  return out
}

/** The timeline as short "axis:from>to" steps, for order checks. */
export const steps = (entries: TimelineEntry[]) => entries.map((e) => `${e.axis}:${e.from ?? ''}>${e.to}`)

/** Polls GET /commands/{id} until `pred` holds (the close of a socket is handled asynchronously). */
export function commandWhen(app: TestApp, owner: Owner, id: string, pred: (c: CommandView) => boolean, timeoutMs = 30_000): Promise<CommandView> {
  return eventually(async () => {
    const c = await getCommand(app, owner, id)
    return pred(c) ? c : null
  }, timeoutMs)
}

/** Runs the commands.expire job now. */
export function runExpire(app: TestApp): Promise<{ outcome: string; detail: string }> {
  return ok(app.fetch('/api/v1/_test/jobs/commands.expire/run', { method: 'POST' }))
}

/** A timestamp `seconds` from the service's now (the test clock of the same process). */
export const inSeconds = (app: TestApp, seconds: number) => formatTimestamp(app.deps.clock.nowUs() + Math.round(seconds * 1_000_000))

/** An enrolled server whose agent has not connected. */
export async function offlineServer(app: TestApp, owner: Owner): Promise<{ server_id: string; agent_token: string }> {
  const e = await enrolAgent(app, owner)
  return { server_id: e.server_id, agent_token: e.agent_token }
}

/** An enrolled server whose agent holds a live session (hello → welcome done). */
export async function onlineServer(app: TestApp, owner: Owner): Promise<{ server_id: string; agent_token: string; agent: RawAgent }> {
  const e = await enrolAgent(app, owner)
  const { agent } = await RawAgent.start(app, e.agent_token)
  return { server_id: e.server_id, agent_token: e.agent_token, agent }
}

/** The `command` frame delivering this command (already received or still to come). */
export function commandFrame(agent: RawAgent, id: string, since = 0, timeoutMs = 30_000): Promise<Frame> {
  return agent.waitFor((f) => f.type === 'command' && f.command_id === id, timeoutMs, since)
}

/** The frames of one type about one command received so far. */
export const framesAbout = (agent: RawAgent, type: string, id: string) => agent.frames.filter((f) => f.type === type && f.command_id === id)

/** Sends agent frames and waits until the service has handled them; answers the error frames they caused. */
export async function report(agent: RawAgent, ...frames: Record<string, unknown>[]): Promise<Frame[]> {
  const since = agent.frames.length
  for (const f of frames) agent.send(f)
  await agent.barrier()
  return agent.frames.slice(since).filter((f) => f.type === 'error')
}

/** Accepts, starts and finishes a command the way an agent does. */
export async function runToEnd(agent: RawAgent, id: string, finished: Record<string, unknown> = { status: 'succeeded', result: { ok: true } }): Promise<void> {
  const errors = await report(
    agent,
    { type: 'command.accepted', command_id: id },
    { type: 'command.started', command_id: id },
    { type: 'command.finished', command_id: id, ...finished },
  )
  expect(errors).toEqual([])
}

export async function rows(app: TestApp, query: SQL): Promise<Record<string, any>[]> {
  return await app.deps.db.all<Record<string, any>>(query)
}
