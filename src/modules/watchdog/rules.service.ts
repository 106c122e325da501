import type { Static } from '@sinclair/typebox'
import { withTransaction, type DbOrTx } from '../../../db/client'
import type { WatchdogCondition, WatchdogStep } from '../../../db/schema/watchdog'
import { ensureReaches, mayAccessServer, type Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { assertIfMatch, etagOf } from '../../platform/etag'
import type { FieldError } from '../../platform/problem'
import { formatNullableTimestamp, formatTimestamp } from '../../platform/time'
import { recordAudit, type AuditContext } from '../audit'
import { serverOfTenant } from '../fleet'
import { findGroup } from '../groups'
import { WatchdogErrors } from './watchdog.errors'
import type { ConditionInput, RuleCreate, RulePatch } from './watchdog.model'
import {
  clearStates,
  countRules,
  deleteRule as deleteRuleRow,
  findRule,
  insertRule,
  presetsOf,
  recentSteps,
  rulesOf,
  statesOfRule,
  updateRule as updateRuleRow,
  type RuleRow,
  type StateRow,
} from './watchdog.repository'

/** At most this many rules per tenant (the three default ones included). */
const MAX_RULES = 50
const RECENT_STEPS = 20

const DEFAULT_SETTLE: Record<WatchdogStep['action'], number> = { notify: 10, restart_runtime: 10, reboot: 15 }

/**
 * The default rules (docs/watchdog.md "Default rules"): stored off for every tenant the first time
 * its watchdog is read, so the owner turns on what he wants and tunes it like any other rule.
 */
const PRESETS: { preset: string; name: string; condition: WatchdogCondition; steps: Pick<WatchdogStep, 'action' | 'settle_minutes'>[] }[] = [
  {
    preset: 'gpu_missing',
    name: 'GPU missing',
    condition: { kind: 'gpu_missing', expected_gpus: null },
    steps: [
      { action: 'notify', settle_minutes: 5 },
      { action: 'reboot', settle_minutes: 15 },
    ],
  },
  {
    preset: 'xid_79',
    name: 'Xid 79: GPU fallen off the bus',
    condition: { kind: 'xid', xids: [79] },
    steps: [
      { action: 'notify', settle_minutes: 5 },
      { action: 'reboot', settle_minutes: 15 },
    ],
  },
  {
    preset: 'utilisation_stuck',
    name: 'GPU utilisation stuck at 100 %',
    condition: { kind: 'utilisation_stuck', band: 'high', at_least_pct: 100, minutes: 30 },
    steps: [
      { action: 'notify', settle_minutes: 10 },
      { action: 'restart_runtime', settle_minutes: 10 },
      { action: 'reboot', settle_minutes: 15 },
    ],
  },
]

/** Stores the default rules the tenant does not have yet, off (they cannot be deleted, only turned off). */
async function ensureDefaults(deps: Deps, tenantId: string): Promise<void> {
  const have = await presetsOf(deps.db, tenantId)
  const missing = PRESETS.filter((p) => !have.includes(p.preset))
  if (missing.length === 0) return
  await withTransaction(deps.db, async (tx) => {
    const now = deps.clock.nowUs()
    // The unique (tenant, preset) index keeps one per tenant when two first reads race.
    for (const [i, p] of missing.entries())
      await insertRule(tx, {
        id: deps.newId(),
        tenantId,
        name: p.name,
        preset: p.preset,
        enabled: false,
        enabledAt: null,
        serverId: null,
        groupId: null,
        condition: p.condition,
        steps: p.steps.map((s) => ({ ...s, max_per_hour: 1, max_per_day: 3 })),
        allowDuringRental: false,
        createdAt: now + i,
        updatedAt: now,
        version: 1,
      })
  })
}

/** The step's next rung name: the ladder's own, or the page that ends it. */
export function actionAt(rule: Pick<RuleRow, 'steps'>, index: number): WatchdogStep['action'] | 'page' {
  return rule.steps[index]?.action ?? 'page'
}

export function settleOf(rule: Pick<RuleRow, 'steps'>, index: number): number {
  return (rule.steps[index]?.settle_minutes ?? 0) * 60_000_000
}

function stateView(rule: RuleRow, s: StateRow) {
  const settlesAt = s.lastStepAt === null || s.stepIndex === 0 ? null : s.lastStepAt + settleOf(rule, s.stepIndex - 1)
  return {
    server_id: s.serverId,
    status: s.status as 'active' | 'held' | 'gave_up',
    next_action: s.status === 'gave_up' ? null : actionAt(rule, s.stepIndex),
    since: formatNullableTimestamp(s.since),
    last_step_at: formatNullableTimestamp(s.lastStepAt),
    settles_at: formatNullableTimestamp(settlesAt),
    hold_reason: s.holdReason,
  }
}

async function ruleView(db: DbOrTx, r: RuleRow) {
  return {
    id: r.id,
    name: r.name,
    preset: r.preset,
    enabled: r.enabled,
    server_id: r.serverId,
    group_id: r.groupId,
    condition: r.condition,
    steps: r.steps,
    allow_during_rental: r.allowDuringRental,
    states: (await statesOfRule(db, r.id)).filter((s) => s.status !== 'ok').map((s) => stateView(r, s)),
    recent_steps: (await recentSteps(db, r.id, RECENT_STEPS)).map((s) => ({
      id: s.id,
      server_id: s.serverId,
      action: s.action,
      outcome: s.outcome,
      command_id: s.commandId,
      note: s.note,
      at: formatTimestamp(s.at),
    })),
    created_at: formatTimestamp(r.createdAt),
    updated_at: formatTimestamp(r.updatedAt),
    version: r.version,
  }
}

/** A condition as stored: the fields of its kind with their defaults; a field of another kind is refused. */
function normaliseCondition(input: Static<typeof ConditionInput>, errors: FieldError[]): WatchdogCondition {
  const own: Record<WatchdogCondition['kind'], string[]> = {
    gpu_missing: ['expected_gpus'],
    xid: ['xids'],
    utilisation_stuck: ['band', 'at_least_pct', 'minutes'],
  }
  for (const k of Object.keys(input)) if (k !== 'kind' && !own[input.kind].includes(k)) errors.push({ path: `/condition/${k}`, code: 'not_for_kind' })
  if (input.kind === 'gpu_missing') return { kind: 'gpu_missing', expected_gpus: input.expected_gpus ?? null }
  if (input.kind === 'xid') {
    if (!input.xids) errors.push({ path: '/condition/xids', code: 'required' })
    return { kind: 'xid', xids: [...(input.xids ?? [])].sort((a, b) => a - b) }
  }
  const band = input.band ?? 'high'
  if (band === 'zero' && input.at_least_pct !== undefined) errors.push({ path: '/condition/at_least_pct', code: 'not_for_band' })
  return { kind: 'utilisation_stuck', band, at_least_pct: band === 'zero' ? 0 : (input.at_least_pct ?? 100), minutes: input.minutes ?? 30 }
}

function normaliseSteps(input: Static<typeof RuleCreate>['steps'], errors: FieldError[]): WatchdogStep[] {
  return input.map((s, i) => {
    const step = {
      action: s.action,
      settle_minutes: s.settle_minutes ?? DEFAULT_SETTLE[s.action],
      max_per_hour: s.max_per_hour ?? 1,
      max_per_day: s.max_per_day ?? Math.max(3, s.max_per_hour ?? 1),
    }
    if (step.max_per_day < step.max_per_hour) errors.push({ path: `/steps/${i}/max_per_day`, code: 'below_max_per_hour' })
    return step
  })
}

/** Where the rule applies: one server, one group, or (both null) every server of the tenant. */
async function checkScope(db: DbOrTx, tenantId: string, serverId: string | null, groupId: string | null, errors: FieldError[]): Promise<void> {
  if (serverId !== null && groupId !== null) errors.push({ path: '/group_id', code: 'server_or_group' })
  if (serverId !== null) {
    const s = await serverOfTenant(db, tenantId, serverId)
    if (!s || s.decommissionedAt !== null) errors.push({ path: '/server_id', code: 'unknown_server' })
  }
  if (groupId !== null && !(await findGroup(db, tenantId, groupId))) errors.push({ path: '/group_id', code: 'unknown_group' })
}

function refuse(errors: FieldError[]): void {
  if (errors.length) throw WatchdogErrors.invalid(`the rule is not valid: ${errors.map((e) => `${e.path} ${e.code}`).join(', ')}`, { fields: errors })
}

/**
 * A rule the actor may reach: one on a server outside a token's server_allowlist does not exist for
 * it (404); one on a group or the whole tenant reaches servers beyond it (403).
 */
async function loadRule(db: DbOrTx, actor: Actor, id: string): Promise<RuleRow> {
  const r = await findRule(db, actor.tenantId, id.toLowerCase())
  if (!r || (r.serverId !== null && !mayAccessServer(actor, r.serverId))) throw WatchdogErrors.notFound()
  ensureReaches(actor, r.serverId === null ? null : [r.serverId], 'a watchdog rule on a group or every server')
  return r
}

/** Where a rule written by the actor applies must be within its reach (the body's server ids were checked at parsing). */
function ensureScopeReachable(actor: Actor, serverId: string | null) {
  if (serverId === null) ensureReaches(actor, null, 'a watchdog rule on a group or every server', '/server_id')
}

type Verb = { deps: Deps; actor: Actor }
type Change = Verb & { audit: AuditContext }

export async function listRules({ deps, actor }: Verb) {
  await ensureDefaults(deps, actor.tenantId)
  // A token with a server_allowlist lists the rules on its servers only.
  const rules = (await rulesOf(deps.db, actor.tenantId)).filter(
    (r) => actor.serverAllowlist === null || (r.serverId !== null && mayAccessServer(actor, r.serverId)),
  )
  const items = []
  for (const r of rules) items.push(await ruleView(deps.db, r))
  return { items }
}

export async function getRule({ deps, actor, id }: Verb & { id: string }) {
  return await ruleView(deps.db, await loadRule(deps.db, actor, id))
}

export async function createRule({ deps, actor, audit, input }: Change & { input: Static<typeof RuleCreate> }) {
  const errors: FieldError[] = []
  const condition = normaliseCondition(input.condition, errors)
  const steps = normaliseSteps(input.steps, errors)
  const serverId = input.server_id?.toLowerCase() ?? null
  const groupId = input.group_id?.toLowerCase() ?? null
  ensureScopeReachable(actor, serverId)
  return await withTransaction(deps.db, async (tx) => {
    await checkScope(tx, actor.tenantId, serverId, groupId, errors)
    refuse(errors)
    if ((await countRules(tx, actor.tenantId)) >= MAX_RULES)
      throw WatchdogErrors.tooMany(`the tenant already has ${MAX_RULES} watchdog rules; delete one first`)
    const now = deps.clock.nowUs()
    const enabled = input.enabled ?? false
    const row: RuleRow = {
      id: deps.newId(),
      tenantId: actor.tenantId,
      name: input.name.trim(),
      preset: null,
      enabled,
      enabledAt: enabled ? now : null,
      serverId,
      groupId,
      condition,
      steps,
      allowDuringRental: input.allow_during_rental ?? false,
      createdAt: now,
      updatedAt: now,
      version: 1,
    }
    await insertRule(tx, row)
    await recordAudit(tx, deps, audit, { operation: 'watchdog.rules.create', targetKind: 'watchdog_rule', targetId: row.id })
    return await ruleView(tx, row)
  })
}

export async function updateRule({ deps, actor, audit, id, ifMatch, input }: Change & { id: string; ifMatch: string | null; input: Static<typeof RulePatch> }) {
  const errors: FieldError[] = []
  const condition = input.condition === undefined ? undefined : normaliseCondition(input.condition, errors)
  const steps = input.steps === undefined ? undefined : normaliseSteps(input.steps, errors)
  return await withTransaction(deps.db, async (tx) => {
    const r = await loadRule(tx, actor, id)
    assertIfMatch(ifMatch, etagOf(r.version))
    const serverId = input.server_id === undefined ? r.serverId : (input.server_id?.toLowerCase() ?? null)
    const groupId = input.group_id === undefined ? r.groupId : (input.group_id?.toLowerCase() ?? null)
    ensureScopeReachable(actor, serverId)
    await checkScope(tx, actor.tenantId, serverId, groupId, errors)
    refuse(errors)
    const now = deps.clock.nowUs()
    const enabled = input.enabled ?? r.enabled
    const next: RuleRow = {
      ...r,
      name: input.name?.trim() ?? r.name,
      enabled,
      enabledAt: enabled && !r.enabled ? now : enabled ? r.enabledAt : null,
      serverId,
      groupId,
      condition: condition ?? r.condition,
      steps: steps ?? r.steps,
      allowDuringRental: input.allow_during_rental ?? r.allowDuringRental,
      updatedAt: now,
      version: r.version + 1,
    }
    await updateRuleRow(tx, r.id, next)
    // Off, or watching something else, or another ladder: every ladder starts again from its first rung.
    if (!enabled || condition || steps || serverId !== r.serverId || groupId !== r.groupId) await clearStates(tx, r.id)
    await recordAudit(tx, deps, audit, { operation: 'watchdog.rules.update', targetKind: 'watchdog_rule', targetId: r.id })
    return await ruleView(tx, next)
  })
}

export async function deleteRule({ deps, actor, audit, id, ifMatch }: Change & { id: string; ifMatch: string | null }): Promise<void> {
  await withTransaction(deps.db, async (tx) => {
    const r = await loadRule(tx, actor, id)
    assertIfMatch(ifMatch, etagOf(r.version))
    if (r.preset !== null) throw WatchdogErrors.presetKept()
    await deleteRuleRow(tx, r.id)
    await recordAudit(tx, deps, audit, { operation: 'watchdog.rules.delete', targetKind: 'watchdog_rule', targetId: r.id })
  })
}
