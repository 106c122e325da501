import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { addMember, call, newTenant, setAccountState, type Member } from '../support/access'
import { closedPortUrl } from '../support/captcha'
import { expectProblem, UUID } from '../support/problem'
import { createTopup, getTopup, postTopup, startPaymentsApp, type PaymentsApp, type Topup } from '../support/payments'

/**
 * docs/payments.md "Providers and configuration", "Operations" and "States": the catalogue of
 * methods per enabled provider, creating a top-up (a hosted invoice), its validation, who may,
 * idempotent retries, and what happens when the provider cannot be reached or refuses.
 */

let app: PaymentsApp
let owner: Member
beforeAll(async () => {
  app = await startPaymentsApp('sandbox,nowpayments')
  owner = await newTenant(app, 'creator')
})
afterAll(() => app.stop())
afterEach(() => app.np.fail('none'))

const extra: PaymentsApp[] = []
afterEach(async () => {
  for (const a of extra.splice(0)) await a.stop()
})

type Method = { code: string; label: string; provider: string; min_amount_usd: string }
async function methods(a: PaymentsApp, m: Member): Promise<Method[]> {
  const res = await call(a, 'GET', '/billing/payment-methods', m)
  expect(res.status).toBe(200)
  const items = ((await res.json()) as { items: Method[] }).items
  for (const i of items) expect(i.label.length).toBeGreaterThan(0)
  return items
}
const shape = (items: Method[]) => items.map((m) => [m.code, m.provider, m.min_amount_usd])

async function topupsOf(m: Member): Promise<Topup[]> {
  const res = await call(app, 'GET', '/billing/topups?limit=200', m)
  expect(res.status).toBe(200)
  return ((await res.json()) as { items: Topup[] }).items
}

describe('the payment-method catalogue follows the enabled providers', () => {
  test('with sandbox then nowpayments, every method of both is offered with its minimum; usdt_tron, offered by both, goes to the sandbox', async () => {
    expect(shape(await methods(app, owner))).toEqual([
      ['card', 'sandbox', '1.00'],
      ['usdt_tron', 'sandbox', '5.00'],
      ['btc', 'nowpayments', '20.00'],
      ['eth', 'nowpayments', '20.00'],
      ['crypto', 'nowpayments', '10.00'],
    ])
    const t = await createTopup(app, owner, '5.00', 'usdt_tron')
    expect(t.provider).toBe('sandbox')
    expect(app.np.requests.filter((r) => r.body?.order_id === t.id)).toEqual([])
  })

  test('with nowpayments listed first, usdt_tron belongs to nowpayments with its 10.00 minimum and is invoiced there in usdttrc20', async () => {
    const a = await startPaymentsApp('nowpayments,sandbox')
    extra.push(a)
    const m = await newTenant(a, 'np-first')
    expect(shape(await methods(a, m))).toEqual([
      ['usdt_tron', 'nowpayments', '10.00'],
      ['btc', 'nowpayments', '20.00'],
      ['eth', 'nowpayments', '20.00'],
      ['crypto', 'nowpayments', '10.00'],
      ['card', 'sandbox', '1.00'],
    ])
    const small = await expectProblem((await postTopup(a, m, { amount_usd: '9.99', payment_method: 'usdt_tron' })).res, 422, 'validation_failed')
    expect(small.errors?.[0]?.path).toBe('/amount_usd')
    const t = await createTopup(a, m, '10.00', 'usdt_tron')
    expect(t.provider).toBe('nowpayments')
    expect(a.np.invoices.get(t.invoice_id!)).toMatchObject({ order_id: t.id, price_amount: '10', price_currency: 'usd', pay_currency: 'usdttrc20' })
  })

  test('with the sandbox alone only card and usdt_tron are offered, and a nowpayments code is an unknown method', async () => {
    const a = await startPaymentsApp('sandbox')
    extra.push(a)
    const m = await newTenant(a, 'sandbox-only')
    expect(shape(await methods(a, m))).toEqual([
      ['card', 'sandbox', '1.00'],
      ['usdt_tron', 'sandbox', '5.00'],
    ])
    const p = await expectProblem((await postTopup(a, m, { amount_usd: '50.00', payment_method: 'btc' })).res, 422, 'validation_failed')
    expect(p.errors?.[0]?.path).toBe('/payment_method')
  })
})

describe('creating a top-up', () => {
  test('answers 201 with status creating, the hosted checkout_url and a Location; the invoice names the top-up as its order', async () => {
    const r = await postTopup(app, owner, { amount_usd: '25.00', payment_method: 'btc', purpose: { kind: 'wallet' } })
    expect({ status: r.status, body: r.text }).toMatchObject({ status: 201 })
    const t = r.body as Topup
    expect(t.id).toMatch(UUID)
    expect(r.res.headers.get('location')).toBe(`/api/v1/billing/topups/${t.id}`)
    expect(t).toMatchObject({
      status: 'creating',
      amount_usd: '25.00',
      credited_usd: '0.00',
      payment_method: 'btc',
      provider: 'nowpayments',
      purpose: { kind: 'wallet' },
    })
    const inv = app.np.invoices.get(t.invoice_id!)!
    expect(t.checkout_url).toBe(inv.invoice_url)
    expect(inv).toMatchObject({
      order_id: t.id,
      price_amount: '25',
      price_currency: 'usd',
      pay_currency: 'btc',
      ipn_callback_url: 'http://gpuhq.test/api/v1/billing/providers/nowpayments/notify',
    })
    expect(app.np.requests.find((q) => q.body?.order_id === t.id)?.apiKey).toBe(app.np.apiKey)
    expect(await getTopup(app, owner, t.id)).toEqual(t)
  })

  const invalid: [string, Record<string, unknown>, string][] = [
    ['an amount below the method minimum (card takes 1.00)', { amount_usd: '0.99', payment_method: 'card' }, '/amount_usd'],
    ['an amount below the nowpayments btc minimum of 20.00', { amount_usd: '19.99', payment_method: 'btc' }, '/amount_usd'],
    ['a payment method no provider offers', { amount_usd: '50.00', payment_method: 'paypal' }, '/payment_method'],
    ['the amount as a JSON number instead of a decimal string', { amount_usd: 12.5, payment_method: 'card' }, '/amount_usd'],
    ['an amount with seven fraction digits', { amount_usd: '12.5000001', payment_method: 'card' }, '/amount_usd'],
    ['an unknown purpose', { amount_usd: '12.50', payment_method: 'card', purpose: { kind: 'donation' } }, '/purpose/kind'],
  ]
  for (const [what, body, path] of invalid)
    test(`${what} → 422 naming ${path}, and no top-up or invoice exists`, async () => {
      const m = await newTenant(app, 'invalid')
      const invoices = app.np.invoicesCreated()
      const p = await expectProblem((await postTopup(app, m, body)).res, 422, 'validation_failed')
      expect(p.errors?.map((e) => e.path)).toContain(path)
      expect(await topupsOf(m)).toEqual([])
      expect(app.np.invoicesCreated()).toBe(invoices)
    })

  test('is allowed while the account is in grace and while it is frozen', async () => {
    for (const state of ['grace', 'frozen'] as const) {
      const m = await newTenant(app, state)
      await setAccountState(app, m.tenantId, state)
      const t = await createTopup(app, m, '12.50', 'card')
      expect(t.status).toBe('creating')
      expect(t.checkout_url).toBeDefined()
    }
  })

  test('a viewer may read the catalogue and the top-ups but not start one (403 forbidden)', async () => {
    const viewer = await addMember(app, owner.tenantId, 'viewer')
    expect((await methods(app, viewer)).length).toBe(5)
    const before = (await topupsOf(owner)).length
    await expectProblem((await postTopup(app, viewer, { amount_usd: '12.50', payment_method: 'card' })).res, 403, 'forbidden')
    expect((await topupsOf(viewer)).length).toBe(before)
  })

  test('without a session → 401', async () => {
    await expectProblem((await postTopup(app, null, { amount_usd: '12.50', payment_method: 'card' })).res, 401, 'unauthorized')
  })

  test('a retry with the same Idempotency-Key returns the same top-up and invoice, and the provider saw exactly one invoice', async () => {
    const m = await newTenant(app, 'idem')
    const body = { amount_usd: '30.00', payment_method: 'eth', purpose: { kind: 'wallet' } }
    const before = app.np.invoicesCreated()
    const first = await postTopup(app, m, body, { 'idempotency-key': 'topup-once-1' })
    expect(first.status).toBe(201)
    for (const _ of [1, 2]) {
      const r = await postTopup(app, m, body, { 'idempotency-key': 'topup-once-1' })
      expect(r.status).toBe(201)
      expect(r.body.id).toBe(first.body.id)
      expect(r.body.invoice_id).toBe(first.body.invoice_id)
      expect(r.body.checkout_url).toBe(first.body.checkout_url)
      expect(r.res.headers.get('location')).toBe(`/api/v1/billing/topups/${first.body.id}`)
    }
    expect(app.np.invoicesCreated()).toBe(before + 1)
    expect((await topupsOf(m)).map((t) => t.id)).toEqual([first.body.id])
    await expectProblem((await postTopup(app, m, { ...body, amount_usd: '31.00' }, { 'idempotency-key': 'topup-once-1' })).res, 409, 'idempotency_conflict')
    expect(app.np.invoicesCreated()).toBe(before + 1)
  })

  test('the same Idempotency-Key sent 4 times at once makes one top-up and one invoice; the others replay it or are told to retry', async () => {
    const m = await newTenant(app, 'idem-burst')
    const body = { amount_usd: '30.00', payment_method: 'eth' }
    const before = app.np.invoicesCreated()
    const all = await Promise.all([1, 2, 3, 4].map(() => postTopup(app, m, body, { 'idempotency-key': 'burst-1' })))
    const created = all.filter((r) => r.status === 201)
    expect(created.length).toBeGreaterThanOrEqual(1)
    expect(new Set(created.map((r) => r.body.id)).size).toBe(1)
    for (const r of all.filter((x) => x.status !== 201)) {
      await expectProblem(r.res, 409, 'conflict')
      expect(Number(r.res.headers.get('retry-after'))).toBeGreaterThan(0)
    }
    expect(app.np.invoicesCreated()).toBe(before + 1)
    expect((await topupsOf(m)).map((t) => t.id)).toEqual([created[0]!.body.id])
  })
})

describe('when the provider cannot be reached or refuses', () => {
  const unreachable: ['500' | 'drop', string][] = [
    ['500', 'answers 500 with an HTML page'],
    ['drop', 'cuts the connection in the middle of its answer'],
  ]
  for (const [fault, what] of unreachable)
    test(`a provider that ${what} → 503 with Retry-After, and the top-up is set aside for review (ambiguous_create) without a checkout_url`, async () => {
      const m = await newTenant(app, `fault-${fault}`)
      app.np.fail(fault, 'invoice')
      const r = await postTopup(app, m, { amount_usd: '40.00', payment_method: 'btc' })
      await expectProblem(r.res, 503, 'temporarily_unavailable')
      expect(Number(r.res.headers.get('retry-after'))).toBeGreaterThan(0)
      const [t] = await topupsOf(m)
      expect(t).toMatchObject({ status: 'review', review_reason: 'ambiguous_create', invoice_id: null, amount_usd: '40.00' })
      expect(t!.checkout_url).toBeUndefined()
    })

  test('a provider nobody listens for → 503 and the top-up in review', async () => {
    const a = await startPaymentsApp('nowpayments', { NOWPAYMENTS_API_URL: (await closedPortUrl()).replace('/siteverify', '') })
    extra.push(a)
    const m = await newTenant(a, 'closed')
    await expectProblem((await postTopup(a, m, { amount_usd: '40.00', payment_method: 'btc' })).res, 503, 'temporarily_unavailable')
    const res = await call(a, 'GET', '/billing/topups', m)
    expect(((await res.json()) as { items: Topup[] }).items.map((t) => [t.status, t.review_reason])).toEqual([['review', 'ambiguous_create']])
  })

  test('a provider that never answers: after the client timeout, 503 and the top-up in review', async () => {
    const m = await newTenant(app, 'hang')
    app.np.fail('hang', 'invoice')
    // The test's own 20 s timeout is the bound: a client that waited for ever would fail it.
    await expectProblem((await postTopup(app, m, { amount_usd: '40.00', payment_method: 'btc' })).res, 503, 'temporarily_unavailable')
    expect((await topupsOf(m)).map((t) => [t.status, t.review_reason])).toEqual([['review', 'ambiguous_create']])
  }, 20_000)

  test('a provider that refuses the invoice (400) → 422, and the top-up is failed, not in review', async () => {
    const m = await newTenant(app, 'refused')
    app.np.fail('400', 'invoice')
    const p = await expectProblem((await postTopup(app, m, { amount_usd: '40.00', payment_method: 'btc' })).res, 422, 'validation_failed')
    expect(p.errors?.[0]?.path).toBe('/amount_usd')
    const [t] = await topupsOf(m)
    expect(t!.status).toBe('failed')
    expect(t!.checkout_url).toBeUndefined()
  })
})
