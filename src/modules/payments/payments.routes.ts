import { Elysia, t } from 'elysia'
import { Type } from '@sinclair/typebox'
import { actorOf, describe } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { requestState } from '../../platform/http'
import { idempotent } from '../../platform/idempotency'
import { formatMoney } from '../../platform/money'
import { Literals, Money, Nullable, PageQuery, responses, Timestamp, Uuid } from '../../platform/schemas'
import { auditContextOf } from '../audit/audit.context'
import { createTopup, getTopup, handleNotification, listTopups, paymentMethods } from './topups.service'

const tags = ['billing']
const STATUSES = ['creating', 'partially_paid', 'succeeded', 'review', 'expired', 'failed'] as const

const Topup = Type.Object({
  id: Uuid(),
  status: Literals(STATUSES, { description: 'Only succeeded means the money arrived' }),
  amount_usd: Money({ description: 'The invoiced amount' }),
  credited_usd: Money({ description: 'What was credited: the amount the provider confirmed' }),
  payment_method: Type.String(),
  provider: Type.String(),
  provider_status: Nullable(Type.String({ description: "The provider's own word for the payment (waiting, confirming, …)" })),
  purpose: Type.Object({
    kind: Literals(['wallet', 'subscription_change']),
    target_plan: Type.Optional(Nullable(Type.String())),
    change_id: Type.Optional(Nullable(Uuid())),
  }),
  checkout_url: Type.Optional(Type.String({ description: 'Hosted payment page; open it as a navigation. Absent once terminal.' })),
  invoice_id: Nullable(Type.String()),
  review_reason: Nullable(Type.String()),
  created_at: Timestamp(),
  expires_at: Timestamp(),
  succeeded_at: Nullable(Timestamp()),
  updated_at: Timestamp(),
})

const TopupCreate = Type.Object(
  {
    amount_usd: Money({ description: "At least the method's min_amount_usd" }),
    payment_method: Type.String({ minLength: 1, maxLength: 64, description: 'A code from GET /billing/payment-methods' }),
    purpose: Type.Optional(
      Type.Object(
        {
          kind: Literals(['wallet', 'subscription_change', 'subscription'], { description: '"subscription" is accepted as subscription_change' }),
          target_plan: Type.Optional(Type.String({ pattern: '^[a-z][a-z0-9_-]{1,63}$' })),
          change_id: Type.Optional(Uuid()),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
)

export function paymentsRoutes(deps: Deps) {
  return new Elysia({ name: 'payments', prefix: '/api/v1' })
    .get(
      '/billing/payment-methods',
      () => ({
        items: paymentMethods(deps).map((m) => ({ code: m.code, label: m.label, provider: m.provider, min_amount_usd: formatMoney(m.minAmountMicros) })),
      }),
      {
        response: responses(
          {
            200: Type.Object({
              items: Type.Array(Type.Object({ code: Type.String(), label: Type.String(), provider: Type.String(), min_amount_usd: Money() })),
            }),
          },
          [401, 403],
        ),
        detail: describe({ role: 'viewer', scope: 'billing:read' }, { tags, summary: 'Payment methods of the enabled providers, each with its minimum' }),
      },
    )
    .post(
      '/billing/topups',
      async ({ request, body, set }) => {
        const out = await createTopup({ deps, actor: actorOf(request), audit: auditContextOf(request), input: body })
        set.status = 201
        set.headers.location = `/api/v1/billing/topups/${out.id}`
        return out
      },
      {
        beforeHandle: idempotent(deps),
        body: TopupCreate,
        headers: t.Object({ 'idempotency-key': t.Optional(t.String({ minLength: 1, maxLength: 128 })) }),
        response: responses({ 201: Topup }, [401, 403, 409, 413, 415, 422, 429, 503]),
        detail: describe(
          { role: 'admin', scope: 'billing:write' },
          {
            tags,
            summary: 'Start a top-up: a hosted invoice at the payment provider',
            description:
              "Allowed while the account is in grace or frozen. The balance moves only when the provider's verified notification confirms a payment, by the amount it confirmed. A retry with the same Idempotency-Key returns the same top-up and invoice. Poll GET /billing/topups/{id} and accept only status succeeded. 503 when the provider cannot be reached (the top-up is set aside for review).",
          },
        ),
      },
    )
    .get('/billing/topups', ({ request, query }) => listTopups({ deps, actor: actorOf(request), input: query }), {
      query: t.Object({ ...PageQuery, status: t.Optional(Literals(STATUSES)) }),
      response: responses({ 200: Type.Object({ items: Type.Array(Topup, { maxItems: 200 }), next_cursor: Nullable(Type.String()) }) }, [401, 403, 422]),
      detail: describe({ role: 'viewer', scope: 'billing:read' }, { tags, summary: 'Top-up history, newest first' }),
    })
    .get(
      '/billing/topups/:topup_id',
      ({ request, params, set }) => {
        set.headers['cache-control'] = 'no-store'
        return getTopup({ deps, actor: actorOf(request), id: params.topup_id })
      },
      {
        params: t.Object({ topup_id: t.String({ format: 'uuid' }) }),
        response: responses({ 200: Topup }, [401, 403, 404, 422]),
        detail: describe({ role: 'viewer', scope: 'billing:read' }, { tags, summary: "Top-up status, including the provider's intermediate states" }),
      },
    )
    .post(
      '/billing/providers/:provider/notify',
      ({ request, params }) =>
        handleNotification({ deps, providerName: params.provider, rawBody: requestState(request).rawBody ?? '', headers: request.headers }),
      {
        params: t.Object({ provider: t.String({ maxLength: 32 }) }),
        body: Type.Unknown({ description: "The provider's notification, exactly as it signed it" }),
        response: responses({ 200: Type.Object({ received: Type.Boolean(), topup_status: Nullable(Type.String()) }) }, [401, 404, 413, 415, 422, 503]),
        detail: describe(
          { public: true },
          {
            tags,
            summary: 'Payment provider notifications',
            description:
              'Public; the signature is verified over the exact body (sandbox: x-sandbox-signature HMAC-SHA256; nowpayments: x-nowpayments-sig HMAC-SHA512). The payment is then read back from the provider before anything is credited. A forged or tampered notification → 401 and nothing changes.',
          },
        ),
      },
    )
}
