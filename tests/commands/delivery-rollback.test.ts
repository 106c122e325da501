import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../support/app'
import { framesAbout, issue, offlineServer, runExpire, runToEnd } from '../support/commands'
import { newOwner, RawAgent, type Owner } from '../support/fleet'
import { onPostgres } from '../support/postgres'

/**
 * Command frames go out after the transaction that marks them sent has committed, never from inside
 * it (src/modules/commands/commands.delivery.ts): a transaction that fails after its first command
 * was marked must not have told the agent anything. On PostgreSQL a statement of that transaction
 * can fail on a row another connection holds (lock_timeout) or lose a serialization conflict and
 * run again; on SQLite the write lock is taken before the first statement, so only PostgreSQL can
 * show it.
 */
describe.skipIf(!onPostgres)('a delivery transaction that fails sends nothing', () => {
  let app: TestApp
  let owner: Owner
  beforeAll(async () => {
    app = await startTestApp({ LOG_LEVEL: 'silent' })
    owner = await newOwner(app, 'rollback', 'pro')
  })
  afterAll(async () => {
    for (const agent of RawAgent.live) await agent.close()
    await app?.close()
  })

  test('the first command is not sent by an attempt that failed on the second; the next dispatch sends each once', async () => {
    const { server_id, agent_token } = await offlineServer(app, owner)
    const first = await issue(app, owner, server_id, 'reboot')
    const second = await issue(app, owner, server_id, 'reboot')
    // Another connection holds the second command's row, so the delivery at hello marks the first
    // and then fails on the second (lock_timeout): the whole transaction rolls back.
    const sql = new Bun.SQL(app.databaseUrl, { max: 1 })
    const held = await sql.reserve()
    await held`BEGIN`
    await held`UPDATE commands SET version = version WHERE id = ${second.command_id}`
    const { agent } = await RawAgent.start(app, agent_token)
    await agent.barrier()
    expect(agent.frames.some((f) => f.type === 'error' && f.code === 'internal_error')).toBe(true)
    expect(framesAbout(agent, 'command', first.command_id)).toEqual([])
    const stored = (await (await app.fetch(`/api/v1/commands/${first.command_id}`, { headers: owner.headers })).json()) as { delivery_status: string }
    expect(stored.delivery_status).toBe('queued')
    await held`ROLLBACK`
    held.release()
    await sql.close()
    // commands.expire delivers what waits on a live session: now both go, each once.
    await runExpire(app)
    await agent.barrier()
    expect(framesAbout(agent, 'command', first.command_id)).toHaveLength(1)
    expect(framesAbout(agent, 'command', second.command_id)).toHaveLength(1)
    for (const c of [first, second]) await runToEnd(agent, c.command_id)
    await agent.close()
  })
})
