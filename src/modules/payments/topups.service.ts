import { and, desc, eq, lt } from 'drizzle-orm'
import { paymentNotifications, topups } from '../../../db/schema'
import { withTransaction } from '../../../db/client'
import type { Actor } from '../../platform/access'
import { perDeps, type Deps } from '../../platform/context'
import { decodeCursor, toPage } from '../../platform/cursor'
import { formatMoney, parseMoney } from '../../platform/money'
import { ProblemError, problems } from '../../platform/problem'
import { sha256Hex } from '../../platform/secrets'
import { formatNullableTimestamp, formatTimestamp } from '../../platform/time'
import type { AuditContext } from '../audit/audit.context'
import { recordAudit } from '../audit/audit.service'
import { applyPayment } from './crediting'
import { createNowPayments } from './nowpayments.provider'
import { ProviderRejected, ProviderUnavailable, type PaymentMethod, type PaymentProvider, type ProviderPayment } from './provider'
import { createSandbox } from './sandbox.provider'
import { changeTopup as change, findTopupFor, TERMINAL, type TopupRow } from './topups.repository'

/**
 * Top-ups (interface-spec "Top-up"): creating → partially_paid → succeeded, or review, expired,
 * failed. Only a provider payment read back from the provider after a verified notification (or by
 * billing.reconcile) moves anything; the credit is the amount the provider confirmed, never the
 * invoiced one, and at most one ledger credit exists per provider payment (a unique index).
 */
export type { TopupRow } from './topups.repository'
export const INVOICE_TTL_US = 24 * 3_600_000_000

export const providers = perDeps(
  (deps): Map<string, PaymentProvider> =>
    new Map(deps.config.paymentProviders.map((name) => [name, name === 'sandbox' ? createSandbox(deps) : createNowPayments(deps.config)])),
)

/** The catalogue: every enabled provider's methods; a code offered twice goes to the first provider listed. */
export function paymentMethods(deps: Deps): PaymentMethod[] {
  const seen = new Map<string, PaymentMethod>()
  for (const p of providers(deps).values()) for (const m of p.methods) if (!seen.has(m.code)) seen.set(m.code, m)
  return [...seen.values()]
}

export function topupView(t: TopupRow) {
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

export type CreateTopupInput = { amount_usd: string; payment_method: string; purpose?: { kind: string; target_plan?: string; change_id?: string } }

export async function createTopup({ deps, actor, audit, input }: { deps: Deps; actor: Actor; audit: AuditContext; input: CreateTopupInput }) {
  // decisions.md: PAYMENT_PROVIDERS unset means no provider, and top-ups answer 503.
  if (providers(deps).size === 0) throw problems.unavailable('no payment provider is enabled on this service (PAYMENT_PROVIDERS)', 3600)
  const method = paymentMethods(deps).find((m) => m.code === input.payment_method)
  if (!method) throw problems.field('/payment_method', 'unknown_method', 'read the codes from GET /billing/payment-methods')
  const amount = parseMoney(input.amount_usd)
  if (amount < method.minAmountMicros)
    throw problems.field('/amount_usd', 'too_small', `${method.code} takes at least ${formatMoney(method.minAmountMicros)} USD`)
  const purpose = input.purpose ?? { kind: 'wallet' }
  const kind = purpose.kind === 'subscription' ? 'subscription_change' : purpose.kind
  if (kind !== 'wallet' && kind !== 'subscription_change')
    throw problems.field('/purpose/kind', 'invalid_value', 'purpose.kind is wallet or subscription_change')
  if (kind === 'subscription_change' && (!purpose.change_id || !purpose.target_plan))
    throw problems.validation([
      ...(!purpose.change_id ? [{ path: '/purpose/change_id', code: 'required' }] : []),
      ...(!purpose.target_plan ? [{ path: '/purpose/target_plan', code: 'required' }] : []),
    ])

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
  withTransaction(deps.db, (tx) => {
    tx.insert(topups).values(row).run()
    recordAudit(tx, deps, audit, { operation: 'billing.topups.create', targetKind: 'topup', targetId: row.id })
  })
  try {
    const invoice = await provider.createInvoice({
      topupId: row.id,
      amountMicros: amount,
      method: method.code,
      description: `gpuhq top-up ${formatMoney(amount)} USD`,
    })
    return withTransaction(deps.db, (tx) => topupView(change(tx, deps, row, { invoiceId: invoice.invoiceId, checkoutUrl: invoice.checkoutUrl })))
  } catch (e) {
    if (e instanceof ProviderRejected) {
      withTransaction(deps.db, (tx) => change(tx, deps, row, { status: 'failed', reviewReason: `provider refused: ${e.message}` }))
      throw problems.field('/amount_usd', 'rejected_by_provider', `the payment provider refused the invoice: ${e.message}`)
    }
    // We cannot tell whether an invoice exists: a human looks (review), the client may retry.
    withTransaction(deps.db, (tx) => change(tx, deps, row, { status: 'review', reviewReason: 'ambiguous_create' }))
    deps.log.warn('payment provider did not answer the invoice', { topup_id: row.id, error: e instanceof Error ? e.message : String(e) })
    throw problems.unavailable('the payment provider could not be reached; the top-up was set aside for review')
  }
}

export function getTopup({ deps, actor, id }: { deps: Deps; actor: Actor; id: string }) {
  const t = deps.db
    .select()
    .from(topups)
    .where(and(eq(topups.tenantId, actor.tenantId), eq(topups.id, id.toLowerCase())))
    .get()
  if (!t) throw problems.notFound('no such top-up')
  return topupView(t)
}

export function listTopups({ deps, actor, input }: { deps: Deps; actor: Actor; input: { cursor?: string; limit?: number; status?: TopupRow['status'] } }) {
  const limit = input.limit ?? 50
  const scope = `topups:${actor.tenantId}:${input.status ?? ''}`
  const before = input.cursor ? decodeCursor<{ id: string }>(deps.keys.cursor, scope, input.cursor).id : null
  const where = [eq(topups.tenantId, actor.tenantId)]
  if (input.status) where.push(eq(topups.status, input.status))
  if (before) where.push(lt(topups.id, before))
  const rows = deps.db
    .select()
    .from(topups)
    .where(and(...where))
    .orderBy(desc(topups.id))
    .limit(limit + 1)
    .all()
  return toPage(rows, limit, (r) => ({ id: r.id }), { key: deps.keys.cursor, scope }, topupView)
}

/**
 * POST /billing/providers/{provider}/notify: verify the signature over the exact bytes, read the
 * payment back from the provider, then apply it. Forged or tampered → 401 and nothing changes; a
 * notification about no top-up of ours is recorded and ignored.
 */
export async function handleNotification({ deps, providerName, rawBody, headers }: { deps: Deps; providerName: string; rawBody: string; headers: Headers }) {
  const provider = providers(deps).get(providerName)
  if (!provider) throw problems.notFound(`no payment provider ${providerName}`)
  const n = provider.verifyNotification(rawBody, headers)
  if (!n) throw new ProblemError('unauthorized', { detail: 'the notification signature does not verify' })
  let payment: ProviderPayment
  try {
    payment = await provider.fetchPayment(n.paymentId)
  } catch (e) {
    if (e instanceof ProviderUnavailable || e instanceof ProviderRejected)
      throw problems.unavailable('the payment could not be read back from the provider; send the notification again later', 60)
    throw e
  }
  return withTransaction(deps.db, (tx) => {
    const t = findTopupFor(tx, provider.name, { invoiceId: payment.invoiceId ?? n.invoiceId, orderId: payment.orderId ?? n.orderId })
    const outcome = t ? applyPayment(tx, deps, t, payment).status : 'ignored'
    tx.insert(paymentNotifications)
      .values({
        id: deps.newId(),
        provider: provider.name,
        topupId: t?.id ?? null,
        paymentId: n.paymentId,
        reportedStatus: n.reportedStatus.slice(0, 64),
        outcome,
        bodySha256: sha256Hex(rawBody),
        receivedAt: deps.clock.nowUs(),
      })
      .run()
    return { received: true, topup_status: t ? outcome : null }
  })
}
