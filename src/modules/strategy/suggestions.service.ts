import type { Static } from '@sinclair/typebox'
import { isDatabaseBusy, withTransaction, type DbOrTx } from '../../../db/client'
import { type Actor, mayAccessServer } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { paginate } from '../../platform/cursor'
import type { TenantWalk } from '../../platform/jobs'
import { formatNullableTimestamp, formatTimestamp } from '../../platform/time'
import { recordAudit, type AuditContext } from '../audit'
import { managedServers } from '../fleet'
import { MARKETPLACES, type PricedOffer, pricedOffers, publishOffer } from '../marketplaces'
import { featuresOfPlan } from '../plans'
import { findTenant } from '../tenants'
import { type Evaluation, evaluatePolicy, offersOf, type Outcome, winningPolicies } from './evaluate'
import { draftPolicy } from './policies.service'
import { StrategyErrors } from './strategy.errors'
import type { DismissBody, PreviewBody } from './strategy.model'
import {
  findSuggestion,
  insertSuggestion,
  lastLoweringAt,
  pendingOfOffer,
  policiesOf,
  releaseStaleClaims,
  type SuggestionFilter,
  type SuggestionRow,
  suggestionsPage,
  supersede,
  supersedeOfPolicy,
  tenantsWithPolicies,
  updatePolicyRow,
  updateSuggestion,
} from './strategy.repository'

/**
 * Suggestions (docs/strategy.md "Suggestions"): the strategy.suggest job stores, per targeted offer,
 * what its policy would set now; a member accepts one (published through the marketplace adapter,
 * logged in the operations log with the suggestion's id as the reason) or dismisses it with a reason.
 */

const MINUTE_US = 60_000_000
/** A run a little early still counts as due (the scheduler's own jitter). */
const CADENCE_SLACK_US = 30_000_000
/** An `accepting` claim older than this belongs to a process that died; the next job run releases it. */
const CLAIM_US = 10 * MINUTE_US
/** marketplace_b lets a price be lowered once per 600 s (reference 2.3). */
const LOWERING_EVERY_US = 600_000_000

/**
 * The strategy.suggest job: every due enabled policy of every entitled tenant looks at its offers
 * once. Each tenant's part runs in the job's per-tenant error boundary (`tenants`), and inside it
 * each policy on its own: a policy that fails is marked run all the same (so it waits its cadence
 * rather than failing at every tick), the tenant's other policies go on, and the tenant is reported
 * failed; the tenants after it get their suggestions.
 */
export async function suggestPrices(deps: Deps, tenants: TenantWalk): Promise<string> {
  const now = deps.clock.nowUs()
  const released = await withTransaction(deps.db, (tx) => releaseStaleClaims(tx, now - CLAIM_US))
  const tally = { looked: 0, made: 0, notEntitled: 0 }
  for (const tenantId of await tenantsWithPolicies(deps.db)) await tenants.run(tenantId, () => suggestForTenant(deps, tenantId, now, tally))
  return `${tally.looked} policies looked at, ${tally.made} suggestions made; ${tally.notEntitled} tenants without strategy skipped; ${released} stale claims released`
}

async function suggestForTenant(deps: Deps, tenantId: string, now: number, tally: { looked: number; made: number; notEntitled: number }): Promise<void> {
  const planCode = (await findTenant(deps.db, tenantId))?.planCode ?? null
  if (!planCode || !(await featuresOfPlan(deps.db, planCode)).includes('strategy')) {
    tally.notEntitled++
    return
  }
  const policies = await policiesOf(deps.db, tenantId)
  const servers = await managedServers(deps.db, tenantId)
  const offers: PricedOffer[] = []
  for (const m of MARKETPLACES) offers.push(...(await pricedOffers(deps, tenantId, m)))
  const winners = winningPolicies(policies, servers, offers)
  const failed: string[] = []
  for (const policy of policies) {
    if (!policy.enabled || (policy.lastRunAt !== null && now - policy.lastRunAt < policy.cadenceMinutes * MINUTE_US - CADENCE_SLACK_US)) continue
    tally.looked++
    try {
      const mine = offers.filter((o) => winners.get(`${o.serverId}|${o.marketplace}`)?.id === policy.id)
      const outcome = await evaluatePolicy(deps, policy, planCode, mine)
      tally.made += await withTransaction(deps.db, async (tx) => {
        let stored = 0
        for (const item of outcome.items) if (await store(tx, deps, policy.id, tenantId, item)) stored++
        // An offer the policy no longer prices (withdrawn, unlinked, taken by another policy) keeps no suggestion of it.
        await supersedeOfPolicy(
          tx,
          tenantId,
          policy.id,
          outcome.items.map((i) => i.evaluation.server_id),
        )
        await updatePolicyRow(tx, policy.id, { lastRunAt: now })
        return stored
      })
    } catch (e) {
      if (isDatabaseBusy(e)) throw e
      // Its suggestions were rolled back; the run is recorded so the policy waits its cadence.
      await withTransaction(deps.db, (tx) => updatePolicyRow(tx, policy.id, { lastRunAt: now }))
      failed.push(`policy ${policy.id}: ${e instanceof Error ? e.message : String(e)}`)
    }
  }
  if (failed.length) throw new Error(failed.join('; '))
}

/**
 * Keeps one pending suggestion per offer: an unchanged one stays, a different one supersedes it,
 * and an offer already at the policy's price has none. Answers whether a suggestion was made.
 */
async function store(tx: DbOrTx, deps: Deps, policyId: string, tenantId: string, item: Outcome['items'][number]): Promise<boolean> {
  const e = item.evaluation
  const pending = await pendingOfOffer(tx, tenantId, e.server_id, e.marketplace)
  const same = pending.find((s) => s.policyId === policyId && s.suggestedMicros === item.suggestedMicros && s.currentMicros === item.currentMicros)
  if (same) return false
  await supersede(
    tx,
    pending.map((s) => s.id),
  )
  if (e.change === 'none') return false
  const { offer, ...evaluation } = e
  await insertSuggestion(tx, {
    id: deps.newId(),
    tenantId,
    policyId,
    serverId: e.server_id,
    marketplace: e.marketplace,
    state: 'pending',
    evaluation,
    offer,
    currentMicros: item.currentMicros,
    suggestedMicros: item.suggestedMicros,
    createdAt: deps.clock.nowUs(),
    claimedAt: null,
    decidedAt: null,
    decidedBy: null,
    dismissReason: null,
    outcome: null,
  })
  return true
}

function suggestionView(s: SuggestionRow) {
  const evaluation = s.evaluation as Omit<Evaluation, 'offer'>
  return {
    id: s.id,
    policy_id: s.policyId,
    state: s.state,
    created_at: formatTimestamp(s.createdAt),
    decided_at: formatNullableTimestamp(s.decidedAt),
    decided_by: s.decidedBy,
    dismiss_reason: s.dismissReason,
    outcome: (s.outcome as { warnings: { code: string; message: string }[]; extended_contracts: number | null } | null) ?? null,
    ...evaluation,
    offer: s.offer as Evaluation['offer'],
  }
}

/** POST /strategy/preview: the body as a policy, applied now to the offers it targets (alone, whatever other policies say); nothing is stored. */
export async function previewPolicy({ deps, actor, input }: { deps: Deps; actor: Actor; input: Static<typeof PreviewBody> }) {
  const policy = await draftPolicy(deps, actor, input)
  const servers = await managedServers(deps.db, actor.tenantId)
  const offers = (await offersOf(deps, policy, servers)).filter((o) => mayAccessServer(actor, o.serverId))
  const outcome = await evaluatePolicy(deps, policy, actor.tenant.planCode, offers)
  const unlisted =
    policy.target.kind === 'servers'
      ? policy.target.serverIds
          .filter((id) => !offers.some((o) => o.serverId === id))
          .map((id) => ({ server_id: id, reason: `no offer listed on ${policy.marketplace} through a live link` }))
      : []
  return {
    evaluated_at: formatTimestamp(deps.clock.nowUs()),
    items: outcome.items.map((i) => i.evaluation),
    skipped: [...outcome.skipped, ...unlisted],
  }
}

type Query = {
  cursor?: string
  limit?: number
  state?: SuggestionRow['state']
  policy_id?: string
  server_id?: string
  marketplace?: SuggestionRow['marketplace']
}

/** GET /strategy/suggestions: newest first; a token with a server allowlist sees only its servers' suggestions. */
export async function listSuggestions({ deps, actor, query }: { deps: Deps; actor: Actor; query: Query }) {
  const filter: SuggestionFilter = {
    state: query.state,
    policyId: query.policy_id?.toLowerCase(),
    serverId: query.server_id?.toLowerCase(),
    marketplace: query.marketplace,
    serverIds: actor.serverAllowlist ?? undefined,
  }
  return await paginate(deps.keys.cursor, {
    scope: `strategy.suggestions:${actor.tenantId}:${JSON.stringify(filter)}`,
    input: query,
    fetch: (after: { id: string } | undefined, take) => suggestionsPage(deps.db, actor.tenantId, filter, after?.id, take),
    position: (s) => ({ id: s.id }),
    view: suggestionView,
  })
}

/** The tenant's suggestion, visible to the actor (a server outside a token's allowlist is a plain 404). */
async function loadSuggestion(db: DbOrTx, actor: Actor, id: string): Promise<SuggestionRow> {
  const s = await findSuggestion(db, actor.tenantId, id.toLowerCase())
  if (!s || !mayAccessServer(actor, s.serverId)) throw StrategyErrors.suggestionNotFound()
  return s
}

type Decision = { deps: Deps; actor: Actor; audit: AuditContext; id: string }

/**
 * Publishes the suggested offer. Claimed first (pending → accepting) so two accepts publish once; a
 * repeated accept of an accepted suggestion answers it as it is. A refused or failed publication
 * puts it back to pending and answers the marketplace's problem.
 */
export async function acceptSuggestion({ deps, actor, audit, id }: Decision) {
  const claim = await withTransaction(deps.db, async (tx) => {
    const s = await loadSuggestion(tx, actor, id)
    const now = deps.clock.nowUs()
    if (s.state === 'accepted') return { done: s, claimed: null }
    if (s.state === 'accepting' && s.claimedAt !== null && s.claimedAt > now - CLAIM_US) throw StrategyErrors.busy()
    if (s.state !== 'pending' && s.state !== 'accepting') throw StrategyErrors.decided(`the suggestion was ${s.state}`)
    // Accepting must not list again an offer that was withdrawn (or unlinked) since the suggestion was made.
    if (!(await pricedOffers(deps, actor.tenantId, s.marketplace)).some((o) => o.serverId === s.serverId))
      throw StrategyErrors.notListed(`the offer of server ${s.serverId} on ${s.marketplace} is no longer listed through a live link`)
    if (s.marketplace === 'marketplace_b' && s.currentMicros !== null && s.suggestedMicros < s.currentMicros) {
      const last = await lastLoweringAt(tx, actor.tenantId, s.serverId, s.marketplace)
      if (last !== null && now - last < LOWERING_EVERY_US)
        throw StrategyErrors.loweringLimited(
          `marketplace_b lets a price be lowered once per 600 seconds; the last lowering was accepted at ${formatTimestamp(last)}, try again after ${formatTimestamp(last + LOWERING_EVERY_US)}`,
        )
    }
    await updateSuggestion(tx, s.id, { state: 'accepting', claimedAt: now })
    return { done: null, claimed: { ...s, claimedAt: now } }
  })
  if (claim.done) return suggestionView(claim.done)
  const s = claim.claimed!
  let published: Awaited<ReturnType<typeof publishOffer>>
  try {
    published = await publishOffer({
      deps,
      actor,
      audit,
      serverId: s.serverId,
      marketplace: s.marketplace,
      input: s.offer,
      reason: `strategy suggestion ${s.id}`,
    })
  } catch (e) {
    await withTransaction(deps.db, async (tx) => {
      const now = await findSuggestion(tx, actor.tenantId, s.id)
      if (now?.state === 'accepting' && now.claimedAt === s.claimedAt) await updateSuggestion(tx, s.id, { state: 'pending', claimedAt: null })
    })
    throw e
  }
  return await withTransaction(deps.db, async (tx) => {
    const next: SuggestionRow = {
      ...s,
      state: 'accepted',
      decidedAt: deps.clock.nowUs(),
      decidedBy: actor.userId,
      outcome: { warnings: published.warnings, extended_contracts: published.extended_contracts },
    }
    await updateSuggestion(tx, s.id, { state: next.state, decidedAt: next.decidedAt, decidedBy: next.decidedBy, outcome: next.outcome })
    await supersede(
      tx,
      (await pendingOfOffer(tx, actor.tenantId, s.serverId, s.marketplace)).map((p) => p.id),
    )
    await recordAudit(tx, deps, audit, { operation: 'strategy.suggestion.accept', targetKind: 'strategy_suggestion', targetId: s.id })
    return suggestionView(next)
  })
}

/** Records why the price was not taken; dismissing a dismissed suggestion answers it unchanged. */
export async function dismissSuggestion({ deps, actor, audit, id, input }: Decision & { input: Static<typeof DismissBody> }) {
  return await withTransaction(deps.db, async (tx) => {
    const s = await loadSuggestion(tx, actor, id)
    if (s.state === 'dismissed') return suggestionView(s)
    if (s.state !== 'pending') throw StrategyErrors.decided(`the suggestion was ${s.state}`)
    const next: SuggestionRow = { ...s, state: 'dismissed', decidedAt: deps.clock.nowUs(), decidedBy: actor.userId, dismissReason: input.reason.trim() }
    await updateSuggestion(tx, s.id, { state: next.state, decidedAt: next.decidedAt, decidedBy: next.decidedBy, dismissReason: next.dismissReason })
    await recordAudit(tx, deps, audit, { operation: 'strategy.suggestion.dismiss', targetKind: 'strategy_suggestion', targetId: s.id })
    return suggestionView(next)
  })
}
