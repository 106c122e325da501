import { withTransaction } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { applyPayment, moveTopup } from './crediting'
import { ProviderRejected, ProviderUnavailable, type ProviderPayment } from './provider'
import { providers } from './topups.service'
import { openTopups, topupById } from './topups.repository'

type JobRef = { job: string; period: string }

/**
 * billing.reconcile: re-reads open top-ups from their provider; expires unpaid ones past their
 * invoice's life. Only a provider that cannot be reached counts as "unreadable" (a later run settles
 * it). Anything else that goes wrong with one top-up (a bug, a database fault while crediting) is
 * logged with the job run and the top-up, leaves that top-up as it was (its transaction rolled
 * back), does not stop the others, and fails the run so it shows in the job's outcome.
 */
export async function reconcileTopups(deps: Deps, run: JobRef = { job: 'billing.reconcile', period: 'manual' }): Promise<string> {
  const open = openTopups(deps.db)
  let settled = 0
  let expired = 0
  let unreachable = 0
  let refused = 0
  const failed: string[] = []
  for (const t of open) {
    const provider = providers(deps).get(t.provider)
    if (t.paymentId && provider) {
      let p: ProviderPayment
      try {
        p = await provider.fetchPayment(t.paymentId)
      } catch (e) {
        if (e instanceof ProviderUnavailable) {
          unreachable++
          deps.log.warn('payment provider unreachable during reconcile', { ...run, topup_id: t.id, provider: t.provider, error: e.message })
          continue
        }
        if (e instanceof ProviderRejected) {
          refused++
          deps.log.warn('payment provider refused to read a payment back during reconcile', { ...run, topup_id: t.id, provider: t.provider, error: e.message })
          continue
        }
        failed.push(t.id)
        deps.log.error('reading a payment back failed unexpectedly', { ...run, topup_id: t.id, provider: t.provider, error: e })
        continue
      }
      try {
        const moved = withTransaction(deps.db, (tx) => {
          const cur = topupById(tx, t.id)!
          return applyPayment(tx, deps, cur, p).status !== cur.status
        })
        if (moved) settled++
      } catch (e) {
        failed.push(t.id)
        deps.log.error('applying a payment failed; the top-up is left as it was', { ...run, topup_id: t.id, payment_id: t.paymentId, error: e })
      }
    } else if (t.expiresAt < deps.clock.nowUs()) {
      withTransaction(deps.db, (tx) => {
        const cur = topupById(tx, t.id)!
        // Re-read: a notification may have moved it since the list was taken.
        if (cur.version === t.version) {
          moveTopup(tx, deps, cur, { status: 'expired' })
          expired++
        }
      })
    }
  }
  const summary = `${open.length} open top-ups: ${settled} settled or flagged, ${expired} expired, ${unreachable} unreadable${refused ? `, ${refused} refused by the provider` : ''}`
  if (failed.length) throw new Error(`${summary}; ${failed.length} failed (see the log): ${failed.join(', ')}`)
  return summary
}
