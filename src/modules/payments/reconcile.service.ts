import { withTransaction } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { TenantWalk } from '../../platform/jobs'
import { applyPayment, moveTopup } from './crediting'
import { ProviderRejected, ProviderUnavailable, type ProviderPayment } from './provider'
import { providers } from './topups.service'
import { openTopups, topupById } from './topups.repository'

type JobRef = { job: string; period: string }

/**
 * billing.reconcile: re-reads open top-ups from their provider; expires unpaid ones past their
 * invoice's life. Only a provider that cannot be reached counts as "unreadable" (a later run settles
 * it). Each top-up is its own part of the job's per-tenant error boundary (TenantWalk, scoped by the
 * top-up): anything else that goes wrong with one (a bug, a database fault while crediting) is
 * logged with the job, the tenant and the top-up, leaves that top-up as it was (its transaction
 * rolled back), does not stop the others, records the run `partial`, and backs that top-up off (1,
 * 2, 4… minutes, at most an hour) while the tenant's other top-ups and every other tenant's are
 * settled at each run as before. A payment notification still settles a backed-off top-up at once.
 */
export async function reconcileTopups(
  deps: Deps,
  run: JobRef = { job: 'billing.reconcile', period: 'manual' },
  tenants: TenantWalk = new TenantWalk(deps, run.job, undefined, run.period),
): Promise<string> {
  const open = await openTopups(deps.db)
  let settled = 0
  let expired = 0
  let unreachable = 0
  let refused = 0
  for (const t of open) {
    const provider = providers(deps).get(t.provider)
    const outcome = await tenants.run(
      t.tenantId,
      async (): Promise<'settled' | 'expired' | 'unreachable' | 'refused' | 'unchanged'> => {
        if (t.paymentId && provider) {
          let p: ProviderPayment
          try {
            p = await provider.fetchPayment(t.paymentId)
          } catch (e) {
            if (e instanceof ProviderUnavailable) {
              deps.log.warn('payment provider unreachable during reconcile', { ...run, topup_id: t.id, provider: t.provider, error: e.message })
              return 'unreachable'
            }
            if (e instanceof ProviderRejected) {
              deps.log.warn('payment provider refused to read a payment back during reconcile', {
                ...run,
                topup_id: t.id,
                provider: t.provider,
                error: e.message,
              })
              return 'refused'
            }
            throw e
          }
          const moved = await withTransaction(deps.db, async (tx) => {
            const cur = (await topupById(tx, t.id))!
            return (await applyPayment(tx, deps, cur, p)).status !== cur.status
          })
          return moved ? 'settled' : 'unchanged'
        }
        if (t.expiresAt >= deps.clock.nowUs()) return 'unchanged'
        return await withTransaction(deps.db, async (tx) => {
          const cur = (await topupById(tx, t.id))!
          // Re-read: a notification may have moved it since the list was taken.
          if (cur.version !== t.version) return 'unchanged'
          await moveTopup(tx, deps, cur, { status: 'expired' })
          return 'expired'
        })
      },
      `top-up ${t.id}`,
    )
    if (outcome === 'settled') settled++
    else if (outcome === 'expired') expired++
    else if (outcome === 'unreachable') unreachable++
    else if (outcome === 'refused') refused++
  }
  return `${open.length} open top-ups: ${settled} settled or flagged, ${expired} expired, ${unreachable} unreadable${refused ? `, ${refused} refused by the provider` : ''}`
}
