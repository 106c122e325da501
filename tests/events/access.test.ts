import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { withTransaction } from '../../db/client'
import { recordServerEvent } from '../../src/modules/fleet'
import { call, insertServer, mintPat, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { closeAllClients, LiveClient, RawStream } from '../support/events'
import { newOwner, stopApp } from '../support/fleet'
import { createTopup, sandboxPay } from '../support/payments'
import { expectProblem } from '../support/problem'

/**
 * Issue 23, "Live events": who sees what on the stream. The stream is filtered by the access check
 * every route uses (scope per area, the token's server allowlist), per tenant, and it needs a
 * credential: a cookie session or a PAT, checked again while it is open.
 */

let app: TestApp
let owner: Member
let a: string
let b: string
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent', LIVE_STREAM_HEARTBEAT_SECONDS: '1', LIVE_STREAM_POLL_MS: '100' })
  const o = await newOwner(app, 'live-access', 'pro')
  owner = { ...o, role: 'owner' }
  a = await insertServer(app, owner.tenantId, 'rig a')
  b = await insertServer(app, owner.tenantId, 'rig b')
})
afterAll(async () => {
  closeAllClients()
  await stopApp(app)
})

/** Issues a command to a server of the owner's (its agent is offline: the command is created and waits). */
async function command(member: Member, serverId: string): Promise<string> {
  const res = await call(app, 'POST', '/commands', member, { json: { server_id: serverId, type: 'diagnostics.run', params: {} } })
  expect(res.status).toBe(201)
  return ((await res.json()) as { command_id: string }).command_id
}

describe('what a token sees', () => {
  test('a token allowlisted to server A never sees an event of server B', async () => {
    const { token } = await mintPat(app, owner, { scopes: ['servers:read', 'commands:read'], server_allowlist: [a] })
    const client = await LiveClient.open(app, { token })
    const onB = await command(owner, b)
    const onA = await command(owner, a)
    // Events arrive in id order: once A's (written later) is here, B's would have come before it.
    await client.waitFor((e) => e.data.command_id === onA)
    expect(client.changes().map((e) => e.data.server_id)).toEqual([a])
    expect(JSON.stringify(client.events)).not.toContain(b)
    expect(JSON.stringify(client.events)).not.toContain(onB)
    client.close()
  })

  test('each area needs its read scope: a commands token gets commands, not presence; a billing token gets top-ups, not commands', async () => {
    const commands = (await mintPat(app, owner, { scopes: ['commands:read'] })).token
    const billing = (await mintPat(app, owner, { scopes: ['billing:read'] })).token
    const cmdClient = await LiveClient.open(app, { token: commands })
    const billingClient = await LiveClient.open(app, { token: billing })

    // A presence transition, recorded by fleet's own code as the sweep does, then a command.
    await withTransaction(app.deps.db, (tx) =>
      recordServerEvent(
        tx,
        app.deps,
        { id: a, tenantId: owner.tenantId },
        { kind: 'presence.suspect', message: 'suspect: no heartbeat', data: { from: 'online' } },
      ),
    )
    const id = await command(owner, a)
    // A top-up that succeeds, paid at the sandbox's checkout.
    const topup = await createTopup(app, owner, '10.00', 'card')
    await sandboxPay(app, topup, 'finished')

    await cmdClient.waitFor((e) => e.type === 'command.created' && e.data.command_id === id)
    const credited = await billingClient.waitFor((e) => e.type === 'topup.succeeded')
    expect(credited.data).toMatchObject({ topup_id: topup.id, status: 'succeeded', amount_usd: '10.00', credited_usd: '10.00', payment_method: 'card' })
    // A later command: once the commands token has it, it is past the top-up and the presence step, and saw neither.
    const later = await command(owner, a)
    await cmdClient.waitFor((e) => e.data.command_id === later)
    expect(cmdClient.changes().every((e) => e.type.startsWith('command.'))).toBe(true)
    expect(billingClient.changes().map((e) => e.type)).toEqual(['topup.succeeded'])
    cmdClient.close()
    billingClient.close()
  })

  test('a top-up that is not credited is told too (expired), to billing readers only', async () => {
    const { token } = await mintPat(app, owner, { scopes: ['billing:read'] })
    const client = await LiveClient.open(app, { token })
    const topup = await createTopup(app, owner, '5.00', 'card')
    await sandboxPay(app, topup, 'expired')
    const expired = await client.waitFor((e) => e.type === 'topup.expired')
    expect(expired.data).toMatchObject({ topup_id: topup.id, status: 'expired', amount_usd: '5.00', credited_usd: null })
    client.close()
  })

  test('the stream needs at least one of its scopes; an allowlisted token cannot count on billing', async () => {
    const strategy = (await mintPat(app, owner, { scopes: ['strategy:read'] })).token
    await expectProblem(await call(app, 'GET', '/events/stream', strategy), 403, 'forbidden')
    // Billing spans every server: a token limited to servers gets no top-ups, so billing alone is not enough.
    const limited = (await mintPat(app, owner, { scopes: ['billing:read'], server_allowlist: [a] })).token
    await expectProblem(await call(app, 'GET', '/events/stream', limited), 403, 'forbidden')
  })

  test("another tenant's events never appear", async () => {
    const stranger = { ...(await newOwner(app, 'live-stranger', 'pro')), role: 'owner' as const }
    const theirs = await insertServer(app, stranger.tenantId, 'their rig')
    const client = await LiveClient.open(app, { cookie: owner.session })
    const foreign = await command(stranger, theirs)
    const mine = await command(owner, a)
    await client.waitFor((e) => e.data.command_id === mine)
    expect(JSON.stringify(client.events)).not.toContain(foreign)
    expect(JSON.stringify(client.events)).not.toContain(theirs)
    client.close()
  })
})

describe('credentials', () => {
  test('a browser session cookie follows the stream, every area its role reads', async () => {
    const client = await LiveClient.open(app, { cookie: owner.session })
    const id = await command(owner, b)
    const created = await client.waitFor((e) => e.type === 'command.created')
    expect(created.data).toMatchObject({ command_id: id, server_id: b, axis: 'command', from: null, to: 'created', queue_reason: 'server_offline' })
    client.close()
  })

  test('without credentials, or with an unknown token, the stream is 401', async () => {
    const none = await app.fetch('/api/v1/events/stream')
    await expectProblem(none, 401, 'unauthorized')
    expect(none.headers.get('www-authenticate')).toContain('Bearer')
    await expectProblem(await call(app, 'GET', '/events/stream', 'gpuhq_pat_not-a-real-token'), 401, 'unauthorized')
  })

  test('revoking the token ends its open stream (stream.end), and reconnecting is 401', async () => {
    const pat = await mintPat(app, owner, { scopes: ['servers:read'] })
    const raw = await RawStream.open(app, { token: pat.token })
    expect(raw.response.status).toBe(200)
    await raw.until((s) => s.events().some((e) => e.event === 'stream.open'))
    expect((await call(app, 'DELETE', `/tokens/${pat.id}`, owner)).status).toBe(204)
    await raw.until((s) => s.ended, 15_000)
    expect(raw.events().at(-1)).toMatchObject({ event: 'stream.end', data: JSON.stringify({ type: 'stream.end', reason: 'unauthorized' }) })
    await expectProblem(await call(app, 'GET', '/events/stream', pat.token), 401, 'unauthorized')
  })

  test('a session that expires ends its stream', async () => {
    const me = { ...(await newOwner(app, 'live-expiring', 'pro')), role: 'owner' as const }
    const raw = await RawStream.open(app, { cookie: me.session })
    await raw.until((s) => s.events().some((e) => e.event === 'stream.open'))
    // Past the absolute lifetime of a session (30 days by default).
    await app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: 31 * 86400 } })
    await raw.until((s) => s.ended, 15_000)
    expect(raw.events().at(-1)?.event).toBe('stream.end')
  })
})
