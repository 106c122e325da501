import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { startTestApp, type TestApp } from '../support/app'
import { advance, mailTo, newEmail, post, startAccountsApp, verifyCode, type AccountsApp } from '../support/accounts'
import { closedPortUrl } from '../support/captcha'
import { codeFrom, parseMessage } from '../support/smtp'
import { createAccount } from '../../src/modules/accounts/admin.service'

/**
 * Mail (issue "Mail"): SMTP through nodemailer when SMTP_URL is set, else files in DATA_DIR/mail/;
 * plain-text and HTML bodies with the code alone on its line; sent after the response through an
 * outbox, retried with backoff; a down mail server never fails the HTTP request.
 */

type OutboxRow = { status: string; attempts: number; next_attempt_at: number; last_error: string | null; sent_at: number | null; template: string }
const outbox = async (app: TestApp, to: string) => (await app.deps.db.get(sql`SELECT * FROM mail_outbox WHERE "to" = ${to}`)) as OutboxRow
const nowUs = (app: TestApp) => app.deps.clock.nowUs()

describe('mail over SMTP', () => {
  let app: AccountsApp
  beforeAll(async () => {
    app = await startAccountsApp()
  })
  afterAll(() => app.stop())
  beforeEach(async () => {
    app.smtp.refuse(false)
    await advance(app, 3600)
  })

  test('a code mail has a plain-text and an HTML body, the code alone on its own line, from the configured sender', async () => {
    const email = newEmail('bodies')
    expect((await post(app, '/auth/signup/start', { email, tenant_name: 'T' })).status).toBe(202)
    const mail = await mailTo(app, email)
    expect(mail.headers['content-type']).toStartWith('multipart/alternative')
    expect(mail.headers.from).toBe('gpuhq <no-reply@gpuhq.test>')
    expect(mail.headers['message-id']).toMatch(/^<[0-9a-f-]{36}@gpuhq>$/)
    const code = codeFrom(mail)
    const lines = mail.text.split('\n')
    expect(lines).toContain(code)
    expect(lines.filter((l) => l.includes(code))).toEqual([code])
    expect(mail.html).toContain(`<b>${code}</b>`)
    expect(mail.text).toContain('valid for 10 minutes')
    expect(await outbox(app, email)).toMatchObject({ status: 'sent', attempts: 1, template: 'signup_code', last_error: null })
  })

  test('once sent, the outbox keeps no word of the message: the code it carried is not at rest', async () => {
    const email = newEmail('forget')
    expect((await post(app, '/auth/signup/start', { email, tenant_name: 'T' })).status).toBe(202)
    const code = codeFrom(await mailTo(app, email))
    const row = (await outbox(app, email)) as unknown as Record<string, unknown>
    expect(row.status).toBe('sent')
    expect(JSON.stringify(row)).not.toContain(code)
    expect(row).toMatchObject({ subject: '[signup_code]', text: '', html: '' })
  })

  test('a mail server that refuses (451) never fails the request; the message is retried with backoff and delivered once the server is back', async () => {
    app.smtp.refuse(true)
    const email = newEmail('retry')
    const res = await post(app, '/auth/signup/start', { email, tenant_name: 'T' })
    expect(res.status).toBe(202)

    await app.deps.mail.idle()
    await app.deps.mail.dispatchDue()
    const first = await outbox(app, email)
    expect(first).toMatchObject({ status: 'pending', attempts: 1 })
    expect(first.last_error).toContain('451')
    expect(first.next_attempt_at).toBeGreaterThan(nowUs(app) + 20e6)
    expect(app.smtp.refusedCount()).toBeGreaterThanOrEqual(1)

    // Not due yet: nothing is tried again.
    expect(await app.deps.mail.dispatchDue()).toBe(0)
    expect((await outbox(app, email)).attempts).toBe(1)

    await advance(app, 31)
    expect(await app.deps.mail.dispatchDue()).toBe(0)
    const second = await outbox(app, email)
    expect(second).toMatchObject({ status: 'pending', attempts: 2 })
    // The wait grew: 30 s after the first failure, 60 s after the second.
    expect(second.next_attempt_at - nowUs(app)).toBeGreaterThan(50e6)

    app.smtp.refuse(false)
    expect(await app.deps.mail.dispatchDue()).toBe(0) // still waiting out the delay
    await advance(app, 61)
    expect(await app.deps.mail.dispatchDue()).toBe(1)
    expect(await outbox(app, email)).toMatchObject({ status: 'sent', attempts: 3, last_error: null })
    const code = codeFrom(await app.smtp.waitForMail(email))
    // The code it carries still works: only 92 s have passed.
    expect(await verifyCode(app, 'signup', email, code)).toBeString()
  })

  test('after 10 failed attempts a message is marked failed and no longer tried', async () => {
    app.smtp.refuse(true)
    const email = newEmail('gives-up')
    // A message without a code (the address has an account: signup_taken), so it is retried for
    // hours; a code mail is dropped once its code expires ("mail at rest" below).
    await createAccount({ deps: app.deps, input: { email, tenantName: 'T' } })
    expect((await post(app, '/auth/signup/start', { email, tenant_name: 'T' })).status).toBe(202)
    await app.deps.mail.idle()
    for (let i = 0; (await outbox(app, email)).attempts < 10 && i < 20; i++) {
      await advance(app, 3601)
      await app.deps.mail.dispatchDue()
    }
    expect(await outbox(app, email)).toMatchObject({ status: 'failed', attempts: 10 })
    app.smtp.refuse(false)
    await advance(app, 3601)
    await app.deps.mail.dispatchDue()
    expect(app.smtp.to(email)).toHaveLength(0)
    expect((await outbox(app, email)).attempts).toBe(10)
  })

  test('two dispatches running at once send each message only once', async () => {
    const email = newEmail('once')
    app.smtp.refuse(true)
    expect((await post(app, '/auth/signup/start', { email, tenant_name: 'T' })).status).toBe(202)
    await app.deps.mail.idle()
    app.smtp.refuse(false)
    await advance(app, 31)
    await Promise.all([app.deps.mail.dispatchDue(), app.deps.mail.dispatchDue(), app.deps.mail.dispatchDue()])
    await app.deps.mail.idle()
    expect(app.smtp.to(email)).toHaveLength(1)
  })

  test('the notifications.dispatch job sends what is due', async () => {
    const email = newEmail('job')
    app.smtp.refuse(true)
    expect((await post(app, '/auth/signup/start', { email, tenant_name: 'T' })).status).toBe(202)
    await app.deps.mail.idle()
    app.smtp.refuse(false)
    await advance(app, 31)
    const run = await app.fetch('/api/v1/_test/jobs/notifications.dispatch/run', { method: 'POST' })
    expect(run.status).toBe(200)
    const body = (await run.json()) as { job: string; outcome: string; detail: string }
    expect(body).toMatchObject({ job: 'notifications.dispatch', outcome: 'succeeded' })
    // The job also links chats and sends notification deliveries; the mail outbox's count ends its detail.
    expect(body.detail).toEndWith('; 1 mails sent')
    expect(app.smtp.to(email)).toHaveLength(1)
  })
})

describe('mail at rest while the mail server is down (issue 13, finding 11)', () => {
  let app: AccountsApp
  beforeAll(async () => {
    app = await startAccountsApp()
  })
  afterAll(() => app.stop())
  beforeEach(async () => {
    app.smtp.refuse(false)
    await advance(app, 3600)
  })

  type Row = Record<string, unknown> & { sealed_body: Uint8Array | null; expires_at: number | null; created_at: number }
  const rowOf = async (to: string) => (await app.deps.db.get(sql`SELECT * FROM mail_outbox WHERE "to" = ${to}`)) as Row
  /** Every byte of the row as text: the columns, and the sealed box as latin1 and as base64. */
  const atRest = (r: Row) =>
    JSON.stringify({ ...r, sealed_body: null }) +
    (r.sealed_body ? Buffer.from(r.sealed_body).toString('latin1') + Buffer.from(r.sealed_body).toString('base64') : '')

  test('a waiting code mail keeps no word of its message in plaintext: the code is nowhere in its row, and it is delivered intact once the server is back', async () => {
    app.smtp.refuse(true)
    const email = newEmail('at-rest')
    expect((await post(app, '/auth/signup/start', { email, tenant_name: 'T' })).status).toBe(202)
    await app.deps.mail.idle()
    await app.deps.mail.dispatchDue()
    const waiting = await rowOf(email)
    expect(waiting).toMatchObject({ status: 'pending', attempts: 1, template: 'signup_code', subject: '[signup_code]', text: '', html: '' })
    expect(waiting.sealed_body).not.toBeNull()
    expect(waiting.expires_at).toBe(waiting.created_at + 600 * 1_000_000)

    app.smtp.refuse(false)
    await advance(app, 31)
    expect(await app.deps.mail.dispatchDue()).toBe(1)
    const mail = await app.smtp.waitForMail(email)
    const code = codeFrom(mail)
    expect(mail.subject).toBe(`Your gpuhq sign-up code: ${code}`)
    expect(atRest(waiting)).not.toContain(code)
    expect(await rowOf(email)).toMatchObject({ status: 'sent', sealed_body: null })
    expect(await verifyCode(app, 'signup', email, code)).toBeString()
  })

  test('a code mail still waiting when its code expires is dropped, not sent, once the server is back', async () => {
    app.smtp.refuse(true)
    const email = newEmail('expired')
    expect((await post(app, '/auth/signup/start', { email, tenant_name: 'T' })).status).toBe(202)
    await app.deps.mail.idle()
    await app.deps.mail.dispatchDue()
    expect(await rowOf(email)).toMatchObject({ status: 'pending', attempts: 1 })

    await advance(app, 601) // the code's 10 minutes are over
    app.smtp.refuse(false)
    expect(await app.deps.mail.dispatchDue()).toBe(0)
    await advance(app, 3601)
    await app.deps.mail.dispatchDue()
    expect(app.smtp.to(email)).toHaveLength(0)
    expect(await rowOf(email)).toMatchObject({ status: 'dropped', attempts: 1, sealed_body: null, sent_at: null })
  })
})

describe('mail to a server that is not listening', () => {
  let app: TestApp
  beforeAll(async () => {
    app = await startTestApp({ SIGNUP_ENABLED: 'true', SMTP_URL: `smtp://${new URL(await closedPortUrl()).host}?starttls=false` })
  })
  afterAll(async () => {
    await app.deps.mail.idle()
    await app.close()
  })

  test('signup start still answers 202 and the message waits in the outbox for a retry', async () => {
    const email = newEmail('no-server')
    expect((await post(app, '/auth/signup/start', { email, tenant_name: 'T' })).status).toBe(202)
    await app.deps.mail.idle()
    await app.deps.mail.dispatchDue()
    const row = await outbox(app, email)
    expect(row).toMatchObject({ status: 'pending', attempts: 1 })
    expect(row.last_error).toMatch(/ECONNREFUSED|connect/i)
    expect(row.next_attempt_at).toBeGreaterThan(nowUs(app))
  })
})

describe('mail without SMTP_URL', () => {
  let app: TestApp
  beforeAll(async () => {
    app = await startTestApp({ SIGNUP_ENABLED: 'true' })
  })
  afterAll(async () => {
    await app.deps.mail.idle()
    await app.close()
  })

  test('the message lands in DATA_DIR/mail/ readable only by the service, and the log says a file was written but not what it says', async () => {
    const email = newEmail('file')
    expect((await post(app, '/auth/signup/start', { email, tenant_name: 'T' })).status).toBe(202)
    await app.deps.mail.idle()
    await app.deps.mail.dispatchDue()
    const dir = join(app.dir, 'mail')
    const files = readdirSync(dir).filter((f) => readFileSync(join(dir, f), 'utf8').includes(`To: ${email}`))
    expect(files).toHaveLength(1)
    const path = join(dir, files[0]!)
    expect(statSync(path).mode & 0o777).toBe(0o600)
    const text = readFileSync(path, 'utf8')
    expect(text).toContain('From: gpuhq <no-reply@gpuhq.test>')
    expect(text).toMatch(/^Subject: Your gpuhq sign-up code: \d{6}$/m)
    const code = codeFrom({ ...parseMessage(text), to: [email], from: '' })
    expect(app.rawLogs.some((l) => l.includes('mail written to file'))).toBe(true)
    expect(app.rawLogs.some((l) => l.includes(code))).toBe(false)
    // And the code from the file completes the flow.
    expect(await verifyCode(app, 'signup', email, code)).toBeString()
  })
})
