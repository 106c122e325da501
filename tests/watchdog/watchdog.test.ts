import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { clockTo } from '../support/billing'
import { commandFrame, getCommand, onlineServer } from '../support/commands'
import { startTestApp, type TestApp } from '../support/app'
import { api, insertSecondTenant, newOwner, ok, serverEvents, stopApp, type Owner, type RawAgent } from '../support/fleet'
import { expectProblem } from '../support/problem'

/**
 * The watchdog (docs/watchdog.md) over real HTTP with real agent sessions: rules, the ladder
 * notify → restart the container runtime → reboot → give up and page under the test clock, its
 * limits per hour and day, the rental rule, rules turned off, tenants kept apart, bad input.
 */

let app: TestApp
let owner: Owner
const MIN = 60

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newOwner(app, 'watchdog', 'pro')
  // Early in a UTC day, so hours of test clock never cross midnight.
  const day = Math.floor(app.deps.clock.nowUs() / 86_400_000_000) + 1
  await clockTo(app, day * 86_400_000_000 + 3_600_000_000)
})
afterAll(() => stopApp(app))

const advance = (seconds: number) => ok(app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } }))
const evaluate = () => ok<{ outcome: string; detail: string }>(app.fetch('/api/v1/_test/jobs/watchdog.evaluate/run', { method: 'POST' }))
const nowIso = () => new Date(app.deps.clock.nowUs() / 1000).toISOString()

/** A live server whose presence is online (its first heartbeat). */
async function idleServer() {
  const s = await onlineServer(app, owner)
  s.agent.heartbeat()
  await s.agent.barrier()
  return s
}

/** The agent reports an Xid from the kernel log, a second after the last thing the watchdog did. */
async function xid(agent: RawAgent, n = 79) {
  await advance(1)
  agent.event('gpu.xid', 'critical', `NVRM: Xid (PCI:0000:3b:00): ${n}, pid=0, GPU has fallen off the bus.`, {
    xid: n,
    meaning: 'GPU has fallen off the bus',
    pci_bus_id: '0000:3b:00',
    detail: 'GPU has fallen off the bus.',
    gpu_index: 0,
  })
  await agent.barrier()
}

const LADDER = [
  { action: 'notify', settle_minutes: 10 },
  { action: 'restart_runtime', settle_minutes: 10 },
  { action: 'reboot', settle_minutes: 15 },
]

function createRule(body: Record<string, unknown>, who: Owner = owner) {
  return api(app, who, 'POST', '/watchdog/rules', { json: body })
}
async function xidRule(serverId: string, extra: Record<string, unknown> = {}) {
  return ok(createRule({ name: 'Xid 79', enabled: true, server_id: serverId, condition: { kind: 'xid', xids: [79] }, steps: LADDER, ...extra }), 201)
}
const getRule = async (id: string) => ok(await api(app, owner, 'GET', `/watchdog/rules/${id}`))

/** The commands the watchdog issued on the server (issued by the system, naming the rule). */
async function watchdogCommands(serverId: string, ruleId: string): Promise<any[]> {
  const page = await ok(await api(app, owner, 'GET', `/commands?server_id=${serverId}&limit=200`))
  return page.items.filter((c: any) => c.issued_by.type === 'system' && c.issued_by.id === ruleId).reverse()
}
async function watchdogEvents(serverId: string): Promise<any[]> {
  const page = await serverEvents(app, owner, serverId, { limit: '200' })
  return page.items.filter((e: any) => e.kind.startsWith('watchdog.')).reverse()
}

describe('on an idle server', () => {
  test('the ladder climbs notify → restart → reboot → page, one rung per settle time, each within its limits', async () => {
    const { server_id, agent } = await idleServer()
    const rule = await xidRule(server_id)
    expect(rule).toMatchObject({ enabled: true, states: [], recent_steps: [], allow_during_rental: false })
    expect(rule.steps).toEqual([
      { action: 'notify', settle_minutes: 10, max_per_hour: 1, max_per_day: 3 },
      { action: 'restart_runtime', settle_minutes: 10, max_per_hour: 1, max_per_day: 3 },
      { action: 'reboot', settle_minutes: 15, max_per_hour: 1, max_per_day: 3 },
    ])

    await evaluate()
    expect((await getRule(rule.id)).states).toEqual([])

    // T0: an Xid 79 → notify.
    await xid(agent)
    await evaluate()
    let r = await getRule(rule.id)
    expect(r.states).toEqual([expect.objectContaining({ server_id, status: 'active', next_action: 'restart_runtime', hold_reason: null })])
    expect(r.recent_steps[0]).toMatchObject({ action: 'notify', outcome: 'done', command_id: null })
    expect(await watchdogCommands(server_id, rule.id)).toEqual([])
    const notes = await ok(await api(app, owner, 'GET', '/notifications/history?limit=50'))
    expect(notes.items.some((n: any) => n.category === 'error' && n.title.startsWith('Watchdog'))).toBe(true)

    // Within the settle time nothing more happens, however often it is evaluated.
    await xid(agent)
    await evaluate()
    expect((await getRule(rule.id)).recent_steps).toHaveLength(1)

    // T10: it still holds (another Xid) → restart the container runtime.
    await advance(10 * MIN)
    await xid(agent)
    await evaluate()
    let cmds = await watchdogCommands(server_id, rule.id)
    expect(cmds.map((c) => c.type)).toEqual(['docker.restart'])
    expect(cmds[0]).toMatchObject({ requires: 'after_rental', issued_by: { type: 'system', id: rule.id }, delivery_status: 'sent' })
    await commandFrame(agent, cmds[0].command_id)

    // T20 → reboot.
    await advance(10 * MIN)
    await xid(agent)
    await evaluate()
    cmds = await watchdogCommands(server_id, rule.id)
    expect(cmds.map((c) => c.type)).toEqual(['docker.restart', 'reboot'])
    expect((await commandFrame(agent, cmds[1].command_id)).command_type).toBe('reboot')

    // T35: still Xids after the reboot's settle time → it gives up and pages.
    await advance(15 * MIN)
    await xid(agent)
    await evaluate()
    r = await getRule(rule.id)
    expect(r.states[0]).toMatchObject({ status: 'gave_up', next_action: null })
    expect(r.recent_steps[0]).toMatchObject({ action: 'page', outcome: 'done' })
    const events = await watchdogEvents(server_id)
    expect(events.map((e) => e.kind)).toEqual(['watchdog.notified', 'watchdog.action', 'watchdog.action', 'watchdog.gave_up'])
    expect(events[3]).toMatchObject({ severity: 'critical', data: expect.objectContaining({ rule_id: rule.id }) })
    expect(events[1].data).toMatchObject({ rule_id: rule.id, command_id: cmds[0].command_id, command_type: 'docker.restart' })

    // Given up: nothing more while it holds (an Xid within the settle time, then one after it).
    await xid(agent)
    await evaluate()
    await advance(15 * MIN)
    await evaluate()
    expect((await getRule(rule.id)).recent_steps).toHaveLength(4)
    expect((await getRule(rule.id)).states[0]).toMatchObject({ status: 'gave_up' })

    // T65: no Xid for a whole settle time → the ladder resets.
    await advance(15 * MIN)
    await evaluate()
    expect((await getRule(rule.id)).states).toEqual([])
    expect((await watchdogEvents(server_id)).at(-1).kind).toBe('watchdog.recovered')

    expect(await watchdogCommands(server_id, rule.id)).toHaveLength(2)
    expect((await watchdogEvents(server_id)).filter((e) => e.kind === 'watchdog.gave_up')).toHaveLength(1)
    await agent.close()
  })

  test('a rung over its hourly or daily limit is passed over: the ladder gives up and pages instead', async () => {
    const { server_id, agent } = await idleServer()
    const rule = await xidRule(server_id, { steps: [{ action: 'reboot', settle_minutes: 5, max_per_hour: 1, max_per_day: 2 }] })
    const seen: string[] = []
    // Occurrences 0, 6, 72 and 140 minutes in; each resets once no Xid came for a settle time.
    for (const gap of [0, 0, 60, 62]) {
      await advance(gap * MIN)
      await xid(agent)
      await evaluate()
      const r = await getRule(rule.id)
      seen.push(`${(await watchdogCommands(server_id, rule.id)).length} ${r.recent_steps[0].action}:${r.recent_steps[0].outcome}`)
      await advance(6 * MIN)
      await evaluate()
      expect((await getRule(rule.id)).states).toEqual([])
    }
    // A reboot; within the hour a second is refused (page); an hour on, the second; the third of the day is refused (page).
    expect(seen).toEqual(['1 reboot:done', '1 page:done', '2 reboot:done', '2 page:done'])
    const limited = (await getRule(rule.id)).recent_steps.filter((s: any) => s.outcome === 'rate_limited').map((s: any) => s.note)
    expect(limited).toEqual([
      '0 in the last hour, 2 in 24 hours: at most 1 an hour and 2 a day',
      '1 in the last hour, 1 in 24 hours: at most 1 an hour and 2 a day',
    ])
    await agent.close()
  })

  test('GPU missing: a GPU the agent reports gone starts the ladder, and its return resets it', async () => {
    const { server_id, agent } = await idleServer()
    const rule = await ok(
      createRule({ name: 'GPU missing', enabled: true, server_id, condition: { kind: 'gpu_missing' }, steps: [{ action: 'notify', settle_minutes: 5 }] }),
      201,
    )
    expect(rule.condition).toEqual({ kind: 'gpu_missing', expected_gpus: null })
    await evaluate()
    expect((await getRule(rule.id)).states).toEqual([])
    agent.event('gpu.missing', 'critical', 'GPU 1 (NVIDIA GeForce RTX 4090) no longer appears in nvidia-smi', { gpu_index: 1, uuid: 'GPU-x-1' })
    await agent.barrier()
    await evaluate()
    const r = await getRule(rule.id)
    expect(r.recent_steps[0]).toMatchObject({ action: 'notify', outcome: 'done', note: '1 of 2 GPUs answer (missing: GPU 1)' })
    agent.event('gpu.returned', 'info', 'GPU 1 appears in nvidia-smi again', { gpu_index: 1, uuid: 'GPU-x-1' })
    await agent.barrier()
    await advance(5 * MIN + 1)
    await evaluate()
    expect((await getRule(rule.id)).states).toEqual([])
    await agent.close()
  })

  test('utilisation stuck: a GPU at 100 % for the rule’s minutes starts the ladder', async () => {
    const { server_id, agent } = await idleServer()
    const rule = await ok(
      createRule({
        name: 'stuck',
        enabled: true,
        server_id,
        condition: { kind: 'utilisation_stuck', minutes: 10 },
        steps: [{ action: 'notify', settle_minutes: 5 }],
      }),
      201,
    )
    expect(rule.condition).toEqual({ kind: 'utilisation_stuck', band: 'high', at_least_pct: 100, minutes: 10 })
    const sample = async (pct: number) => {
      agent.telemetry({ 0: { utilization_pct: pct }, 1: { utilization_pct: 3 } }, undefined, nowIso())
      await agent.barrier()
      await evaluate()
    }
    await sample(100)
    await advance(5 * MIN)
    await sample(100)
    expect((await getRule(rule.id)).states).toEqual([])
    await advance(5 * MIN)
    await sample(100)
    expect((await getRule(rule.id)).recent_steps[0]).toMatchObject({ action: 'notify', note: 'GPU 0 at or above 100 % for 10 minutes or more' })
    await agent.close()
  })
})

describe('on a rented server', () => {
  test('the watchdog only notifies; restarts and reboots wait for the rental to end', async () => {
    const { server_id, agent } = await idleServer()
    await ok(await api(app, owner, 'PATCH', `/servers/${server_id}`, { json: { rental_active: true } }))
    const rule = await xidRule(server_id)
    await xid(agent)
    await evaluate()
    for (let i = 0; i < 3; i++) {
      await advance(15 * MIN)
      await xid(agent)
      await evaluate()
    }
    expect(await watchdogCommands(server_id, rule.id)).toEqual([])
    const r = await getRule(rule.id)
    expect(r.states[0]).toMatchObject({ status: 'held', hold_reason: 'rental_running', next_action: 'restart_runtime' })
    // Said once: notified, then held; nothing more while the rental runs.
    expect((await watchdogEvents(server_id)).map((e) => e.kind)).toEqual(['watchdog.notified', 'watchdog.held'])

    // The rental ends; the condition still holds → the ladder goes on.
    await ok(await api(app, owner, 'PATCH', `/servers/${server_id}`, { json: { rental_active: false } }))
    await xid(agent)
    await evaluate()
    expect((await watchdogCommands(server_id, rule.id)).map((c) => c.type)).toEqual(['docker.restart'])
    await agent.close()
  })

  test('a rule that allows actions during rentals restarts with requires none', async () => {
    const { server_id, agent } = await idleServer()
    await ok(await api(app, owner, 'PATCH', `/servers/${server_id}`, { json: { rental_active: true } }))
    const rule = await xidRule(server_id, { allow_during_rental: true, steps: [{ action: 'restart_runtime' }] })
    await xid(agent)
    await evaluate()
    const [c] = await watchdogCommands(server_id, rule.id)
    expect(c).toMatchObject({ type: 'docker.restart', requires: 'none', delivery_status: 'sent' })
    expect((await getCommand(app, owner, c.command_id)).issued_by).toEqual({ type: 'system', id: rule.id })
    await agent.close()
  })
})

describe('rules', () => {
  test('a rule turned off does nothing, and turning one off mid-ladder forgets where it stood', async () => {
    const { server_id, agent } = await idleServer()
    const off = await ok(createRule({ name: 'off', server_id, condition: { kind: 'xid', xids: [79] }, steps: LADDER }), 201)
    expect(off.enabled).toBe(false)
    await xid(agent)
    await evaluate()
    expect((await getRule(off.id)).recent_steps).toEqual([])
    expect(await watchdogEvents(server_id)).toEqual([])

    const on = await xidRule(server_id)
    await xid(agent)
    await evaluate()
    expect((await getRule(on.id)).states).toHaveLength(1)
    const patched = await ok(
      await api(app, owner, 'PATCH', `/watchdog/rules/${on.id}`, { json: { enabled: false }, headers: { 'if-match': `"${on.version}"` } }),
    )
    expect(patched).toMatchObject({ enabled: false, states: [], version: on.version + 1 })
    await advance(10 * MIN)
    await xid(agent)
    await evaluate()
    expect(await watchdogCommands(server_id, on.id)).toEqual([])
    await expectProblem(await api(app, owner, 'PATCH', `/watchdog/rules/${on.id}`, { json: { name: 'x' }, headers: { 'if-match': '"1"' } }), 412, 'conflict')
    await agent.close()
  })

  test('a rule on a group covers the servers in it and no other', async () => {
    const inGroup = await idleServer()
    const outside = await idleServer()
    const group = await ok(await api(app, owner, 'POST', '/groups', { json: { name: 'watched rigs' } }), 201)
    await ok(await api(app, owner, 'PATCH', `/servers/${inGroup.server_id}`, { json: { group_id: group.id } }))
    const rule = await ok(createRule({ name: 'group Xid', enabled: true, group_id: group.id, condition: { kind: 'xid', xids: [79] }, steps: LADDER }), 201)
    await xid(inGroup.agent)
    await xid(outside.agent)
    await evaluate()
    expect((await getRule(rule.id)).states.map((s: any) => s.server_id)).toEqual([inGroup.server_id])
    expect(await watchdogEvents(outside.server_id)).toEqual([])
    await inGroup.agent.close()
    await outside.agent.close()
  })

  test('the default rules are listed off, once, and cannot be deleted', async () => {
    const fresh = await newOwner(app, 'watchdog-defaults', 'pro')
    const first = await ok(await api(app, fresh, 'GET', '/watchdog/rules'))
    expect(first.items.map((r: any) => [r.preset, r.enabled])).toEqual([
      ['gpu_missing', false],
      ['xid_79', false],
      ['utilisation_stuck', false],
    ])
    const again = await ok(await api(app, fresh, 'GET', '/watchdog/rules'))
    expect(again.items.map((r: any) => r.id)).toEqual(first.items.map((r: any) => r.id))
    await expectProblem(await api(app, fresh, 'DELETE', `/watchdog/rules/${first.items[0].id}`), 409, 'conflict')
    const on = await ok(await api(app, fresh, 'PATCH', `/watchdog/rules/${first.items[1].id}`, { json: { enabled: true } }))
    expect(on.enabled).toBe(true)
  })

  test("another tenant's rule is a 404 on every route", async () => {
    const { server_id, agent } = await idleServer()
    const rule = await xidRule(server_id)
    const stranger = await insertSecondTenant(app)
    await expectProblem(await api(app, stranger, 'GET', `/watchdog/rules/${rule.id}`), 404, 'not_found')
    await expectProblem(await api(app, stranger, 'PATCH', `/watchdog/rules/${rule.id}`, { json: { enabled: false } }), 404, 'not_found')
    await expectProblem(await api(app, stranger, 'DELETE', `/watchdog/rules/${rule.id}`), 404, 'not_found')
    const theirs = await ok(await api(app, stranger, 'GET', '/watchdog/rules'))
    expect(theirs.items.some((r: any) => r.id === rule.id)).toBe(false)
    // Nor may another tenant aim a rule at this tenant's server.
    const aimed = await expectProblem(
      await createRule({ name: 'x', server_id, condition: { kind: 'xid', xids: [79] }, steps: LADDER }, stranger),
      422,
      'validation_failed',
    )
    expect(aimed.errors).toEqual([{ path: '/server_id', code: 'unknown_server' }])
    expect((await getRule(rule.id)).enabled).toBe(true)
    await ok(await api(app, owner, 'DELETE', `/watchdog/rules/${rule.id}`), 204)
    await expectProblem(await api(app, owner, 'GET', `/watchdog/rules/${rule.id}`), 404, 'not_found')
    await agent.close()
  })

  test('a token limited to servers sees and writes the rules of its servers only', async () => {
    const mine = await idleServer()
    const other = await idleServer()
    const onMine = await xidRule(mine.server_id)
    const onOther = await xidRule(other.server_id)
    const minted = await ok(
      await api(app, owner, 'POST', '/tokens', { json: { name: 'one rig', scopes: ['servers:read', 'commands:write'], server_allowlist: [mine.server_id] } }),
      201,
    )
    const pat: Owner = { ...owner, headers: { authorization: `Bearer ${minted.token}` } }
    const listed = await ok(await api(app, pat, 'GET', '/watchdog/rules'))
    expect(listed.items.map((r: any) => r.id)).toEqual([onMine.id])
    expect((await ok(await api(app, pat, 'GET', `/watchdog/rules/${onMine.id}`))).server_id).toBe(mine.server_id)
    // Another of the tenant's servers: its rule does not exist for the token, nor may a body name it.
    await expectProblem(await api(app, pat, 'GET', `/watchdog/rules/${onOther.id}`), 404, 'not_found')
    await expectProblem(await api(app, pat, 'PATCH', `/watchdog/rules/${onOther.id}`, { json: { enabled: false } }), 404, 'not_found')
    await expectProblem(await api(app, pat, 'PATCH', `/watchdog/rules/${onMine.id}`, { json: { server_id: other.server_id } }), 404, 'not_found')
    await expectProblem(
      await createRule({ name: 'x', server_id: other.server_id, condition: { kind: 'xid', xids: [79] }, steps: LADDER }, pat),
      404,
      'not_found',
    )
    // A rule on every server (a default one among them) reaches beyond the allowlist.
    const preset = (await ok(await api(app, owner, 'GET', '/watchdog/rules'))).items.find((r: any) => r.preset === 'xid_79')
    await expectProblem(await api(app, pat, 'PATCH', `/watchdog/rules/${preset.id}`, { json: { enabled: true } }), 403, 'forbidden')
    await expectProblem(await createRule({ name: 'x', condition: { kind: 'xid', xids: [79] }, steps: LADDER }, pat), 403, 'forbidden')
    await expectProblem(await api(app, pat, 'PATCH', `/watchdog/rules/${onMine.id}`, { json: { server_id: null } }), 403, 'forbidden')
    // Its own server's rule it may change.
    expect((await ok(await api(app, pat, 'PATCH', `/watchdog/rules/${onMine.id}`, { json: { enabled: false } }))).enabled).toBe(false)
    expect((await getRule(onOther.id)).enabled).toBe(true)
    expect((await getRule(preset.id)).enabled).toBe(false)
    for (const r of [onMine, onOther]) await ok(await api(app, owner, 'DELETE', `/watchdog/rules/${r.id}`), 204)
    await mine.agent.close()
    await other.agent.close()
  })

  test('bad input is a 422 with a pointer per problem, and nothing is stored', async () => {
    const before = (await ok(await api(app, owner, 'GET', '/watchdog/rules'))).items.length
    const cases: [Record<string, unknown>, string][] = [
      [{ condition: { kind: 'xid' } }, '/condition/xids'],
      [{ condition: { kind: 'gpu_missing', xids: [79] } }, '/condition/xids'],
      [{ condition: { kind: 'utilisation_stuck', band: 'zero', at_least_pct: 90 } }, '/condition/at_least_pct'],
      [{ condition: { kind: 'xid', xids: [70000] } }, '/condition/xids/0'],
      [{ steps: [{ action: 'reboot', max_per_hour: 5, max_per_day: 2 }] }, '/steps/0/max_per_day'],
      [{ steps: [{ action: 'explode' }] }, '/steps/0/action'],
      [{ steps: [] }, '/steps'],
      [{ server_id: '0190a0a0-0000-7000-8000-000000000000' }, '/server_id'],
      [{ server_id: '0190a0a0-0000-7000-8000-000000000000', group_id: '0190a0a0-0000-7000-8000-000000000001' }, '/group_id'],
    ]
    for (const [patch, pointer] of cases) {
      const doc = await expectProblem(
        await createRule({ name: 'bad', condition: { kind: 'xid', xids: [79] }, steps: LADDER, ...patch }),
        422,
        'validation_failed',
      )
      expect({ patch, paths: doc.errors!.map((e) => e.path) }).toEqual({ patch, paths: expect.arrayContaining([pointer]) })
    }
    expect((await ok(await api(app, owner, 'GET', '/watchdog/rules'))).items.length).toBe(before)
  })
})
