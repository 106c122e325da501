import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { call, newTenant } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { addServers, clockTo, doubleCharges, payer, US_PER_HOUR, US_PER_MINUTE, utcUs } from '../support/billing'
import { commandFrame, issue, onlineServer, runToEnd } from '../support/commands'
import { newOwner, type Owner } from '../support/fleet'
import { getTopup, ipn, npTopup, startPaymentsApp, topupEntries, type PaymentsApp } from '../support/payments'
import { closeAllClients, LiveClient } from '../support/events'
import { onPostgres } from '../support/postgres'

/**
 * Two instances of the service on one PostgreSQL database (issue 24, docs/scale-out.md): what one
 * does, the other sees and honours. Only on PostgreSQL (scripts/test's second pass): SQLite is one
 * machine's database.
 */
const WRITES = 12
const ENV = { LOG_LEVEL: 'silent', RATE_LIMIT_TENANT_WRITES_PER_MINUTE: String(WRITES) }

describe.skipIf(!onPostgres)('two instances on one PostgreSQL database', () => {
  let a: TestApp
  let b: TestApp
  let owner: Owner
  beforeAll(async () => {
    a = await startTestApp(ENV)
    // The clock of the test moves before the second instance starts, which reads it from the database.
    await clockTo(a, utcUs(2027, 3, 1, 8, 10))
    b = await startTestApp({ ...ENV, DATABASE_URL: a.databaseUrl, DATA_DIR: a.dir })
    owner = await newOwner(a, 'two', 'pro')
    // Each instance listens for the other's command announcements before an agent connects.
    for (const app of [a, b]) await app.deps.database.postgres!.listening()
  })
  afterAll(async () => {
    closeAllClients()
    await b?.close()
    await a?.close()
  })

  test('an agent connected to the first instance runs a command created through the second', async () => {
    const { server_id, agent } = await onlineServer(a, owner)
    const c = await issue(b, owner, server_id, 'reboot')
    const frame = await commandFrame(agent, c.command_id, 0, 10_000)
    expect(frame).toMatchObject({ type: 'command', command_id: c.command_id, command_type: 'reboot' })
    await runToEnd(agent, c.command_id)
    const seen = (await (await b.fetch(`/api/v1/commands/${c.command_id}`, { headers: owner.headers })).json()) as { execution_status: string }
    expect(seen.execution_status).toBe('succeeded')
    await agent.close()
  })

  test("a live stream held by one instance carries the other's events, in id order", async () => {
    const { server_id, agent } = await onlineServer(a, owner)
    const onA = await LiveClient.open(a, { cookie: owner.session })
    const made = [await issue(b, owner, server_id, 'reboot'), await issue(a, owner, server_id, 'reboot'), await issue(b, owner, server_id, 'reboot')]
    for (const c of made) await onA.waitFor((e) => e.type === 'command.created' && e.data.command_id === c.command_id)
    const created = onA.events.filter((e) => e.type === 'command.created').map((e) => e.data.command_id)
    expect(created).toEqual(made.map((c) => c.command_id))
    const ids = onA.changes().map((e) => Number(e.id))
    expect(ids).toEqual([...ids].sort((x, y) => x - y))
    onA.close()
    await agent.close()
  })

  test('billing.charge triggered on both at once books every hour once', async () => {
    const tenants = [await payer(a, 'starter'), await payer(a, 'starter'), await payer(a, 'starter')]
    for (const [i, t] of tenants.entries()) await addServers(a, t.tenantId, i + 1)
    const now = await clockTo(a, utcUs(2027, 3, 1, 14, 30))
    await clockTo(b, now)
    const runs = await Promise.all([a, b, a, b].map((app) => app.fetch('/api/v1/_test/jobs/billing.charge/run', { method: 'POST' })))
    expect(runs.map((r) => r.status).every((s) => s === 200 || s === 409)).toBe(true)
    expect(await doubleCharges(a)).toEqual([])
    const hours = (now - 75 * US_PER_MINUTE - utcUs(2027, 3, 1, 8)) / US_PER_HOUR
    for (const t of tenants) {
      const charged = (await a.deps.db.get(sql`SELECT count(*) AS n FROM ledger_entries WHERE tenant_id = ${t.tenantId} AND kind = 'charge'`)) as { n: number }
      expect(charged.n).toBe(Math.floor(hours) + 1)
    }
  })

  test("a tenant's write limit is one limit across both instances", async () => {
    const writer = await newTenant(a, 'limited')
    const results: number[] = []
    for (let i = 0; i < WRITES + 1; i++) {
      const app = i % 2 === 0 ? a : b
      results.push((await call(app, 'POST', '/groups', writer, { json: { name: `group ${i}` } })).status)
    }
    expect(results).toEqual([...Array(WRITES).fill(201), 429])
  })
})

describe.skipIf(!onPostgres)('two payment instances on one PostgreSQL database', () => {
  let a: PaymentsApp
  let b: TestApp
  beforeAll(async () => {
    a = await startPaymentsApp()
    b = await startTestApp({
      LOG_LEVEL: 'silent',
      DATABASE_URL: a.databaseUrl,
      DATA_DIR: a.dir,
      PAYMENT_PROVIDERS: 'sandbox,nowpayments',
      NOWPAYMENTS_API_KEY: a.np.apiKey,
      NOWPAYMENTS_IPN_SECRET: a.np.ipnSecret,
      NOWPAYMENTS_API_URL: a.np.url,
    })
  })
  afterAll(async () => {
    await b?.close()
    await a?.stop()
  })

  test('100 concurrent duplicate payment notifications split across both instances credit once', async () => {
    const { owner, topup } = await npTopup(a, '25.00')
    const p = a.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 25 })
    const second = Object.assign(b, { np: a.np, stop: async () => {} })
    const results = await Promise.all(Array.from({ length: 100 }, (_, i) => ipn(i % 2 === 0 ? a : second, p.payment_id)))
    // Each answers 200 (credited, or seen already) or 503 (a conflict that outlived its retries: the provider sends again).
    expect(results.filter((r) => r.status !== 200 && r.status !== 503)).toEqual([])
    expect(results.some((r) => r.status === 200)).toBe(true)
    expect(await topupEntries(a, owner.tenantId)).toEqual([
      { amount_micros: 25_000_000, payment_ref: `nowpayments:${p.payment_id}`, balance_after_micros: 25_000_000 },
    ])
    expect(await getTopup(a, owner, topup.id)).toMatchObject({ status: 'succeeded', credited_usd: '25.00' })
  }, 60_000)
})
