import type { Static } from '@sinclair/typebox'
import { withTransaction } from '../../../db/client'
import type { Actor } from '../../platform/access'
import { perDeps, type Deps } from '../../platform/context'
import { paginate } from '../../platform/cursor'
import { formatMoney, parseMoney } from '../../platform/money'
import { sha256Hex } from '../../platform/secrets'
import { formatNullableTimestamp, formatTimestamp } from '../../platform/time'
import { type AuditContext, recordAudit } from '../audit'
import { applyPayment, moveTopup as change } from './crediting'
import { createNowPayments } from './nowpayments.provider'
import { invalidPaymentField, PaymentErrors } from './payments.errors'
import type { TopupCreate, TopupListQuery } from './payments.model'
import { ProviderRejected, ProviderUnavailable, type PaymentMethod, type PaymentProvider, type ProviderPayment } from './provider'
import { createSandbox } from './sandbox.provider'
import { findTenantTopup, findTopupFor, insertPaymentNotification, insertTopup, listTenantTopups, TERMINAL, type TopupRow } from './topups.repository'

/**
 * Top-ups (docs/payments.md): creating → partially_paid → succeeded, or review, expired,
 * failed. Only a provider payment read back from the provider after a verified notification (or by
 * billing.reconcile) moves anything; the credit is the amount the provider confirmed, never the
 * invoiced one, and at most one ledger credit exists per provider payment (a unique index).
 */
const INVOICE_TTL_US = 24 * 3_600_000_000

export const providers = perDeps(
  (deps): Map<string, PaymentProvider> =>
    new Map(
      deps.config.paymentProviders.map((name) => [
        name,
        name === 'sandbox' ? createSandbox(deps) : createNowPayments(deps.config, () => deps.durable.barrier()),
      ]),
    ),
)

/** The catalogue: every enabled provider's methods; a code offered twice goes to the first provider listed. */
function paymentMethods(deps: Deps): PaymentMethod[] {
  const seen = new Map<string, PaymentMethod>()
  for (const p of providers(deps).values()) for (const m of p.methods) if (!seen.has(m.code)) seen.set(m.code, m)
  return [...seen.values()]
}

function topupView(t: TopupRow) {
  return {
    id: t.id,
    status: t.status,
    amount_usd: formatMoney(t.amountMicros),
    credited_usd: formatMoney(t.creditedMicros),
    payment_method: t.paymentMethod,
    provider: t.provider,
    provider_status: t.providerStatus,
    purpose:
      t.purposeKind === 'wallet' ? { kind: 'wallet' as const } : { kind: 'subscription_change' as const, target_plan: t.targetPlan, change_id: t.changeId },
    ...(TERMINAL.includes(t.status) || !t.checkoutUrl ? {} : { checkout_url: t.checkoutUrl }),
    invoice_id: t.invoiceId,
    review_reason: t.reviewReason,
    created_at: formatTimestamp(t.createdAt),
    expires_at: formatTimestamp(t.expiresAt),
    succeeded_at: formatNullableTimestamp(t.succeededAt),
    updated_at: formatTimestamp(t.updatedAt),
  }
}

/** GET /billing/payment-methods. */
export function listPaymentMethods({ deps }: { deps: Deps }) {
  return { items: paymentMethods(deps).map((m) => ({ code: m.code, label: m.label, provider: m.provider, min_amount_usd: formatMoney(m.minAmountMicros) })) }
}

export async function createTopup({ deps, actor, audit, input }: { deps: Deps; actor: Actor; audit: AuditContext; input: Static<typeof TopupCreate> }) {
  // PAYMENT_PROVIDERS unset means no provider, and top-ups answer 503 (docs/payments.md).
  if (providers(deps).size === 0) throw PaymentErrors.noProvider(undefined, { retryAfterSeconds: 3600 })
  const method = paymentMethods(deps).find((m) => m.code === input.payment_method)
  if (!method) throw invalidPaymentField('/payment_method', 'unknown_method', 'read the codes from GET /billing/payment-methods')
  const amount = parseMoney(input.amount_usd)
  if (amount < method.minAmountMicros)
    throw invalidPaymentField('/amount_usd', 'too_small', `${method.code} takes at least ${formatMoney(method.minAmountMicros)} USD`)
  const purpose = input.purpose ?? { kind: 'wallet' }
  const kind = purpose.kind === 'subscription' ? 'subscription_change' : purpose.kind
  if (kind === 'subscription_change' && (!purpose.change_id || !purpose.target_plan))
    throw PaymentErrors.validation(undefined, {
      fields: [
        ...(!purpose.change_id ? [{ path: '/purpose/change_id', code: 'required' }] : []),
        ...(!purpose.target_plan ? [{ path: '/purpose/target_plan', code: 'required' }] : []),
      ],
    })

  const provider = providers(deps).get(method.provider)!
  const now = deps.clock.nowUs()
  const row: TopupRow = {
    id: deps.newId(),
    tenantId: actor.tenantId,
    provider: provider.name,
    paymentMethod: method.code,
    amountMicros: amount,
    purposeKind: kind,
    targetPlan: kind === 'wallet' ? null : purpose.target_plan!,
    changeId: kind === 'wallet' ? null : purpose.change_id!.toLowerCase(),
    status: 'creating',
    providerStatus: null,
    reviewReason: null,
    invoiceId: null,
    checkoutUrl: null,
    paymentId: null,
    creditedMicros: 0,
    createdAt: now,
    expiresAt: now + INVOICE_TTL_US,
    updatedAt: now,
    succeededAt: null,
    version: 1,
  }
  await withTransaction(deps.db, async (tx) => {
    await insertTopup(tx, row)
    await recordAudit(tx, deps, audit, { operation: 'billing.topups.create', targetKind: 'topup', targetId: row.id })
  })
  try {
    const invoice = await provider.createInvoice({
      topupId: row.id,
      amountMicros: amount,
      method: method.code,
      description: `gpuhq top-up ${formatMoney(amount)} USD`,
    })
    return await withTransaction(deps.db, async (tx) =>
      topupView(await change(tx, deps, row, { invoiceId: invoice.invoiceId, checkoutUrl: invoice.checkoutUrl })),
    )
  } catch (e) {
    if (e instanceof ProviderRejected) {
      await withTransaction(deps.db, (tx) => change(tx, deps, row, { status: 'failed', reviewReason: `provider refused: ${e.message}` }))
      throw invalidPaymentField('/amount_usd', 'rejected_by_provider', `the payment provider refused the invoice: ${e.message}`)
    }
    // We cannot tell whether an invoice exists: a human looks (review), the client may retry.
    await withTransaction(deps.db, (tx) => change(tx, deps, row, { status: 'review', reviewReason: 'ambiguous_create' }))
    deps.log.warn('payment provider did not answer the invoice', { topup_id: row.id, error: e instanceof Error ? e.message : String(e) })
    throw PaymentErrors.providerUnreachable(undefined, { retryAfterSeconds: 30 })
  }
}

export async function getTopup({ deps, actor, id }: { deps: Deps; actor: Actor; id: string }) {
  const t = await findTenantTopup(deps.db, actor.tenantId, id.toLowerCase())
  if (!t) throw PaymentErrors.topupNotFound()
  return topupView(t)
}

export async function listTopups({ deps, actor, input }: { deps: Deps; actor: Actor; input: Static<typeof TopupListQuery> }) {
  return await paginate(deps.keys.cursor, {
    scope: `topups:${actor.tenantId}:${input.status ?? ''}`,
    input,
    fetch: (after: { id: string } | undefined, take) => listTenantTopups(deps.db, actor.tenantId, { status: input.status, beforeId: after?.id }, take),
    position: (r) => ({ id: r.id }),
    view: topupView,
  })
}

/**
 * POST /billing/providers/{provider}/notify: verify the signature over the exact bytes, read the
 * payment back from the provider, then apply it. Forged or tampered → 401 and nothing changes; a
 * notification about no top-up of ours is recorded and ignored.
 */
export async function handleNotification({ deps, providerName, rawBody, headers }: { deps: Deps; providerName: string; rawBody: string; headers: Headers }) {
  const provider = providers(deps).get(providerName)
  if (!provider) throw PaymentErrors.providerNotFound(`no payment provider ${providerName}`)
  const n = provider.verifyNotification(rawBody, headers)
  if (!n) throw PaymentErrors.badSignature()
  let payment: ProviderPayment
  try {
    payment = await provider.fetchPayment(n.paymentId)
  } catch (e) {
    if (e instanceof ProviderUnavailable || e instanceof ProviderRejected) throw PaymentErrors.paymentUnreadable(undefined, { retryAfterSeconds: 60 })
    throw e
  }
  return await withTransaction(deps.db, async (tx) => {
    const t = await findTopupFor(tx, provider.name, { invoiceId: payment.invoiceId ?? n.invoiceId, orderId: payment.orderId ?? n.orderId })
    const outcome = t ? (await applyPayment(tx, deps, t, payment)).status : 'ignored'
    await insertPaymentNotification(tx, {
      id: deps.newId(),
      provider: provider.name,
      topupId: t?.id ?? null,
      paymentId: n.paymentId,
      reportedStatus: n.reportedStatus.slice(0, 64),
      outcome,
      bodySha256: sha256Hex(rawBody),
      receivedAt: deps.clock.nowUs(),
    })
    return { received: true, topup_status: t ? outcome : null }
  })
}
