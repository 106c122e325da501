import { withTransaction } from '../../../db/client'
import type { Deps } from '../../platform/context'
import type { TenantWalk } from '../../platform/jobs'
import { formatMoney } from '../../platform/money'
import { utcDay } from '../../platform/time'
import { accruedDays } from '../earnings'
import { managedServers } from '../fleet'
import { listTenants } from '../tenants'
import { notify } from './outbox.service'

/**
 * The `weekly` producer (the notifications.weekly job, Mondays 08:00 UTC): per tenant with managed
 * servers, the fleet and the week's accrued earnings in a few lines. Once per week and tenant: a
 * rerun of the job that week is grouped into the first report.
 */

const DAY_US = 86_400_000_000

export async function sendWeeklyReports(deps: Deps, tenants: TenantWalk): Promise<string> {
  const now = deps.clock.nowUs()
  const from = utcDay(now - 7 * DAY_US)
  const to = utcDay(now - DAY_US)
  // The Monday of this week names the report (a rerun on any day of the week is the same report).
  const weekday = (new Date(now / 1000).getUTCDay() + 6) % 7
  const week = utcDay(now - weekday * DAY_US)
  let sent = 0
  // One tenant's report that cannot be made is logged and left out; the others are still queued.
  for (const tenant of await listTenants(deps.db))
    await tenants.run(tenant.id, async () => {
      const servers = await managedServers(deps.db, tenant.id)
      if (servers.length === 0) return
      const online = servers.filter((s) => s.presence === 'online').length
      const earned = (await accruedDays(deps, tenant.id, from, to)).reduce((n, r) => n + r.accruedUsdMicros, 0)
      const id = await withTransaction(deps.db, (tx) =>
        notify(tx, deps, tenant.id, {
          category: 'weekly',
          title: `Your week: ${from} to ${to}`,
          body: [
            `${servers.length} servers managed, ${online} online now.`,
            `Accrued from running deals: ${formatMoney(earned)} USD (before the platforms' cut; an estimate from marketplace data).`,
          ].join('\n'),
          groupKey: `weekly:${week}`,
          groupWindowUs: 6 * DAY_US,
        }),
      )
      if (id) sent++
    })
  return `${sent} weekly reports`
}
