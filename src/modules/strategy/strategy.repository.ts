import { and, asc, desc, eq, inArray, lt, notInArray, sql } from 'drizzle-orm'
import { strategyPolicies, strategySuggestions } from '../../../db/schema/strategy'
import { changesOf, type DbOrTx } from '../../../db/client'

export type PolicyRow = typeof strategyPolicies.$inferSelect
export type SuggestionRow = typeof strategySuggestions.$inferSelect
type SuggestionState = SuggestionRow['state']

export async function findPolicy(db: DbOrTx, tenantId: string, id: string): Promise<PolicyRow | undefined> {
  return await db
    .select()
    .from(strategyPolicies)
    .where(and(eq(strategyPolicies.tenantId, tenantId), eq(strategyPolicies.id, id)))
    .get()
}

/** The tenant's policies, oldest first (the order in which overlapping policies of one specificity win). */
export async function policiesOf(db: DbOrTx, tenantId: string): Promise<PolicyRow[]> {
  return await db
    .select()
    .from(strategyPolicies)
    .where(eq(strategyPolicies.tenantId, tenantId))
    .orderBy(asc(strategyPolicies.createdAt), asc(strategyPolicies.id))
    .all()
}

/** The tenants that have an enabled policy (strategy.suggest walks them). */
export async function tenantsWithPolicies(db: DbOrTx): Promise<string[]> {
  const rows = await db
    .selectDistinct({ tenantId: strategyPolicies.tenantId })
    .from(strategyPolicies)
    .where(eq(strategyPolicies.enabled, true))
    .orderBy(asc(strategyPolicies.tenantId))
    .all()
  return rows.map((r) => r.tenantId)
}

export async function countPolicies(db: DbOrTx, tenantId: string): Promise<number> {
  return Number((await db.select({ n: sql<number>`count(*)` }).from(strategyPolicies).where(eq(strategyPolicies.tenantId, tenantId)).get())?.n ?? 0)
}

export async function insertPolicy(tx: DbOrTx, row: PolicyRow): Promise<void> {
  await tx.insert(strategyPolicies).values(row).run()
}

export async function updatePolicyRow(tx: DbOrTx, id: string, patch: Partial<PolicyRow>): Promise<void> {
  await tx.update(strategyPolicies).set(patch).where(eq(strategyPolicies.id, id)).run()
}

export async function deletePolicyRow(tx: DbOrTx, id: string): Promise<void> {
  await tx.delete(strategyPolicies).where(eq(strategyPolicies.id, id)).run()
}

export async function findSuggestion(db: DbOrTx, tenantId: string, id: string): Promise<SuggestionRow | undefined> {
  return await db
    .select()
    .from(strategySuggestions)
    .where(and(eq(strategySuggestions.tenantId, tenantId), eq(strategySuggestions.id, id)))
    .get()
}

/** The pending suggestions of one offer (at most one is made per policy run; a newer one supersedes the rest). */
export async function pendingOfOffer(db: DbOrTx, tenantId: string, serverId: string, marketplace: SuggestionRow['marketplace']): Promise<SuggestionRow[]> {
  return await db
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
export async function lastLoweringAt(db: DbOrTx, tenantId: string, serverId: string, marketplace: SuggestionRow['marketplace']): Promise<number | null> {
  const r = await db
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

export async function insertSuggestion(tx: DbOrTx, row: SuggestionRow): Promise<void> {
  await tx.insert(strategySuggestions).values(row).run()
}

export async function updateSuggestion(tx: DbOrTx, id: string, patch: Partial<SuggestionRow>): Promise<void> {
  await tx.update(strategySuggestions).set(patch).where(eq(strategySuggestions.id, id)).run()
}

/** Supersedes the pending suggestions among `ids`. */
export async function supersede(tx: DbOrTx, ids: string[]): Promise<void> {
  if (ids.length === 0) return
  await tx
    .update(strategySuggestions)
    .set({ state: 'superseded' })
    .where(and(inArray(strategySuggestions.id, ids), eq(strategySuggestions.state, 'pending')))
    .run()
}

/** Supersedes the pending suggestions a policy made (it was changed, disabled or deleted), except those of the servers in `keep`. */
export async function supersedeOfPolicy(tx: DbOrTx, tenantId: string, policyId: string, keep: string[] = []): Promise<void> {
  const where = [eq(strategySuggestions.tenantId, tenantId), eq(strategySuggestions.policyId, policyId), eq(strategySuggestions.state, 'pending')]
  if (keep.length) where.push(notInArray(strategySuggestions.serverId, keep))
  await tx
    .update(strategySuggestions)
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
export async function suggestionsPage(
  db: DbOrTx,
  tenantId: string,
  filter: SuggestionFilter,
  afterId: string | undefined,
  take: number,
): Promise<SuggestionRow[]> {
  const where = [eq(strategySuggestions.tenantId, tenantId)]
  if (filter.state) where.push(eq(strategySuggestions.state, filter.state))
  if (filter.policyId) where.push(eq(strategySuggestions.policyId, filter.policyId))
  if (filter.serverId) where.push(eq(strategySuggestions.serverId, filter.serverId))
  if (filter.marketplace) where.push(eq(strategySuggestions.marketplace, filter.marketplace))
  if (filter.serverIds) where.push(inArray(strategySuggestions.serverId, [...filter.serverIds]))
  if (afterId) where.push(lt(strategySuggestions.id, afterId))
  return await db
    .select()
    .from(strategySuggestions)
    .where(and(...where))
    .orderBy(desc(strategySuggestions.id))
    .limit(take)
    .all()
}

/** Suggestions left `accepting` by a process that died mid-publication go back to pending. */
export async function releaseStaleClaims(tx: DbOrTx, claimedBefore: number): Promise<number> {
  const r = await tx
    .update(strategySuggestions)
    .set({ state: 'pending', claimedAt: null })
    .where(and(eq(strategySuggestions.state, 'accepting'), lt(strategySuggestions.claimedAt, claimedBefore)))
    .run()
  return changesOf(r)
}
