import { t } from 'elysia'
import { Type } from '@sinclair/typebox'
import { describe } from '../../platform/access'
import { API_PREFIX, apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { requestState } from '../../platform/http'
import { idempotent } from '../../platform/idempotency'
import { PageOf, responses } from '../../platform/schemas'
import { NotificationReceipt, PaymentMethods, Topup, TopupCreate, TopupListQuery } from './payments.model'
import { createTopup, getTopup, handleNotification, listPaymentMethods, listTopups } from './topups.service'

const tags = ['billing']

export function paymentsRoutes(deps: Deps) {
  return apiRoutes('payments', deps)
    .get('/billing/payment-methods', () => listPaymentMethods({ deps }), {
      response: responses({ 200: PaymentMethods }, [401, 403]),
      detail: describe(
        { role: 'viewer', scope: 'billing:read', reach: 'tenant' },
        { tags, summary: 'Payment methods of the enabled providers, each with its minimum' },
      ),
    })
    .post(
      '/billing/topups',
      async ({ verb, body, set }) => {
        const out = await createTopup({ ...verb, input: body })
        set.status = 201
        set.headers.location = `${API_PREFIX}/billing/topups/${out.id}`
        return out
      },
      {
        beforeHandle: idempotent(deps),
        body: TopupCreate,
        headers: t.Object({ 'idempotency-key': t.Optional(t.String({ minLength: 1, maxLength: 128 })) }),
        response: responses({ 201: Topup }, [401, 403, 409, 413, 415, 422, 429, 503]),
        detail: describe(
          { role: 'admin', scope: 'billing:write', reach: 'tenant' },
          {
            tags,
            summary: 'Start a top-up: a hosted invoice at the payment provider',
            description:
              "Allowed while the account is in grace or frozen. The balance moves only when the provider's verified notification confirms a payment, by the amount it confirmed. A retry with the same Idempotency-Key returns the same top-up and invoice. Poll GET /billing/topups/{id} and accept only status succeeded. 503 when the provider cannot be reached (the top-up is set aside for review).",
          },
        ),
      },
    )
    .get('/billing/topups', ({ verb, query }) => listTopups({ ...verb, input: query }), {
      query: TopupListQuery,
      response: responses({ 200: PageOf(Topup, { maxItems: 200 }) }, [401, 403, 422]),
      detail: describe({ role: 'viewer', scope: 'billing:read', reach: 'tenant' }, { tags, summary: 'Top-up history, newest first' }),
    })
    .get(
      '/billing/topups/:topup_id',
      ({ verb, params, set }) => {
        set.headers['cache-control'] = 'no-store'
        return getTopup({ ...verb, id: params.topup_id })
      },
      {
        params: t.Object({ topup_id: t.String({ format: 'uuid' }) }),
        response: responses({ 200: Topup }, [401, 403, 404, 422]),
        detail: describe(
          { role: 'viewer', scope: 'billing:read', reach: 'tenant' },
          { tags, summary: "Top-up status, including the provider's intermediate states" },
        ),
      },
    )
    .post(
      '/billing/providers/:provider/notify',
      ({ request, params }) =>
        handleNotification({ deps, providerName: params.provider, rawBody: requestState(request).rawBody ?? '', headers: request.headers }),
      {
        params: t.Object({ provider: t.String({ maxLength: 32 }) }),
        body: Type.Unknown({ description: "The provider's notification, exactly as it signed it" }),
        response: responses({ 200: NotificationReceipt }, [401, 404, 413, 415, 422, 503]),
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
