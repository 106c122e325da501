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
function groupView(db: DbOrTx, g: GroupRow) {
  return { id: g.id, name: g.name, position: g.position, servers: countServersInGroup(db, g.id), version: g.version, created_at: formatTimestamp(g.createdAt) }
}

function loadGroup(db: DbOrTx, actor: Actor, id: string): GroupRow {
  const g = findGroup(db, actor.tenantId, id.toLowerCase())
  if (!g) throw GroupErrors.notFound()
  return g
}

function assertNameFree(db: DbOrTx, actor: Actor, name: string, except?: string): void {
  const other = findGroupByName(db, actor.tenantId, name)
  if (other && other.id !== except) throw GroupErrors.nameTaken(`a group named "${name}" already exists`)
}

export function listGroups({ deps, actor }: { deps: Deps; actor: Actor }) {
  return { items: groupsOf(deps.db, actor.tenantId).map((g) => groupView(deps.db, g)) }
}

export function getGroup({ deps, actor, id }: { deps: Deps; actor: Actor; id: string }) {
  return groupView(deps.db, loadGroup(deps.db, actor, id))
}

type Change = { deps: Deps; actor: Actor; audit: AuditContext }

export function createGroup({ deps, actor, audit, input }: Change & { input: Static<typeof GroupCreate> }) {
  return withTransaction(deps.db, (tx) => {
    const name = input.name.trim()
    assertNameFree(tx, actor, name)
    const row: GroupRow = {
      id: deps.newId(),
      tenantId: actor.tenantId,
      name,
      position: input.position ?? lastPosition(tx, actor.tenantId) + 1,
      version: 1,
      createdAt: deps.clock.nowUs(),
    }
    insertGroup(tx, row)
    recordAudit(tx, deps, audit, { operation: 'groups.create', targetKind: 'group', targetId: row.id })
    return groupView(tx, row)
  })
}

export function updateGroup({ deps, actor, audit, id, ifMatch, input }: Change & { id: string; ifMatch: string | null; input: Static<typeof GroupPatch> }) {
  return withTransaction(deps.db, (tx) => {
    const g = loadGroup(tx, actor, id)
    assertIfMatch(ifMatch, etagOf(g.version))
    const next = { ...g, version: g.version + 1 }
    if (input.name !== undefined) {
      next.name = input.name.trim()
      assertNameFree(tx, actor, next.name, g.id)
    }
    if (input.position !== undefined) next.position = input.position
    updateGroupRow(tx, g.id, { name: next.name, position: next.position, version: next.version })
    recordAudit(tx, deps, audit, { operation: 'groups.update', targetKind: 'group', targetId: g.id })
    return groupView(tx, next)
  })
}

export function deleteGroup({ deps, actor, audit, id }: Change & { id: string }) {
  withTransaction(deps.db, (tx) => {
    const g = loadGroup(tx, actor, id)
    const n = countServersInGroup(tx, g.id)
    if (n > 0) throw GroupErrors.notEmpty(`the group still holds ${n} server${n === 1 ? '' : 's'}; move them out first`)
    // Decommissioned servers keep their history but let go of the group.
    releaseGroup(tx, g.id)
    deleteGroupRow(tx, g.id)
    markFleetDirty(tx, actor.tenantId)
    recordAudit(tx, deps, audit, { operation: 'groups.delete', targetKind: 'group', targetId: g.id })
  })
}
