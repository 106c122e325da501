import type { Static } from '@sinclair/typebox'
import { withTransaction, type DbOrTx } from '../../../db/client'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { assertIfMatch, etagOf } from '../../platform/etag'
import { formatTimestamp } from '../../platform/time'
import { recordAudit, type AuditContext } from '../audit'
import { countServersInGroup, markFleetDirty, releaseGroup } from '../fleet'
import { GroupErrors } from './groups.errors'
import type { GroupCreate, GroupPatch } from './groups.model'
import {
  deleteGroupRow,
  findGroup,
  findGroupByName,
  groupsOf,
  insertGroup,
  lastPosition,
  updateGroup as updateGroupRow,
  type GroupRow,
} from './groups.repository'

/** Server groups: named, ordered by position then name; names unique per tenant; only an empty group can go. */
async function groupView(db: DbOrTx, g: GroupRow) {
  return {
    id: g.id,
    name: g.name,
    position: g.position,
    servers: await countServersInGroup(db, g.id),
    version: g.version,
    created_at: formatTimestamp(g.createdAt),
  }
}

async function loadGroup(db: DbOrTx, actor: Actor, id: string): Promise<GroupRow> {
  const g = await findGroup(db, actor.tenantId, id.toLowerCase())
  if (!g) throw GroupErrors.notFound()
  return g
}

async function assertNameFree(db: DbOrTx, actor: Actor, name: string, except?: string): Promise<void> {
  const other = await findGroupByName(db, actor.tenantId, name)
  if (other && other.id !== except) throw GroupErrors.nameTaken(`a group named "${name}" already exists`)
}

export async function listGroups({ deps, actor }: { deps: Deps; actor: Actor }) {
  const items = []
  for (const g of await groupsOf(deps.db, actor.tenantId)) items.push(await groupView(deps.db, g))
  return { items }
}

export async function getGroup({ deps, actor, id }: { deps: Deps; actor: Actor; id: string }) {
  return await groupView(deps.db, await loadGroup(deps.db, actor, id))
}

type Change = { deps: Deps; actor: Actor; audit: AuditContext }

export async function createGroup({ deps, actor, audit, input }: Change & { input: Static<typeof GroupCreate> }) {
  return await withTransaction(deps.db, async (tx) => {
    const name = input.name.trim()
    await assertNameFree(tx, actor, name)
    const row: GroupRow = {
      id: deps.newId(),
      tenantId: actor.tenantId,
      name,
      position: input.position ?? (await lastPosition(tx, actor.tenantId)) + 1,
      version: 1,
      createdAt: deps.clock.nowUs(),
    }
    await insertGroup(tx, row)
    await recordAudit(tx, deps, audit, { operation: 'groups.create', targetKind: 'group', targetId: row.id })
    return await groupView(tx, row)
  })
}

export async function updateGroup({
  deps,
  actor,
  audit,
  id,
  ifMatch,
  input,
}: Change & { id: string; ifMatch: string | null; input: Static<typeof GroupPatch> }) {
  return await withTransaction(deps.db, async (tx) => {
    const g = await loadGroup(tx, actor, id)
    assertIfMatch(ifMatch, etagOf(g.version))
    const next = { ...g, version: g.version + 1 }
    if (input.name !== undefined) {
      next.name = input.name.trim()
      await assertNameFree(tx, actor, next.name, g.id)
    }
    if (input.position !== undefined) next.position = input.position
    await updateGroupRow(tx, g.id, { name: next.name, position: next.position, version: next.version })
    await recordAudit(tx, deps, audit, { operation: 'groups.update', targetKind: 'group', targetId: g.id })
    return await groupView(tx, next)
  })
}

export async function deleteGroup({ deps, actor, audit, id }: Change & { id: string }): Promise<void> {
  await withTransaction(deps.db, async (tx) => {
    const g = await loadGroup(tx, actor, id)
    const n = await countServersInGroup(tx, g.id)
    if (n > 0) throw GroupErrors.notEmpty(`the group still holds ${n} server${n === 1 ? '' : 's'}; move them out first`)
    // Decommissioned servers keep their history but let go of the group.
    await releaseGroup(tx, g.id)
    await deleteGroupRow(tx, g.id)
    await markFleetDirty(tx, actor.tenantId)
    await recordAudit(tx, deps, audit, { operation: 'groups.delete', targetKind: 'group', targetId: g.id })
  })
}
