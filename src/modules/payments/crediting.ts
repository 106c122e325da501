import type { Tx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { formatNullableMoney } from '../../platform/money'
import { appendEntry, paymentCredited } from '../billing'
import type { ProviderPayment } from './provider'
import { changeTopup, claimTopup, TERMINAL, topupById, type TopupRow } from './topups.repository'
import { insertUnsettled, type UnsettledRow } from './unsettled.repository'

/** The outcomes that end a top-up without a credit: the owner hears of each (a `payment` notification). */
const NOT_CREDITED = ['review', 'expired', 'failed'] as const

/**
 * Every change of a top-up goes through here: writes it, and when it moves the top-up into review,
 * expired or failed, says so (topup.not_credited, in the caller's transaction) so the owner learns
 * of the outcome exactly once, whichever path (notification, reconcile, creation) moved it.
 */
export async function moveTopup(tx: Tx, deps: Deps, t: TopupRow, patch: Partial<TopupRow>): Promise<TopupRow> {
  const next = await changeTopup(tx, deps, t, patch)
  const status = next.status as (typeof NOT_CREDITED)[number]
  if (next.status !== t.status && NOT_CREDITED.includes(status))
    await deps.events.emit('topup.not_credited', {
      tx,
      topup: { id: next.id, tenantId: next.tenantId, amountMicros: next.amountMicros, paymentMethod: next.paymentMethod },
      status,
    })
  return next
}

/** The states a finished payment may move to succeeded (expired too: money that arrived is not dropped). */
const CREDITABLE: TopupRow['status'][] = ['creating', 'partially_paid', 'expired']

/**
 * Applies what the provider says about a payment to its top-up, inside the caller's transaction
 * (BEGIN IMMEDIATE), together with the credit. A terminal top-up never moves back; a payment that
 * disagrees with the top-up (order, invoice, currency) or carries an unknown status sends it to review.
 *
 * A top-up is credited at most once, whatever arrives in whatever order or concurrency: the credit
 * is booked only by the one transaction whose conditional UPDATE moves the top-up to succeeded, and
 * the ledger's unique index on a top-up's credit refuses a second one in the database itself. A
 * further finished payment credits nothing and is recorded in unsettled_payments for the operator.
 */
export async function applyPayment(tx: Tx, deps: Deps, t: TopupRow, p: ProviderPayment): Promise<TopupRow> {
  const base = { providerStatus: p.status.slice(0, 64), paymentId: t.paymentId ?? p.paymentId }
  const review = async (reason: string) =>
    t.status === 'succeeded'
      ? await moveTopup(tx, deps, t, { ...base, reviewReason: reason })
      : await moveTopup(tx, deps, t, { ...base, status: 'review', reviewReason: reason })
  if (p.orderId !== null && p.orderId !== t.id) return await review('order_mismatch')
  if (p.invoiceId !== null && t.invoiceId !== null && p.invoiceId !== t.invoiceId) return await review('invoice_mismatch')
  if (p.priceCurrency !== null && p.priceCurrency !== 'usd') return await review('currency_mismatch')
  if (p.kind === 'unknown') return t.status === 'succeeded' ? t : await review('unknown_provider_status')
  if (p.kind === 'finished') return await applyFinished(tx, deps, t, p, base, review)
  if (TERMINAL.includes(t.status)) {
    // A late non-final report never moves a terminal top-up back; a refund after a credit needs a human.
    if (p.kind === 'refunded' && t.status === 'succeeded') return await moveTopup(tx, deps, t, { ...base, reviewReason: 'refunded_after_credit' })
    return t
  }
  if (p.kind === 'partial') return await moveTopup(tx, deps, t, { ...base, status: 'partially_paid' })
  if (p.kind === 'pending') return await moveTopup(tx, deps, t, base)
  if (p.kind === 'expired') return await moveTopup(tx, deps, t, { ...base, status: 'expired' })
  if (p.kind === 'failed') return await moveTopup(tx, deps, t, { ...base, status: 'failed' })
  return await review('refunded_before_credit')
}

async function applyFinished(
  tx: Tx,
  deps: Deps,
  t: TopupRow,
  p: ProviderPayment,
  base: Partial<TopupRow>,
  review: (reason: string) => Promise<TopupRow>,
): Promise<TopupRow> {
  const ref = `${t.provider}:${p.paymentId}`
  // This very payment was credited already (a replayed notification, reconcile after the IPN).
  if (await paymentCredited(tx, ref)) return t
  if (t.status === 'succeeded') return await recordUnsettled(tx, deps, t, p, 'topup_already_credited')
  if (t.status === 'review' || t.status === 'failed') {
    // A human decides about the top-up; the money that arrived is on their list too.
    await recordUnsettled(tx, deps, t, p, t.status === 'review' ? 'topup_in_review' : 'topup_failed')
    return await moveTopup(tx, deps, t, base)
  }
  if (p.confirmedMicros === null || p.confirmedMicros <= 0) return await review('no_confirmed_amount')
  const now = deps.clock.nowUs()
  const version = t.version + 1
  // The claim: only the transaction that moves the top-up out of a creditable state credits it.
  const claimed = await claimTopup(tx, t.id, CREDITABLE, {
    ...base,
    status: 'succeeded',
    creditedMicros: p.confirmedMicros,
    succeededAt: t.succeededAt ?? now,
    updatedAt: now,
    version,
  })
  if (!claimed) return await recordUnsettled(tx, deps, (await topupById(tx, t.id))!, p, 'topup_already_credited')
  await appendEntry(tx, deps, {
    tenantId: t.tenantId,
    kind: 'topup',
    amountMicros: p.confirmedMicros,
    occurredAt: now,
    detail: `top-up ${t.id} via ${t.provider} (${t.paymentMethod}), payment ${p.paymentId}`,
    paymentRef: ref,
    topupId: t.id,
  })
  const next: TopupRow = { ...t, ...base, status: 'succeeded', creditedMicros: p.confirmedMicros, succeededAt: t.succeededAt ?? now, updatedAt: now, version }
  // Reactions (a paid upgrade) run inside this transaction: they commit exactly with the credit.
  await deps.events.emit('topup.succeeded', {
    tx,
    topup: {
      id: next.id,
      tenantId: next.tenantId,
      changeId: next.changeId,
      amountMicros: next.amountMicros,
      creditedMicros: p.confirmedMicros,
      paymentMethod: next.paymentMethod,
    },
  })
  return next
}

/** Records a finished payment that credited nothing (once per provider payment) and says so in the log. */
async function recordUnsettled(tx: Tx, deps: Deps, t: TopupRow, p: ProviderPayment, reason: UnsettledRow['reason']): Promise<TopupRow> {
  const inserted = await insertUnsettled(tx, {
    id: deps.newId(),
    tenantId: t.tenantId,
    topupId: t.id,
    provider: t.provider,
    paymentId: p.paymentId,
    amountMicros: p.confirmedMicros,
    reason,
    recordedAt: deps.clock.nowUs(),
  })
  if (inserted)
    deps.log.warn('a finished payment credited nothing; listed for the operator (scripts/admin unsettled-payments)', {
      topup_id: t.id,
      tenant_id: t.tenantId,
      provider: t.provider,
      payment_id: p.paymentId,
      amount_usd: formatNullableMoney(p.confirmedMicros),
      reason,
    })
  return t
}
