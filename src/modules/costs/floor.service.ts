import type { Deps } from '../../platform/context'
import { parseMoney } from '../../platform/money'
import { daysInMonth } from '../../platform/time'
import { serverOfTenant } from '../fleet'
import { findPlan } from '../plans'
import { averageGpuPowerW } from '../telemetry'
import { costBasisOf, cutPercent, spreadOf } from './costs.service'
import type { MarketplaceId } from '../marketplaces'

/**
 * What one GPU-hour of a server costs its owner (docs/strategy.md "The floor"), from the same
 * numbers as the cost basis and the margin: electricity (the server's tariff, else the fleet's, ×
 * its measured GPU power over the last 7 days), the operational cost spread over billable
 * server-days, gpuhq's own hourly charge at the plan's price, and the platform's cut (the highest
 * of the currencies the offer is paid in). A missing input is null and named in `missing`.
 */

const HOUR_US = 3_600_000_000
const WEEK_US = 7 * 24 * HOUR_US

export type GpuHourCosts = {
  electricityMicros: number | null
  operationalMicros: number | null
  gpuhqMicros: number | null
  /** Percent as a decimal string; null when neither entered nor published. */
  commissionPercent: string | null
  missing: string[]
}

/**
 * The costs of one GPU-hour of each of the tenant's servers: the tenant's cost basis, operational
 * spread and plan price are read once, then each server adds its own tariff, power and GPU count.
 */
export async function gpuHourCosts(
  deps: Deps,
  tenant: { tenantId: string; planCode: string | null },
): Promise<(server: { serverId: string; marketplace: MarketplaceId; currencies: string[]; gpus: number }) => Promise<GpuHourCosts>> {
  const now = deps.clock.nowUs()
  const basis = await costBasisOf(deps, tenant.tenantId)
  const spread = await spreadOf(deps, tenant.tenantId, basis.operationalMicrosPerMonth)
  const plan = tenant.planCode ? await findPlan(deps.db, tenant.planCode) : undefined
  const d = new Date(Math.floor(now / 1000))
  const days = daysInMonth(d.getUTCFullYear(), d.getUTCMonth() + 1)

  return async ({ serverId, marketplace, currencies, gpus }) => {
    const missing: string[] = []
    const server = await serverOfTenant(deps.db, tenant.tenantId, serverId)
    const tariff = server?.electricityMicrosPerKwh ?? basis.electricityMicrosPerKwh
    const watts = await averageGpuPowerW(deps.db, serverId, now - WEEK_US, now)
    let electricityMicros: number | null = null
    if (tariff === null) missing.push('electricity tariff')
    else if (watts === null) missing.push('power measurements')
    else electricityMicros = Math.round((tariff * watts) / 1000 / gpus)

    if (basis.operationalMicrosPerMonth === null) missing.push('operational cost')
    const operationalMicros = spread ? Math.round(parseMoney(spread.usd_per_server_day) / 24 / gpus) : null

    let gpuhqMicros: number | null = null
    if (!plan || plan.priceMicrosPerServerMonth === null) missing.push('gpuhq charge (contract-priced plan)')
    else gpuhqMicros = Math.round(plan.priceMicrosPerServerMonth / days / 24 / gpus)

    let commissionPercent: string | null = null
    for (const currency of currencies) {
      const cut = cutPercent(basis, marketplace, currency)
      if (cut.percent === null) missing.push(`commission ${marketplace} ${currency}`)
      else if (commissionPercent === null || Number(cut.percent) > Number(commissionPercent)) commissionPercent = cut.percent
    }
    return { electricityMicros, operationalMicros, gpuhqMicros, commissionPercent, missing }
  }
}
