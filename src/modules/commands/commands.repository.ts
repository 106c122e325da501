import { and, asc, desc, eq, gt, inArray, lt, notInArray, sql, type SQL } from 'drizzle-orm'
import { commandLogs, commands, commandTimeline } from '../../../db/schema/commands'
import { rawSql, type DbOrTx, type Tx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { formatNullableTimestamp, formatTimestamp } from '../../platform/time'

export type CommandRow = typeof commands.$inferSelect
export type TimelineRow = typeof commandTimeline.$inferSelect
const UNDELIVERED = ['queued', 'routing', 'sent'] as const
/** Execution states a command never leaves. */
export const TERMINAL = ['succeeded', 'failed', 'cancelled', 'expired'] as const

export async function insertCommand(tx: DbOrTx, row: CommandRow): Promise<void> {
  await tx.insert(commands).values(row).run()
}

export async function findCommand(db: DbOrTx, tenantId: string, id: string): Promise<CommandRow | undefined> {
  return db
    .select()
    .from(commands)
    .where(and(eq(commands.tenantId, tenantId), eq(commands.id, id)))
    .get()
}

export async function findServerCommand(db: DbOrTx, serverId: string, id: string): Promise<CommandRow | undefined> {
  return db
    .select()
    .from(commands)
    .where(and(eq(commands.serverId, serverId), eq(commands.id, id)))
    .get()
}

/**
 * Whether the server has a command not yet accepted by its agent and still alive (undeliveredFor
 * would answer one): one lookup in commands_server_delivery through a statement SQLite keeps
 * compiled. Every session's hello and close ask it, and nearly always there is none.
 */
export async function hasUndelivered(db: DbOrTx, serverId: string): Promise<boolean> {
  const rows = await rawSql(db).values(
    `SELECT 1 AS one FROM commands WHERE server_id = $1 AND delivery_status IN (${UNDELIVERED.map((d) => `'${d}'`).join(', ')}) AND execution_status = 'not_started' LIMIT 1`,
    serverId,
  )
  return rows.length > 0
}

/** Commands of a server not yet accepted by its agent and still alive, oldest first. */
export async function undeliveredFor(db: DbOrTx, serverId: string): Promise<CommandRow[]> {
  return db
    .select()
    .from(commands)
    .where(and(eq(commands.serverId, serverId), inArray(commands.deliveryStatus, [...UNDELIVERED]), eq(commands.executionStatus, 'not_started')))
    .orderBy(asc(commands.id))
    .all()
}

export async function countUndelivered(db: DbOrTx, serverId: string): Promise<number> {
  const r = await db
    .select({ n: sql<number>`count(*)` })
    .from(commands)
    .where(and(eq(commands.serverId, serverId), inArray(commands.deliveryStatus, [...UNDELIVERED]), eq(commands.executionStatus, 'not_started')))
    .get()
  return Number(r?.n ?? 0)
}

/**
 * Writes a change to a command (its version moves on) and the timeline entries that explain it,
 * in the caller's transaction. Returns the command as it now is.
 */
export async function changeCommand(
  tx: DbOrTx,
  deps: Pick<Deps, 'newId' | 'clock' | 'events'>,
  cmd: CommandRow,
  patch: Partial<CommandRow>,
  note?: string,
): Promise<CommandRow> {
  const next = { ...cmd, ...patch, version: cmd.version + 1 }
  await tx
    .update(commands)
    .set({ ...patch, version: next.version })
    .where(eq(commands.id, cmd.id))
    .run()
  const at = deps.clock.nowUs()
  if (patch.deliveryStatus && patch.deliveryStatus !== cmd.deliveryStatus) {
    const why = note ?? patch.queueReason ?? null
    await appendTimeline(tx, deps, { commandId: cmd.id, at, axis: 'delivery', fromState: cmd.deliveryStatus, toState: patch.deliveryStatus, note: why })
    await announceChange(tx, deps, next, 'delivery', cmd.deliveryStatus, patch.deliveryStatus, why)
  } else if (patch.queueReason !== undefined && patch.queueReason !== cmd.queueReason && patch.queueReason !== null)
    await appendTimeline(tx, deps, {
      commandId: cmd.id,
      at,
      axis: 'delivery',
      fromState: cmd.deliveryStatus,
      toState: cmd.deliveryStatus,
      note: patch.queueReason,
    })
  if (patch.executionStatus && patch.executionStatus !== cmd.executionStatus) {
    await appendTimeline(tx, deps, {
      commandId: cmd.id,
      at,
      axis: 'execution',
      fromState: cmd.executionStatus,
      toState: patch.executionStatus,
      note: note ?? null,
    })
    await announceChange(tx, deps, next, 'execution', cmd.executionStatus, patch.executionStatus, note ?? null)
  }
  return next
}

/**
 * Says that a command changed state (`command.changed`, in the caller's transaction, so what reacts
 * commits with the change): its creation, a delivery or execution step, a cancel asked of the agent.
 */
export async function announceChange(
  tx: DbOrTx,
  deps: Pick<Deps, 'events'>,
  c: CommandRow,
  axis: 'command' | 'delivery' | 'execution',
  from: string | null,
  to: string,
  note: string | null,
): Promise<void> {
  await deps.events.emit('command.changed', {
    tx: tx as Tx,
    command: {
      id: c.id,
      tenantId: c.tenantId,
      serverId: c.serverId,
      type: c.type,
      deliveryStatus: c.deliveryStatus,
      executionStatus: c.executionStatus,
      queueReason: c.queueReason,
    },
    axis,
    from,
    to,
    note,
  })
}

export async function appendTimeline(tx: DbOrTx, deps: Pick<Deps, 'newId'>, entry: Omit<TimelineRow, 'id'>): Promise<void> {
  await tx
    .insert(commandTimeline)
    .values({ id: deps.newId(), ...entry })
    .run()
}

export async function timelineOf(db: DbOrTx, commandId: string, afterId: string | null, limit: number): Promise<TimelineRow[]> {
  const where: SQL[] = [eq(commandTimeline.commandId, commandId)]
  if (afterId) where.push(gt(commandTimeline.id, afterId))
  return db
    .select()
    .from(commandTimeline)
    .where(and(...where))
    .orderBy(asc(commandTimeline.id))
    .limit(limit)
    .all()
}

export type CommandFilter = {
  serverId?: string
  deliveryStatus?: string
  executionStatus?: string
  type?: string
  beforeId?: string | null
  serverIds?: readonly string[] | null
}

export async function listCommandRows(db: DbOrTx, tenantId: string, f: CommandFilter, limit: number): Promise<CommandRow[]> {
  const where: SQL[] = [eq(commands.tenantId, tenantId)]
  if (f.serverId) where.push(eq(commands.serverId, f.serverId))
  if (f.serverIds) where.push(inArray(commands.serverId, [...f.serverIds]))
  if (f.deliveryStatus) where.push(eq(commands.deliveryStatus, f.deliveryStatus as CommandRow['deliveryStatus']))
  if (f.executionStatus) where.push(eq(commands.executionStatus, f.executionStatus as CommandRow['executionStatus']))
  if (f.type) where.push(eq(commands.type, f.type))
  if (f.beforeId) where.push(lt(commands.id, f.beforeId))
  return db
    .select()
    .from(commands)
    .where(and(...where))
    .orderBy(desc(commands.id))
    .limit(limit)
    .all()
}

export function findLog(db: DbOrTx, commandId: string) {
  return db.select().from(commandLogs).where(eq(commandLogs.commandId, commandId)).get()
}

export async function insertLog(tx: DbOrTx, row: typeof commandLogs.$inferInsert): Promise<void> {
  await tx.insert(commandLogs).values(row).run()
}

export async function updateLog(
  tx: DbOrTx,
  id: string,
  patch: Pick<typeof commandLogs.$inferSelect, 'text' | 'bytes' | 'truncated' | 'updatedAt'>,
): Promise<void> {
  await tx.update(commandLogs).set(patch).where(eq(commandLogs.id, id)).run()
}

/** Commands still undelivered and not started whose accept_by passed. */
export async function pastAcceptBy(db: DbOrTx, now: number): Promise<CommandRow[]> {
  return db
    .select()
    .from(commands)
    .where(and(inArray(commands.deliveryStatus, [...UNDELIVERED]), lt(commands.acceptBy, now), eq(commands.executionStatus, 'not_started')))
    .all()
}

/** Commands not ended whose deadline passed. */
export async function pastDeadline(db: DbOrTx, now: number): Promise<CommandRow[]> {
  return db
    .select()
    .from(commands)
    .where(and(notInArray(commands.executionStatus, [...TERMINAL]), lt(commands.deadline, now)))
    .all()
}

export function commandView(c: CommandRow, logId: string | null = null) {
  const error = c.error && (logId ? { ...c.error, log_ref: logId } : c.error)
  return {
    command_id: c.id,
    tenant_id: c.tenantId,
    server_id: c.serverId,
    type: c.type,
    schema_version: c.schemaVersion,
    params: c.params,
    requires: c.requires,
    delivery_status: c.deliveryStatus,
    execution_status: c.executionStatus,
    queue_reason: c.queueReason,
    progress: c.progress,
    result: c.result,
    error,
    issued_by: c.issuedById ? { type: c.issuedByType, id: c.issuedById } : { type: c.issuedByType },
    idempotency_key: c.idempotencyKey,
    created_at: formatTimestamp(c.createdAt),
    accept_by: formatNullableTimestamp(c.acceptBy),
    deadline: formatNullableTimestamp(c.deadline),
    sent_at: formatNullableTimestamp(c.sentAt),
    accepted_at: formatNullableTimestamp(c.acceptedAt),
    started_at: formatNullableTimestamp(c.startedAt),
    finished_at: formatNullableTimestamp(c.finishedAt),
    cancelled_at: formatNullableTimestamp(c.cancelledAt),
    version: c.version,
  }
}
