import { and, asc, desc, eq, gte, inArray, isNotNull, isNull, lt, or, sql, type SQL } from 'drizzle-orm'
import { fleetSnapshots, serverEvents, serverKeepOn, serverLatestMetrics, servers, serverXidCounts } from '../../../db/schema/fleet'
import { isPostgres, preparedQuery, type DbOrTx, rawSql } from '../../../db/client'
import type { Rider } from '../../platform/rate-limit'

export type ServerRow = typeof servers.$inferSelect
export type ServerEventRow = typeof serverEvents.$inferSelect
type Presence = ServerRow['presence']
export type Marketplace = (typeof serverKeepOn.$inferSelect)['marketplace']

/** SQLite takes at most 32,766 parameters in one statement: id lists go in slices. */
const SLICE = 5000

/** A server of this tenant (decommissioned ones included: they keep their history). */
export async function findServer(db: DbOrTx, tenantId: string, id: string): Promise<ServerRow | undefined> {
  return db
    .select()
    .from(servers)
    .where(and(eq(servers.tenantId, tenantId), eq(servers.id, id)))
    .get()
}

/** A server by id alone, for callers that already hold a trusted id (a live session's server). */
export async function findServerById(db: DbOrTx, id: string): Promise<ServerRow | undefined> {
  return db.select().from(servers).where(eq(servers.id, id)).get()
}

export async function findServerByAgentToken(db: DbOrTx, tokenHash: string): Promise<ServerRow | undefined> {
  return db
    .select()
    .from(servers)
    .where(and(eq(servers.agentTokenHash, tokenHash), isNull(servers.decommissionedAt)))
    .get()
}

const agentByTokenHash = preparedQuery((db) =>
  db
    .select({ id: servers.id, tenantId: servers.tenantId })
    .from(servers)
    .where(and(eq(servers.agentTokenHash, sql.placeholder('hash')), isNull(servers.decommissionedAt)))
    .prepare(),
)

/**
 * The managed server an agent credential (its hash) belongs to, id and tenant only: one compiled
 * statement, for every WebSocket upgrade and session open (a mass reconnect makes thousands).
 */
export async function findAgentByTokenHash(db: DbOrTx, tokenHash: string): Promise<{ id: string; tenantId: string } | undefined> {
  return await agentByTokenHash(db).get({ hash: tokenHash })
}

export async function findServerByFingerprint(db: DbOrTx, tenantId: string, fingerprint: string): Promise<ServerRow | undefined> {
  return db
    .select()
    .from(servers)
    .where(and(eq(servers.tenantId, tenantId), eq(servers.fingerprint, fingerprint), isNull(servers.decommissionedAt)))
    .get()
}

/** The tenant's managed (not decommissioned) servers, by name. */
export async function managedServers(db: DbOrTx, tenantId: string): Promise<ServerRow[]> {
  return db
    .select()
    .from(servers)
    .where(and(eq(servers.tenantId, tenantId), isNull(servers.decommissionedAt)))
    .orderBy(asc(servers.name), asc(servers.id))
    .all()
}

/** Every server of the tenant, decommissioned ones too (they keep their history), by name. */
export async function serversOfTenant(db: DbOrTx, tenantId: string): Promise<ServerRow[]> {
  return db.select().from(servers).where(eq(servers.tenantId, tenantId)).orderBy(asc(servers.name), asc(servers.id)).all()
}

const PRESENCE_KINDS = ['presence.online', 'presence.suspect', 'presence.offline']

/**
 * The presence transitions of the given servers with created_at in [fromUs, toUs), each server's
 * oldest first, preceded by its last one before fromUs (the presence the window opens with; none:
 * the server was never online). Two reads for any number of servers (the utilisation report),
 * sliced only past SLICE ids.
 */
export async function presenceTransitionsOf(
  db: DbOrTx,
  tenantId: string,
  serverIds: readonly string[],
  fromUs: number,
  toUs: number,
): Promise<Map<string, { kind: string; at: number }[]>> {
  const out = new Map<string, { kind: string; at: number }[]>(serverIds.map((id) => [id, []]))
  for (let i = 0; i < serverIds.length; i += SLICE) {
    const ids = serverIds.slice(i, i + SLICE)
    const mine = and(eq(serverEvents.tenantId, tenantId), inArray(serverEvents.serverId, ids), inArray(serverEvents.kind, PRESENCE_KINDS))
    const ranked = db
      .select({
        serverId: serverEvents.serverId,
        kind: serverEvents.kind,
        at: serverEvents.createdAt,
        rank: sql<number>`row_number() OVER (PARTITION BY ${serverEvents.serverId} ORDER BY ${serverEvents.createdAt} DESC, ${serverEvents.id} DESC)`.as(
          'rank',
        ),
      })
      .from(serverEvents)
      .where(and(mine, lt(serverEvents.createdAt, fromUs)))
      .as('ranked')
    const opening = await db.select({ serverId: ranked.serverId, kind: ranked.kind, at: ranked.at }).from(ranked).where(eq(ranked.rank, 1)).all()
    for (const r of opening) out.get(r.serverId)?.push({ kind: r.kind, at: r.at })
    const within = await db
      .select({ serverId: serverEvents.serverId, kind: serverEvents.kind, at: serverEvents.createdAt })
      .from(serverEvents)
      .where(and(mine, gte(serverEvents.createdAt, fromUs), lt(serverEvents.createdAt, toUs)))
      .orderBy(asc(serverEvents.serverId), asc(serverEvents.createdAt), asc(serverEvents.id))
      .all()
    for (const r of within) out.get(r.serverId)?.push({ kind: r.kind, at: r.at })
  }
  return out
}

/** The tenant's managed (not decommissioned) servers: what the plan's server limit counts. */
export async function countManagedServers(db: DbOrTx, tenantId: string): Promise<number> {
  const r = await db
    .select({ n: sql<number>`count(*)` })
    .from(servers)
    .where(and(eq(servers.tenantId, tenantId), isNull(servers.decommissionedAt)))
    .get()
  return Number(r?.n ?? 0)
}

/** The tenants after $1 with servers managed during [$3, $2), a page of $4, for both databases' statements below. */
const MANAGED_BY_TENANT = `WHERE tenant_id > $1 AND created_at < $2 AND (decommissioned_at IS NULL OR decommissioned_at > $3)
  GROUP BY tenant_id ORDER BY tenant_id LIMIT $4`

/**
 * What hourly charges bill, grouped by tenant in one pass over the `servers_tenant` index: for the
 * next `limit` tenants after `afterTenant` ('' for the first) in id order that had servers managed
 * during some part of [fromUs, toUs) (enrolled before its end, not decommissioned before its
 * start), [tenant id, how many, their ids as a JSON array sorted by id] (the text a charge's
 * calculation stores, built by the database: no row per server reaches the process). An empty
 * answer means the table is done. Ids are ours (UUIDv7, ASCII), so SQLite's byte order is
 * JavaScript's string order. PostgreSQL pages in its collation's order (the same in the comparison
 * and the ORDER BY, so no tenant is skipped or read twice, and the index serves both; the caller
 * sorts the tenants when they are not in JavaScript's order), and each tenant's ids are sorted
 * again here, so the stored text is the same on both databases.
 */
export async function managedServersByTenant(
  db: DbOrTx,
  fromUs: number,
  toUs: number,
  afterTenant: string,
  limit: number,
): Promise<[string, number, string][]> {
  if (isPostgres(db)) {
    const rows = await rawSql(db).values<[string, number | string, string]>(
      `SELECT tenant_id, count(*), CAST(json_agg(id) AS text) FROM servers ${MANAGED_BY_TENANT}`,
      afterTenant,
      toUs,
      fromUs,
      limit,
    )
    return rows.map(([tenantId, n, ids]) => [tenantId, Number(n), JSON.stringify((JSON.parse(ids) as string[]).sort())])
  }
  return await rawSql(db).values<[string, number, string]>(
    `SELECT tenant_id, count(*), json_group_array(id ORDER BY id) FROM servers ${MANAGED_BY_TENANT}`,
    afterTenant,
    toUs,
    fromUs,
    limit,
  )
}

/** The tenant's servers managed during [fromUs, toUs) (enrolled before its end, not decommissioned before its start), by id. */
export async function tenantServersManagedDuring(db: DbOrTx, tenantId: string, fromUs: number, toUs: number): Promise<string[]> {
  return (
    await rawSql(db).values<[string]>(
      'SELECT id FROM servers WHERE tenant_id = $1 AND created_at < $2 AND (decommissioned_at IS NULL OR decommissioned_at > $3) ORDER BY id',
      tenantId,
      toUs,
      fromUs,
    )
  ).map((r) => r[0])
}

/** When the first server ever was enrolled; null before any. */
export async function firstServerEnrolledAt(db: DbOrTx): Promise<number | null> {
  const r = await db
    .select({ t: sql<number | null>`min(${servers.createdAt})` })
    .from(servers)
    .get()
  return r?.t ?? null
}

/** Every server of the tenant (decommissioned ones too) by id → name. */
const nameById = preparedQuery((db) =>
  db
    .select({ name: servers.name })
    .from(servers)
    .where(eq(servers.id, sql.placeholder('id')))
    .prepare(),
)

/**
 * A server's name by a trusted id (decommissioned ones too), one compiled statement: what a
 * notification's or an incident's title names, for every transition of a mass close.
 */
export async function serverNameById(db: DbOrTx, id: string): Promise<string | undefined> {
  return (await nameById(db).get({ id }))?.name
}

/** Servers' names by trusted ids (decommissioned ones too), read at once: the titles of a batch of transitions. */
export async function serverNamesByIds(db: DbOrTx, ids: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>()
  for (let i = 0; i < ids.length; i += 500)
    for (const r of await db
      .select({ id: servers.id, name: servers.name })
      .from(servers)
      .where(inArray(servers.id, ids.slice(i, i + 500)))
      .all())
      out.set(r.id, r.name)
  return out
}

export async function serverNames(db: DbOrTx, tenantId: string): Promise<Map<string, string>> {
  return new Map((await db.select({ id: servers.id, name: servers.name }).from(servers).where(eq(servers.tenantId, tenantId)).all()).map((s) => [s.id, s.name]))
}

/** Managed (not decommissioned) servers in a group. */
export async function countServersInGroup(db: DbOrTx, groupId: string): Promise<number> {
  const r = await db
    .select({ n: sql<number>`count(*)` })
    .from(servers)
    .where(and(eq(servers.groupId, groupId), isNull(servers.decommissionedAt)))
    .get()
  return Number(r?.n ?? 0)
}

/** Every server of a group (decommissioned ones too) lets go of it, before the group is deleted. */
export async function clearGroupOfServers(tx: DbOrTx, groupId: string): Promise<void> {
  await tx.update(servers).set({ groupId: null }).where(eq(servers.groupId, groupId)).run()
}

export async function insertServer(tx: DbOrTx, row: typeof servers.$inferInsert): Promise<void> {
  await tx.insert(servers).values(row).run()
}

export async function updateServer(tx: DbOrTx, id: string, patch: Partial<ServerRow>): Promise<void> {
  await tx.update(servers).set(patch).where(eq(servers.id, id)).run()
}

/** What a hello reports of its host: fleet's HostFacts (enrolment.service.ts), the columns setHostFacts writes. */
export type HostFactsRow = Pick<
  ServerRow,
  'hostname' | 'agentVersion' | 'fingerprint' | 'publicIp' | 'diskGb' | 'portRange' | 'gpus' | 'gpuCount' | 'gpuModel' | 'hostDetails'
>

/**
 * A session's hello's host facts. Runs for every hello of a group-committed presence flush (a mass
 * reconnect: thousands): a statement SQLite keeps compiled, not the query builder; the JSON columns
 * written as the builder writes them (JSON text).
 */
export async function setHostFacts(db: DbOrTx, id: string, f: HostFactsRow): Promise<void> {
  await rawSql(db).run(
    `UPDATE servers SET hostname = $1, agent_version = $2, fingerprint = $3, public_ip = $4, disk_gb = $5, port_range = $6,
       gpus = $7, gpu_count = $8, gpu_model = $9, host_details = $10 WHERE id = $11`,
    f.hostname,
    f.agentVersion,
    f.fingerprint,
    f.publicIp,
    f.diskGb,
    f.portRange,
    JSON.stringify(f.gpus),
    f.gpuCount,
    f.gpuModel,
    f.hostDetails === null ? null : JSON.stringify(f.hostDetails),
    id,
  )
}

/**
 * A server's presence and/or last heartbeat (null leaves that column as it is). Runs for every
 * server of a group-committed flush: a statement SQLite keeps compiled, not the query builder.
 */
export async function setPresence(db: DbOrTx, id: string, presence: Presence | null, lastSeenAt: number | null): Promise<void> {
  await rawSql(db).run(
    'UPDATE servers SET presence = coalesce($1, presence), last_seen_at = coalesce($2, last_seen_at) WHERE id = $3',
    presence,
    lastSeenAt,
    id,
  )
}

export type PresenceRow = { id: string; tenantId: string; presence: Presence; decommissioned: boolean }

/** Presence of the servers among `ids`, decommissioned ones too (flagged). */
export async function presenceOf(tx: DbOrTx, ids: string[]): Promise<PresenceRow[]> {
  const out: PresenceRow[] = []
  for (let i = 0; i < ids.length; i += SLICE)
    out.push(
      ...(
        await tx
          .select({ id: servers.id, tenantId: servers.tenantId, presence: servers.presence, decommissionedAt: servers.decommissionedAt })
          .from(servers)
          .where(inArray(servers.id, ids.slice(i, i + SLICE)))
          .all()
      ).map((r) => ({ id: r.id, tenantId: r.tenantId, presence: r.presence, decommissioned: r.decommissionedAt !== null })),
    )
  return out
}

/** Managed servers whose last heartbeat is older than their presence allows (online → suspect, suspect → offline). */
export function silentServers(tx: DbOrTx, suspectBefore: number, offlineBefore: number, limit: number) {
  return tx
    .select({ id: servers.id, tenantId: servers.tenantId, presence: servers.presence, lastSeenAt: servers.lastSeenAt })
    .from(servers)
    .where(
      and(
        isNull(servers.decommissionedAt),
        isNotNull(servers.lastSeenAt),
        or(
          and(eq(servers.presence, 'online'), lt(servers.lastSeenAt, suspectBefore)),
          and(eq(servers.presence, 'suspect'), lt(servers.lastSeenAt, offlineBefore)),
        ),
      ),
    )
    .limit(limit)
    .all()
}

export async function insertServerEvent(tx: DbOrTx, row: ServerEventRow): Promise<void> {
  await tx.insert(serverEvents).values(row).run()
}

/**
 * Rows per multi-row INSERT of server events (8 values each: well under both databases' parameter
 * limits): a batch goes in the largest of these that fit, so the statements have a handful of
 * shapes, each compiled once (bun:sqlite's cache, Bun.SQL's per connection), not one per count.
 */
const EVENT_ROWS_PER_INSERT = [256, 64, 16, 4, 1]

/** Several server events, a few multi-row statements instead of one each (a presence flush's transitions). */
export async function insertServerEvents(tx: DbOrTx, rows: ServerEventRow[]): Promise<void> {
  // Written out, not the query builder (its cost per row is several times the database's); `data`
  // as the builder writes a JSON column: JSON text, or NULL.
  for (let i = 0; i < rows.length; ) {
    const size = EVENT_ROWS_PER_INSERT.find((n) => n <= rows.length - i)!
    const params: unknown[] = []
    const tuples: string[] = []
    for (const r of rows.slice(i, i + size)) {
      const n = params.length
      params.push(r.id, r.tenantId, r.serverId, r.kind, r.severity, r.message, r.data === null ? null : JSON.stringify(r.data), r.createdAt)
      tuples.push(`($${n + 1}, $${n + 2}, $${n + 3}, $${n + 4}, $${n + 5}, $${n + 6}, $${n + 7}, $${n + 8})`)
    }
    await rawSql(tx).run(
      `INSERT INTO server_events (id, tenant_id, server_id, kind, severity, message, data, created_at) VALUES ${tuples.join(', ')}`,
      ...params,
    )
    i += size
  }
}

/** A server's events, newest first, before an id and of one kind when given. */
export async function serverEventRows(db: DbOrTx, serverId: string, f: { kind?: string; beforeId?: string }, limit: number): Promise<ServerEventRow[]> {
  const where: SQL[] = [eq(serverEvents.serverId, serverId)]
  if (f.kind) where.push(eq(serverEvents.kind, f.kind))
  if (f.beforeId) where.push(lt(serverEvents.id, f.beforeId))
  return db
    .select()
    .from(serverEvents)
    .where(and(...where))
    .orderBy(desc(serverEvents.id))
    .limit(limit)
    .all()
}

export async function keepOnOf(db: DbOrTx, serverId: string): Promise<Marketplace[]> {
  return (await db.select().from(serverKeepOn).where(eq(serverKeepOn.serverId, serverId)).orderBy(asc(serverKeepOn.marketplace)).all()).map(
    (r) => r.marketplace,
  )
}

export async function setKeepOnRow(tx: DbOrTx, row: typeof serverKeepOn.$inferInsert): Promise<void> {
  await tx.insert(serverKeepOn).values(row).onConflictDoNothing().run()
}

export async function clearKeepOnRow(tx: DbOrTx, serverId: string, marketplace: Marketplace): Promise<void> {
  await tx
    .delete(serverKeepOn)
    .where(and(eq(serverKeepOn.serverId, serverId), eq(serverKeepOn.marketplace, marketplace)))
    .run()
}

/** One more Xid `xid` on the server's GPU `gpuIndex` (-1: not known), at `at`. */
export async function addXidCount(tx: DbOrTx, row: { serverId: string; gpuIndex: number; xid: number; at: number }): Promise<void> {
  await tx
    .insert(serverXidCounts)
    .values({ serverId: row.serverId, gpuIndex: row.gpuIndex, xid: row.xid, count: 1, lastAt: row.at })
    .onConflictDoUpdate({
      target: [serverXidCounts.serverId, serverXidCounts.gpuIndex, serverXidCounts.xid],
      set: { count: sql`${serverXidCounts.count} + 1`, lastAt: row.at },
    })
    .run()
}

/** The Xid counts of the tenant's managed servers, ordered by server, GPU and Xid. */
export function xidCountsOfTenant(db: DbOrTx, tenantId: string) {
  return db
    .select({
      serverId: serverXidCounts.serverId,
      gpuIndex: serverXidCounts.gpuIndex,
      xid: serverXidCounts.xid,
      count: serverXidCounts.count,
      lastAt: serverXidCounts.lastAt,
    })
    .from(serverXidCounts)
    .innerJoin(servers, eq(servers.id, serverXidCounts.serverId))
    .where(and(eq(servers.tenantId, tenantId), isNull(servers.decommissionedAt)))
    .orderBy(asc(serverXidCounts.serverId), asc(serverXidCounts.gpuIndex), asc(serverXidCounts.xid))
    .all()
}

/** The Xid counts of one server (GET /servers/{id}). */
export function xidCountsOfServer(db: DbOrTx, serverId: string) {
  return db
    .select({ gpuIndex: serverXidCounts.gpuIndex, xid: serverXidCounts.xid, count: serverXidCounts.count, lastAt: serverXidCounts.lastAt })
    .from(serverXidCounts)
    .where(eq(serverXidCounts.serverId, serverId))
    .orderBy(asc(serverXidCounts.gpuIndex), asc(serverXidCounts.xid))
    .all()
}

export async function latestMetricsOf(db: DbOrTx, serverIds: string[]) {
  const out: (typeof serverLatestMetrics.$inferSelect)[] = []
  for (let i = 0; i < serverIds.length; i += SLICE)
    out.push(
      ...(await db
        .select()
        .from(serverLatestMetrics)
        .where(inArray(serverLatestMetrics.serverId, serverIds.slice(i, i + SLICE)))
        .all()),
    )
  return out
}

/** The latest reading of one metric of every managed server, read since `sinceUs`, with the server's tenant and name. */
export function latestOfMetric(db: DbOrTx, metric: string, sinceUs: number) {
  return db
    .select({
      serverId: serverLatestMetrics.serverId,
      tenantId: servers.tenantId,
      name: servers.name,
      gpuIndex: serverLatestMetrics.gpuIndex,
      value: serverLatestMetrics.value,
      t: serverLatestMetrics.t,
    })
    .from(serverLatestMetrics)
    .innerJoin(servers, eq(servers.id, serverLatestMetrics.serverId))
    .where(and(eq(serverLatestMetrics.metric, metric), gte(serverLatestMetrics.t, sinceUs), isNull(servers.decommissionedAt)))
    .all()
}

/**
 * The latest value of each series a flush wrote (one row per series). On SQLite a statement
 * prepared once, run per row (as the telemetry repository's sampleInsert explains); on PostgreSQL,
 * where each statement is a round trip, all rows in one statement as a JSON document.
 */
export async function upsertLatestMetrics(db: DbOrTx, rows: (typeof serverLatestMetrics.$inferSelect)[]): Promise<void> {
  if (rows.length === 0) return
  // An older sample never replaces a newer one.
  const onConflict = `ON CONFLICT (server_id, gpu_index, metric) DO UPDATE SET value = excluded.value, t = excluded.t
       WHERE excluded.t >= server_latest_metrics.t`
  if (isPostgres(db)) {
    await rawSql(db).run(
      `INSERT INTO server_latest_metrics (server_id, gpu_index, metric, value, t)
       SELECT x.s, x.g, x.m, x.v, x.t FROM jsonb_to_recordset(CAST(CAST($1 AS text) AS jsonb)) AS x(s text, g bigint, m text, v double precision, t bigint)
       ${onConflict}`,
      JSON.stringify(rows.map((r) => ({ s: r.serverId, g: r.gpuIndex, m: r.metric, v: r.value, t: r.t }))),
    )
    return
  }
  const raw = rawSql(db)
  const upsert = `INSERT INTO server_latest_metrics (server_id, gpu_index, metric, value, t) VALUES ($1, $2, $3, $4, $5) ${onConflict}`
  for (const row of rows) await raw.run(upsert, row.serverId, row.gpuIndex, row.metric, row.value, row.t)
}

/**
 * Marks the tenant's fleet snapshot out of date; the next read recomputes it. Only a clean row is
 * written: SQLite rewrites the whole row (the snapshot body, megabytes for a large fleet) on any
 * UPDATE, so setting the flag again on every presence transition would cost that much each time.
 */
export async function markSnapshotDirty(tx: DbOrTx, tenantId: string): Promise<void> {
  // A statement SQLite keeps compiled: every alert incident of a server that opens or resolves
  // marks it too (a mass reconnect resolves thousands in one flush). `dirty` is 0/1 on both databases.
  await rawSql(tx).run('UPDATE fleet_snapshots SET dirty = 1 WHERE tenant_id = $1 AND dirty = 0', tenantId)
}

const snapshotHead = preparedQuery((db) =>
  db
    .select({ generatedAt: fleetSnapshots.generatedAt, dataAsOf: fleetSnapshots.dataAsOf, dirty: fleetSnapshots.dirty })
    .from(fleetSnapshots)
    .where(eq(fleetSnapshots.tenantId, sql.placeholder('tenant')))
    .prepare(),
)
const snapshotBody = preparedQuery((db) =>
  db
    .select({ generatedAt: fleetSnapshots.generatedAt, body: fleetSnapshots.body })
    .from(fleetSnapshots)
    .where(eq(fleetSnapshots.tenantId, sql.placeholder('tenant')))
    .prepare(),
)

/** The stored snapshot's times and state, without its body (a read of a few bytes). */
export function findSnapshotHead(db: DbOrTx, tenantId: string) {
  return snapshotHead(db).get({ tenant: tenantId })
}

export type SnapshotHead = NonNullable<Awaited<ReturnType<typeof findSnapshotHead>>>

/** findSnapshotHead's read, sent with the request's count on PostgreSQL (src/platform/rate-limit.ts `Rider`). */
export const SNAPSHOT_HEAD_RIDER: Rider = {
  name: 'fleet snapshot head',
  select: 'SELECT generated_at, data_as_of, dirty FROM fleet_snapshots WHERE tenant_id = {tenant}',
}

/** The head SNAPSHOT_HEAD_RIDER read (null: no snapshot), as findSnapshotHead gives it. */
export function snapshotHeadOf(row: Record<string, unknown> | null): SnapshotHead | null {
  return row && { generatedAt: Number(row.generated_at), dataAsOf: Number(row.data_as_of), dirty: Number(row.dirty) === 1 }
}

/** The stored snapshot's body (the rows snapshot.service wrote, typed by the caller) and its time. */
export async function findSnapshotBody<Row>(db: DbOrTx, tenantId: string) {
  const row = await snapshotBody(db).get({ tenant: tenantId })
  return row && { generatedAt: row.generatedAt, body: row.body as Row[] }
}

export async function saveSnapshot(tx: DbOrTx, row: { tenantId: string; generatedAt: number; dataAsOf: number; body: unknown[] }): Promise<void> {
  const fields = { generatedAt: row.generatedAt, dataAsOf: row.dataAsOf, body: row.body, dirty: false }
  await tx
    .insert(fleetSnapshots)
    .values({ tenantId: row.tenantId, ...fields })
    .onConflictDoUpdate({ target: fleetSnapshots.tenantId, set: fields })
    .run()
}

/** Tenants with a managed server or a stored snapshot: what the fleet.snapshot job refreshes. */
export async function snapshotTenants(db: DbOrTx): Promise<string[]> {
  const withServers = await db.selectDistinct({ tenantId: servers.tenantId }).from(servers).where(isNull(servers.decommissionedAt)).all()
  const withSnapshots = await db.select({ tenantId: fleetSnapshots.tenantId }).from(fleetSnapshots).all()
  return [...new Set([...withServers, ...withSnapshots].map((r) => r.tenantId))]
}

/**
 * What the Prometheus exposition shows of the tenant's managed servers, in one read on the
 * servers_tenant index (docs/prometheus.md): presence, the last heartbeat, the GPU inventory and
 * the rental facts, by name.
 */
export function exposedServers(db: DbOrTx, tenantId: string) {
  return db
    .select({
      id: servers.id,
      name: servers.name,
      presence: servers.presence,
      lastSeenAt: servers.lastSeenAt,
      gpus: servers.gpus,
      gpuModel: servers.gpuModel,
      rentalActive: servers.rentalActive,
      rentalSource: servers.rentalSource,
      marketRentals: servers.marketRentals,
    })
    .from(servers)
    .where(and(eq(servers.tenantId, tenantId), isNull(servers.decommissionedAt)))
    .orderBy(asc(servers.name), asc(servers.id))
    .all()
}

/** Servers per read of latestGpuMetricsOf: 16,000 rows of 8-GPU servers, a few milliseconds. */
export const LATEST_SLICE = 250

/**
 * The latest GPU-scope value of every metric of the given servers (at most LATEST_SLICE of them),
 * in one read by the primary key's prefix: on SQLite a WITHOUT ROWID table, so each server's rows
 * are one walk of one b-tree, in key order (gpu, metric). Rows come as [server id, GPU index,
 * metric, value] (a compiled statement, no objects). The Prometheus scrape reads a tenant's fleet
 * slice by slice, giving the event loop back between them (a 2,000-server × 8-GPU fleet is 128,000
 * rows: one read of them all held it for tens of milliseconds).
 */
export async function latestGpuMetricsOf(db: DbOrTx, serverIds: readonly string[]): Promise<[string, number, string, number | null][]> {
  if (serverIds.length === 0) return []
  if (serverIds.length > LATEST_SLICE) throw new Error(`latestGpuMetricsOf reads at most ${LATEST_SLICE} servers at a time`)
  const list = serverIds.map((_, i) => `$${i + 1}`).join(', ')
  return await rawSql(db).values<[string, number, string, number | null]>(
    `SELECT server_id, gpu_index, metric, value FROM server_latest_metrics WHERE server_id IN (${list}) AND gpu_index >= 0`,
    ...serverIds,
  )
}
