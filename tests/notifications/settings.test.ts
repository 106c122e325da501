import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { addMember, call, mintPat, newTenant, type Member } from '../support/access'
import { startAccountsApp, type AccountsApp } from '../support/accounts'
import { codeFrom } from '../support/smtp'

/**
 * Issue 19, notification settings over HTTP, exactly per the spec: both channels always present,
 * rules for the nine categories, quiet hours as HH:MM, email only for the critical categories,
 * partial PUT, version with ETag and If-Match, Idempotency-Key; the email channel connected from the
 * account email at once, or another address only through its code (sent over real SMTP), shown
 * masked; channel pause, resume and disconnect, and no connecting a channel outside its own flow.
 */

const CATEGORIES = ['rental', 'temp', 'error', 'offline', 'price', 'maint', 'balance', 'payment', 'weekly']
const CRITICAL = ['temp', 'error', 'offline', 'balance', 'payment']

type Channel = { kind: string; status: string; destination_masked: string | null; verified_at: string | null; disabled_reason: string | null }
type Settings = {
  channels: { chat: Channel; email: Channel }
  rules: Record<string, { chat: boolean; email: boolean }>
  quiet_hours: { enabled: boolean; from: string; to: string }
  event_keys: string[]
  crit_event_keys: string[]
  version: number
}
type Problem = { code: string; errors?: { path: string; code: string }[] }

let app: AccountsApp
let owner: Member
beforeAll(async () => {
  app = await startAccountsApp()
  owner = await newTenant(app, 'notify')
})
afterAll(() => app.stop())

async function get(caller: Member | string = owner): Promise<{ body: Settings; etag: string | null }> {
  const res = await call(app, 'GET', '/notifications/settings', caller)
  expect(res.status).toBe(200)
  return { body: (await res.json()) as Settings, etag: res.headers.get('etag') }
}
const put = (json: unknown, headers: Record<string, string> = {}, caller: Member | string = owner) =>
  call(app, 'PUT', '/notifications/settings', caller, { json, headers })
const connect = (json: unknown = {}, caller: Member | string = owner) => call(app, 'POST', '/notifications/email/connect', caller, { json })

describe('notification settings', () => {
  test('the defaults: both channels present and not connected, every category with chat on and email only where critical', async () => {
    const { body, etag } = await get()
    expect(etag).toBe('"0"')
    expect(body.channels).toEqual({
      chat: { kind: 'chat', status: 'not_connected', destination_masked: null, verified_at: null, disabled_reason: null },
      email: { kind: 'email', status: 'not_connected', destination_masked: null, verified_at: null, disabled_reason: null },
    })
    expect(Object.keys(body.rules)).toEqual(CATEGORIES)
    for (const c of CATEGORIES) expect(body.rules[c]).toEqual({ chat: true, email: CRITICAL.includes(c) })
    expect(body.quiet_hours).toEqual({ enabled: false, from: '22:00', to: '07:00' })
    expect(body.event_keys).toEqual(CATEGORIES)
    expect(body.crit_event_keys).toEqual(CRITICAL)
    expect(body.version).toBe(0)
  })

  test('a partial PUT changes only what it sends and moves the version', async () => {
    const res = await put({ rules: { price: { chat: false }, temp: { email: false } }, quiet_hours: { enabled: true, from: '23:30', to: '06:15' } })
    expect(res.status).toBe(200)
    expect(res.headers.get('etag')).toBe('"1"')
    const body = (await res.json()) as Settings
    expect(body.rules.price).toEqual({ chat: false, email: false })
    expect(body.rules.temp).toEqual({ chat: true, email: false })
    expect(body.rules.rental).toEqual({ chat: true, email: false })
    expect(body.quiet_hours).toEqual({ enabled: true, from: '23:30', to: '06:15' })
    expect(body.version).toBe(1)
    expect((await get()).body).toEqual(body)
  })

  test('email only for critical categories; bad times, unknown categories and empty bodies are 422, and nothing changes', async () => {
    const before = (await get()).body
    const notCritical = await put({ rules: { weekly: { email: true } } })
    expect(notCritical.status).toBe(422)
    expect(((await notCritical.json()) as Problem).errors?.[0]).toEqual({ path: '/rules/weekly/email', code: 'not_critical' })
    for (const body of [
      { quiet_hours: { enabled: true, from: '24:00', to: '07:00' } },
      { quiet_hours: { enabled: true, from: '7:00', to: '08:00' } },
      { quiet_hours: { enabled: true } },
      { rules: { weather: { chat: true } } },
      { rules: { rental: { sms: true } } },
      { channels: { chat: { status: 'on' } } },
      {},
    ]) {
      const res = await put(body)
      expect(res.status).toBe(422)
    }
    expect((await get()).body).toEqual(before)
  })

  test('If-Match: a stale version is 412; the current one passes; Idempotency-Key replays', async () => {
    const { etag } = await get()
    expect((await put({ rules: { maint: { chat: false } } }, { 'If-Match': '"0"' })).status).toBe(412)
    expect((await put({ rules: { maint: { chat: false } } }, { 'If-Match': etag! })).status).toBe(200)
    const first = await put({ rules: { maint: { chat: true } } }, { 'Idempotency-Key': 'notify-settings-1' })
    const again = await put({ rules: { maint: { chat: true } } }, { 'Idempotency-Key': 'notify-settings-1' })
    expect(await again.json()).toEqual(await first.json())
  })

  test('a channel never connected cannot be set connected or paused through settings', async () => {
    for (const channels of [{ chat: { status: 'connected' } }, { chat: { status: 'paused' } }, { email: { status: 'connected' } }]) {
      const res = await put({ channels })
      expect(res.status).toBe(409)
      expect(((await res.json()) as Problem).code).toBe('conflict')
    }
  })
})

describe('the email channel', () => {
  test('{} connects the account email at once, shown masked and verified', async () => {
    const res = await connect()
    expect(res.status).toBe(200)
    const body = (await res.json()) as { status: string; channel: Channel }
    expect(body.status).toBe('connected')
    expect(body.channel.status).toBe('connected')
    expect(body.channel.destination_masked).toBe(`${owner.email.slice(0, 1)}•••@${owner.email.split('@')[1]}`)
    expect(body.channel.verified_at).not.toBeNull()
    expect((await get()).body.channels.email).toEqual(body.channel)
  })

  test('pause, resume and disconnect through settings', async () => {
    expect(((await (await put({ channels: { email: { status: 'paused' } } })).json()) as Settings).channels.email.status).toBe('paused')
    expect(((await (await put({ channels: { email: { status: 'connected' } } })).json()) as Settings).channels.email.status).toBe('connected')
    const off = (await (await put({ channels: { email: { status: 'not_connected' } } })).json()) as Settings
    expect(off.channels.email).toMatchObject({ status: 'not_connected', destination_masked: null })
    // Disconnected means never-connected again: it cannot just be resumed.
    expect((await put({ channels: { email: { status: 'connected' } } })).status).toBe(409)
  })

  test('another address gets a code over SMTP and is connected only once the code is confirmed', async () => {
    const address = `alerts+${Date.now()}@example.net`
    const sent = await connect({ address })
    expect(sent.status).toBe(200)
    expect(((await sent.json()) as { status: string }).status).toBe('verification_sent')
    expect((await get()).body.channels.email.status).toBe('not_connected')
    const mail = await app.smtp.waitForMail(address)
    const code = codeFrom(mail)
    const wrong = await connect({ address, code: code === '000000' ? '000001' : '000000' })
    expect(wrong.status).toBe(422)
    expect(((await wrong.json()) as Problem).errors?.[0]).toEqual({ path: '/code', code: 'invalid_code' })
    const ok = await connect({ address, code })
    expect(ok.status).toBe(200)
    const channel = ((await ok.json()) as { channel: Channel }).channel
    expect(channel).toMatchObject({ status: 'connected', destination_masked: 'a•••@example.net' })
    // The code is spent.
    expect((await connect({ address, code })).status).toBe(422)
  })

  test('a code tried too often stops working, even the right one', async () => {
    const address = `tries+${Date.now()}@example.net`
    await connect({ address })
    const code = codeFrom(await app.smtp.waitForMail(address))
    for (let i = 0; i < 5; i++) expect((await connect({ address, code: code === '111111' ? '222222' : '111111' })).status).toBe(422)
    expect((await connect({ address, code })).status).toBe(422)
  })

  test('settings can start the verification of a new address; the channel keeps its destination meanwhile', async () => {
    const before = (await get()).body.channels.email
    const address = `viasettings+${Date.now()}@example.org`
    const res = await put({ channels: { email: { address } } })
    expect(res.status).toBe(200)
    expect(((await res.json()) as Settings).channels.email).toEqual(before)
    const code = codeFrom(await app.smtp.waitForMail(address))
    expect((await connect({ address, code })).status).toBe(200)
    expect((await get()).body.channels.email.destination_masked).toBe('v•••@example.org')
  })
})

describe('who may', () => {
  test('members read; only an admin or owner (a token: notifications:write) changes; other tenants see their own', async () => {
    const viewer = await addMember(app, owner.tenantId, 'viewer')
    expect((await get(viewer)).body.version).toBeGreaterThan(0)
    expect((await put({ rules: { rental: { chat: false } } }, {}, viewer)).status).toBe(403)
    const token = (await mintPat(app, owner, { scopes: ['notifications:read'] })).token
    expect((await get(token)).body.version).toBeGreaterThan(0)
    expect((await put({ rules: { rental: { chat: false } } }, {}, token)).status).toBe(403)
    const stranger = await newTenant(app, 'notify-stranger')
    expect((await get(stranger)).body.version).toBe(0)
    expect((await call(app, 'GET', '/notifications/settings', null)).status).toBe(401)
  })
})
