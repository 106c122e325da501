import { withTransaction } from '../../../db/client'
import type { Deps } from '../../platform/context'
import type { TenantWalk } from '../../platform/jobs'
import { decimalToMicrosFloor, parseDecimal, parseMoney } from '../../platform/money'
import { utcDay } from '../../platform/time'
import { serverNames } from '../fleet'
import { connectedMarketplaces, currentRates, type MarketplaceId, platformPayouts, platformWallets } from '../marketplaces'
import { findSettings, flaggedTenants, flagsOf, type FlagRow, replaceFlags, upsertPayouts, upsertWallets } from './reconciliation.repository'
import { DEFAULT_GAP_THRESHOLD_MICROS, reconciledRows } from './rows'

/**
 * The `reconciliation.evaluate` job (docs/marketplaces.md "Payouts reconciled"), hourly: per tenant
 * and connected marketplace, reads the platform's payout history (marketplace_a's invoices, the last
 * PAYOUT_DAYS days) and wallet balances (marketplace_b), then re-evaluates the tenant's flags over the
 * last FLAG_DAYS closed days from the earnings rows (whose platform figure earnings.sample reads
 * hourly): a newly flagged machine-day opens (or counts again) the payout_gap alert and notifies;
 * none left resolves it. Each tenant apart (TenantWalk); a platform read that fails fails that
 * tenant's marketplace only, and the flags are still evaluated.
 */

const DAY_US = 86_400_000_000
const PAYOUT_DAYS = 35
/** Closed days re-evaluated each run (flags older than this drop off). */
const FLAG_DAYS = 30

export async function evaluateReconciliation(deps: Deps, tenants: TenantWalk): Promise<string> {
  const now = deps.clock.nowUs()
  let payouts = 0
  let wallets = 0
  const accounts = await connectedMarketplaces(deps)
  for (const { tenantId, marketplace } of accounts) {
    const read = await tenants.run(tenantId, () => readPlatform(deps, tenantId, marketplace, now), marketplace)
    payouts += read?.payouts ?? 0
    wallets += read?.wallets ?? 0
  }
  let flagged = 0
  const ids = new Set([...accounts.map((a) => a.tenantId), ...(await flaggedTenants(deps.db))])
  for (const tenantId of [...ids].sort()) flagged += (await tenants.run(tenantId, () => evaluateFlags(deps, tenantId))) ?? 0
  return `${payouts} payout entries and ${wallets} wallet balances read; ${flagged} machine-days flagged`
}

async function readPlatform(deps: Deps, tenantId: string, marketplace: MarketplaceId, now: number): Promise<{ payouts: number; wallets: number }> {
  const toS = Math.floor(now / 1_000_000)
  const p = await platformPayouts(deps, tenantId, marketplace, toS - PAYOUT_DAYS * 86_400, toS)
  if (p.kind === 'failed') throw new Error(`${marketplace} payout history: ${p.message}`)
  if (p.kind === 'read')
    await withTransaction(deps.db, (tx) =>
      upsertPayouts(
        tx,
        p.items.map((i) => ({
          tenantId,
          marketplace,
          externalId: i.externalId,
          type: i.type,
          day: utcDay(i.startS * 1_000_000),
          startAt: i.startS * 1_000_000,
          endAt: i.endS === null ? null : i.endS * 1_000_000,
          amountUsdMicros: parseMoney(i.amountUsd),
          description: i.description,
          observedAt: now,
        })),
      ),
    )
  const w = await platformWallets(deps, tenantId, marketplace)
  if (w.kind === 'failed') throw new Error(`${marketplace} wallets: ${w.message}`)
  if (w.kind === 'read') {
    const rates = new Map((await currentRates(deps.db, tenantId)).filter((r) => r.marketplace === marketplace).map((r) => [r.currency, r.usdPerCoin]))
    await withTransaction(deps.db, (tx) =>
      upsertWallets(
        tx,
        w.items.map((i) => ({
          tenantId,
          marketplace,
          currency: i.currency,
          day: utcDay(now),
          balance: i.balance,
          usdMicros: usdOf(i.balance, rates.get(i.currency)),
          observedAt: now,
        })),
      ),
    )
  }
  return { payouts: p.kind === 'read' ? p.items.length : 0, wallets: w.kind === 'read' ? w.items.length : 0 }
}

/** A coin amount at a USD rate, rounded down to the micro-dollar; null without a rate. */
function usdOf(balance: string, rate: string | undefined): number | null {
  const b = parseDecimal(balance)
  const r = rate === undefined ? null : parseDecimal(rate)
  if (!b || !r) return null
  return decimalToMicrosFloor({ units: b.units * r.units, scale: b.scale + r.scale })
}

const keyOf = (f: Pick<FlagRow, 'serverId' | 'marketplace' | 'day'>) => `${f.serverId}:${f.marketplace}:${f.day}`

/**
 * Re-evaluates the tenant's flags over the last FLAG_DAYS closed days and moves the payout_gap alert
 * with them, in one transaction: a machine-day newly flagged emits payouts.gap_flagged (alert and
 * notification react), no flag left after some emits payouts.gap_cleared. Answers how many are flagged.
 */
export async function evaluateFlags(deps: Deps, tenantId: string): Promise<number> {
  const now = deps.clock.nowUs()
  const threshold = (await findSettings(deps.db, tenantId))?.gapThresholdUsdMicros ?? DEFAULT_GAP_THRESHOLD_MICROS
  const rows = (await reconciledRows(deps, tenantId, utcDay(now - FLAG_DAYS * DAY_US), utcDay(now - DAY_US), threshold)).filter((r) => r.flagged)
  const before = await flagsOf(deps.db, tenantId)
  const known = new Map(before.map((f) => [keyOf(f), f]))
  const next: FlagRow[] = rows.map((r) => ({
    tenantId,
    serverId: r.serverId,
    marketplace: r.marketplace,
    day: r.day,
    gapUsdMicros: -r.unexplainedMicros!,
    flaggedAt: known.get(keyOf(r))?.flaggedAt ?? now,
  }))
  const fresh = next.filter((f) => !known.has(keyOf(f)))
  const same = fresh.length === 0 && next.length === before.length && next.every((f) => known.get(keyOf(f))?.gapUsdMicros === f.gapUsdMicros)
  if (same) return next.length
  const names = await serverNames(deps.db, tenantId)
  await withTransaction(deps.db, async (tx) => {
    await replaceFlags(tx, tenantId, next)
    if (fresh.length > 0)
      await deps.events.emit('payouts.gap_flagged', {
        tx,
        tenantId,
        rows: next
          .sort((a, b) => (a.day === b.day ? a.serverId.localeCompare(b.serverId) : a.day < b.day ? -1 : 1))
          .map((f) => ({
            serverId: f.serverId,
            serverName: names.get(f.serverId) ?? f.serverId,
            marketplace: f.marketplace,
            day: f.day,
            gapMicros: f.gapUsdMicros,
          })),
        thresholdMicros: threshold,
      })
    else if (next.length === 0)
      await deps.events.emit('payouts.gap_cleared', {
        tx,
        tenantId,
        resolution: `no machine-day of the last ${FLAG_DAYS} is short of accrual minus commission by more than the threshold any more`,
      })
  })
  return next.length
}
