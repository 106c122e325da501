import { withTransaction } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { formatMoney } from '../../platform/money'
import { recordSystemEvent } from '../audit'
import { appendEntry } from '../billing'
import { invalidPaymentField, PaymentErrors } from './payments.errors'
import { findUnsettled, listUnsettled, settleUnsettled, type UnsettledRow } from './unsettled.repository'

/**
 * The operator's side of "a top-up is credited at most once" (docs/payments.md): finished payments
 * that credited nothing wait here until the operator settles each one, either by crediting it as an
 * adjustment (the customer really paid twice and keeps the money as balance) or by recording that it
 * was refunded at the provider. Used by scripts/admin.
 */
export async function listUnsettledPayments({ deps, all = false }: { deps: Deps; all?: boolean }): Promise<UnsettledRow[]> {
  return await listUnsettled(deps.db, all)
}

export async function settleUnsettledPayment({ deps, input }: { deps: Deps; input: { id: string; settlement: 'credited' | 'refunded'; reason: string } }) {
  const reason = input.reason.trim()
  if (!reason || reason.length > 400) throw invalidPaymentField('/reason', 'too_long', 'the reason must have 1 to 400 characters')
  return await withTransaction(deps.db, async (tx) => {
    const row = await findUnsettled(tx, input.id)
    if (!row) throw PaymentErrors.unsettledNotFound(`no unsettled payment ${input.id}`)
    if (row.settledAt !== null) throw PaymentErrors.alreadySettled(`payment ${row.provider}:${row.paymentId} was already settled (${row.settlement})`)
    let entryId: string | null = null
    if (input.settlement === 'credited') {
      if (row.amountMicros === null || row.amountMicros <= 0)
        throw invalidPaymentField(
          '/amount',
          'unknown',
          'the provider confirmed no amount for this payment; credit it with scripts/admin adjust and settle it as refunded or with a note',
        )
      const entry = await appendEntry(tx, deps, {
        tenantId: row.tenantId,
        kind: 'adjustment',
        amountMicros: row.amountMicros,
        occurredAt: deps.clock.nowUs(),
        detail: `adjustment: payment ${row.provider}:${row.paymentId} on top-up ${row.topupId}: ${reason}`,
      })
      entryId = entry.id
      await recordSystemEvent(
        tx,
        deps,
        row.tenantId,
        'billing.adjust',
        `${formatMoney(row.amountMicros)} USD: payment ${row.provider}:${row.paymentId}: ${reason}`,
      )
    }
    const now = deps.clock.nowUs()
    await settleUnsettled(tx, row.id, { settledAt: now, settlement: input.settlement, settlementEntryId: entryId, settlementNote: reason })
    await recordSystemEvent(tx, deps, row.tenantId, 'payments.settle', `payment ${row.provider}:${row.paymentId} ${input.settlement}: ${reason}`)
    return { ...row, settledAt: now, settlement: input.settlement, settlementEntryId: entryId, settlementNote: reason }
  })
}
