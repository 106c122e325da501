import { and, asc, eq, isNull, sql } from 'drizzle-orm'
import { serverGroups, servers } from '../../../db/schema'
import { withTransaction, type DbOrTx } from '../../../db/client'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { assertIfMatch, etagOf } from '../../platform/etag'
import { problems } from '../../platform/problem'
import { formatTimestamp } from '../../platform/time'
import type { AuditContext } from '../audit/audit.context'
import { recordAudit } from '../audit/audit.service'
import { markFleetDirty } from '../fleet/fleet.repository'

/** Server groups: named, ordered by position then name; names unique per tenant; only an empty group can go. */
type GroupRow = typeof serverGroups.$inferSelect

function serverCount(db: DbOrTx, groupId: string): number {
  const r = db
    .select({ n: sql<number>`count(*)` })
    .from(servers)
    .where(and(eq(servers.groupId, groupId), isNull(servers.decommissionedAt)))
    .get()
  return Number(r?.n ?? 0)
}

export function groupView(db: DbOrTx, g: GroupRow) {
  return { id: g.id, name: g.name, position: g.position, servers: serverCount(db, g.id), version: g.version, created_at: formatTimestamp(g.createdAt) }
}

function loadGroup(db: DbOrTx, actor: Actor, id: string): GroupRow {
  const g = db
    .select()
    .from(serverGroups)
    .where(and(eq(serverGroups.tenantId, actor.tenantId), eq(serverGroups.id, id.toLowerCase())))
    .get()
  if (!g) throw problems.notFound('no such group')
  return g
}

function assertNameFree(db: DbOrTx, actor: Actor, name: string, except?: string): void {
  const other = db
    .select()
    .from(serverGroups)
    .where(and(eq(serverGroups.tenantId, actor.tenantId), eq(serverGroups.name, name)))
    .get()
  if (other && other.id !== except) throw problems.conflict(`a group named "${name}" already exists`)
}

export function listGroups({ deps, actor }: { deps: Deps; actor: Actor }) {
  const rows = deps.db
    .select()
    .from(serverGroups)
    .where(eq(serverGroups.tenantId, actor.tenantId))
    .orderBy(asc(serverGroups.position), asc(serverGroups.name))
    .all()
  return { items: rows.map((g) => groupView(deps.db, g)) }
}

export function getGroup({ deps, actor, id }: { deps: Deps; actor: Actor; id: string }) {
  return groupView(deps.db, loadGroup(deps.db, actor, id))
}

export function createGroup({ deps, actor, audit, input }: { deps: Deps; actor: Actor; audit: AuditContext; input: { name: string; position?: number } }) {
  return withTransaction(deps.db, (tx) => {
    const name = input.name.trim()
    assertNameFree(tx, actor, name)
    const last = tx
      .select({ p: sql<number>`coalesce(max(${serverGroups.position}), 0)` })
      .from(serverGroups)
      .where(eq(serverGroups.tenantId, actor.tenantId))
      .get()
    const row: GroupRow = {
      id: deps.newId(),
      tenantId: actor.tenantId,
      name,
      position: input.position ?? Number(last?.p ?? 0) + 1,
      version: 1,
      createdAt: deps.clock.nowUs(),
    }
    tx.insert(serverGroups).values(row).run()
    recordAudit(tx, deps, audit, { operation: 'groups.create', targetKind: 'group', targetId: row.id })
    return groupView(tx, row)
  })
}

export function updateGroup({
  deps,
  actor,
  audit,
  id,
  ifMatch,
  input,
}: {
  deps: Deps
  actor: Actor
  audit: AuditContext
  id: string
  ifMatch: string | null
  input: { name?: string; position?: number }
}) {
  return withTransaction(deps.db, (tx) => {
    const g = loadGroup(tx, actor, id)
    assertIfMatch(ifMatch, etagOf(g.version))
    const next = { ...g, version: g.version + 1 }
    if (input.name !== undefined) {
      next.name = input.name.trim()
      assertNameFree(tx, actor, next.name, g.id)
    }
    if (input.position !== undefined) next.position = input.position
    tx.update(serverGroups).set({ name: next.name, position: next.position, version: next.version }).where(eq(serverGroups.id, g.id)).run()
    recordAudit(tx, deps, audit, { operation: 'groups.update', targetKind: 'group', targetId: g.id })
    return groupView(tx, next)
  })
}

export function deleteGroup({ deps, actor, audit, id }: { deps: Deps; actor: Actor; audit: AuditContext; id: string }) {
  withTransaction(deps.db, (tx) => {
    const g = loadGroup(tx, actor, id)
    const n = serverCount(tx, g.id)
    if (n > 0) throw problems.conflict(`the group still holds ${n} server${n === 1 ? '' : 's'}; move them out first`)
    // Decommissioned servers keep their history but let go of the group.
    tx.update(servers).set({ groupId: null }).where(eq(servers.groupId, g.id)).run()
    tx.delete(serverGroups).where(eq(serverGroups.id, g.id)).run()
    markFleetDirty(tx, actor.tenantId)
    recordAudit(tx, deps, audit, { operation: 'groups.delete', targetKind: 'group', targetId: g.id })
  })
}
