import type { Static } from '@sinclair/typebox'
import { withTransaction } from '../../../db/client'
import type { MarketplaceCosts } from '../../../db/schema/costs'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { invalidField } from '../../platform/domain-error'
import { assertIfMatch, etagOf } from '../../platform/etag'
import { formatMoney, MAX_MONEY_MICROS, parseMoneyInRange } from '../../platform/money'
import { daysInMonth, utcDay } from '../../platform/time'
import { recordAudit, type AuditContext } from '../audit'
import { billableServerHours } from '../billing'
import { accruedDays } from '../earnings'
import { countManagedServers } from '../fleet'
import { type DealCurrency, dealCurrencies, MARKETPLACES, type MarketplaceId } from '../marketplaces'
import type { CostBasisPatch } from './costs.model'
import { type CostBasisRow, findCostBasis, saveCostBasis } from './costs.repository'

/**
 * The owner's cost basis (docs/earnings.md "Cost basis"): their own costs, which the ledger never
 * sees. Every rate is nullable (null: not entered, never zero). The defaults listed are the ones the
 * margin calculation uses where nothing is entered, served from this same table.
 */

/** The deal currencies of each marketplace, in its own spelling, with a label (the marketplaces' catalogue). */
const CURRENCIES = Object.fromEntries(MARKETPLACES.map((m) => [m, dealCurrencies(m)])) as Record<MarketplaceId, readonly DealCurrency[]>

const CLORE_FEES = 'docs.clore.ai/for-hosts/host-fees'

/**
 * What the margin calculation uses where the owner entered nothing (and says so). marketplace_a
 * publishes no host commission in the reference gpuhq follows, so it has no default: its margin is
 * an estimate without the cut until the owner enters one.
 */
const DEFAULTS = [
  {
    key: 'marketplaces.marketplace_b.commissions.CLORE-Blockchain',
    value: '5',
    source: CLORE_FEES,
    reason: 'the on-demand base fee charged to the host (spot: 1.25 %); holding CLORE lowers it, so enter your own rate if you hold',
  },
  {
    key: 'marketplaces.marketplace_b.commissions.bitcoin',
    value: '20',
    source: CLORE_FEES,
    reason: 'the 5 % on-demand base fee plus the 15 % hoster fee on payments in BTC',
  },
  {
    key: 'marketplaces.marketplace_b.commissions.USD-Blockchain',
    value: '20',
    source: CLORE_FEES,
    reason: 'the 5 % on-demand base fee plus the 15 % hoster fee on payments in USDT/USDC',
  },
  {
    key: 'operational.spread.method',
    value: 'billable_server_days',
    source: 'gpuhq',
    reason: "the monthly operational cost divided by the month's billable managed server-days, the unit gpuhq itself charges by",
  },
] as const

const emptyMarketplace = (): MarketplaceCosts => ({ commission: null, commissions: {}, markup: null })

async function current(deps: Deps, tenantId: string): Promise<CostBasisRow> {
  return (
    (await findCostBasis(deps.db, tenantId)) ?? {
      tenantId,
      electricityMicrosPerKwh: null,
      operationalMicrosPerMonth: null,
      marketplaces: {},
      version: 0,
      updatedAt: deps.clock.nowUs(),
    }
  )
}

/** A currency's own commission, else the marketplace-wide one; null when neither is entered. */
function resolvedCommission(
  row: Pick<CostBasisRow, 'marketplaces'>,
  marketplace: MarketplaceId,
  currency: string,
): { percent: string | null; source: 'currency' | 'marketplace' | null } {
  const m = row.marketplaces[marketplace] ?? emptyMarketplace()
  const own = m.commissions[currency] ?? null
  if (own !== null) return { percent: own, source: 'currency' }
  if (m.commission !== null) return { percent: m.commission, source: 'marketplace' }
  return { percent: null, source: null }
}

/** The percentage the margin takes as the platform's cut: entered, else the published default, else null (unknown). */
export function cutPercent(
  row: Pick<CostBasisRow, 'marketplaces'>,
  marketplace: MarketplaceId,
  currency: string,
): { percent: string | null; estimated: boolean } {
  const entered = resolvedCommission(row, marketplace, currency).percent
  if (entered !== null) return { percent: entered, estimated: false }
  const fallback = DEFAULTS.find((d) => d.key === `marketplaces.${marketplace}.commissions.${currency}`)
  return { percent: fallback?.value ?? null, estimated: true }
}

/** The cost basis row of the tenant (none entered: all null), for the margin report. */
export async function costBasisOf(deps: Deps, tenantId: string): Promise<CostBasisRow> {
  return await current(deps, tenantId)
}

const DAY_US = 86_400_000_000

export async function spreadOf(deps: Deps, tenantId: string, perMonth: number | null) {
  if (perMonth === null) return null
  const now = deps.clock.nowUs()
  const d = new Date(Math.floor(now / 1000))
  const year = d.getUTCFullYear()
  const month = d.getUTCMonth() + 1
  const monthStart = Date.UTC(year, month - 1, 1) * 1000
  const days = daysInMonth(year, month)
  const charged = (await billableServerHours(deps.db, tenantId, monthStart, now)) / 24
  const remainingDays = (monthStart + days * DAY_US - now) / DAY_US
  const serverDays = Math.round((charged + (await countManagedServers(deps.db, tenantId)) * remainingDays) * 100) / 100
  if (serverDays <= 0) return null
  // Within the bounds the spread is at most MAX_MONEY_MICROS; a row stored before them has no spread rather than a 500.
  const perDay = Math.round(perMonth / serverDays)
  if (perDay > MAX_MONEY_MICROS) return null
  return {
    method: 'billable_server_days' as const,
    period: `${year}-${String(month).padStart(2, '0')}`,
    billable_server_days: serverDays,
    usd_per_server_day: formatMoney(perDay),
  }
}

async function revenueOf(deps: Deps, tenantId: string) {
  const today = utcDay(deps.clock.nowUs())
  const rows = await accruedDays(deps, tenantId, `${today.slice(0, 7)}-01`, today)
  if (rows.length === 0) return null
  const sum = (rs: typeof rows) => formatMoney(rs.reduce((n, r) => n + r.accruedUsdMicros, 0))
  return {
    source: 'marketplace_accrual' as const,
    today_usd: sum(rows.filter((r) => r.day === today)),
    mtd_usd: sum(rows),
    by_marketplace: MARKETPLACES.map((m) => {
      const mine = rows.filter((r) => r.marketplace === m)
      return { marketplace: m, today_usd: sum(mine.filter((r) => r.day === today)), mtd_usd: sum(mine) }
    }),
  }
}

function unknownOf(row: CostBasisRow) {
  const out: { field: string; reason: string }[] = [
    { field: 'payback', reason: 'the purchase cost of the machines is not modelled' },
    { field: 'withdrawal_cost', reason: 'withdrawing earnings from a marketplace is not modelled' },
    { field: 'market_prices', reason: 'market prices are asking prices, not earnings' },
  ]
  if (row.electricityMicrosPerKwh === null)
    out.push({ field: 'electricity_usd_per_kwh', reason: 'not entered: servers without their own tariff have no electricity cost in the margin' })
  if (row.operationalMicrosPerMonth === null) out.push({ field: 'operational.usd_per_month', reason: 'not entered' })
  for (const m of MARKETPLACES)
    for (const { currency } of CURRENCIES[m]) {
      if (cutPercent(row, m, currency).percent === null)
        out.push({
          field: `marketplaces.${m}.commissions.${currency}`,
          reason: 'not entered and the marketplace publishes no default: the margin leaves the cut out',
        })
    }
  return out
}

async function costBasisView(deps: Deps, row: CostBasisRow) {
  const spread = await spreadOf(deps, row.tenantId, row.operationalMicrosPerMonth)
  const revenue = await revenueOf(deps, row.tenantId)
  return {
    currency: 'USD' as const,
    electricity_usd_per_kwh: row.electricityMicrosPerKwh === null ? null : formatMoney(row.electricityMicrosPerKwh),
    operational: {
      usd_per_month: row.operationalMicrosPerMonth === null ? null : formatMoney(row.operationalMicrosPerMonth),
      spread,
    },
    marketplaces: MARKETPLACES.map((m) => {
      const costs = row.marketplaces[m] ?? emptyMarketplace()
      return {
        marketplace: m,
        commission_percent: costs.commission,
        commissions: CURRENCIES[m].map(({ currency, label }) => ({
          currency,
          label,
          key: `marketplaces.${m}.commissions.${currency}`,
          ...resolvedCommission(row, m, currency),
        })),
        renter_markup_percent: costs.markup,
      }
    }),
    defaults: DEFAULTS.map((d) => ({ ...d })),
    rental_revenue: revenue,
    unknown: unknownOf(row),
    version: row.version,
  }
}

export async function getCostBasis({ deps, actor }: { deps: Deps; actor: Actor }) {
  const row = await current(deps, actor.tenantId)
  return { etag: etagOf(row.version), body: await costBasisView(deps, row) }
}

/**
 * The bounds of what the cost basis takes (docs/earnings.md "Bounds"): far above any real tariff,
 * monthly cost or commission, and low enough that every figure derived from them — the spread per
 * server-day over as little as 0.01 server-days, the margin, strategy's floor grossed up by the
 * commission — stays inside the money range (MAX_MONEY_MICROS, 1,000,000,000 USD).
 */
const COST_BOUNDS = {
  /** 10 USD per kWh. */
  electricityMicrosPerKwh: 10_000_000,
  /** 10,000,000 USD per month. */
  operationalMicrosPerMonth: 10_000_000_000_000,
  /** 90 %: the platform keeping more than that of a rental is not a commission any marketplace charges. */
  commissionPercent: 90,
} as const

function boundedMoney(path: string, v: string | null, max: number, unit: string): number | null {
  if (v === null) return null
  if (v.startsWith('-') && /[1-9]/.test(v)) throw invalidField('costs', path, 'too_small', 'cannot be negative')
  const micros = parseMoneyInRange(v)
  if (micros === null || micros > max) throw invalidField('costs', path, 'too_large', `at most ${formatMoney(max)} ${unit}`)
  return micros
}

function commission(path: string, v: string | null): string | null {
  if (v === null) return null
  if (Number(v) === 0) throw invalidField('costs', path, 'zero_not_allowed', 'a zero commission is not a rate: send null for "not entered"')
  if (Number(v) > COST_BOUNDS.commissionPercent)
    throw invalidField('costs', path, 'too_large', `at most ${COST_BOUNDS.commissionPercent} %: no marketplace keeps more of a rental`)
  return v
}

/** PUT /billing/cost-basis: a partial update; only the fields sent change. */
export async function putCostBasis({
  deps,
  actor,
  audit,
  ifMatch,
  input,
}: {
  deps: Deps
  actor: Actor
  audit: AuditContext
  ifMatch: string | null
  input: Static<typeof CostBasisPatch>
}) {
  const row = await withTransaction(deps.db, async (tx) => {
    const before = (await findCostBasis(tx, actor.tenantId)) ?? (await current(deps, actor.tenantId))
    assertIfMatch(ifMatch, etagOf(before.version))
    const next: CostBasisRow = { ...before, marketplaces: structuredClone(before.marketplaces), version: before.version + 1, updatedAt: deps.clock.nowUs() }
    if (input.electricity_usd_per_kwh !== undefined)
      next.electricityMicrosPerKwh = boundedMoney('/electricity_usd_per_kwh', input.electricity_usd_per_kwh, COST_BOUNDS.electricityMicrosPerKwh, 'USD per kWh')
    if (input.operational !== undefined)
      next.operationalMicrosPerMonth = boundedMoney(
        '/operational/usd_per_month',
        input.operational.usd_per_month,
        COST_BOUNDS.operationalMicrosPerMonth,
        'USD per month',
      )
    for (const m of MARKETPLACES) {
      const patch = input.marketplaces?.[m]
      if (!patch) continue
      const costs = next.marketplaces[m] ?? emptyMarketplace()
      const base = `/marketplaces/${m}`
      if (patch.commission_percent !== undefined) costs.commission = commission(`${base}/commission_percent`, patch.commission_percent)
      for (const [currency, v] of Object.entries(patch.commissions ?? {})) {
        if (!CURRENCIES[m].some((c) => c.currency === currency))
          throw invalidField(
            'costs',
            `${base}/commissions/${currency.slice(0, 32)}`,
            'unknown_currency',
            `${m} deals in ${CURRENCIES[m].map((c) => c.currency).join(', ')}`,
          )
        costs.commissions[currency] = commission(`${base}/commissions/${currency}`, v)
      }
      if (patch.renter_markup_percent !== undefined) costs.markup = patch.renter_markup_percent
      next.marketplaces[m] = costs
    }
    await saveCostBasis(tx, next)
    await recordAudit(tx, deps, audit, { operation: 'billing.cost_basis.update', targetKind: 'tenant', targetId: actor.tenantId })
    return next
  })
  return { etag: etagOf(row.version), body: await costBasisView(deps, row) }
}

/** A platform's cut of one deal currency as the earnings reconciliation names it (docs/earnings.md "Reconciliation"). */
type PlatformCut = { percent: string | null; source: 'entered' | 'published_default' | 'unknown' }

/**
 * The tenant's platform cuts, read once: per marketplace and deal currency, the rate entered in the
 * cost basis (the currency's own, else the marketplace-wide one), else the platform's published
 * default, else unknown. The same rule as the margin's (`cutPercent`). Handed to earnings by the root.
 */
export async function platformCuts(deps: Deps, tenantId: string): Promise<(marketplace: MarketplaceId, currency: string) => PlatformCut> {
  const basis = await current(deps, tenantId)
  return (marketplace, currency) => {
    const cut = cutPercent(basis, marketplace, currency)
    if (cut.percent === null) return { percent: null, source: 'unknown' }
    return { percent: cut.percent, source: cut.estimated ? 'published_default' : 'entered' }
  }
}
