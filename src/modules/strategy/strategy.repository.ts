import { and, asc, desc, eq, inArray, lt, notInArray, sql } from 'drizzle-orm'
import { strategyPolicies, strategySuggestions } from '../../../db/schema/strategy'
import { changesOf, type DbOrTx } from '../../../db/client'

export type PolicyRow = typeof strategyPolicies.$inferSelect
export type SuggestionRow = typeof strategySuggestions.$inferSelect
type SuggestionState = SuggestionRow['state']

export function findPolicy(db: DbOrTx, tenantId: string, id: string): PolicyRow | undefined {
  return db
    .select()
    .from(strategyPolicies)
    .where(and(eq(strategyPolicies.tenantId, tenantId), eq(strategyPolicies.id, id)))
    .get()
}

/** The tenant's policies, oldest first (the order in which overlapping policies of one specificity win). */
export function policiesOf(db: DbOrTx, tenantId: string): PolicyRow[] {
  return db
    .select()
    .from(strategyPolicies)
    .where(eq(strategyPolicies.tenantId, tenantId))
    .orderBy(asc(strategyPolicies.createdAt), asc(strategyPolicies.id))
    .all()
}

/** The tenants that have an enabled policy (strategy.suggest walks them). */
export function tenantsWithPolicies(db: DbOrTx): string[] {
  return db
    .selectDistinct({ tenantId: strategyPolicies.tenantId })
    .from(strategyPolicies)
    .where(eq(strategyPolicies.enabled, true))
    .orderBy(asc(strategyPolicies.tenantId))
    .all()
    .map((r) => r.tenantId)
}

export function countPolicies(db: DbOrTx, tenantId: string): number {
  return Number(db.select({ n: sql<number>`count(*)` }).from(strategyPolicies).where(eq(strategyPolicies.tenantId, tenantId)).get()?.n ?? 0)
}

export function insertPolicy(tx: DbOrTx, row: PolicyRow): void {
  tx.insert(strategyPolicies).values(row).run()
}

export function updatePolicyRow(tx: DbOrTx, id: string, patch: Partial<PolicyRow>): void {
  tx.update(strategyPolicies).set(patch).where(eq(strategyPolicies.id, id)).run()
}

export function deletePolicyRow(tx: DbOrTx, id: string): void {
  tx.delete(strategyPolicies).where(eq(strategyPolicies.id, id)).run()
}

export function findSuggestion(db: DbOrTx, tenantId: string, id: string): SuggestionRow | undefined {
  return db
    .select()
    .from(strategySuggestions)
    .where(and(eq(strategySuggestions.tenantId, tenantId), eq(strategySuggestions.id, id)))
    .get()
}

/** The pending suggestions of one offer (at most one is made per policy run; a newer one supersedes the rest). */
export function pendingOfOffer(db: DbOrTx, tenantId: string, serverId: string, marketplace: SuggestionRow['marketplace']): SuggestionRow[] {
  return db
    .select()
    .from(strategySuggestions)
    .where(
      and(
        eq(strategySuggestions.tenantId, tenantId),
        eq(strategySuggestions.serverId, serverId),
        eq(strategySuggestions.marketplace, marketplace),
        eq(strategySuggestions.state, 'pending'),
      ),
    )
    .all()
}

/** When a lowering of the offer was last accepted (marketplace_b's once-per-600-seconds rule). */
export function lastLoweringAt(db: DbOrTx, tenantId: string, serverId: string, marketplace: SuggestionRow['marketplace']): number | null {
  const r = db
    .select({ at: sql<number | null>`max(${strategySuggestions.decidedAt})` })
    .from(strategySuggestions)
    .where(
      and(
        eq(strategySuggestions.tenantId, tenantId),
        eq(strategySuggestions.serverId, serverId),
        eq(strategySuggestions.marketplace, marketplace),
        eq(strategySuggestions.state, 'accepted'),
        lt(strategySuggestions.suggestedMicros, sql`coalesce(${strategySuggestions.currentMicros}, 0)`),
      ),
    )
    .get()
  return r?.at ?? null
}

export function insertSuggestion(tx: DbOrTx, row: SuggestionRow): void {
  tx.insert(strategySuggestions).values(row).run()
}

export function updateSuggestion(tx: DbOrTx, id: string, patch: Partial<SuggestionRow>): void {
  tx.update(strategySuggestions).set(patch).where(eq(strategySuggestions.id, id)).run()
}

/** Supersedes the pending suggestions among `ids`. */
export function supersede(tx: DbOrTx, ids: string[]): void {
  if (ids.length === 0) return
  tx.update(strategySuggestions)
    .set({ state: 'superseded' })
    .where(and(inArray(strategySuggestions.id, ids), eq(strategySuggestions.state, 'pending')))
    .run()
}

/** Supersedes the pending suggestions a policy made (it was changed, disabled or deleted), except those of the servers in `keep`. */
export function supersedeOfPolicy(tx: DbOrTx, tenantId: string, policyId: string, keep: string[] = []): void {
  const where = [eq(strategySuggestions.tenantId, tenantId), eq(strategySuggestions.policyId, policyId), eq(strategySuggestions.state, 'pending')]
  if (keep.length) where.push(notInArray(strategySuggestions.serverId, keep))
  tx.update(strategySuggestions)
    .set({ state: 'superseded' })
    .where(and(...where))
    .run()
}

/** `serverIds`: a token's allowlist (only its servers' suggestions). */
export type SuggestionFilter = {
  state?: SuggestionState
  policyId?: string
  serverId?: string
  marketplace?: SuggestionRow['marketplace']
  serverIds?: readonly string[]
}

/** A page of the tenant's suggestions, newest first, after the cursor's id. */
export function suggestionsPage(db: DbOrTx, tenantId: string, filter: SuggestionFilter, afterId: string | undefined, take: number): SuggestionRow[] {
  const where = [eq(strategySuggestions.tenantId, tenantId)]
  if (filter.state) where.push(eq(strategySuggestions.state, filter.state))
  if (filter.policyId) where.push(eq(strategySuggestions.policyId, filter.policyId))
  if (filter.serverId) where.push(eq(strategySuggestions.serverId, filter.serverId))
  if (filter.marketplace) where.push(eq(strategySuggestions.marketplace, filter.marketplace))
  if (filter.serverIds) where.push(inArray(strategySuggestions.serverId, [...filter.serverIds]))
  if (afterId) where.push(lt(strategySuggestions.id, afterId))
  return db
    .select()
    .from(strategySuggestions)
    .where(and(...where))
    .orderBy(desc(strategySuggestions.id))
    .limit(take)
    .all()
}

/** Suggestions left `accepting` by a process that died mid-publication go back to pending. */
export function releaseStaleClaims(tx: DbOrTx, claimedBefore: number): number {
  return changesOf(
    tx
      .update(strategySuggestions)
      .set({ state: 'pending', claimedAt: null })
      .where(and(eq(strategySuggestions.state, 'accepting'), lt(strategySuggestions.claimedAt, claimedBefore)))
      .run(),
  )
}
