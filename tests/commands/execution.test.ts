import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startTestApp, type TestApp } from '../support/app'
import { type CommandView, commandFrame, getCommand, issue, onlineServer, report, rows, runToEnd, steps, timeline } from '../support/commands'
import { api, newOwner, ok, stopApp, type Owner } from '../support/fleet'
import { expectProblem } from '../support/problem'

/** The execution axis as the agent reports it: accept, start, progress, logs, finish. */

let app: TestApp
let owner: Owner
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newOwner(app, 'execution', 'pro')
})
afterAll(() => stopApp(app))

async function deliveredCommand(type = 'diagnostics.run', params: Record<string, unknown> = {}) {
  const s = await onlineServer(app, owner)
  const c = await issue(app, owner, s.server_id, type, params)
  await commandFrame(s.agent, c.command_id)
  return { ...s, c, id: c.command_id }
}

const PAT = `gpuhq_pat_${'Ab3'.repeat(12)}`

describe('a command that succeeds', () => {
  test('moves accepted → running → progress → succeeded with its result, the version rising at every change', async () => {
    const { agent, id } = await deliveredCommand('gpu.set_power_limit', { gpu_index: null, watts: 250 })
    const versions = [(await getCommand(app, owner, id)).version]

    expect(await report(agent, { type: 'command.accepted', command_id: id })).toEqual([])
    let now = await getCommand(app, owner, id)
    expect(now).toMatchObject({ delivery_status: 'accepted', execution_status: 'not_started' })
    versions.push(now.version)

    expect(await report(agent, { type: 'command.started', command_id: id })).toEqual([])
    now = await getCommand(app, owner, id)
    expect(now).toMatchObject({ delivery_status: 'accepted', execution_status: 'running', progress: null })
    expect(now.started_at).not.toBeNull()
    versions.push(now.version)

    for (const p of [0, 40, 100]) {
      expect(await report(agent, { type: 'command.progress', command_id: id, progress: p })).toEqual([])
      now = await getCommand(app, owner, id)
      expect(now.progress).toBe(p)
      versions.push(now.version)
    }

    expect(await report(agent, { type: 'command.finished', command_id: id, status: 'succeeded', result: { applied_watts: 250, gpus: 2 } })).toEqual([])
    now = await getCommand(app, owner, id)
    expect(now).toMatchObject({
      delivery_status: 'accepted',
      execution_status: 'succeeded',
      progress: 100,
      result: { applied_watts: 250, gpus: 2 },
      error: null,
    })
    expect(now.finished_at).not.toBeNull()
    versions.push(now.version)
    for (let i = 1; i < versions.length; i++) expect(versions[i]!).toBeGreaterThan(versions[i - 1]!)

    expect(steps(await timeline(app, owner, id))).toEqual([
      'command:>created',
      'delivery:queued>routing',
      'delivery:routing>sent',
      'delivery:sent>accepted',
      'execution:not_started>running',
      'execution:running>succeeded',
    ])
    await agent.close()
  })

  test('GET /commands/{id} carries the version as ETag and answers 304 to If-None-Match until the next change', async () => {
    const { agent, id } = await deliveredCommand()
    const res = await api(app, owner, 'GET', `/commands/${id}`)
    const body = (await res.json()) as CommandView
    expect(res.headers.get('etag')).toBe(`"${body.version}"`)
    const same = await api(app, owner, 'GET', `/commands/${id}`, { headers: { 'if-none-match': `"${body.version}"` } })
    expect(same.status).toBe(304)
    expect(same.headers.get('etag')).toBe(`"${body.version}"`)
    expect(await same.text()).toBe('')

    await report(agent, { type: 'command.accepted', command_id: id })
    const changed = await api(app, owner, 'GET', `/commands/${id}`, { headers: { 'if-none-match': `"${body.version}"` } })
    expect(changed.status).toBe(200)
    expect(((await changed.json()) as CommandView).version).toBe(body.version + 1)
    await agent.close()
  })

  test('a started frame without an accepted frame first counts as accepted too', async () => {
    const { agent, id } = await deliveredCommand()
    expect(await report(agent, { type: 'command.started', command_id: id })).toEqual([])
    expect(await getCommand(app, owner, id)).toMatchObject({ delivery_status: 'accepted', execution_status: 'running' })
    await agent.close()
  })
})

describe('a command that fails', () => {
  test('keeps the error object (code, message, retryable, stage, bounded details) with log_ref pointing at its log', async () => {
    const { agent, id } = await deliveredCommand('gpu.reset', { gpu_index: 1 })
    await report(
      agent,
      { type: 'command.accepted', command_id: id },
      { type: 'command.started', command_id: id },
      { type: 'command.log', command_id: id, text: 'resetting GPU 1' },
      { type: 'command.log', command_id: id, text: 'nvidia-smi: GPU busy\n' },
      {
        type: 'command.finished',
        command_id: id,
        status: 'failed',
        error: {
          code: 'gpu_busy',
          message: 'x'.repeat(3000),
          retryable: true,
          stage: 'reset',
          details: { exit_code: 6, nested: { a: 1 }, list: [1, 2], long: 'y'.repeat(1000) },
          log_ref: 'mine',
        },
      },
    )
    const c = await getCommand(app, owner, id)
    expect(c).toMatchObject({ execution_status: 'failed', result: null })
    expect(c.finished_at).not.toBeNull()
    const e = c.error
    expect(e).toMatchObject({ code: 'gpu_busy', retryable: true, stage: 'reset' })
    expect(e.message.length).toBeLessThanOrEqual(1024)
    expect(e.details.exit_code).toBe(6)
    // details is a small flat object: nested values are dropped and strings are bounded.
    expect(e.details.nested).toBeUndefined()
    expect(e.details.list).toBeUndefined()
    expect(JSON.stringify(e.details).length).toBeLessThan(1024)
    // log_ref is the service's own reference, not whatever the agent claimed.
    expect(e.log_ref).not.toBe('mine')
    expect(e.log_ref.length).toBeLessThanOrEqual(256)

    const log = await ok(await api(app, owner, 'GET', `/commands/${id}/logs/${e.log_ref}`))
    expect(log).toMatchObject({ log_id: e.log_ref, command_id: id, text: 'resetting GPU 1\nnvidia-smi: GPU busy\n', truncated: false })
    expect(log.bytes).toBe(Buffer.byteLength(log.text))
    await expectProblem(await api(app, owner, 'GET', `/commands/${id}/logs/01890000-0000-7000-8000-000000000000`), 404, 'not_found')
    await agent.close()
  })

  test('never stores a secret or raw stdout in the error', async () => {
    const { agent, id } = await deliveredCommand()
    await report(
      agent,
      { type: 'command.accepted', command_id: id },
      {
        type: 'command.finished',
        command_id: id,
        status: 'failed',
        error: {
          code: 'script_failed',
          message: `login with ${PAT} failed: password=hunter2 Authorization: Bearer sekr3t-value`,
          retryable: false,
          stage: null,
          details: { exit_code: 1, token: PAT, hint: 'password=hunter2', stdout: 'line 1\nline 2\n'.repeat(20), stderr: 'trace...' },
        },
      },
    )
    const c = await getCommand(app, owner, id)
    const stored = JSON.stringify(c.error) + JSON.stringify(await rows(app, sql`SELECT error FROM commands WHERE id = ${id}`))
    for (const secret of [PAT, 'hunter2', 'sekr3t-value']) expect(stored).not.toContain(secret)
    expect(c.error.code).toBe('script_failed')
    expect(c.error.details.exit_code).toBe(1)
    expect(c.error.details.stdout).toBeUndefined()
    expect(c.error.details.stderr).toBeUndefined()
    expect(c.error.log_ref ?? null).toBeNull()
    await agent.close()
  })

  test('a repeated or late finished frame never moves a terminal command', async () => {
    const { agent, id } = await deliveredCommand()
    await runToEnd(agent, id, { status: 'succeeded', result: { first: true } })
    const done = await getCommand(app, owner, id)
    const entries = (await timeline(app, owner, id)).length
    expect(
      await report(agent, { type: 'command.finished', command_id: id, status: 'failed', error: { code: 'late', message: 'late', retryable: false } }),
    ).toEqual([])
    expect(await report(agent, { type: 'command.finished', command_id: id, status: 'succeeded', result: { second: true } })).toEqual([])
    expect(await report(agent, { type: 'command.started', command_id: id }, { type: 'command.progress', command_id: id, progress: 10 })).toEqual([])
    expect(await getCommand(app, owner, id)).toEqual(done)
    expect((await timeline(app, owner, id)).length).toBe(entries)
    await agent.close()
  })
})

describe('the command log', () => {
  test('is redacted before it is stored', async () => {
    const { agent, id } = await deliveredCommand()
    await report(
      agent,
      { type: 'command.accepted', command_id: id },
      { type: 'command.log', command_id: id, text: `using token ${PAT}` },
      { type: 'command.log', command_id: id, text: 'db password=hunter2 connected' },
      { type: 'command.log', command_id: id, text: 'curl -H "Authorization: Bearer x" https://example.test' },
      { type: 'command.finished', command_id: id, status: 'failed', error: { code: 'failed', message: 'see log', retryable: false } },
    )
    const c = await getCommand(app, owner, id)
    const log = await ok(await api(app, owner, 'GET', `/commands/${id}/logs/${c.error.log_ref}`))
    const stored = (await rows(app, sql`SELECT text FROM command_logs WHERE command_id = ${id}`))[0]!.text as string
    for (const text of [log.text as string, stored]) {
      expect(text).not.toContain(PAT)
      expect(text).not.toContain('hunter2')
      expect(text).not.toMatch(/Bearer x\b/)
      expect(text).toContain('using token gpuhq_pat_')
      expect(text).toContain('connected')
    }
    expect(log.text.split('\n').length).toBe(4)
    await agent.close()
  })

  test('is bounded to 64 KiB and says it was truncated', async () => {
    const { agent, id } = await deliveredCommand()
    // 25,001 bytes of UTF-8 plus a newline: the 64 KiB limit falls inside a two-byte character of the third line.
    const line = 'a' + 'é'.repeat(10_000) + 'z'.repeat(5_000)
    const frames: Record<string, unknown>[] = [{ type: 'command.accepted', command_id: id }]
    for (let i = 0; i < 4; i++) frames.push({ type: 'command.log', command_id: id, text: line })
    frames.push({ type: 'command.log', command_id: id, text: 'after the limit' })
    frames.push({ type: 'command.finished', command_id: id, status: 'failed', error: { code: 'too_chatty', message: 'm', retryable: false } })
    expect(await report(agent, ...frames)).toEqual([])
    const c = await getCommand(app, owner, id)
    const log = await ok(await api(app, owner, 'GET', `/commands/${id}/logs/${c.error.log_ref}`))
    expect(log.truncated).toBe(true)
    expect(Buffer.byteLength(log.text)).toBeLessThanOrEqual(64 * 1024)
    expect(log.bytes).toBe(Buffer.byteLength(log.text))
    expect(log.text.startsWith(line + '\n' + line + '\n')).toBe(true)
    expect(log.text).not.toContain('after the limit')
    expect(log.text).not.toContain('\uFFFD')
    await agent.close()
  })
})
