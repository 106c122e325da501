import type { Static } from '@sinclair/typebox'
import { withTransaction } from '../../../db/client'
import type { Verb } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { paginate } from '../../platform/cursor'
import { assertIfMatch, etagOf } from '../../platform/etag'
import { formatMoney, parseMoneyInRange } from '../../platform/money'
import { formatTimestamp, parseDay, utcDay } from '../../platform/time'
import { recordAudit } from '../audit'
import { serverNames } from '../fleet'
import type { MarketplaceId } from '../marketplaces'
import { invalidQuery } from './reconciliation.errors'
import { evaluateFlags } from './evaluate.service'
import type { SettingsPut } from './reconciliation.model'
import { findSettings, payoutsBetween, saveSettings, walletsBetween } from './reconciliation.repository'
import { DEFAULT_GAP_THRESHOLD_MICROS, MAX_GAP_THRESHOLD_MICROS, money, reconciledRows, type ReconciledRow } from './rows'

const DAY_US = 86_400_000_000
const DEFAULT_DAYS = 7
const MAX_DAYS = 90
const MAX_SIDE_ROWS = 500
const TOTAL_LABEL = "Estimate from marketplace data: gpuhq's accrual and the platforms' own reports, not a ledger"

/** The owner's threshold in micro-USD (the default while nothing is set). */
async function gapThresholdOf(deps: Deps, tenantId: string): Promise<number> {
  return (await findSettings(deps.db, tenantId))?.gapThresholdUsdMicros ?? DEFAULT_GAP_THRESHOLD_MICROS
}

async function settingsView(deps: Deps, tenantId: string) {
  const row = await findSettings(deps.db, tenantId)
  const version = row?.version ?? 0
  return {
    etag: etagOf(version),
    body: { gap_threshold_usd: formatMoney(row?.gapThresholdUsdMicros ?? DEFAULT_GAP_THRESHOLD_MICROS), default: row === undefined, version },
  }
}

/** GET /reconciliation/settings. */
export async function getSettings({ deps, actor }: Verb) {
  return await settingsView(deps, actor.tenantId)
}

/**
 * PUT /reconciliation/settings: the threshold, then the flags and the payout_gap alert follow it at
 * once (from the figures already read: no platform call).
 */
export async function putSettings({ deps, actor, audit, ifMatch, input }: Verb & { ifMatch: string | null; input: Static<typeof SettingsPut> }) {
  const micros = parseMoneyInRange(input.gap_threshold_usd)
  if (micros === null || micros > MAX_GAP_THRESHOLD_MICROS)
    throw invalidQuery('/gap_threshold_usd', 'too_large', `at most ${formatMoney(MAX_GAP_THRESHOLD_MICROS)} USD`)
  if (micros < 0) throw invalidQuery('/gap_threshold_usd', 'too_small', 'a threshold is not negative (0 flags any shortfall)')
  await withTransaction(deps.db, async (tx) => {
    const before = await findSettings(tx, actor.tenantId)
    assertIfMatch(ifMatch, etagOf(before?.version ?? 0))
    await saveSettings(tx, { tenantId: actor.tenantId, gapThresholdUsdMicros: micros, version: (before?.version ?? 0) + 1, updatedAt: deps.clock.nowUs() })
    await recordAudit(tx, deps, audit, { operation: 'reconciliation.settings.update', targetKind: 'tenant', targetId: actor.tenantId })
  })
  await evaluateFlags(deps, actor.tenantId)
  return await settingsView(deps, actor.tenantId)
}

function addDays(day: string, n: number): string {
  return utcDay(parseDay(day)! + n * DAY_US)
}

/** from/to as the rules take them: calendar days, from ≤ to, at most MAX_DAYS; 422 with a pointer otherwise. */
function windowOf(input: { from?: string; to?: string; days?: number }, today: string): { from: string; to: string } {
  if (input.days !== undefined && (input.from !== undefined || input.to !== undefined))
    throw invalidQuery('/days', 'exclusive_with_from_to', 'days cannot be combined with from or to')
  if (input.days !== undefined) return { from: addDays(today, -(input.days - 1)), to: today }
  const day = (path: string, text: string) => {
    if (parseDay(text) === null) throw invalidQuery(path, 'format', `${path.slice(1)} must be a calendar date, YYYY-MM-DD`)
    if (text < '2000-01-01' || text > '2099-12-31') throw invalidQuery(path, 'out_of_range', `${path.slice(1)} must be in 2000..2099`)
    return text
  }
  const to = input.to === undefined ? today : day('/to', input.to)
  const from = input.from === undefined ? addDays(to, -(DEFAULT_DAYS - 1)) : day('/from', input.from)
  if (from > to) throw invalidQuery('/from', 'after_to', `from must be on or before to (${to})`)
  const days = Math.round((parseDay(to)! - parseDay(from)!) / DAY_US) + 1
  if (days > MAX_DAYS) throw invalidQuery('/from', 'range_too_large', `at most ${MAX_DAYS} days; this range has ${days}`)
  return { from, to }
}

type Position = [string, string, string]
const positionOf = (r: ReconciledRow): Position => [r.day, r.marketplace, r.serverId]
/** Newest day first, then marketplace, then server id. */
const order = (a: Position, b: Position): number =>
  a[0] !== b[0] ? (a[0] < b[0] ? 1 : -1) : a[1] !== b[1] ? a[1].localeCompare(b[1]) : a[2].localeCompare(b[2])

function totalsOf(rows: ReconciledRow[]) {
  let accrued = 0
  let commission = 0
  let commissionKnown = true
  let reportedRows = 0
  let reportedExpected = 0
  let reportedKnown = true
  let platform = 0
  for (const r of rows) {
    accrued += r.accruedUsdMicros
    if (r.cutMicros === null) commissionKnown = false
    else commission += r.cutMicros
    if (r.platformUsdMicros === null) continue
    reportedRows++
    platform += r.platformUsdMicros
    if (r.expectedMicros === null) reportedKnown = false
    else reportedExpected += r.expectedMicros
  }
  return {
    rows: rows.length,
    accrued_usd: formatMoney(accrued),
    commission_usd: commissionKnown ? formatMoney(commission) : null,
    expected_usd: commissionKnown ? formatMoney(accrued - commission) : null,
    reported_rows: reportedRows,
    reported_expected_usd: reportedKnown ? formatMoney(reportedExpected) : null,
    platform_usd: formatMoney(platform),
    unexplained_usd: reportedKnown && reportedRows > 0 ? formatMoney(platform - reportedExpected) : null,
    flagged_rows: rows.filter((r) => r.flagged).length,
  }
}

/** GET /reconciliation: per UTC day and machine, newest first, paginated; totals, payouts and wallets over the whole window. */
export async function listReconciliation({
  deps,
  actor,
  input,
}: Verb & { input: { from?: string; to?: string; days?: number; marketplace?: MarketplaceId; cursor?: string; limit?: number } }) {
  const today = utcDay(deps.clock.nowUs())
  const { from, to } = windowOf(input, today)
  const threshold = await gapThresholdOf(deps, actor.tenantId)
  const names = await serverNames(deps.db, actor.tenantId)
  const rows = (await reconciledRows(deps, actor.tenantId, from, to, threshold))
    .filter((r) => input.marketplace === undefined || r.marketplace === input.marketplace)
    .sort((a, b) => order(positionOf(a), positionOf(b)))
  const page = await paginate<ReconciledRow, ReturnType<typeof rowView>, Position>(deps.keys.cursor, {
    scope: `reconciliation:${actor.tenantId}:${from}:${to}:${input.marketplace ?? ''}`,
    input,
    fetch: (after, take) => (after ? rows.filter((r) => order(positionOf(r), after) > 0) : rows).slice(0, take),
    position: positionOf,
    view: rowView,
  })
  function rowView(r: ReconciledRow) {
    return {
      day: r.day,
      server_id: r.serverId,
      server_name: names.get(r.serverId) ?? r.serverId,
      marketplace: r.marketplace,
      closed: r.closed,
      accrued_usd: formatMoney(r.accruedUsdMicros),
      accrual_gap_seconds: Math.floor(r.gapUs / 1_000_000),
      commission_percent: r.cutPercent,
      commission_source: r.cutSource,
      commission_usd: money(r.cutMicros),
      expected_usd: money(r.expectedMicros),
      platform_usd: money(r.platformUsdMicros),
      difference_usd: r.platformUsdMicros === null ? null : formatMoney(r.platformUsdMicros - r.accruedUsdMicros),
      unexplained_usd: money(r.unexplainedMicros),
      flagged: r.flagged,
    }
  }
  const wanted = (m: MarketplaceId) => input.marketplace === undefined || m === input.marketplace
  const walletRows = (await walletsBetween(deps.db, actor.tenantId, from, to)).filter((w) => wanted(w.marketplace))
  const payoutRows = await payoutsBetween(deps.db, actor.tenantId, from, to)
  const previous = new Map<string, string>()
  return {
    from,
    to,
    marketplace: input.marketplace ?? null,
    gap_threshold_usd: formatMoney(threshold),
    totals: totalsOf(rows),
    ...page,
    payouts: payoutRows
      .filter((p) => wanted(p.marketplace))
      .slice(-MAX_SIDE_ROWS)
      .map((p) => ({
        marketplace: p.marketplace,
        id: p.externalId,
        type: p.type,
        day: p.day,
        starts_at: formatTimestamp(p.startAt),
        ends_at: p.endAt === null ? null : formatTimestamp(p.endAt),
        amount_usd: formatMoney(p.amountUsdMicros),
        description: p.description,
      })),
    wallets: walletRows.slice(-MAX_SIDE_ROWS).map((w) => {
      const key = `${w.marketplace}:${w.currency}`
      const before = previous.get(key)
      previous.set(key, w.balance)
      return {
        marketplace: w.marketplace,
        currency: w.currency,
        day: w.day,
        balance: w.balance,
        usd: money(w.usdMicros),
        change: before === undefined ? null : coinDifference(w.balance, before),
        observed_at: formatTimestamp(w.observedAt),
      }
    }),
    total_label: TOTAL_LABEL,
  }
}

/** a − b for coin texts of up to 12 decimals, as coin text. */
function coinDifference(a: string, b: string): string {
  const units = (s: string) => {
    const [w, f = ''] = s.split('.')
    return BigInt(w!) * 10n ** 12n + BigInt(f.padEnd(12, '0'))
  }
  const d = units(a) - units(b)
  const sign = d < 0n ? '-' : ''
  const abs = d < 0n ? -d : d
  const whole = abs / 10n ** 12n
  const frac = (abs % 10n ** 12n).toString().padStart(12, '0').replace(/0+$/, '')
  return `${sign}${whole}${frac ? `.${frac}` : ''}`
}
