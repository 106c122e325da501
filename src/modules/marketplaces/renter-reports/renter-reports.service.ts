import { type Tx, withTransaction } from '../../../../db/client'
import type { Actor } from '../../../platform/access'
import type { Deps } from '../../../platform/context'
import { paginate } from '../../../platform/cursor'
import { sha256Hex } from '../../../platform/secrets'
import { formatTimestamp } from '../../../platform/time'
import { recordServerEvent } from '../../fleet'
import { openKey } from '../accounts/accounts.service'
import type { AccountRow } from '../accounts/marketplaces.repository'
import type { RemoteMachine, RenterReportRead } from '../adapters/marketplaces.adapter'
import { adapterFor } from '../adapters/marketplaces.registry'
import { linksOfAccount, type LinkRow } from '../links/links.repository'
import { callPlatform, systemActor } from '../operations/operations.service'
import { insertRenterReport, knownReportKeys, renterReportsOf, type RenterReportRow } from './renter-reports.repository'

/**
 * Renter reports (docs/marketplaces.md "Renter reports"): after the sync has read an account's
 * machines, the reports of each linked machine are read (marketplace_a only: Clore has no such
 * endpoint), paced by the adapter like every other call and logged under the server as the system.
 * Each report is kept once (the platform gives no id: the key is a hash of its time, problem and
 * message). A new one is a server event `marketplace.renter_report`, which opens an alert incident
 * and sends an `error` notification (src/reactions.ts) in the transaction that stored it; a report
 * older than the link is kept as history, without either.
 */

export type ReportTally = { read: number; fresh: number; failed: number }

/** The event a new report records; alerts and notifications react to it (by this name). */
const RENTER_REPORT_EVENT = 'marketplace.renter_report'

export async function syncRenterReports(deps: Deps, account: AccountRow, machines: RemoteMachine[], tally: ReportTally): Promise<void> {
  const adapter = adapterFor(deps, account.marketplace)
  const read = adapter.machineReports
  if (!read) return
  const byId = new Map(machines.map((m) => [m.externalMachineId, m]))
  // Linked only: a stale link's machine is gone, and a machine two servers claim belongs to neither yet.
  // A machine the platform says has no reports (num_reports 0) is not asked.
  const links = (await linksOfAccount(deps.db, account.id)).filter(
    (l) => l.state === 'linked' && byId.has(l.externalMachineId) && byId.get(l.externalMachineId)!.reportCount !== 0,
  )
  for (const link of links) {
    const asked = await callPlatform(deps, systemActor(account.tenantId), link.serverId, () =>
      read(openKey(deps, account), { externalMachineId: link.externalMachineId, name: link.remote.hostname }),
    )
    if (!asked.ok) {
      tally.failed++
      // The same key would be refused for every other machine too; an outage may pass, so the others are still asked.
      if (asked.failure.failure === 'rejected_key' || asked.failure.failure === 'missing_permission') return
      continue
    }
    tally.read++
    // Counted after the commit, in one step: `tally.fresh += await …` would read the count before the
    // await and lose what the sync's other workers (which share the tally) added meanwhile.
    const fresh = await withTransaction(deps.db, (tx) => keepReports(tx, deps, link, asked.value))
    tally.fresh += fresh
  }
}

const keyOf = (r: RenterReportRead) => sha256Hex(`${r.reportedAtUs ?? ''}\n${r.problem ?? ''}\n${r.message ?? ''}`)

/** Stores the reports not kept yet, oldest first (so their ids follow the renters' order); answers how many were new. */
async function keepReports(tx: Tx, deps: Deps, link: LinkRow, reports: RenterReportRead[]): Promise<number> {
  const unique = new Map(reports.map((r) => [keyOf(r), r]))
  const known = await knownReportKeys(tx, link.tenantId, link.marketplace, link.externalMachineId, [...unique.keys()])
  const fresh = [...unique].filter(([key]) => !known.has(key)).sort(([, a], [, b]) => (a.reportedAtUs ?? 0) - (b.reportedAtUs ?? 0))
  const now = deps.clock.nowUs()
  for (const [key, r] of fresh) {
    const alerted = r.reportedAtUs === null || r.reportedAtUs >= link.linkedAt
    const id = deps.newId()
    await insertRenterReport(tx, {
      id,
      tenantId: link.tenantId,
      serverId: link.serverId,
      marketplace: link.marketplace,
      externalMachineId: link.externalMachineId,
      reportKey: key,
      problem: r.problem,
      message: r.message,
      reportedAt: r.reportedAtUs,
      seenAt: now,
      alerted,
    })
    if (!alerted) continue
    const what = [r.problem, r.message].filter(Boolean).join(': ')
    await recordServerEvent(
      tx,
      deps,
      { id: link.serverId, tenantId: link.tenantId },
      {
        kind: RENTER_REPORT_EVENT,
        severity: 'warning',
        message: `A renter reported machine ${link.externalMachineId} on ${link.marketplace}: ${what}`,
        data: { report_id: id, marketplace: link.marketplace, external_machine_id: link.externalMachineId, problem: r.problem },
      },
    )
  }
  return fresh.length
}

function reportView(r: RenterReportRow) {
  return {
    id: r.id,
    server_id: r.serverId,
    marketplace: r.marketplace,
    external_machine_id: r.externalMachineId,
    problem: r.problem,
    message: r.message,
    reported_at: r.reportedAt === null ? null : formatTimestamp(r.reportedAt),
    seen_at: formatTimestamp(r.seenAt),
    alerted: r.alerted,
  }
}

/** GET /servers/{id}/renter-reports: the server's id already checked by the access layer and the caller (a foreign one is 404). */
export function listRenterReports({
  deps,
  actor,
  serverId,
  input,
}: {
  deps: Deps
  actor: Actor
  serverId: string
  input: { cursor?: string; limit?: number }
}) {
  return paginate(deps.keys.cursor, {
    scope: `renter-reports:${actor.tenantId}:${serverId}`,
    input,
    fetch: (after: { id: string } | undefined, take) => renterReportsOf(deps.db, actor.tenantId, serverId, after?.id, take),
    position: (r) => ({ id: r.id }),
    view: reportView,
  })
}
