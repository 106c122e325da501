import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { memberTimezone } from '../users'
import { expandRange, resolveDates, type RangeInput } from './range'

/**
 * The reports (docs/reports.md) and the days each counts in. Reports built from the marketplaces'
 * accrual rows count UTC days (the rows' own days, never split); spend, built from ledger
 * timestamps, counts the account's days (the caller's zone, else the owner's, else UTC).
 */
const DAYS = { utilisation: 'utc', earnings: 'utc', spend: 'account', margin: 'utc' } as const

export type ReportName = keyof typeof DAYS

/**
 * Resolves a report request: its range (422 on a range the rules refuse), the cache key (tenant, the
 * caller's server allowlist, report and resolved range: callers who see the same rows share an
 * answer) and a file name.
 */
export async function reportRequest({ deps, actor, report, input }: { deps: Deps; actor: Actor; report: ReportName; input: RangeInput }) {
  const zone = DAYS[report] === 'utc' ? 'UTC' : ((await memberTimezone(deps.db, actor.tenantId, actor.userId)) ?? 'UTC')
  const dates = resolveDates(input, zone, deps.clock.nowUs())
  const allowlist = actor.serverAllowlist ? [...actor.serverAllowlist].sort().join(',') : '*'
  return {
    // The periods only when the report is built (not for a cached answer or a refusal).
    range: () => expandRange(dates),
    key: JSON.stringify([actor.tenantId, allowlist, report, dates.from, dates.to, dates.groupBy, dates.zone]),
    filename: `gpuhq-${report}-${dates.from}-${dates.to}`,
  }
}
