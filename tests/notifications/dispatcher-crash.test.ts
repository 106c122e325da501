import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { insertServer } from '../support/access'
import { startTestApp, type TestApp, workerEnv } from '../support/app'
import { api, eventually, newOwner, ok, type Owner } from '../support/fleet'
import { startTelegram, type FakeTelegram } from '../support/telegram'

/**
 * Issue 19: "a dispatcher killed mid-batch delivering each message exactly once after restart".
 * notifications.dispatch runs in its own process (the jobs-only worker, built like the service)
 * over six queued chat deliveries; the Bot API fake accepts three and holds the fourth unanswered;
 * the process is killed with SIGKILL while that send is in flight. After the claim expires a new
 * process sends the rest: every message reaches the chat exactly once, the three sent before the
 * kill are not repeated, and the one in flight is sent again because Telegram never accepted it.
 *
 * (What no outbox can settle: a kill after Telegram accepted a message but before the process
 * recorded it resends that one message, since sendMessage has no idempotency key;
 * docs/notifications.md "Delivery" says so.)
 */

const WORKER = join(import.meta.dir, '../support/jobs-worker.ts')
const TOKEN = '818181:AAE-gpuhq-crash-token-1357911'
const CHAT = 61_000_818
const RIGS = ['rig-a', 'rig-b', 'rig-c', 'rig-d', 'rig-e', 'rig-f']

let tg: FakeTelegram
let app: TestApp
let owner: Owner

const spawnDispatch = () =>
  Bun.spawn([process.execPath, 'run', WORKER, 'notifications.dispatch'], {
    env: workerEnv(app, { PAYMENT_PROVIDERS: 'sandbox', TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_URL: tg.url }),
    stdout: 'pipe',
    stderr: 'pipe',
  })

type Delivery = { id: string; channel: string; status: string; attempts: number }
type Item = { id: string; title: string; deliveries: Delivery[] }
const maintItems = async () =>
  (await ok<{ items: Item[] }>(await api(app, owner, 'GET', '/notifications/history?limit=50'))).items.filter((i) => i.title.startsWith('Maintenance declared'))
const sentTitles = () => tg.sent.filter((m) => m.chat_id === CHAT).map((m) => m.text.split('\n')[0]!)

beforeAll(async () => {
  tg = await startTelegram({ token: TOKEN })
  app = await startTestApp({ TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_URL: tg.url, LOG_LEVEL: 'silent' })
  owner = await newOwner(app, 'crash', 'pro')
  const { code } = await ok<{ code: string }>(await api(app, owner, 'POST', '/notifications/chat/link'), 201)
  tg.userSends({ id: CHAT, first_name: 'Ops' }, code)
  await ok(app.fetch('/api/v1/_test/jobs/notifications.dispatch/run', { method: 'POST' }))
  tg.sent.splice(0)
  // Six notifications from their real cause, queued (nothing dispatches them yet).
  for (const name of RIGS) {
    const id = await insertServer(app, owner.tenantId, name)
    await ok(await api(app, owner, 'PUT', `/servers/${id}/maintenance`, { json: { reason: 'crash test' } }))
  }
})
afterAll(async () => {
  await app.close()
  await tg.close()
})

describe('a dispatcher killed mid-batch', () => {
  test('delivers each message exactly once after a restart', async () => {
    expect((await maintItems()).flatMap((i) => i.deliveries.map((d) => d.status))).toEqual(Array(6).fill('queued'))
    tg.holdSendsAfter(3)
    const first = spawnDispatch()
    await eventually(() => tg.heldSends() > 0 || first.exitCode !== null, undefined, 50)
    expect(tg.heldSends()).toBe(1)
    first.kill('SIGKILL')
    expect(await first.exited).not.toBe(0)
    expect(first.signalCode).toBe('SIGKILL')
    tg.releaseHeld()

    // Three accepted and recorded; the fourth was claimed by the dead process and is still queued.
    expect(sentTitles()).toHaveLength(3)
    const afterKill = (await maintItems()).flatMap((i) => i.deliveries)
    expect(afterKill.filter((d) => d.status === 'sent')).toHaveLength(3)
    expect(afterKill.filter((d) => d.status === 'queued')).toHaveLength(3)
    expect(afterKill.every((d) => (d.status === 'sent' ? d.attempts === 1 : d.attempts === 0))).toBe(true)

    // Within the dead process's claim nothing is sent again (a live dispatcher elsewhere may own it).
    await ok(app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: 60 } }))
    const early = spawnDispatch()
    expect(await early.exited).toBe(0)
    expect(sentTitles()).toHaveLength(3)

    // Past the claim (and the job's lease), a new process delivers the rest.
    await ok(app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: 121 } }))
    const second = spawnDispatch()
    const [code, out, err] = await Promise.all([second.exited, new Response(second.stdout).text(), new Response(second.stderr).text()])
    expect({ code, err }).toMatchObject({ code: 0 })
    expect(JSON.parse(out.trim().split('\n').pop()!)).toMatchObject({ job: 'notifications.dispatch', outcome: 'succeeded' })

    const titles = sentTitles()
    expect(titles).toHaveLength(6)
    expect(new Set(titles)).toEqual(new Set(RIGS.map((r) => `Maintenance declared: ${r}`)))
    const final = (await maintItems()).flatMap((i) => i.deliveries)
    expect(final.map((d) => [d.status, d.attempts])).toEqual(Array(6).fill(['sent', 1]))
  }, 60_000)
})
