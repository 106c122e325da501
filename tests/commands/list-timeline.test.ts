import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startTestApp, type TestApp } from '../support/app'
import {
  cancelCommand,
  commandFrame,
  getCommand,
  issue,
  offlineServer,
  onlineServer,
  report,
  runToEnd,
  steps,
  timeline,
  type CommandView,
} from '../support/commands'
import { api, newOwner, ok, RawAgent, stopApp, type Owner } from '../support/fleet'
import { expectProblem } from '../support/problem'

/** GET /commands (filters, newest first, pagination) and the append-only timeline. */

let app: TestApp
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
})
afterAll(() => stopApp(app))

type Page = { items: CommandView[]; next_cursor: string | null }
const list = async (owner: Owner, query: Record<string, string> = {}) => ok<Page>(await api(app, owner, 'GET', `/commands?${new URLSearchParams(query)}`))

/** Every item of a listing, page by page. */
async function listAll(owner: Owner, query: Record<string, string>, limit: number): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const page: Page = await list(owner, { ...query, limit: String(limit), ...(cursor ? { cursor } : {}) })
    expect(page.items.length).toBeLessThanOrEqual(limit)
    ids.push(...page.items.map((c) => c.command_id))
    cursor = page.next_cursor
    pages++
  } while (cursor)
  return { ids, pages }
}

describe('GET /commands', () => {
  let owner: Owner
  let a: string
  let b: string
  const made: CommandView[] = []
  beforeAll(async () => {
    owner = await newOwner(app, 'lister', 'pro')
    const online = await onlineServer(app, owner)
    a = online.server_id
    b = (await offlineServer(app, owner)).server_id
    for (const [server, type, params] of [
      [a, 'diagnostics.run', {}],
      [b, 'reboot', {}],
      [a, 'gpu.reset', { gpu_index: 0 }],
      [b, 'diagnostics.run', {}],
      [a, 'diagnostics.run', {}],
    ] as const)
      made.push(await issue(app, owner, server, type, params))
    await commandFrame(online.agent, made[4]!.command_id)
    await runToEnd(online.agent, made[0]!.command_id)
    made.push(await issue(app, owner, a, 'agent.restart'))
    await commandFrame(online.agent, made[5]!.command_id)
    await report(online.agent, { type: 'command.log', command_id: made[5]!.command_id, text: 'restarting' })
    await runToEnd(online.agent, made[5]!.command_id, { status: 'failed', error: { code: 'restart_failed', message: 'systemd said no', retryable: true } })
    await report(online.agent, { type: 'command.accepted', command_id: made[2]!.command_id })
    await ok(await cancelCommand(app, owner, made[3]!.command_id))
    // The agent stays connected (stopApp closes it), so made[4] stays sent.
  })

  test("lists the tenant's commands newest first, each as GET /commands/{id} shows it", async () => {
    const page = await list(owner)
    expect(page.items.map((c) => c.command_id)).toEqual(made.map((c) => c.command_id).reverse())
    expect(page.next_cursor).toBeNull()
    for (const item of page.items) expect(item).toEqual(await getCommand(app, owner, item.command_id))
    // A failed command's error carries its log_ref in the list too.
    expect(page.items[0]!.error).toMatchObject({ code: 'restart_failed', log_ref: expect.any(String) })
  })

  test('filters by server_id, delivery_status, execution_status and type, alone and together', async () => {
    const ids = async (q: Record<string, string>) => (await list(owner, q)).items.map((c) => c.command_id)
    const at = (...i: number[]) => i.map((n) => made[n]!.command_id)
    expect(await ids({ server_id: b })).toEqual(at(3, 1))
    expect(await ids({ server_id: a })).toEqual(at(5, 4, 2, 0))
    expect(await ids({ type: 'diagnostics.run' })).toEqual(at(4, 3, 0))
    expect(await ids({ execution_status: 'succeeded' })).toEqual(at(0))
    expect(await ids({ execution_status: 'cancelled' })).toEqual(at(3))
    expect(await ids({ delivery_status: 'accepted' })).toEqual(at(5, 2, 0))
    expect(await ids({ execution_status: 'failed', type: 'agent.restart' })).toEqual(at(5))
    // A command cancelled before delivery keeps the delivery state it had.
    expect(await ids({ delivery_status: 'queued' })).toEqual(at(3, 1))
    expect(await ids({ delivery_status: 'sent' })).toEqual(at(4))
    expect(await ids({ server_id: a, type: 'diagnostics.run', execution_status: 'not_started' })).toEqual(at(4))
    expect(await ids({ type: 'agent.update' })).toEqual([])
  })

  test('pages with limit and next_cursor without gaps or repeats, keeping the filter', async () => {
    const all = await listAll(owner, {}, 2)
    expect(all.ids).toEqual(made.map((c) => c.command_id).reverse())
    expect(all.pages).toBe(3)
    const onA = await listAll(owner, { server_id: a }, 1)
    expect(onA.ids).toEqual([made[5]!, made[4]!, made[2]!, made[0]!].map((c) => c.command_id))
  })

  test('refuses bad query values with 422', async () => {
    await expectProblem(await api(app, owner, 'GET', '/commands?delivery_status=lost'), 422, 'validation_failed')
    await expectProblem(await api(app, owner, 'GET', '/commands?execution_status=done'), 422, 'validation_failed')
    await expectProblem(await api(app, owner, 'GET', '/commands?server_id=nope'), 422, 'validation_failed')
    await expectProblem(await api(app, owner, 'GET', '/commands?limit=201'), 422, 'validation_failed')
    await expectProblem(await api(app, owner, 'GET', `/commands?type=${'x'.repeat(65)}`), 422, 'validation_failed')
    const first = await list(owner, { limit: '1' })
    // A cursor belongs to its listing: reusing it under another filter is refused.
    await expectProblem(await api(app, owner, 'GET', `/commands?server_id=${b}&cursor=${encodeURIComponent(first.next_cursor!)}`), 422, 'validation_failed')
  })

  test('needs a session', async () => {
    await expectProblem(await app.fetch('/api/v1/commands'), 401, 'unauthorized')
  })
})

describe('the timeline', () => {
  test('lists every transition in order, oldest first, page by page', async () => {
    const owner = await newOwner(app, 'timeline', 'pro')
    const { server_id, agent_token, agent } = await onlineServer(app, owner)
    const c = await issue(app, owner, server_id)
    await commandFrame(agent, c.command_id)
    await agent.close()
    const back = (await RawAgent.start(app, agent_token)).agent
    await commandFrame(back, c.command_id)
    await runToEnd(back, c.command_id, { status: 'failed', error: { code: 'boom', message: 'it broke', retryable: true } })

    const expected = [
      'command:>created',
      'delivery:queued>routing',
      'delivery:routing>sent',
      'delivery:sent>queued',
      'delivery:queued>routing',
      'delivery:routing>sent',
      'delivery:sent>accepted',
      'execution:not_started>running',
      'execution:running>failed',
    ]
    const whole = await timeline(app, owner, c.command_id)
    expect(steps(whole)).toEqual(expected)
    const paged = await timeline(app, owner, c.command_id, 2)
    expect(paged).toEqual(whole)
    for (let i = 1; i < whole.length; i++) expect(Date.parse(whole[i]!.at)).toBeGreaterThanOrEqual(Date.parse(whole[i - 1]!.at))
    expect(new Set(whole.map((e) => e.id)).size).toBe(whole.length)
    await back.close()
  })

  test('is append-only: the database refuses to change or remove an entry', async () => {
    const owner = await newOwner(app, 'appendonly', 'pro')
    const { server_id } = await offlineServer(app, owner)
    const c = await issue(app, owner, server_id)
    await ok(await cancelCommand(app, owner, c.command_id))
    const before = await timeline(app, owner, c.command_id)
    expect(steps(before)).toEqual(['command:>created', 'execution:not_started>cancelled'])
    await expect(app.deps.db.run(sql`UPDATE command_timeline SET note = 'rewritten' WHERE command_id = ${c.command_id}`).execute()).rejects.toThrow(
      /append-only/,
    )
    await expect(app.deps.db.run(sql`DELETE FROM command_timeline WHERE command_id = ${c.command_id}`).execute()).rejects.toThrow(/append-only/)
    expect(await timeline(app, owner, c.command_id)).toEqual(before)
  })
})
