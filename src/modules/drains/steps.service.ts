import { systemContext } from '../../platform/audit-context'
import { withTransaction } from '../../../db/client'
import type { Actor } from '../../platform/access'
import type { AuditContext } from '../../platform/audit-context'
import type { Deps } from '../../platform/context'
import type { TenantWalk } from '../../platform/jobs'
import { cancelCommandsNotStarted, commandOutcomes, commandsAfterRental, issueSystemCommand } from '../commands'
import { recordServerEvent, rentalRunning, trustedServerById } from '../fleet'
import { drainAnnounce, drainCancelWindow, drainRelist, drainWithdraw, type MarketplaceId } from '../marketplaces'
import { liveDrainOfServer, liveDrains, moveDrain, type DrainLink, type DrainRow, type DrainState } from './drains.repository'

/**
 * The drain's steps (docs/marketplaces.md "Drain"), each ending in a compare-and-set move of the
 * row and a server event `drain.<state>`. Platform calls go through the marketplaces front door
 * (logged in the operations log under the server); a refusal is caught and put in words.
 */

/** Drains a step is being worked on in this process (the request's first step, a cancel, the job). */
export const BUSY = new Set<string>()

export type Call = { deps: Deps; actor: Actor; audit: AuditContext }

const US = 1_000_000
/** A rental may last weeks: the work waits as long as a command may (commands.service MAX_DEADLINE_S). */
const WORK_WAITS_US = 30 * 86_400 * US
/** A `draining` drain untouched this long was left by a process that stopped mid-step. */
const STALE_FIRST_STEP_US = 60 * US
const SYSTEM_REASON = 'drain: the work is done'

function systemCall(deps: Deps, tenantId: string): Call {
  return { deps, ...systemContext(tenantId) }
}

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e)).slice(0, 512)

const EVENT_SAYS: Record<DrainState, string> = {
  draining: 'taking the offers off',
  awaiting_rental_end: 'offers off; waiting for the running rentals to end',
  working: 'no rental runs: the queued work goes to the agent',
  relisting: 'the work is done: publishing the kept offers again',
  done: 'drain done: the server is back on the market',
  cancelled: 'drain cancelled: the listing is restored',
  failed: 'drain failed',
}

/**
 * Moves the drain to `state` with `patch` when nobody moved it meanwhile, with its server event.
 * Answers the row as it now is (null: it was moved by someone else; the caller stops).
 */
async function move(deps: Deps, row: DrainRow, state: DrainState, patch: Partial<DrainRow> = {}, detail: string | null = null): Promise<DrainRow | null> {
  return await withTransaction(deps.db, async (tx) => {
    const now = deps.clock.nowUs()
    const finished = state === 'done' || state === 'cancelled' || state === 'failed'
    const next = await moveDrain(tx, row, { ...patch, state, updatedAt: now, ...(finished ? { liveServerId: null, finishedAt: now } : {}) })
    if (!next) return null
    const server = await trustedServerById(tx, row.serverId)
    if (server && (state !== row.state || detail))
      await recordServerEvent(tx, deps, server, {
        kind: `drain.${state}`,
        severity: state === 'failed' ? 'warning' : 'info',
        message: detail ? `${EVENT_SAYS[state]}: ${detail}` : EVENT_SAYS[state],
        data: { drain_id: row.id, state, from: row.state },
      })
    return next
  })
}

/** Saves the links' flags as they are now (after each platform call), without a state change. */
async function saveLinks(deps: Deps, row: DrainRow, links: DrainLink[]): Promise<DrainRow> {
  return (await withTransaction(deps.db, (tx) => moveDrain(tx, row, { links, updatedAt: deps.clock.nowUs() }))) ?? row
}

/**
 * The first step: each linked marketplace's offer off (the kept one is held by the drain), the
 * window announced where the platform has a maintenance API, then the work issued with
 * `requires: after_rental`. A refusal undoes what was done (offers back, windows cancelled) and
 * fails the drain saying which platform refused what: nothing is left half done.
 */
export async function takeOffersOff(call: Call, start: DrainRow): Promise<DrainRow> {
  const { deps } = call
  let row = start
  const links = row.links.map((l) => ({ ...l }))
  for (const link of links) {
    const target = { ...call, serverId: row.serverId, marketplace: link.marketplace as MarketplaceId }
    let doing = 'withdraw the offer'
    try {
      if (!link.withdrawn && (link.offer !== null || link.listed !== false)) {
        await drainWithdraw(target)
        link.withdrawn = true
        if (!link.offer) link.note = 'listed without an offer kept by gpuhq: withdrawn, and not published again at the end (PUT …/offer publishes it)'
        row = await saveLinks(deps, row, links)
      }
      if (link.window_supported && !link.window_announced) {
        doing = 'announce the maintenance window'
        await drainAnnounce({
          ...target,
          window: { startsAtUs: row.window.starts_at_us, hours: row.window.hours, category: row.window.category, reason: row.reason },
        })
        link.window_announced = true
        row = await saveLinks(deps, row, links)
      } else if (!link.window_supported && !link.note) {
        link.note = `${link.marketplace} has no maintenance API: the withdrawn offer keeps new renters off; running renters are not told`
        row = await saveLinks(deps, row, links)
      }
    } catch (e) {
      link.note = `${link.marketplace} refused to ${doing}: ${messageOf(e)}`
      row = await saveLinks(deps, row, links)
      return await undo(call, row, 'failed', `${link.note}`)
    }
  }
  // The work: what already waits for the rental's end, then the commands asked for.
  const server = await trustedServerById(deps.db, row.serverId)
  const ids = await commandsAfterRental(deps, row.tenantId, row.serverId)
  try {
    const now = deps.clock.nowUs()
    for (const w of row.work)
      ids.push(
        await issueSystemCommand(
          deps,
          { id: row.serverId, tenantId: row.tenantId },
          { type: w.type, params: w.params, requires: 'after_rental', acceptBy: now + WORK_WAITS_US - 3600 * US, deadline: now + WORK_WAITS_US },
          row.id,
        ),
      )
  } catch (e) {
    row = (await withTransaction(deps.db, (tx) => moveDrain(tx, row, { commandIds: ids }))) ?? row
    return await undo(call, row, 'failed', `the work could not be queued: ${messageOf(e)}`)
  }
  const rented = server ? rentalRunning(server) : false
  const next = await move(deps, row, 'awaiting_rental_end', { commandIds: ids }, rented ? 'a rental runs; none is cut' : 'no rental runs')
  return next ?? row
}

/**
 * Undoes the drain (a cancel, or a refusal in the first step): the commands not yet accepted are
 * cancelled, each withdrawn offer is published again, each announced window cancelled. Ends
 * `cancelled` (or `failed` with `failure`), or `failed` saying what a platform refused to undo
 * and what is still off the market.
 */
export async function undo(call: Call, start: DrainRow, outcome: 'cancel' | 'failed', failure: string | null = null): Promise<DrainRow> {
  const { deps } = call
  let row = start
  // Its own work (never a command it only waited for, such as an agent update offered): on a cancel,
  // and when queuing the work failed half-way.
  if (row.commandIds.length)
    await cancelCommandsNotStarted(
      deps,
      row.tenantId,
      row.commandIds,
      row.id,
      outcome === 'cancel' ? 'the drain was cancelled before the agent accepted it' : 'the drain failed before the agent accepted it',
    )
  const links = row.links.map((l) => ({ ...l }))
  const refused: string[] = []
  for (const link of links) {
    const target = { ...call, serverId: row.serverId, marketplace: link.marketplace as MarketplaceId }
    if (link.window_announced) {
      try {
        await drainCancelWindow(target)
        link.window_announced = false
      } catch (e) {
        refused.push(`${link.marketplace} refused to cancel the maintenance window: ${messageOf(e)}`)
      }
    }
    if (link.withdrawn && !link.relisted && link.offer) {
      try {
        const note = await drainRelist({
          ...target,
          offer: link.offer,
          reason: outcome === 'cancel' ? 'drain cancelled: the listing is restored' : 'drain failed: the listing is restored',
        })
        link.relisted = true
        if (note) link.note = note
      } catch (e) {
        refused.push(`${link.marketplace} refused to publish the kept offer again (it stays withdrawn): ${messageOf(e)}`)
      }
    }
    row = await saveLinks(deps, row, links)
  }
  const restored = links.some((l) => l.relisted) ? 'the listing is restored' : 'nothing was listed to restore'
  if (outcome === 'cancel' && !refused.length) return (await move(deps, row, 'cancelled', {}, restored)) ?? row
  const words = [failure, ...refused].filter(Boolean).join('; ')
  const said = outcome === 'cancel' ? `cancelled, but ${words}` : refused.length ? words : `${words}; undone: ${restored}`
  return (await move(deps, row, 'failed', { failure: said.slice(0, 2048), failedStep: row.state }, said)) ?? row
}

/** Moves a drain on as far as it can go now (see drains.service.ts). */
export async function advanceDrain(deps: Deps, start: DrainRow): Promise<DrainRow> {
  let row = start
  if (row.state === 'awaiting_rental_end') {
    const server = await trustedServerById(deps.db, row.serverId)
    if (server && rentalRunning(server)) return row
    const next = await move(deps, row, 'working', {}, row.commandIds.length ? `${row.commandIds.length} command(s)` : 'nothing queued')
    if (!next) return row
    row = next
  }
  if (row.state === 'working') {
    const outcomes = await commandOutcomes(deps, row.tenantId, row.commandIds)
    if (outcomes.some((c) => !c.finished)) return row
    const bad = outcomes.find((c) => c.executionStatus !== 'succeeded')
    if (bad) {
      const failure = `command ${bad.id} (${bad.type}) ended ${bad.executionStatus}${bad.error ? `: ${bad.error}` : ''}. The offers stay withdrawn so that nobody rents the server as it is; publish them again with PUT /marketplaces/links/{server_id}/{marketplace}/offer (links[].offer holds each kept offer) once it is fixed`
      return (await move(deps, row, 'failed', { failure, failedStep: 'working' }, `command ${bad.type} ended ${bad.executionStatus}`)) ?? row
    }
    const next = await move(deps, row, 'relisting')
    if (!next) return row
    row = next
  }
  if (row.state === 'relisting') return await relist(systemCall(deps, row.tenantId), row)
  return row
}

/** The last step: each kept offer published again, each window cancelled; then done. */
async function relist(call: Call, start: DrainRow): Promise<DrainRow> {
  const { deps } = call
  let row = start
  const links = row.links.map((l) => ({ ...l }))
  for (const link of links) {
    const target = { ...call, serverId: row.serverId, marketplace: link.marketplace as MarketplaceId }
    try {
      if (link.withdrawn && link.offer && !link.relisted) {
        const note = await drainRelist({ ...target, offer: link.offer, reason: SYSTEM_REASON })
        link.relisted = true
        if (note) link.note = note
        row = await saveLinks(deps, row, links)
      }
      if (link.window_announced) {
        await drainCancelWindow(target)
        link.window_announced = false
        row = await saveLinks(deps, row, links)
      }
    } catch (e) {
      const did = link.relisted || !link.offer ? 'cancel the maintenance window' : 'publish the kept offer again'
      link.note = `${link.marketplace} refused to ${did}: ${messageOf(e)}`
      row = await saveLinks(deps, row, links)
      const still = links.filter((l) => l.withdrawn && l.offer && !l.relisted).map((l) => l.marketplace)
      const failure = `${link.note}. ${still.length ? `Still withdrawn: ${still.join(', ')} (links[].offer holds each kept offer)` : 'Every kept offer is back'}`
      return (await move(deps, row, 'failed', { failure, failedStep: 'relisting' }, link.note)) ?? row
    }
  }
  const back = links.filter((l) => l.relisted).map((l) => l.marketplace)
  return (await move(deps, row, 'done', {}, back.length ? `relisted on ${back.join(', ')}` : 'nothing to relist')) ?? row
}

/**
 * The `drains.advance` job: every drain not finished, each tenant apart (TenantWalk). A drain left
 * in `draining` by a process that stopped mid-step is taken up again (as the system).
 */
export async function advanceDrains(deps: Deps, tenants: TenantWalk): Promise<string> {
  const counts = { moved: 0, waiting: 0 }
  const now = deps.clock.nowUs()
  for (const row of await liveDrains(deps.db)) {
    if (BUSY.has(row.id)) continue
    await tenants.run(
      row.tenantId,
      async () => {
        // Still the synchronous step of the BUSY.has check above (tenants.run calls the part at once).
        BUSY.add(row.id)
        try {
          let after: DrainRow
          if (row.state === 'draining') {
            if (now - row.updatedAt < STALE_FIRST_STEP_US) return
            after = await takeOffersOff(systemCall(deps, row.tenantId), row)
            if (after.state !== 'failed') after = await advanceDrain(deps, after)
          } else after = await advanceDrain(deps, row)
          if (after.state !== row.state) counts.moved++
          else counts.waiting++
        } finally {
          BUSY.delete(row.id)
        }
      },
      `drain ${row.id}`,
    )
  }
  return `${counts.moved} drains moved on, ${counts.waiting} waiting`
}

/** A rental ended on the server (`server.rental_ended`), or a command of its work ended: its drain moves on without waiting for the job. */
export async function advanceServerDrains(deps: Deps, serverId: string): Promise<void> {
  let row: DrainRow | undefined
  try {
    row = await liveDrainOfServer(deps.db, serverId)
  } catch (error) {
    // A database closing under a late timer, or busy: the drains.advance job moves it on.
    deps.log.warn('finding the drain of a server failed', { server_id: serverId, error })
    return
  }
  // The check and the claim with no await between them; the advance (platform calls) runs on its own, unawaited.
  if (!row || BUSY.has(row.id) || row.state === 'draining') return
  BUSY.add(row.id)
  const id = row.id
  void advanceDrain(deps, row)
    .catch((error) => deps.log.warn('advancing a drain after its rental or its work ended failed', { drain_id: id, error }))
    .finally(() => BUSY.delete(id))
}
