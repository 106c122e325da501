import { and, asc, count, desc, eq, gt, inArray } from 'drizzle-orm'
import type { DbOrTx } from '../../../db/client'
import { watchdogRules, watchdogSignals, watchdogStates, watchdogSteps } from '../../../db/schema/watchdog'

export type RuleRow = typeof watchdogRules.$inferSelect
export type StateRow = typeof watchdogStates.$inferSelect
export type StepRow = typeof watchdogSteps.$inferSelect
export type SignalRow = typeof watchdogSignals.$inferSelect

// Rules

export function findRule(db: DbOrTx, tenantId: string, id: string): RuleRow | undefined {
  return db
    .select()
    .from(watchdogRules)
    .where(and(eq(watchdogRules.tenantId, tenantId), eq(watchdogRules.id, id)))
    .get()
}

/** The tenant's rules, oldest first (the default rules lead). */
export function rulesOf(db: DbOrTx, tenantId: string): RuleRow[] {
  return db.select().from(watchdogRules).where(eq(watchdogRules.tenantId, tenantId)).orderBy(asc(watchdogRules.createdAt), asc(watchdogRules.id)).all()
}

export function countRules(db: DbOrTx, tenantId: string): number {
  return Number(db.select({ n: count() }).from(watchdogRules).where(eq(watchdogRules.tenantId, tenantId)).get()?.n ?? 0)
}

/** The presets the tenant already has a rule for. */
export function presetsOf(db: DbOrTx, tenantId: string): string[] {
  return rulesOf(db, tenantId)
    .map((r) => r.preset)
    .filter((p): p is string => p !== null)
}

/** Every enabled rule of every tenant (the evaluation job). */
export function enabledRules(db: DbOrTx): RuleRow[] {
  return db.select().from(watchdogRules).where(eq(watchdogRules.enabled, true)).orderBy(asc(watchdogRules.tenantId), asc(watchdogRules.createdAt)).all()
}

/** Whether the tenant has an enabled rule (the signals are kept only then). */
export function hasEnabledRule(db: DbOrTx, tenantId: string): boolean {
  return (
    db
      .select({ id: watchdogRules.id })
      .from(watchdogRules)
      .where(and(eq(watchdogRules.tenantId, tenantId), eq(watchdogRules.enabled, true)))
      .limit(1)
      .get() !== undefined
  )
}

export function insertRule(tx: DbOrTx, row: RuleRow): void {
  tx.insert(watchdogRules).values(row).onConflictDoNothing().run()
}

export function updateRule(tx: DbOrTx, id: string, patch: Partial<RuleRow>): void {
  tx.update(watchdogRules).set(patch).where(eq(watchdogRules.id, id)).run()
}

export function deleteRule(tx: DbOrTx, id: string): void {
  tx.delete(watchdogSteps).where(eq(watchdogSteps.ruleId, id)).run()
  tx.delete(watchdogStates).where(eq(watchdogStates.ruleId, id)).run()
  tx.delete(watchdogRules).where(eq(watchdogRules.id, id)).run()
}

// Ladder states

export function statesOfRule(db: DbOrTx, ruleId: string): StateRow[] {
  return db.select().from(watchdogStates).where(eq(watchdogStates.ruleId, ruleId)).orderBy(asc(watchdogStates.serverId)).all()
}

export function findState(db: DbOrTx, ruleId: string, serverId: string): StateRow | undefined {
  return db
    .select()
    .from(watchdogStates)
    .where(and(eq(watchdogStates.ruleId, ruleId), eq(watchdogStates.serverId, serverId)))
    .get()
}

export function saveState(tx: DbOrTx, row: StateRow): void {
  const { ruleId: _r, serverId: _s, ...rest } = row
  tx.insert(watchdogStates)
    .values(row)
    .onConflictDoUpdate({ target: [watchdogStates.ruleId, watchdogStates.serverId], set: rest })
    .run()
}

/** Forgets where the rule's ladders stand (turned off, or its condition or ladder changed). */
export function clearStates(tx: DbOrTx, ruleId: string): void {
  tx.delete(watchdogStates).where(eq(watchdogStates.ruleId, ruleId)).run()
}

// Steps

export function insertStep(tx: DbOrTx, row: StepRow): void {
  tx.insert(watchdogSteps).values(row).run()
}

/** The rule's latest steps, newest first. */
export function recentSteps(db: DbOrTx, ruleId: string, limit: number): StepRow[] {
  return db.select().from(watchdogSteps).where(eq(watchdogSteps.ruleId, ruleId)).orderBy(desc(watchdogSteps.at), desc(watchdogSteps.id)).limit(limit).all()
}

/** How many times the rule took `action` on the server after `sinceUs` (what its limits count). */
export function stepsTakenSince(db: DbOrTx, ruleId: string, serverId: string, action: StepRow['action'], sinceUs: number): number {
  const r = db
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

export function signalsOf(db: DbOrTx, serverId: string): SignalRow[] {
  return db.select().from(watchdogSignals).where(eq(watchdogSignals.serverId, serverId)).all()
}

export function putSignal(tx: DbOrTx, row: SignalRow): void {
  tx.insert(watchdogSignals)
    .values(row)
    .onConflictDoUpdate({ target: [watchdogSignals.serverId, watchdogSignals.kind, watchdogSignals.key], set: { value: row.value, at: row.at } })
    .run()
}

export function dropSignals(tx: DbOrTx, serverId: string, kind: string, keys?: string[]): void {
  const where = [eq(watchdogSignals.serverId, serverId), eq(watchdogSignals.kind, kind)]
  if (keys) where.push(inArray(watchdogSignals.key, keys))
  tx.delete(watchdogSignals)
    .where(and(...where))
    .run()
}
