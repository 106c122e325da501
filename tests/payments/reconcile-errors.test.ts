import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { balanceMicros, getTopup, ipn, npTopup, runReconcile, startPaymentsApp, topupEntries, type PaymentsApp } from '../support/payments'
import { onPostgres } from '../support/postgres'

/**
 * Issue 13 finding 13: a failure while crediting in billing.reconcile is not "provider unreachable".
 * It is logged with the job run, the tenant and the top-up, leaves the top-up as it was, does not
 * stop the other tenants' top-ups, records the run partial (issue 34, "Jobs isolate tenants"), is
 * not tried again before its backoff ends, and a later run settles it. The fault is a real database failure (a trigger refusing the ledger insert
 * on this app's own connection), not a stand-in for our code.
 */
let app: PaymentsApp
beforeAll(async () => {
  app = await startPaymentsApp('nowpayments')
})
afterAll(() => app.stop())

async function runJob(name: string) {
  const res = await app.fetch(`/api/v1/_test/jobs/${name}/run`, { method: 'POST' })
  expect(res.status).toBe(200)
  return (await res.json()) as { outcome: string; detail: string | null }
}

/** Makes every ledger insert of this tenant fail, as a broken disk or a bug would (a trigger on either database). */
async function injectLedgerFault(tenantId: string) {
  if (onPostgres)
    await app.deps.database.postgres!.exec(
      `CREATE FUNCTION reconcile_fault() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.tenant_id = '${tenantId}' THEN RAISE EXCEPTION 'injected ledger fault'; END IF; RETURN NEW; END $$;
       CREATE TRIGGER reconcile_fault BEFORE INSERT ON ledger_entries FOR EACH ROW EXECUTE FUNCTION reconcile_fault()`,
    )
  else
    await app.deps.db.run(
      sql.raw(
        `CREATE TEMP TRIGGER reconcile_fault BEFORE INSERT ON ledger_entries WHEN NEW.tenant_id = '${tenantId}' BEGIN SELECT RAISE(ABORT, 'injected ledger fault'); END`,
      ),
    )
}

async function removeLedgerFault() {
  if (onPostgres) await app.deps.database.postgres!.exec('DROP TRIGGER reconcile_fault ON ledger_entries; DROP FUNCTION reconcile_fault()')
  else await app.deps.db.run(sql`DROP TRIGGER reconcile_fault`)
}

describe('billing.reconcile when crediting fails', () => {
  test("the top-up is left as it was, logged with job, tenant and top-up; the other tenant's top-up is credited in the same run; the run is partial; the next runs leave it alone until its backoff ends, and then credit it once", async () => {
    const { owner, topup } = await npTopup(app, '25.00')
    const p = app.np.pay(topup.invoice_id!, { status: 'waiting' })
    await ipn(app, p.payment_id)
    app.np.pay(topup.invoice_id!, { status: 'finished', paidUsd: 25, paymentId: p.payment_id }) // its IPN is lost
    const other = await npTopup(app, '30.00')
    const q = app.np.pay(other.topup.invoice_id!, { status: 'waiting' })
    await ipn(app, q.payment_id)
    app.np.pay(other.topup.invoice_id!, { status: 'finished', paidUsd: 30, paymentId: q.payment_id }) // its IPN is lost too

    await injectLedgerFault(owner.tenantId)
    const logsBefore = app.logs.length
    let run: Awaited<ReturnType<typeof runJob>>
    let next: Awaited<ReturnType<typeof runJob>>
    try {
      run = await runJob('billing.reconcile')
      // A run right after, with the fault still there, does not try that top-up again.
      next = await runJob('billing.reconcile')
    } finally {
      await removeLedgerFault()
    }
    expect(run.outcome).toBe('partial')
    expect(run.detail).toContain(`1 tenants failed: ${owner.tenantId} (top-up ${topup.id}: `)
    expect(run.detail).toContain('1 settled or flagged')
    expect(run.detail).not.toMatch(/[1-9]\d* unreadable/)
    expect(next).toMatchObject({ outcome: 'succeeded' })
    expect(next.detail).toContain('1 tenants waiting out a backoff after failing')
    const logged = app.logs.slice(logsBefore).filter((l) => l.level === 'error' && l.scope === `top-up ${topup.id}`)
    expect(logged).toHaveLength(1)
    expect(logged[0]).toMatchObject({ job: 'billing.reconcile', tenant: owner.tenantId, period: expect.stringMatching(/^manual:/) })
    expect(JSON.stringify(logged[0]!.error)).toContain('injected ledger fault')
    // Nothing half-done: the top-up, the ledger and the balance are as they were; the other tenant is credited.
    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'creating', credited_usd: '0.00' })
    expect(await topupEntries(app, owner.tenantId)).toEqual([])
    expect(await getTopup(app, other.owner, other.topup.id)).toMatchObject({ status: 'succeeded', credited_usd: '30.00' })

    expect((await app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: 61 } })).status).toBe(200)
    await runReconcile(app)
    expect(await getTopup(app, owner, topup.id)).toMatchObject({ status: 'succeeded', credited_usd: '25.00' })
    expect(await balanceMicros(app, owner)).toBe(25_000_000)
    expect(await balanceMicros(app, other.owner)).toBe(30_000_000)
  })

  test('only a provider that cannot be reached counts as unreadable, and it is logged as such', async () => {
    const { owner, topup } = await npTopup(app, '25.00')
    const p = app.np.pay(topup.invoice_id!, { status: 'waiting' })
    await ipn(app, p.payment_id)
    app.np.fail('500', 'payment')
    const logsBefore = app.logs.length
    try {
      const run = await runReconcile(app)
      expect(run.detail).toContain('1 unreadable')
    } finally {
      app.np.fail('none')
    }
    expect(app.logs.slice(logsBefore).some((l) => l.level === 'warn' && l.topup_id === topup.id && l.job === 'billing.reconcile')).toBe(true)
    expect((await getTopup(app, owner, topup.id)).status).toBe('creating')
  })
})
