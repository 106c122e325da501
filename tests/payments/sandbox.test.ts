import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, newTenant, type Member } from '../support/access'
import { TEST_PUBLIC_URL } from '../support/app'
import { sandboxSignature } from '../../src/modules/payments/sandbox.provider'
import { expectProblem } from '../support/problem'
import {
  balanceMicros,
  checkoutPath,
  createTopup,
  getTopup,
  notificationsOf,
  sandboxPay,
  snapshot,
  startPaymentsApp,
  topupEntries,
  type PaymentsApp,
  type Topup,
} from '../support/payments'

/**
 * docs/payments.md "The sandbox (demos and development)" and "States": the checkout page at
 * checkout_url, its buttons, and the signed notification it sends; each outcome ends where "States"
 * says, crediting the amount actually paid. The sandbox's checkout_url names PUBLIC_URL
 * (http://gpuhq.test); the page is fetched from this app at the same path.
 */

let app: PaymentsApp
beforeAll(async () => {
  app = await startPaymentsApp('sandbox')
})
afterAll(() => app.stop())

async function payer(tag: string): Promise<Member> {
  return newTenant(app, tag)
}

describe('the sandbox checkout page', () => {
  test('renders the invoice with one button per outcome and an amount field prefilled with the invoiced amount', async () => {
    const m = await payer('page')
    const t = await createTopup(app, m, '12.50', 'card')
    expect(t.checkout_url).toBe(`${TEST_PUBLIC_URL}/sandbox/checkout/${t.invoice_id}`)
    const res = await app.fetch(checkoutPath(t))
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toStartWith('text/html')
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'")
    const html = await res.text()
    for (const outcome of ['finished', 'partially_paid', 'expired', 'unknown']) expect(html).toContain(`<button data-outcome="${outcome}">`)
    expect(html).toContain(t.invoice_id!)
    expect(html).toContain('12.50 USD')
    expect(html).toContain('id="amount" value="12.50"')
    // Opening the page moves nothing.
    expect((await getTopup(app, m, t.id)).status).toBe('creating')
  })

  test('an invoice that does not exist → 404', async () => {
    expect((await app.fetch('/sandbox/checkout/01a203c8-0000-7000-8000-000000000000')).status).toBe(404)
  })
})

describe('paying in the sandbox', () => {
  const paid: [string, string, string][] = [
    ['the exact amount', '12.50', '12.50'],
    ['less than invoiced (12.00 on a 12.50 invoice)', '12.00', '12.00'],
    // More than invoiced is refused by the sandbox itself (docs/payments.md): see sandbox-exactly-once.test.ts.
  ]
  for (const [what, amount, credited] of paid)
    test(`"finished" after paying ${what} → succeeded, credited ${credited} (what was paid, not what was invoiced), checkout_url gone`, async () => {
      const m = await payer('finished')
      const t = await createTopup(app, m, '12.50', 'card')
      const r = await sandboxPay(app, t, 'finished', amount)
      expect(r.notification_status).toBe(200)
      const after = await getTopup(app, m, t.id)
      expect(after).toMatchObject({ status: 'succeeded', amount_usd: '12.50', credited_usd: credited, provider_status: 'finished', review_reason: null })
      expect(after.checkout_url).toBeUndefined()
      expect(after.succeeded_at).not.toBeNull()
      const micros = Math.round(Number(credited) * 1_000_000)
      expect(await balanceMicros(app, m)).toBe(micros)
      expect(await topupEntries(app, m.tenantId)).toEqual([{ amount_micros: micros, payment_ref: `sandbox:${r.payment_id}`, balance_after_micros: micros }])
      expect(await notificationsOf(app, t.id)).toEqual([{ outcome: 'succeeded', reported_status: 'finished', payment_id: r.payment_id }])
    })

  test('the same signed notification delivered again (replayed) moves the balance only once', async () => {
    const m = await payer('replay')
    const t = await createTopup(app, m, '20.00', 'usdt_tron')
    const r = await sandboxPay(app, t, 'finished')
    const body = JSON.stringify({
      payment_id: r.payment_id,
      invoice_id: t.invoice_id,
      order_id: t.id,
      payment_status: 'finished',
      price_amount: '20.00',
      price_currency: 'usd',
      actually_paid: '20.00',
    })
    const replays = await Promise.all(
      [1, 2, 3].map(() =>
        app.fetch('/api/v1/billing/providers/sandbox/notify', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-sandbox-signature': sandboxSignature(app.deps, body) },
          body,
        }),
      ),
    )
    expect(replays.map((x) => x.status)).toEqual([200, 200, 200])
    expect(await balanceMicros(app, m)).toBe(20_000_000)
    expect(await topupEntries(app, m.tenantId)).toHaveLength(1)
    expect((await getTopup(app, m, t.id)).credited_usd).toBe('20.00')
  })

  test('a sandbox notification with a forged signature → 401 and nothing changes', async () => {
    const m = await payer('forged')
    const t = await createTopup(app, m, '20.00', 'card')
    const before = await snapshot(app, t.id)
    const body = JSON.stringify({
      payment_id: app.deps.newId(),
      invoice_id: t.invoice_id,
      order_id: t.id,
      payment_status: 'finished',
      price_amount: '20.00',
      price_currency: 'usd',
      actually_paid: '20.00',
    })
    const res = await app.fetch('/api/v1/billing/providers/sandbox/notify', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-sandbox-signature': 'f'.repeat(64) },
      body,
    })
    await expectProblem(res, 401, 'unauthorized')
    expect(await snapshot(app, t.id)).toEqual(before)
  })

  test('"partially_paid" → partially_paid, the balance unchanged and the checkout still open', async () => {
    const m = await payer('partial')
    const t = await createTopup(app, m, '12.50', 'card')
    await sandboxPay(app, t, 'partially_paid', '5.00')
    const after = await getTopup(app, m, t.id)
    expect(after).toMatchObject({ status: 'partially_paid', credited_usd: '0.00', provider_status: 'partially_paid' })
    expect(after.checkout_url).toBe(t.checkout_url!)
    expect(await balanceMicros(app, m)).toBe(0)
    expect(await topupEntries(app, m.tenantId)).toEqual([])
  })

  test('"expired" → expired, nothing credited, checkout_url gone; a late payment report cannot revive it', async () => {
    const m = await payer('expired')
    const t = await createTopup(app, m, '12.50', 'card')
    await sandboxPay(app, t, 'expired')
    const after = await getTopup(app, m, t.id)
    expect(after).toMatchObject({ status: 'expired', credited_usd: '0.00' })
    expect(after.checkout_url).toBeUndefined()
    await sandboxPay(app, t, 'partially_paid', '3.00')
    expect((await getTopup(app, m, t.id)).status).toBe('expired')
    expect(await balanceMicros(app, m)).toBe(0)
  })

  test('"unknown" (a provider status nobody knows) → review for a human, nothing credited', async () => {
    const m = await payer('unknown')
    const t = await createTopup(app, m, '12.50', 'card')
    await sandboxPay(app, t, 'unknown')
    const after = await getTopup(app, m, t.id)
    expect(after).toMatchObject({ status: 'review', review_reason: 'unknown_provider_status', credited_usd: '0.00' })
    expect(after.checkout_url).toBeUndefined()
    expect(await balanceMicros(app, m)).toBe(0)
  })

  test('the sandbox page refuses an amount that is not a money decimal (422) and sends nothing', async () => {
    const m = await payer('bad-amount')
    const t = await createTopup(app, m, '12.50', 'card')
    const res = await app.fetch(checkoutPath(t), { method: 'POST', json: { outcome: 'finished', amount_usd: 12.5 } })
    expect(res.status).toBe(422)
    expect(await notificationsOf(app, t.id)).toEqual([])
    expect((await getTopup(app, m, t.id)).status).toBe('creating')
  })
})

describe('the browser coming back', () => {
  test('a visit to /payments/return, whatever its query says, changes neither the top-up nor the balance', async () => {
    const m = await payer('return')
    const t = await createTopup(app, m, '12.50', 'card')
    const before = await snapshot(app, t.id)
    for (const qs of ['', `?order_id=${t.id}&status=finished`, `?NP_id=5524759814&payment_status=finished`]) {
      const res = await app.fetch(`/payments/return${qs}`)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toStartWith('text/html')
      await res.text()
    }
    expect(await snapshot(app, t.id)).toEqual(before)
    expect(await getTopup(app, m, t.id)).toMatchObject({ status: 'creating', credited_usd: '0.00' })
    expect(await balanceMicros(app, m)).toBe(0)
  })
})

describe('top-up history', () => {
  test("lists the tenant's top-ups newest first, paginated by next_cursor, each with its current status", async () => {
    const m = await payer('history')
    const made: Topup[] = []
    for (const amount of ['1.00', '2.00', '3.00', '4.00', '5.00']) made.push(await createTopup(app, m, amount, 'card'))
    await sandboxPay(app, made[1]!, 'finished')
    const seen: Topup[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const res = await call(app, 'GET', `/billing/topups?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, m)
      expect(res.status).toBe(200)
      const page = (await res.json()) as { items: Topup[]; next_cursor: string | null }
      expect(page.items.length).toBeLessThanOrEqual(2)
      seen.push(...page.items)
      cursor = page.next_cursor
      pages++
    } while (cursor && pages < 10)
    expect(pages).toBe(3)
    expect(seen.map((t) => t.amount_usd)).toEqual(['5.00', '4.00', '3.00', '2.00', '1.00'])
    expect(seen.map((t) => t.status)).toEqual(['creating', 'creating', 'creating', 'succeeded', 'creating'])
    const created = seen.map((t) => t.created_at)
    expect([...created].sort().reverse()).toEqual(created)
    const ok = await call(app, 'GET', '/billing/topups?status=succeeded', m)
    expect(((await ok.json()) as { items: Topup[] }).items.map((t) => t.id)).toEqual([made[1]!.id])
  })

  test("another tenant's top-up answers 404 exactly like one that does not exist, and never shows in their history", async () => {
    const a = await payer('tenant-a')
    const b = await payer('tenant-b')
    const t = await createTopup(app, a, '12.50', 'card')
    await expectProblem(await call(app, 'GET', `/billing/topups/${t.id}`, b), 404, 'not_found')
    await expectProblem(await call(app, 'GET', '/billing/topups/01a203c8-0000-7000-8000-000000000000', b), 404, 'not_found')
    const res = await call(app, 'GET', '/billing/topups', b)
    expect(((await res.json()) as { items: Topup[] }).items).toEqual([])
  })
})
