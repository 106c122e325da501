import { and, asc, count, desc, eq, gt, inArray } from 'drizzle-orm'
import type { DbOrTx } from '../../../db/client'
import { watchdogRules, watchdogSignals, watchdogStates, watchdogSteps } from '../../../db/schema/watchdog'

export type RuleRow = typeof watchdogRules.$inferSelect
export type StateRow = typeof watchdogStates.$inferSelect
export type StepRow = typeof watchdogSteps.$inferSelect
export type SignalRow = typeof watchdogSignals.$inferSelect

// Rules

export async function findRule(db: DbOrTx, tenantId: string, id: string): Promise<RuleRow | undefined> {
  return await db
    .select()
    .from(watchdogRules)
    .where(and(eq(watchdogRules.tenantId, tenantId), eq(watchdogRules.id, id)))
    .get()
}

/** The tenant's rules, oldest first (the default rules lead). */
export async function rulesOf(db: DbOrTx, tenantId: string): Promise<RuleRow[]> {
  return await db.select().from(watchdogRules).where(eq(watchdogRules.tenantId, tenantId)).orderBy(asc(watchdogRules.createdAt), asc(watchdogRules.id)).all()
}

export async function countRules(db: DbOrTx, tenantId: string): Promise<number> {
  return Number((await db.select({ n: count() }).from(watchdogRules).where(eq(watchdogRules.tenantId, tenantId)).get())?.n ?? 0)
}

/** The presets the tenant already has a rule for. */
export async function presetsOf(db: DbOrTx, tenantId: string): Promise<string[]> {
  return (await rulesOf(db, tenantId)).map((r) => r.preset).filter((p): p is string => p !== null)
}

/** Every enabled rule of every tenant (the evaluation job). */
export async function enabledRules(db: DbOrTx): Promise<RuleRow[]> {
  return await db.select().from(watchdogRules).where(eq(watchdogRules.enabled, true)).orderBy(asc(watchdogRules.tenantId), asc(watchdogRules.createdAt)).all()
}

/** Whether the tenant has an enabled rule (the signals are kept only then). */
export async function hasEnabledRule(db: DbOrTx, tenantId: string): Promise<boolean> {
  return (
    (await db
      .select({ id: watchdogRules.id })
      .from(watchdogRules)
      .where(and(eq(watchdogRules.tenantId, tenantId), eq(watchdogRules.enabled, true)))
      .limit(1)
      .get()) !== undefined
  )
}

export async function insertRule(tx: DbOrTx, row: RuleRow): Promise<void> {
  await tx.insert(watchdogRules).values(row).onConflictDoNothing().run()
}

export async function updateRule(tx: DbOrTx, id: string, patch: Partial<RuleRow>): Promise<void> {
  await tx.update(watchdogRules).set(patch).where(eq(watchdogRules.id, id)).run()
}

export async function deleteRule(tx: DbOrTx, id: string): Promise<void> {
  await tx.delete(watchdogSteps).where(eq(watchdogSteps.ruleId, id)).run()
  await tx.delete(watchdogStates).where(eq(watchdogStates.ruleId, id)).run()
  await tx.delete(watchdogRules).where(eq(watchdogRules.id, id)).run()
}

// Ladder states

export async function statesOfRule(db: DbOrTx, ruleId: string): Promise<StateRow[]> {
  return await db.select().from(watchdogStates).where(eq(watchdogStates.ruleId, ruleId)).orderBy(asc(watchdogStates.serverId)).all()
}

export async function findState(db: DbOrTx, ruleId: string, serverId: string): Promise<StateRow | undefined> {
  return await db
    .select()
    .from(watchdogStates)
    .where(and(eq(watchdogStates.ruleId, ruleId), eq(watchdogStates.serverId, serverId)))
    .get()
}

export async function saveState(tx: DbOrTx, row: StateRow): Promise<void> {
  const { ruleId: _r, serverId: _s, ...rest } = row
  await tx
    .insert(watchdogStates)
    .values(row)
    .onConflictDoUpdate({ target: [watchdogStates.ruleId, watchdogStates.serverId], set: rest })
    .run()
}

/** Forgets where the rule's ladders stand (turned off, or its condition or ladder changed). */
export async function clearStates(tx: DbOrTx, ruleId: string): Promise<void> {
  await tx.delete(watchdogStates).where(eq(watchdogStates.ruleId, ruleId)).run()
}

// Steps

export async function insertStep(tx: DbOrTx, row: StepRow): Promise<void> {
  await tx.insert(watchdogSteps).values(row).run()
}

/** The rule's latest steps, newest first. */
export async function recentSteps(db: DbOrTx, ruleId: string, limit: number): Promise<StepRow[]> {
  return await db
    .select()
    .from(watchdogSteps)
    .where(eq(watchdogSteps.ruleId, ruleId))
    .orderBy(desc(watchdogSteps.at), desc(watchdogSteps.id))
    .limit(limit)
    .all()
}

/** How many times the rule took `action` on the server after `sinceUs` (what its limits count). */
export async function stepsTakenSince(db: DbOrTx, ruleId: string, serverId: string, action: StepRow['action'], sinceUs: number): Promise<number> {
  const r = await db
    .select({ n: count() })
    .from(watchdogSteps)
    .where(
      and(
        eq(watchdogSteps.ruleId, ruleId),
        eq(watchdogSteps.serverId, serverId),
        eq(watchdogSteps.action, action),
        eq(watchdogSteps.outcome, 'done'),
        gt(watchdogSteps.at, sinceUs),
      ),
    )
    .get()
  return Number(r?.n ?? 0)
}

// Signals

export async function signalsOf(db: DbOrTx, serverId: string): Promise<SignalRow[]> {
  return await db.select().from(watchdogSignals).where(eq(watchdogSignals.serverId, serverId)).all()
}

export async function putSignal(tx: DbOrTx, row: SignalRow): Promise<void> {
  await tx
    .insert(watchdogSignals)
    .values(row)
    .onConflictDoUpdate({ target: [watchdogSignals.serverId, watchdogSignals.kind, watchdogSignals.key], set: { value: row.value, at: row.at } })
    .run()
}

export async function dropSignals(tx: DbOrTx, serverId: string, kind: string, keys?: string[]): Promise<void> {
  const where = [eq(watchdogSignals.serverId, serverId), eq(watchdogSignals.kind, kind)]
  if (keys) where.push(inArray(watchdogSignals.key, keys))
  await tx
    .delete(watchdogSignals)
    .where(and(...where))
    .run()
}
