import { describe } from '../../platform/access'
import { Elysia, t } from 'elysia'
import { Type } from '@sinclair/typebox'
import type { Deps } from '../../platform/context'
import { formatMoney } from '../../platform/money'
import { Literals, Money, responses, Served } from '../../platform/schemas'
import { SANDBOX_OUTCOMES, sandboxInvoice, sandboxPay } from './sandbox.provider'

const html = (body: string) =>
  new Response(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>gpuhq sandbox checkout</title><meta name="viewport" content="width=device-width,initial-scale=1"><style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem}button{margin:.3rem;padding:.5rem 1rem}</style></head><body>${body}</body></html>`,
    {
      headers: {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        'content-security-policy': "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'",
      },
    },
  )

/** The sandbox provider's hosted pages (never in production: the config refuses the provider there). */
export function sandboxRoutes(deps: Deps) {
  const app = new Elysia({ name: 'sandbox' }).get(
    '/payments/return',
    () => html('<h1>Thank you</h1><p>Your payment is being confirmed. The balance changes once the provider confirms it; this page changes nothing.</p>'),
    {
      response: responses({ 200: Served('text/html', 'HTML page') }, []),
      detail: describe({ public: true }, { tags: ['billing'], summary: 'Where the payment page sends the browser back; changes nothing' }),
    },
  )
  if (!deps.config.paymentProviders.includes('sandbox')) return app
  return app
    .get(
      '/sandbox/checkout/:invoice_id',
      async ({ params }) => {
        const inv = await sandboxInvoice(deps, params.invoice_id)
        const buttons = SANDBOX_OUTCOMES.map((o) => `<button data-outcome="${o}">${o.replace('_', ' ')}</button>`).join('')
        return html(`<h1>Sandbox checkout</h1><p>Invoice <code>${inv.invoiceId}</code> for <b>${formatMoney(inv.priceAmountMicros)} USD</b> (${inv.method}).</p>
<p><label>Amount paid (USD) <input id="amount" value="${formatMoney(inv.priceAmountMicros)}"></label></p><p>${buttons}</p><p id="result"></p>
<script>for (const b of document.querySelectorAll('button')) b.onclick = async () => {
  const r = await fetch(location.pathname, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ outcome: b.dataset.outcome, amount_usd: document.getElementById('amount').value }) })
  document.getElementById('result').textContent = r.ok ? 'Sent "' + b.dataset.outcome + '" to gpuhq as a signed notification.' : 'Failed: ' + r.status }</script>`)
      },
      {
        params: t.Object({ invoice_id: t.String({ format: 'uuid' }) }),
        response: responses({ 200: Served('text/html', 'HTML page') }, [404, 422]),
        detail: describe({ public: true }, { tags: ['billing'], summary: 'Sandbox checkout page' }),
      },
    )
    .post('/sandbox/checkout/:invoice_id', ({ params, body }) => sandboxPay(deps, params.invoice_id, body), {
      params: t.Object({ invoice_id: t.String({ format: 'uuid' }) }),
      body: Type.Object({ outcome: Literals(SANDBOX_OUTCOMES), amount_usd: Type.Optional(Money()) }, { additionalProperties: false }),
      response: responses({ 200: Type.Object({ payment_id: Type.String(), notification_status: Type.Integer() }) }, [404, 409, 413, 415, 422]),
      detail: describe(
        { public: true },
        {
          tags: ['billing'],
          summary: 'Sandbox: pay (or not) an invoice',
          description:
            'Records the outcome and sends the signed notification to /api/v1/billing/providers/sandbox/notify, as a provider would. An amount above the invoice (or not above zero) → 422; an invoice already paid by a finished outcome refuses every further outcome → 409.',
        },
      ),
    })
}
