import type { Static } from '@sinclair/typebox'
import { withTransaction, type DbOrTx } from '../../../db/client'
import type { PolicyTarget } from '../../../db/schema/strategy'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { invalidField } from '../../platform/domain-error'
import { assertIfMatch, etagOf } from '../../platform/etag'
import { formatMoney, formatNullableMoney, MAX_MONEY_MICROS, parseMoneyInRange } from '../../platform/money'
import { formatNullableTimestamp, formatTimestamp } from '../../platform/time'
import { recordAudit, type AuditContext } from '../audit'
import { serverOfTenant } from '../fleet'
import { findGroup } from '../groups'
import { StrategyErrors } from './strategy.errors'
import type { PolicyCreate, PolicyPatch, PreviewBody } from './strategy.model'
import { ensurePolicyReach, ensureTargetReach, policyVisible, visibleTarget } from './reach'
import { countPolicies, deletePolicyRow, findPolicy, insertPolicy, policiesOf, supersedeOfPolicy, updatePolicyRow, type PolicyRow } from './strategy.repository'

/**
 * Pricing policies (docs/strategy.md "Policies"): at most 50 per tenant, each on one marketplace,
 * targeting servers, a group or a GPU model. Changing, disabling or deleting a policy supersedes the
 * suggestions it left pending: they were made by rules that no longer hold.
 */

const MAX_POLICIES = 50
const MAX_STEP = 10_000_000

type TargetInput = Static<typeof PolicyCreate>['target']

function policyView(p: PolicyRow) {
  return {
    id: p.id,
    name: p.name,
    marketplace: p.marketplace,
    target: targetView(p.target),
    min_margin_percent: p.minMarginPercent,
    target_percentile: p.targetPercentile,
    ceiling_gpu_hour: formatNullableMoney(p.ceilingMicros),
    rounding_step: formatMoney(p.roundingStepMicros),
    cadence_minutes: p.cadenceMinutes,
    raise_while_rented: p.marketplace === 'marketplace_a' ? p.raiseWhileRented : null,
    coin: p.marketplace === 'marketplace_b' ? (p.coin as 'bitcoin' | 'CLORE-Blockchain' | 'USD-Blockchain') : null,
    enabled: p.enabled,
    version: p.version,
    last_run_at: formatNullableTimestamp(p.lastRunAt),
    created_at: formatTimestamp(p.createdAt),
    updated_at: formatTimestamp(p.updatedAt),
  }
}

function targetView(t: PolicyTarget) {
  if (t.kind === 'servers') return { server_ids: t.serverIds }
  if (t.kind === 'group') return { group_id: t.groupId }
  return { gpu_model: t.gpuModel }
}

/** The target as stored, after checking every server and the group belong to the tenant (a foreign id is a plain 404). */
async function targetOf(db: DbOrTx, actor: Actor, input: TargetInput): Promise<PolicyTarget> {
  ensureTargetReach(actor, input)
  if (input.server_ids) {
    const ids = input.server_ids.map((id) => id.toLowerCase())
    for (const id of ids) if (!(await serverOfTenant(db, actor.tenantId, id))) throw StrategyErrors.policyNotFound(`no such server: ${id}`)
    return { kind: 'servers', serverIds: ids }
  }
  if (input.group_id) {
    const id = input.group_id.toLowerCase()
    if (!(await findGroup(db, actor.tenantId, id))) throw StrategyErrors.policyNotFound(`no such group: ${id}`)
    return { kind: 'group', groupId: id }
  }
  return { kind: 'gpu_model', gpuModel: input.gpu_model! }
}

type Settings = Pick<
  PolicyRow,
  'minMarginPercent' | 'targetPercentile' | 'ceilingMicros' | 'roundingStepMicros' | 'cadenceMinutes' | 'raiseWhileRented' | 'coin' | 'enabled'
>
type SettingsInput = Omit<Static<typeof PolicyPatch>, 'name' | 'target'>

/** The settings of `input` over `base`, checked against the marketplace (a field of the other platform is 422). */
function settingsOf(marketplace: PolicyRow['marketplace'], input: SettingsInput, base: Settings): Settings {
  if (marketplace === 'marketplace_b' && input.raise_while_rented !== undefined)
    throw invalidField(
      'strategy',
      '/raise_while_rented',
      'not_supported_by_marketplace',
      'raise_while_rented is a marketplace_a setting (its pending price increases)',
    )
  if (marketplace === 'marketplace_a' && input.coin !== undefined)
    throw invalidField('strategy', '/coin', 'not_supported_by_marketplace', 'coin is a marketplace_b setting: marketplace_a prices in USD')
  const out = { ...base }
  if (input.min_margin_percent !== undefined) out.minMarginPercent = input.min_margin_percent
  if (input.target_percentile !== undefined) out.targetPercentile = input.target_percentile
  if (input.ceiling_gpu_hour !== undefined) {
    const given = input.ceiling_gpu_hour
    const ceiling = given === null ? null : parseMoneyInRange(given)
    if (given !== null && (given.startsWith('-') || (ceiling !== null && ceiling <= 0)))
      throw invalidField('strategy', '/ceiling_gpu_hour', 'too_small', 'the ceiling must be above zero')
    if (given !== null && ceiling === null)
      throw invalidField('strategy', '/ceiling_gpu_hour', 'too_large', `the ceiling is at most ${formatMoney(MAX_MONEY_MICROS)} USD per GPU-hour`)
    out.ceilingMicros = ceiling
  }
  if (input.rounding_step !== undefined) {
    out.roundingStepMicros = parseMoneyInRange(input.rounding_step) ?? Number.POSITIVE_INFINITY
    if (out.roundingStepMicros <= 0 || out.roundingStepMicros > MAX_STEP)
      throw invalidField('strategy', '/rounding_step', 'out_of_range', 'the rounding step is 0.000001 .. 10 USD per GPU-hour')
  }
  if (input.cadence_minutes !== undefined) out.cadenceMinutes = input.cadence_minutes
  if (input.raise_while_rented !== undefined) out.raiseWhileRented = input.raise_while_rented
  if (input.coin !== undefined) out.coin = input.coin
  if (input.enabled !== undefined) out.enabled = input.enabled
  return out
}

const DEFAULTS = (marketplace: PolicyRow['marketplace']): Settings => ({
  minMarginPercent: '0',
  targetPercentile: 50,
  ceilingMicros: null,
  roundingStepMicros: 10_000,
  cadenceMinutes: 60,
  raiseWhileRented: 'hold',
  coin: marketplace === 'marketplace_b' ? 'USD-Blockchain' : null,
  enabled: true,
})

/** A policy from a preview body, never stored. */
export async function draftPolicy(deps: Deps, actor: Actor, input: Static<typeof PreviewBody>): Promise<PolicyRow> {
  const now = deps.clock.nowUs()
  const target = await targetOf(deps.db, actor, input.target)
  return {
    id: '00000000-0000-0000-0000-000000000000',
    tenantId: actor.tenantId,
    name: input.name ?? 'preview',
    marketplace: input.marketplace,
    target,
    ...settingsOf(input.marketplace, input, DEFAULTS(input.marketplace)),
    version: 0,
    lastRunAt: null,
    createdBy: actor.userId,
    createdAt: now,
    updatedAt: now,
  }
}

async function loadPolicy(db: DbOrTx, actor: Actor, id: string): Promise<PolicyRow> {
  const p = await findPolicy(db, actor.tenantId, id.toLowerCase())
  if (!p || !policyVisible(actor, p.target)) throw StrategyErrors.policyNotFound()
  return p
}

export async function listPolicies({ deps, actor }: { deps: Deps; actor: Actor }) {
  const visible = (await policiesOf(deps.db, actor.tenantId)).filter((p) => policyVisible(actor, p.target))
  return { items: visible.map((p) => policyView({ ...p, target: visibleTarget(actor, p.target) })) }
}

type Change = { deps: Deps; actor: Actor; audit: AuditContext }

export async function createPolicy({ deps, actor, audit, input }: Change & { input: Static<typeof PolicyCreate> }) {
  return await withTransaction(deps.db, async (tx) => {
    if ((await countPolicies(tx, actor.tenantId)) >= MAX_POLICIES) throw StrategyErrors.tooManyPolicies()
    const now = deps.clock.nowUs()
    const id = deps.newId()
    const target = await targetOf(tx, actor, input.target)
    const row: PolicyRow = {
      id,
      tenantId: actor.tenantId,
      name: input.name.trim(),
      marketplace: input.marketplace,
      target,
      ...settingsOf(input.marketplace, input, DEFAULTS(input.marketplace)),
      version: 1,
      lastRunAt: null,
      createdBy: actor.userId,
      createdAt: now,
      updatedAt: now,
    }
    await insertPolicy(tx, row)
    await recordAudit(tx, deps, audit, { operation: 'strategy.policy.create', targetKind: 'strategy_policy', targetId: row.id })
    return policyView(row)
  })
}

export async function updatePolicy({
  deps,
  actor,
  audit,
  id,
  ifMatch,
  input,
}: Change & { id: string; ifMatch: string | null; input: Static<typeof PolicyPatch> }) {
  return await withTransaction(deps.db, async (tx) => {
    const p = await loadPolicy(tx, actor, id)
    ensurePolicyReach(actor, p.target)
    assertIfMatch(ifMatch, etagOf(p.version))
    const settings = settingsOf(p.marketplace, input, p)
    const target = input.target ? await targetOf(tx, actor, input.target) : p.target
    const next: PolicyRow = {
      ...p,
      ...settings,
      name: input.name?.trim() ?? p.name,
      target,
      version: p.version + 1,
      // A changed policy looks again at its next run.
      lastRunAt: null,
      updatedAt: deps.clock.nowUs(),
    }
    await updatePolicyRow(tx, p.id, next)
    await supersedeOfPolicy(tx, actor.tenantId, p.id)
    await recordAudit(tx, deps, audit, { operation: 'strategy.policy.update', targetKind: 'strategy_policy', targetId: p.id })
    return policyView(next)
  })
}

export async function deletePolicy({ deps, actor, audit, id, ifMatch }: Change & { id: string; ifMatch: string | null }): Promise<void> {
  await withTransaction(deps.db, async (tx) => {
    const p = await loadPolicy(tx, actor, id)
    ensurePolicyReach(actor, p.target)
    assertIfMatch(ifMatch, etagOf(p.version))
    await supersedeOfPolicy(tx, actor.tenantId, p.id)
    await deletePolicyRow(tx, p.id)
    await recordAudit(tx, deps, audit, { operation: 'strategy.policy.delete', targetKind: 'strategy_policy', targetId: p.id })
  })
}

export async function getPolicy({ deps, actor, id }: { deps: Deps; actor: Actor; id: string }) {
  const p = await loadPolicy(deps.db, actor, id)
  return policyView({ ...p, target: visibleTarget(actor, p.target) })
}
