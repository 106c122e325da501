import { withTransaction, type DbOrTx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { TenantWalk } from '../../platform/jobs'
import { type Decimal, parseDecimal, parseMoney } from '../../platform/money'
import { utcDay } from '../../platform/time'
import { markFleetDirty } from '../fleet'
import { accrualSources, platformDayEarnings, type AccrualSource } from '../marketplaces'
import { type DayDelta, type Deal, sampleStep } from './accrual'
import { type EarningsDayRow, findDay, markReportRead, moveWatermark, reportReadAt, saveDay, watermarkOf } from './earnings.repository'

/**
 * The earnings.sample job (docs/earnings.md "Accrual"): for every link, accrues the deals the sync
 * last saw over the time since the previous sample, in one transaction per link that also moves the
 * link's watermark (a sample that finds it moved accrues nothing: exactly once). Then, at most
 * hourly per tenant, reads the platform's own daily figures where it reports any.
 *
 * Each link's sample and each tenant's report read is its own part of the job's per-tenant error
 * boundary (TenantWalk, scoped by link or report): one that throws (a projection the arithmetic
 * cannot take) rolls back alone, leaving its watermark where it was, so the time is accrued by the
 * first sample that succeeds; the other links are sampled, the run is recorded `partial`, and the
 * failing link waits out a backoff.
 */

/** The job's period; the first sample of a link looks back at most this far. */
const SAMPLE_PERIOD_US = 5 * 60 * 1_000_000
/**
 * How long deals the sync saw are taken to run without a new sighting: three sync periods. Past it,
 * a known-running deal's time is reported as a gap, never accrued.
 */
const SIGHTING_CAP_US = 15 * 60 * 1_000_000
const REPORT_EVERY_US = 55 * 60 * 1_000_000
const FIRST_REPORT_DAYS = 7
const DAY_US = 86_400_000_000

export async function sampleEarnings(deps: Deps, tenants: TenantWalk = new TenantWalk(deps, 'earnings.sample')): Promise<string> {
  const now = deps.clock.nowUs()
  let sampled = 0
  let skipped = 0
  const sources = await accrualSources(deps.db)
  for (const source of sources) {
    const done = await tenants.run(
      source.tenantId,
      () => withTransaction(deps.db, (tx) => sampleOne(tx, deps, source, now)),
      `link ${source.serverId} ${source.marketplace}`,
    )
    if (done === true) sampled++
    else if (done === false) skipped++
  }
  const reports = await readReports(deps, now, sources, tenants)
  return `${sampled} links sampled, ${skipped} already sampled; ${reports}`
}

async function sampleOne(tx: DbOrTx, deps: Deps, source: AccrualSource, now: number): Promise<boolean> {
  const key = { tenantId: source.tenantId, serverId: source.serverId, marketplace: source.marketplace }
  const mark = await watermarkOf(tx, key)
  const fromUs = Math.max(mark ?? now - SAMPLE_PERIOD_US, source.linkedAt)
  if (!(await moveWatermark(tx, key, mark, now))) return false
  const deals = parsedDeals(source.deals)
  const rates = parsedRates(source.rates)
  const knownUntilUs = source.seenAt === null ? fromUs : source.seenAt + SIGHTING_CAP_US
  const deltas = sampleStep({ fromUs, nowUs: now, knownUntilUs, deals, rates })
  for (const delta of deltas) await addToDay(tx, deps, key, delta, now)
  // The server's fleet row shows what it accrued today: a sample that earned money moves it.
  if (deltas.some((d) => d.usdMicros !== 0)) await markFleetDirty(tx, source.tenantId)
  return true
}

const parsedDeals = (deals: AccrualSource['deals']): Deal[] => deals.map((d) => ({ ...d, priceDay: d.priceDay === null ? null : parseDecimal(d.priceDay) }))

function parsedRates(rates: AccrualSource['rates']): Map<string, Decimal> {
  const out = new Map<string, Decimal>()
  for (const [coin, rate] of Object.entries(rates)) {
    const d = parseDecimal(rate)
    if (d) out.set(coin, d)
  }
  return out
}

/**
 * Accrual for time before gpuhq was watching the link (the demo's past week): each spell's deals are
 * accrued in the job's own steps (SAMPLE_PERIOD_US, `sampleStep`, `addToDay`), as if the job had
 * sampled them then, at the rates given. A spell without deals counts its samples and accrues
 * nothing, as an idle machine's do. With `through: true` the spells reach up to now and the link's
 * watermark (when it has none yet) is set at their end, so the job's first sample starts exactly
 * there, neither missing nor counting twice the time since the link was made; otherwise the
 * watermark is left alone. Answers the number of samples written.
 */
export async function accruePast(
  deps: Deps,
  input: {
    tenantId: string
    serverId: string
    marketplace: AccrualSource['marketplace']
    /** The deals as a link's projection shows them (`accrualSources`), per spell of time. */
    spells: { fromUs: number; toUs: number; deals: AccrualSource['deals'] }[]
    rates: AccrualSource['rates']
    through?: boolean
  },
): Promise<number> {
  const key = { tenantId: input.tenantId, serverId: input.serverId, marketplace: input.marketplace }
  const rates = parsedRates(input.rates)
  return await withTransaction(deps.db, async (tx) => {
    // Counted inside the callback: on PostgreSQL a transaction that lost a conflict runs it again.
    let samples = 0
    for (const spell of input.spells) {
      const deals = parsedDeals(spell.deals)
      for (let fromUs = spell.fromUs; fromUs < spell.toUs; fromUs += SAMPLE_PERIOD_US) {
        const nowUs = Math.min(fromUs + SAMPLE_PERIOD_US, spell.toUs)
        for (const delta of sampleStep({ fromUs, nowUs, knownUntilUs: nowUs, deals, rates })) await addToDay(tx, deps, key, delta, nowUs)
        samples++
      }
    }
    const end = input.spells.at(-1)?.toUs
    if (input.through && end !== undefined && (await watermarkOf(tx, key)) === null) await moveWatermark(tx, key, null, end)
    await markFleetDirty(tx, input.tenantId)
    return samples
  })
}

function emptyDay(key: Pick<EarningsDayRow, 'tenantId' | 'serverId' | 'marketplace'>, day: string, now: number): EarningsDayRow {
  return { ...key, day, accruedUsdMicros: 0, accruedUs: 0, gapUs: 0, samples: 0, platformUsdMicros: null, byCurrency: {}, updatedAt: now }
}

async function addToDay(
  tx: DbOrTx,
  _deps: Deps,
  key: Pick<EarningsDayRow, 'tenantId' | 'serverId' | 'marketplace'>,
  delta: DayDelta,
  now: number,
): Promise<void> {
  const row = (await findDay(tx, key, delta.day)) ?? emptyDay(key, delta.day, now)
  const byCurrency = { ...row.byCurrency }
  for (const c of delta.byCurrency) {
    const before = byCurrency[c.currency] ?? { amount12: '0', usdMicros: 0 }
    byCurrency[c.currency] = { amount12: (BigInt(before.amount12) + c.amount12).toString(), usdMicros: before.usdMicros + c.usdMicros }
  }
  await saveDay(tx, {
    ...row,
    accruedUsdMicros: row.accruedUsdMicros + delta.usdMicros,
    accruedUs: row.accruedUs + delta.accruedUs,
    gapUs: row.gapUs + delta.gapUs,
    samples: row.samples + 1,
    byCurrency,
    updatedAt: now,
  })
}

/**
 * The platform's own figure after its cut, for yesterday and today, per tenant with an account on a
 * platform that reports one (marketplace_a), at most hourly; the first read for a tenant goes back
 * FIRST_REPORT_DAYS (the earnings window's default), so the days accrued before it (a history, the
 * hours before the first read) have the platform's figure beside them too. A day the report names a
 * server for gets `platform_usd_micros` (a row it creates counts that read as its one sample); one
 * it does not name stays null: the platform said nothing.
 */
async function readReports(deps: Deps, now: number, sources: AccrualSource[], walk: TenantWalk): Promise<string> {
  const tenants = [...new Set(sources.filter((s) => s.marketplace === 'marketplace_a').map((s) => s.tenantId))]
  let read = 0
  for (const tenantId of tenants) {
    if (await walk.run(tenantId, () => readReport(deps, now, tenantId), 'marketplace_a report')) read++
  }
  return `platform reports read for ${read} tenants`
}

/** One tenant's report read (at most hourly); true when it read one. */
async function readReport(deps: Deps, now: number, tenantId: string): Promise<boolean> {
  const last = await reportReadAt(deps.db, tenantId, 'marketplace_a')
  if (last !== null && now - last < REPORT_EVERY_US) return false
  const today = Math.floor(now / DAY_US)
  const back = last === null ? FIRST_REPORT_DAYS - 1 : 1
  const days = await platformDayEarnings(
    deps,
    tenantId,
    'marketplace_a',
    Array.from({ length: back + 1 }, (_, i) => today - back + i),
  )
  await withTransaction(deps.db, async (tx) => {
    await markReportRead(tx, tenantId, 'marketplace_a', now)
    for (const [dayNumber, byServer] of days ?? []) {
      const day = utcDay(dayNumber * DAY_US)
      for (const [serverId, usd] of byServer) {
        const key = { tenantId, serverId, marketplace: 'marketplace_a' as const }
        const existing = await findDay(tx, key, day)
        const row = existing ?? { ...emptyDay(key, day, now), samples: 1 }
        await saveDay(tx, { ...row, platformUsdMicros: parseMoney(usd), updatedAt: now })
      }
    }
  })
  return true
}
