import { formatMoney } from '../../platform/money'
import { utcDay } from '../../platform/time'
import { cutDays, type CutDay } from '../earnings'
import { platformCuts } from '../costs'
import type { Deps } from '../../platform/context'

/**
 * The reconciliation of one (server, marketplace, UTC day) (docs/marketplaces.md "Payouts
 * reconciled"): gpuhq's accrual, the commission that explains the platform's lower figure, what the
 * platform should therefore report, what it did, and what the commission does not explain.
 */

/** No row: a shortfall beyond 1.00 USD per machine and day is flagged. */
export const DEFAULT_GAP_THRESHOLD_MICROS = 1_000_000
export const MAX_GAP_THRESHOLD_MICROS = 1_000_000_000_000

export type ReconciledRow = CutDay & {
  closed: boolean
  expectedMicros: number | null
  unexplainedMicros: number | null
  flagged: boolean
}

/** Whether a row is flagged: a closed day the platform reported, short of accrual minus commission by more than the threshold. */
function reconcileRow(row: CutDay, today: string, thresholdMicros: number): ReconciledRow {
  const closed = row.day < today
  const expectedMicros = row.netMicros
  const unexplainedMicros = row.platformUsdMicros === null || expectedMicros === null ? null : row.platformUsdMicros - expectedMicros
  const flagged = closed && unexplainedMicros !== null && -unexplainedMicros > thresholdMicros
  return { ...row, closed, expectedMicros, unexplainedMicros, flagged }
}

/** The tenant's reconciled rows for [fromDay, toDay], every marketplace, with the cost basis's commission. */
export async function reconciledRows(deps: Deps, tenantId: string, fromDay: string, toDay: string, thresholdMicros: number): Promise<ReconciledRow[]> {
  const today = utcDay(deps.clock.nowUs())
  return (await cutDays(deps, tenantId, fromDay, toDay, (t) => platformCuts(deps, t))).map((r) => reconcileRow(r, today, thresholdMicros))
}

export const money = (micros: number | null): string | null => (micros === null ? null : formatMoney(micros))
