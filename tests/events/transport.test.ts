import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, insertServer, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { closeAllClients, LiveClient, RawStream } from '../support/events'
import { newOwner, stopApp } from '../support/fleet'
import { expectProblem } from '../support/problem'

/**
 * Issue 23, "Live events": the stream on the wire. The answer pipeline (compression, the durability
 * barrier, the request log) hands it over untouched and unbuffered, a quiet stream carries comment
 * heartbeats, a tenant's streams are bounded, and stopping the service ends every stream instead of
 * waiting for it.
 */

const STREAMS = 3
let app: TestApp
let owner: Member
beforeAll(async () => {
  app = await startTestApp({ LIVE_STREAM_HEARTBEAT_SECONDS: '1', LIVE_STREAMS_PER_TENANT: String(STREAMS) })
  owner = { ...(await newOwner(app, 'live-wire', 'pro')), role: 'owner' }
})
afterAll(async () => {
  closeAllClients()
  await stopApp(app)
})

describe('on the wire', () => {
  test('an event stream answer, never compressed or cached, with a retry hint and the opening event at once', async () => {
    const raw = await RawStream.open(app, { cookie: owner.session }, { 'accept-encoding': 'gzip, br, zstd' })
    expect(raw.response.status).toBe(200)
    expect(raw.response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    expect(raw.response.headers.get('content-encoding')).toBeNull()
    expect(raw.response.headers.get('cache-control')).toBe('no-store')
    expect(raw.response.headers.get('x-accel-buffering')).toBe('no')
    expect(raw.response.headers.get('x-request-id')).toBeTruthy()
    await raw.until((s) => s.events().length > 0)
    expect(raw.frames[0]).toEqual({ kind: 'retry', ms: 3000 })
    const open = raw.events()[0]!
    expect(open.event).toBe('stream.open')
    expect(open.id).toMatch(/^\d+$/)
    expect(JSON.parse(open.data)).toMatchObject({ type: 'stream.open', last_event_id: open.id, resumed: false, retention_hours: 24 })
    // The request log line is written when the stream opens, like any answer's.
    expect(app.logs.some((l) => l.msg === 'request' && l.route === '/api/v1/events/stream' && l.status === 200)).toBe(true)
    await raw.cancel()
  })

  test('a quiet stream carries a keep-alive comment every heartbeat interval', async () => {
    const raw = await RawStream.open(app, { cookie: owner.session })
    await raw.until((s) => s.frames.filter((f) => f.kind === 'comment').length >= 2, 15_000)
    const comments = raw.frames.filter((f) => f.kind === 'comment')
    expect(new Set(comments.map((f) => (f as { text: string }).text))).toEqual(new Set(['keep-alive']))
    // Comments are not events: an EventSource shows none of them.
    expect(raw.events().map((e) => e.event)).toEqual(['stream.open'])
    await raw.cancel()
  })

  test('an event reaches an open stream while it happens, with its id, type and one line of JSON', async () => {
    const server = await insertServer(app, owner.tenantId, 'wire rig')
    const raw = await RawStream.open(app, { cookie: owner.session })
    await raw.until((s) => s.events().length > 0)
    const res = await call(app, 'POST', '/commands', owner, { json: { server_id: server, type: 'diagnostics.run', params: {} } })
    expect(res.status).toBe(201)
    await raw.until((s) => s.events().some((e) => e.event === 'command.created'))
    const created = raw.events().find((e) => e.event === 'command.created')!
    expect(Number(created.id)).toBeGreaterThan(Number(raw.events()[0]!.id))
    expect(created.data).not.toContain('\n')
    expect(JSON.parse(created.data)).toMatchObject({ type: 'command.created', server_id: server, to: 'created' })
    expect(JSON.parse(created.data).at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/)
    await raw.cancel()
  })

  test('a tenant has at most the configured number of streams open; the next one is 429 with Retry-After', async () => {
    const other = { ...(await newOwner(app, 'live-limit', 'pro')), role: 'owner' as const }
    const open = [] as LiveClient[]
    for (let i = 0; i < STREAMS; i++) open.push(await LiveClient.open(app, { cookie: other.session }))
    const refused = await call(app, 'GET', '/events/stream', other)
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/)
    await expectProblem(refused, 429, 'rate_limited')
    // Another tenant is not counted against it.
    const mine = await LiveClient.open(app, { cookie: owner.session })
    mine.close()
    // A closed stream frees its place.
    open.pop()!.close()
    await Bun.sleep(50)
    const again = await (async () => {
      for (let i = 0; i < 100; i++) {
        const res = await call(app, 'GET', '/events/stream', other)
        if (res.status === 200) return res
        await res.text()
        await Bun.sleep(50)
      }
      return null
    })()
    expect(again?.status).toBe(200)
    await again?.body?.cancel()
    for (const c of open) c.close()
  })
})

describe('stopping the service', () => {
  test('ends every open stream with stream.end (shutdown) instead of waiting for it', async () => {
    const other = await startTestApp({ LOG_LEVEL: 'silent' })
    const member = await newOwner(other, 'live-stop', 'pro')
    const a = await RawStream.open(other, { cookie: member.session })
    const b = await RawStream.open(other, { cookie: member.session })
    await a.until((s) => s.events().length > 0)
    await b.until((s) => s.events().length > 0)
    const closing = other.close()
    const stopped = await Promise.race([closing.then(() => 'stopped'), Bun.sleep(20_000).then(() => 'still waiting')])
    expect(stopped).toBe('stopped')
    await a.done
    await b.done
    for (const s of [a, b]) expect(s.events().at(-1)).toMatchObject({ event: 'stream.end', data: JSON.stringify({ type: 'stream.end', reason: 'shutdown' }) })
  }, 30_000)
})
