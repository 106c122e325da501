import type { Static } from '@sinclair/typebox'
import { withTransaction, type DbOrTx } from '../../../db/client'
import { mayAccessServer, type Actor } from '../../platform/access'
import type { AuditContext } from '../../platform/audit-context'
import type { Deps } from '../../platform/context'
import { DomainError } from '../../platform/domain-error'
import { paginate } from '../../platform/cursor'
import type { FieldError } from '../../platform/problem'
import { formatNullableTimestamp, formatTimestamp, parseTimestamp } from '../../platform/time'
import { recordAudit } from '../audit'
import { commandInputErrors, commandOutcomes } from '../commands'
import { loadServer, managedServers, recordServerEvent } from '../fleet'
import { findGroup } from '../groups'
import { drainTargets, type MarketplaceId } from '../marketplaces'
import { DrainErrors } from './drains.errors'
import type { DrainCreate, DrainListQuery } from './drains.model'
import { findDrain, insertDrain, listDrainRows, liveDrainOf, type DrainLink, type DrainRow, type DrainState } from './drains.repository'
import { advanceDrain, BUSY, takeOffersOff, undo, type Call } from './steps.service'

/**
 * The drain (docs/marketplaces.md "Drain"): a server taken out for work without breaking a
 * rental. draining (offers off, window announced) → awaiting_rental_end → working (the commands
 * run) → relisting (kept offers back, window cancelled) → done; cancelled at any step before done
 * (the listing restored); failed with the reason in words. Each step is a server event
 * (`drain.<state>`). The platform calls happen outside transactions; each move of the row is a
 * compare-and-set on its version, and one process works on a drain at a time (BUSY).
 */

const US = 1_000_000
const HOUR = 3600 * US
const YEAR = 365 * 24 * HOUR
const DEFAULT_WINDOW = { hours: 2, category: 'software' }

type Verb = { deps: Deps; actor: Actor; audit: AuditContext }
type Input = Static<typeof DrainCreate>

/** The request's problems, every one at once, before anything is sent. */
function check(deps: Deps, input: Input): { startsAtUs: number } {
  const errors: FieldError[] = []
  const now = deps.clock.nowUs()
  let startsAtUs = now + HOUR
  if (input.window?.starts_at !== undefined) {
    const at = parseTimestamp(input.window.starts_at)
    if (at === null) errors.push({ path: '/window/starts_at', code: 'format' })
    else if (at <= now || at > now + YEAR) errors.push({ path: '/window/starts_at', code: 'out_of_range' })
    else startsAtUs = at
  }
  for (const [i, c] of (input.commands ?? []).entries()) errors.push(...commandInputErrors(c.type, c.params, `/commands/${i}`))
  if (errors.length) throw DrainErrors.invalid('the drain is not valid: see errors', { fields: errors })
  return { startsAtUs }
}

/** Starts a drain of one server: the row and its first event, then the first step (offers off). */
export async function startDrain(verb: Verb & { serverId: string; input: Input }) {
  const { startsAtUs } = check(verb.deps, verb.input)
  const row = await createDrain(verb, verb.serverId.toLowerCase(), verb.input, null, startsAtUs)
  return await view(verb.deps, await runFirstStep({ deps: verb.deps, actor: verb.actor, audit: verb.audit }, row))
}

/**
 * Starts one drain per managed server of the group (a group drain is its servers' drains, each
 * with `group_id`): a server already being drained is skipped and said so. The answer comes at once
 * with each drain `draining`: their first steps run one after another behind it (paced by the
 * platforms' limits, forty servers take minutes); a process that stops meanwhile leaves them to
 * the drains.advance job.
 */
export async function startGroupDrain(verb: Verb & { groupId: string; input: Input }) {
  const { deps, actor } = verb
  const group = await findGroup(deps.db, actor.tenantId, verb.groupId.toLowerCase())
  if (!group) throw DrainErrors.notFound('no such group')
  const { startsAtUs } = check(deps, verb.input)
  const rows: DrainRow[] = []
  const skipped: { server_id: string; reason: string }[] = []
  const servers = (await managedServers(deps.db, actor.tenantId)).filter((s) => s.groupId === group.id && mayAccessServer(actor, s.id))
  try {
    for (const server of servers) {
      try {
        const row = await createDrain(verb, server.id, verb.input, group.id, startsAtUs)
        rows.push(row)
        // Claimed as soon as it exists: the creations now await, and other work runs in between.
        BUSY.add(row.id)
      } catch (e) {
        // Refused for this server (already being drained, decommissioned meanwhile): said, and the others go on.
        if (!(e instanceof DomainError)) throw e
        skipped.push({ server_id: server.id, reason: e.message })
      }
    }
  } catch (e) {
    // The request fails: the drains made so far are left to the drains.advance job, as before.
    for (const row of rows) BUSY.delete(row.id)
    throw e
  }
  void (async () => {
    for (const row of rows)
      await runFirstStep(verb, row, true).catch((error) => deps.log.warn('a group drain’s first step failed', { drain_id: row.id, error }))
  })()
  const items = []
  for (const r of rows) items.push(await view(deps, r))
  return { items, skipped }
}

async function createDrain(verb: Verb, serverId: string, input: Input, groupId: string | null, startsAtUs: number): Promise<DrainRow> {
  const { deps, actor, audit } = verb
  return await withTransaction(deps.db, async (tx) => {
    const server = await loadServer(deps, actor, serverId, tx)
    if (server.decommissionedAt !== null) throw DrainErrors.decommissioned()
    if (await liveDrainOf(tx, actor.tenantId, server.id)) throw DrainErrors.alreadyDraining()
    const now = deps.clock.nowUs()
    const links: DrainLink[] = (await drainTargets(deps, actor.tenantId, server.id)).map((t) => ({
      marketplace: t.marketplace,
      offer: t.offer,
      listed: t.listed,
      withdrawn: false,
      window_supported: t.windowSupported,
      window_announced: false,
      relisted: false,
      note: null,
    }))
    const row: DrainRow = {
      id: deps.newId(),
      tenantId: actor.tenantId,
      serverId: server.id,
      liveServerId: server.id,
      groupId,
      state: 'draining',
      reason: input.reason ?? null,
      window: { starts_at_us: startsAtUs, hours: input.window?.hours ?? DEFAULT_WINDOW.hours, category: input.window?.category ?? DEFAULT_WINDOW.category },
      links,
      work: (input.commands ?? []).map((c) => ({ type: c.type, params: c.params })),
      commandIds: [],
      failure: null,
      failedStep: null,
      createdAt: now,
      updatedAt: now,
      finishedAt: null,
      version: 1,
    }
    await insertDrain(tx, row)
    const where = links.length ? links.map((l) => l.marketplace).join(', ') : 'no marketplace (the server is not linked)'
    await recordServerEvent(tx, deps, server, {
      kind: 'drain.draining',
      message: `drain started${row.reason ? ` (${row.reason})` : ''}: taking the offers off ${where}`,
      data: { drain_id: row.id, state: 'draining' },
    })
    await recordAudit(tx, deps, audit, { operation: 'drains.start', targetKind: 'server', targetId: server.id })
    return row
  })
}

/** The first step, in the request: offers off and the window announced, or undone and failed. */
async function runFirstStep(call: Call, row: DrainRow, claimed = false): Promise<DrainRow> {
  if (!claimed) BUSY.add(row.id)
  try {
    const after = await takeOffersOff(call, row)
    return after.state === 'failed' ? after : await advanceDrain(call.deps, after)
  } finally {
    BUSY.delete(row.id)
  }
}

/** Cancels a drain at any step before it is done: waiting commands cancelled, the listing restored, the window cancelled. */
export async function cancelDrain(verb: Verb & { id: string }) {
  const { deps, actor } = verb
  const row = await loadDrain(deps, actor, verb.id)
  // From here to BUSY.add nothing awaits: the check and the claim are one step.
  if (row.liveServerId === null) throw DrainErrors.finished(`the drain already finished (${row.state})`)
  if (BUSY.has(row.id)) throw DrainErrors.stepInProgress()
  BUSY.add(row.id)
  try {
    const after = await undo({ deps, actor, audit: verb.audit }, row, 'cancel')
    await withTransaction(deps.db, (tx) => recordAudit(tx, deps, verb.audit, { operation: 'drains.cancel', targetKind: 'server', targetId: row.serverId }))
    return await view(deps, after)
  } finally {
    BUSY.delete(row.id)
  }
}

async function loadDrain(deps: Deps, actor: Actor, id: string, db: DbOrTx = deps.db): Promise<DrainRow> {
  const row = await findDrain(db, actor.tenantId, id.toLowerCase())
  if (!row || !mayAccessServer(actor, row.serverId)) throw DrainErrors.notFound()
  return row
}

export async function getDrain({ deps, actor, id }: { deps: Deps; actor: Actor; id: string }) {
  return await view(deps, await loadDrain(deps, actor, id))
}

export async function listDrains({ deps, actor, input }: { deps: Deps; actor: Actor; input: Static<typeof DrainListQuery> }) {
  const filter = { serverId: input.server_id?.toLowerCase(), state: input.state as DrainState | undefined, live: input.live }
  const page = await paginate(deps.keys.cursor, {
    scope: `drains:${actor.tenantId}:${JSON.stringify(filter)}`,
    input,
    fetch: (before: { id: string } | undefined, take) =>
      listDrainRows(deps.db, actor.tenantId, { ...filter, serverIds: actor.serverAllowlist }, before?.id ?? null, take),
    position: (r) => ({ id: r.id }),
    view: (r) => r,
  })
  // Each drain's view reads its commands: one after the other, after the page.
  const items = []
  for (const r of page.items) items.push(await view(deps, r))
  return { ...page, items }
}

async function view(deps: Deps, r: DrainRow) {
  return {
    id: r.id,
    server_id: r.serverId,
    group_id: r.groupId,
    state: r.state,
    reason: r.reason,
    window: { starts_at: formatTimestamp(r.window.starts_at_us), hours: r.window.hours, category: r.window.category },
    links: r.links.map((l) => ({ ...l, marketplace: l.marketplace as MarketplaceId })),
    commands: (await commandOutcomes(deps, r.tenantId, r.commandIds)).map((c) => ({
      command_id: c.id,
      type: c.type,
      delivery_status: c.deliveryStatus,
      execution_status: c.executionStatus,
      error: c.error,
    })),
    failure: r.failure,
    failed_step: r.failedStep,
    created_at: formatTimestamp(r.createdAt),
    updated_at: formatTimestamp(r.updatedAt),
    finished_at: formatNullableTimestamp(r.finishedAt),
    version: r.version,
  }
}

/**
 * Why a server's offers stay off the market (registered as a listing hold by src/reactions.ts): a
 * drain not finished keeps them off until its work is done and it relists them itself.
 */
export async function drainHold(db: DbOrTx, tenantId: string, serverId: string): Promise<string | null> {
  const d = await liveDrainOf(db, tenantId, serverId)
  if (!d) return null
  return `the server is being drained for maintenance (drain ${d.id}, ${d.state.replaceAll('_', ' ')}); its offers go back on the market when the drain's work is done: wait for it, or cancel the drain (POST /api/v1/drains/${d.id}/cancel), which relists the offer it kept`
}
