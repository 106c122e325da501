import type { Static } from '@sinclair/typebox'
import { withTransaction } from '../../../db/client'
import { ensureReaches, mayAccessServer, type Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { paginate } from '../../platform/cursor'
import { invalidField } from '../../platform/domain-error'
import { ProblemError } from '../../platform/problem'
import { formatTimestamp } from '../../platform/time'
import { recordAudit, type AuditContext } from '../audit'
import { managedServers } from '../fleet'
import { findGroup } from '../groups'
import { offerStates } from '../marketplaces'
import { BulkErrors } from './bulk.errors'
import type { BulkBody } from './bulk.model'
import {
  cancelPending,
  countsOf,
  findOperation,
  insertOperation,
  itemsOf,
  operationsOf,
  updateOperation,
  type ItemRow,
  type ItemState,
  type OperationRow,
} from './bulk.repository'
import { changeOf, planItem, type Plan } from './plan'

/**
 * Bulk publish / withdraw / reprice (docs/marketplaces.md "Bulk changes"): a preview of each
 * machine's change, then an operation whose items the bulk.run job sends one by one, paced by the
 * platform's limits, resumable after a restart, each with its own outcome.
 */

type Verb = { deps: Deps; actor: Actor; audit: AuditContext }
type Input = Static<typeof BulkBody>
type Planned = { serverId: string; serverName: string; externalMachineId: string | null; plan: Plan }

/** The selected servers (managed ones, in the order asked, or a group's by name) and each one's plan. */
async function planAll(deps: Deps, actor: Actor, input: Input): Promise<{ change: ReturnType<typeof changeOf>; planned: Planned[] }> {
  if ((input.server_ids === undefined) === (input.group_id === undefined))
    throw invalidField('bulk', input.server_ids === undefined ? '/server_ids' : '/group_id', 'one_of', 'give exactly one of server_ids and group_id')
  const change = changeOf(input)
  const servers = await managedServers(deps.db, actor.tenantId)
  let chosen: typeof servers
  // A group reaches servers beyond a token's allowlist; its server ids were checked when the body was parsed.
  if (input.group_id !== undefined) ensureReaches(actor, null, 'a bulk change over a group', '/group_id')
  if (input.group_id !== undefined) {
    const group = await findGroup(deps.db, actor.tenantId, input.group_id.toLowerCase())
    if (!group) throw invalidField('bulk', '/group_id', 'not_found', 'no such group')
    chosen = servers.filter((s) => s.groupId === group.id)
  } else {
    const byId = new Map(servers.map((s) => [s.id, s]))
    const seen = new Set<string>()
    chosen = []
    input.server_ids!.forEach((raw, i) => {
      const id = raw.toLowerCase()
      const s = byId.get(id)
      // Another tenant's server, a decommissioned one or none at all: the same answer.
      if (!s) throw invalidField('bulk', `/server_ids/${i}`, 'not_found', 'no such managed server')
      if (seen.has(id)) throw invalidField('bulk', `/server_ids/${i}`, 'duplicate', 'this server is already selected')
      seen.add(id)
      chosen.push(s)
    })
  }
  const links = new Map((await offerStates(deps.db, actor.tenantId, input.marketplace)).map((l) => [l.serverId, l]))
  return {
    change,
    planned: chosen.map((s) => {
      const link = links.get(s.id)
      return {
        serverId: s.id,
        serverName: s.name,
        externalMachineId: link?.externalMachineId ?? null,
        plan: planItem(input.marketplace, input.action, change, link),
      }
    }),
  }
}

/** What each machine's change would be; nothing is stored or sent. */
export async function previewBulk({ deps, actor, input }: Verb & { input: Input }) {
  const { planned } = await planAll(deps, actor, input)
  const change = planned.filter((p) => p.plan.outcome === 'change').length
  return {
    marketplace: input.marketplace,
    action: input.action,
    counts: { total: planned.length, change, skip: planned.length - change },
    items: planned.map((p) => ({
      server_id: p.serverId,
      server_name: p.serverName,
      external_machine_id: p.externalMachineId,
      outcome: p.plan.outcome,
      before: p.plan.before,
      after: p.plan.outcome === 'change' ? p.plan.after : null,
      reason: p.plan.outcome === 'skip' ? p.plan.reason : null,
    })),
  }
}

/** Stores the operation with an item per server (skipped ones decided at once); the bulk.run job sends the rest. */
export async function createBulk({ deps, actor, audit, input }: Verb & { input: Input }) {
  // Withdrawing is always allowed; listing and repricing are not while the account is frozen.
  if (input.action !== 'withdraw' && actor.tenant.accountState === 'frozen')
    throw new ProblemError('account_frozen', {
      detail: 'the account is frozen; a top-up that brings the balance above zero unfreezes it (withdrawing stays possible)',
    })
  const { change, planned } = await planAll(deps, actor, input)
  const now = deps.clock.nowUs()
  const id = deps.newId()
  const row: OperationRow = {
    id,
    tenantId: actor.tenantId,
    marketplace: input.marketplace,
    action: input.action,
    change,
    selection: input.group_id !== undefined ? { group_id: input.group_id.toLowerCase() } : { server_ids: input.server_ids!.map((s) => s.toLowerCase()) },
    state: planned.some((p) => p.plan.outcome === 'change') ? 'running' : 'finished',
    actorKind: actor.kind,
    actorId: actor.kind === 'user' ? actor.userId : (actor.tokenId ?? actor.userId),
    createdAt: now,
    finishedAt: null,
  }
  if (row.state === 'finished') row.finishedAt = now
  const items: ItemRow[] = planned.map((p, position) => ({
    id: deps.newId(),
    operationId: id,
    tenantId: actor.tenantId,
    position,
    serverId: p.serverId,
    serverName: p.serverName,
    externalMachineId: p.externalMachineId,
    state: p.plan.outcome === 'change' ? 'pending' : 'skipped',
    before: p.plan.before,
    after: p.plan.outcome === 'change' ? p.plan.after : null,
    reason: p.plan.outcome === 'skip' ? p.plan.reason : null,
    attempts: 0,
    updatedAt: now,
    finishedAt: p.plan.outcome === 'skip' ? now : null,
  }))
  return await withTransaction(deps.db, async (tx) => {
    await insertOperation(tx, row, items)
    await recordAudit(tx, deps, audit, { operation: `bulk.${input.action}`, targetKind: 'bulk_operation', targetId: id })
    return operationView(row, items)
  })
}

/** An operation a token with a server_allowlist may see: one over servers it names, all of them its own. */
function reaches(actor: Actor, selection: { server_ids?: string[] }): boolean {
  return actor.serverAllowlist === null || (selection.server_ids?.every((s) => mayAccessServer(actor, s)) ?? false)
}

export async function getBulk({ deps, actor, id }: Verb & { id: string }) {
  const op = await findOperation(deps.db, actor.tenantId, id.toLowerCase())
  if (!op || !reaches(actor, op.selection)) throw BulkErrors.notFound()
  return operationView(op, await itemsOf(deps.db, actor.tenantId, op.id))
}

export async function listBulk({ deps, actor, input }: Verb & { input: { cursor?: string; limit?: number } }) {
  const page = await paginate(deps.keys.cursor, {
    scope: `bulk-operations:${actor.tenantId}`,
    input,
    fetch: (after: { id: string } | undefined, take) => operationsOf(deps.db, actor.tenantId, after?.id, take),
    position: (o) => ({ id: o.id }),
    view: (o) => o,
  })
  const counts = await countsOf(
    deps.db,
    actor.tenantId,
    page.items.map((o) => o.id),
  )
  // A token with a server_allowlist: the page's operations over its own servers (a page may hold fewer than its limit).
  return { ...page, items: page.items.filter((o) => reaches(actor, o.selection)).map((o) => summaryView(o, counts.get(o.id) ?? {})) }
}

/** Cancels what was not sent yet; an item whose call is out finishes and keeps its outcome. */
export async function cancelBulk({ deps, actor, audit, id }: Verb & { id: string }) {
  return await withTransaction(deps.db, async (tx) => {
    const op = await findOperation(tx, actor.tenantId, id.toLowerCase())
    if (!op || !reaches(actor, op.selection)) throw BulkErrors.notFound()
    if (op.state === 'cancelled') return operationView(op, await itemsOf(tx, actor.tenantId, op.id))
    if (op.state === 'finished') throw BulkErrors.finished()
    const now = deps.clock.nowUs()
    await cancelPending(tx, actor.tenantId, op.id, now, 'cancelled before it was sent')
    await updateOperation(tx, op.id, { state: 'cancelled', finishedAt: now })
    await recordAudit(tx, deps, audit, { operation: 'bulk.cancel', targetKind: 'bulk_operation', targetId: op.id })
    return operationView({ ...op, state: 'cancelled', finishedAt: now }, await itemsOf(tx, actor.tenantId, op.id))
  })
}

function countsView(counts: Partial<Record<ItemState, number>>) {
  const n = (s: ItemState) => counts[s] ?? 0
  const pending = n('pending') + n('sending')
  return {
    total: pending + n('done') + n('refused') + n('skipped') + n('failed') + n('cancelled'),
    pending,
    done: n('done'),
    refused: n('refused'),
    skipped: n('skipped'),
    failed: n('failed'),
    cancelled: n('cancelled'),
  }
}

function summaryView(op: OperationRow, counts: Partial<Record<ItemState, number>>) {
  return {
    id: op.id,
    marketplace: op.marketplace,
    action: op.action,
    change: op.change,
    selection: op.selection,
    state: op.state,
    counts: countsView(counts),
    created_by: { kind: op.actorKind, id: op.actorId },
    created_at: formatTimestamp(op.createdAt),
    finished_at: op.finishedAt === null ? null : formatTimestamp(op.finishedAt),
  }
}

function operationView(op: OperationRow, items: ItemRow[]) {
  const counts: Partial<Record<ItemState, number>> = {}
  for (const i of items) counts[i.state] = (counts[i.state] ?? 0) + 1
  return {
    ...summaryView(op, counts),
    items: items.map((i) => ({
      server_id: i.serverId,
      server_name: i.serverName,
      external_machine_id: i.externalMachineId,
      state: i.state,
      before: i.before,
      after: i.after,
      reason: i.reason,
      attempts: i.attempts,
      finished_at: i.finishedAt === null ? null : formatTimestamp(i.finishedAt),
    })),
  }
}
