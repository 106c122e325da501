import { withTransaction } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { MoneyFormatError, parseMoney } from '../../platform/money'
import { recordSystemEvent } from '../audit'
import { findTenant } from '../tenants'
import { BillingErrors, invalidBillingField } from './billing.errors'
import { appendEntry } from './ledger'

/** Operator verb (scripts/admin): acts as the system and leaves an audit row. */
export async function adjustBalance({ deps, input }: { deps: Deps; input: { tenantId: string; amount: string; reason: string } }) {
  let micros: number
  try {
    micros = parseMoney(input.amount)
  } catch (e) {
    if (e instanceof MoneyFormatError) throw invalidBillingField('/amount', 'format', `${input.amount}: ${e.message}`)
    throw e
  }
  if (micros === 0) throw invalidBillingField('/amount', 'zero', 'an adjustment of zero changes nothing')
  const reason = input.reason.trim()
  if (!reason || reason.length > 400) throw invalidBillingField('/reason', 'too_long', 'the reason must have 1 to 400 characters')
  return await withTransaction(deps.db, async (tx) => {
    if (!(await findTenant(tx, input.tenantId))) throw BillingErrors.tenantNotFound(`no tenant ${input.tenantId}`)
    const row = await appendEntry(tx, deps, {
      tenantId: input.tenantId,
      kind: 'adjustment',
      amountMicros: micros,
      occurredAt: deps.clock.nowUs(),
      detail: `adjustment: ${reason}`,
    })
    await recordSystemEvent(tx, deps, input.tenantId, 'billing.adjust', `${input.amount} USD: ${reason}`)
    return row
  })
}
