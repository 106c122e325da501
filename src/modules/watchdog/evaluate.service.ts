import { type Tx, withTransaction } from '../../../db/client'
import type { WatchdogStep } from '../../../db/schema/watchdog'
import type { Deps } from '../../platform/context'
import type { TenantWalk } from '../../platform/jobs'
import { formatTimestamp } from '../../platform/time'
import { issueSystemCommand } from '../commands'
import { latestOfMetric, managedServers, recordServerEvent, rentalRunning, type ServerSummary } from '../fleet'
import { actionAt, settleOf } from './rules.service'
import {
  dropSignals,
  enabledRules,
  findState,
  insertStep,
  putSignal,
  saveState,
  signalsOf,
  stepsTakenSince,
  type RuleRow,
  type SignalRow,
  type StateRow,
  type StepRow,
} from './watchdog.repository'

/**
 * The `watchdog.evaluate` job (docs/watchdog.md): every enabled rule on every online server it
 * covers. Where its condition holds, the ladder takes its next rung once the previous one has had
 * its settle time (one rung per run): notify, restart the container runtime, reboot, each within
 * its limits per hour and day, and when the ladder is spent it gives up and pages. On a rented
 * server a restart or reboot waits (held) unless the rule allows them during rentals. A condition
 * that no longer holds once a step settled resets the ladder. Each server's decision is one
 * transaction (its state, steps and server events); a command is issued just before it.
 */

const US_MIN = 60_000_000
const HOUR = 60 * US_MIN
const DAY = 24 * HOUR
/** A utilisation reading older than this says nothing. */
const FRESH_READING_US = 5 * US_MIN
/** A page is sent at most this often per rule and server (a flapping condition). */
const PAGE_EVERY_US = HOUR
const COMMAND_OF: Record<Exclude<WatchdogStep['action'], 'notify'>, string> = { restart_runtime: 'docker.restart', reboot: 'reboot' }
const SAYS: Record<WatchdogStep['action'] | 'page', string> = {
  notify: 'notify',
  restart_runtime: 'restart the container runtime',
  reboot: 'reboot',
  page: 'page',
}

type Tally = { steps: number; limited: number; held: number; recovered: number }
type Reading = { serverId: string; gpuIndex: number; value: number | null; t: number }
type Run = { deps: Deps; now: number; tally: Tally; readings: () => Promise<Reading[]> }

export async function evaluateWatchdog(deps: Deps, tenants: TenantWalk): Promise<string> {
  const tally: Tally = { steps: 0, limited: 0, held: 0, recovered: 0 }
  const now = deps.clock.nowUs()
  let readings: Promise<Reading[]> | null = null
  const run: Run = {
    deps,
    now,
    tally,
    // Read once a run, and only when a utilisation rule is on (the promise is kept, so the read is one).
    readings: () =>
      (readings ??= latestOfMetric(deps.db, 'utilization_pct', now - FRESH_READING_US).catch((e: unknown) => {
        // A failed read is not kept: the next tenant reads again, as before.
        readings = null
        throw e
      })),
  }
  const byTenant = new Map<string, RuleRow[]>()
  for (const r of await enabledRules(deps.db)) byTenant.set(r.tenantId, [...(byTenant.get(r.tenantId) ?? []), r])
  for (const [tenantId, rules] of byTenant) await tenants.run(tenantId, () => evaluateTenant(run, tenantId, rules))
  return `${tally.steps} steps taken, ${tally.limited} passed over at their limit, ${tally.held} held for a rental, ${tally.recovered} ladders reset`
}

async function evaluateTenant(run: Run, tenantId: string, rules: RuleRow[]): Promise<void> {
  const servers = await managedServers(run.deps.db, tenantId)
  for (const rule of rules)
    for (const server of servers) {
      if (rule.serverId !== null ? server.id !== rule.serverId : rule.groupId !== null && server.groupId !== rule.groupId) continue
      // An offline server has its own alert; its ladder waits until it is back.
      if (server.presence !== 'online') continue
      await evaluateOne(run, rule, server)
    }
}

/** Whether the rule's condition holds on the server now, and in what words. */
async function check(run: Run, rule: RuleRow, server: ServerSummary, state: StateRow): Promise<{ holds: boolean; detail: string }> {
  const { deps, now } = run
  const c = rule.condition
  let signals = await signalsOf(deps.db, server.id)
  const keep = async (mutate: (tx: Tx) => Promise<void>) => {
    await withTransaction(deps.db, mutate)
    signals = await signalsOf(deps.db, server.id)
  }
  if (c.kind === 'gpu_missing') {
    const seen = signals.find((s) => s.kind === 'gpus_max')?.value ?? 0
    if (server.gpuCount > seen)
      await keep((tx) => putSignal(tx, { serverId: server.id, tenantId: server.tenantId, kind: 'gpus_max', key: '', value: server.gpuCount, at: now }))
    const expected = c.expected_gpus ?? Math.max(seen, server.gpuCount)
    const missing = signals.filter((s) => s.kind === 'gpu_missing').map((s) => Number(s.key))
    const answering = Math.max(0, server.gpuCount - missing.length)
    return {
      holds: answering < expected,
      detail: `${answering} of ${expected} GPUs answer${missing.length ? ` (missing: GPU ${missing.sort((a, b) => a - b).join(', ')})` : ''}`,
    }
  }
  if (c.kind === 'xid') {
    const hits = signals.filter((s) => s.kind === 'xid' && c.xids.includes(Number(s.key)) && s.at > state.referenceAt).sort((a, b) => b.at - a.at)
    return {
      holds: hits.length > 0,
      detail: hits.length ? `Xid ${hits.map((h) => h.key).join(', ')} logged, last at ${formatTimestamp(hits[0]!.at)}` : 'no Xid',
    }
  }
  // utilisation_stuck: since when each GPU stays in the band, kept per band so two rules do not mix.
  const band = `${c.band}:${c.at_least_pct}`
  const rented = rentalRunning(server)
  const mine = signals.filter((s) => s.kind === 'util' && s.key.endsWith(`:${band}`))
  const readings = (await run.readings()).filter((r) => r.serverId === server.id && r.gpuIndex >= 0)
  const inBand = (v: number | null) => v !== null && (c.band === 'high' ? v >= c.at_least_pct : v === 0 && rented)
  const puts: SignalRow[] = []
  const drops: string[] = []
  for (const r of readings) {
    const key = `${r.gpuIndex}:${band}`
    const had = mine.find((s) => s.key === key)
    if (inBand(r.value) && !had) puts.push({ serverId: server.id, tenantId: server.tenantId, kind: 'util', key, value: c.at_least_pct, at: Math.min(r.t, now) })
    if (!inBand(r.value) && had) drops.push(key)
  }
  // A GPU with no fresh reading is unknown, never stuck.
  for (const s of mine) if (!readings.some((r) => `${r.gpuIndex}:${band}` === s.key)) drops.push(s.key)
  if (puts.length || drops.length)
    await keep(async (tx) => {
      for (const p of puts) await putSignal(tx, p)
      if (drops.length) await dropSignals(tx, server.id, 'util', drops)
    })
  const stuck = signals.filter((s) => s.kind === 'util' && s.key.endsWith(`:${band}`) && s.at <= now - c.minutes * US_MIN)
  const what = c.band === 'high' ? `at or above ${c.at_least_pct} %` : 'at 0 % during a rental'
  return {
    holds: stuck.length > 0,
    detail: stuck.length
      ? `GPU ${stuck.map((s) => s.key.split(':')[0]).join(', ')} ${what} for ${c.minutes} minutes or more`
      : `no GPU ${what} for ${c.minutes} minutes`,
  }
}

type Decision = {
  state: StateRow
  steps: Omit<StepRow, 'id' | 'tenantId' | 'ruleId' | 'serverId' | 'at'>[]
  events: { kind: string; severity: 'info' | 'warning' | 'critical'; message: string; data: Record<string, unknown> }[]
}

async function evaluateOne(run: Run, rule: RuleRow, server: ServerSummary): Promise<void> {
  const { deps, now } = run
  const stored = await findState(deps.db, rule.id, server.id)
  const state: StateRow = stored ?? {
    ruleId: rule.id,
    serverId: server.id,
    tenantId: server.tenantId,
    status: 'ok',
    stepIndex: 0,
    since: null,
    lastStepAt: null,
    referenceAt: rule.enabledAt ?? now,
    holdReason: null,
    notified: false,
    updatedAt: now,
  }
  // The last step is given its settle time before anything is decided.
  if (
    state.status !== 'ok' &&
    state.status !== 'held' &&
    state.lastStepAt !== null &&
    state.stepIndex > 0 &&
    now < state.lastStepAt + settleOf(rule, state.stepIndex - 1)
  )
    return
  const { holds, detail } = await check(run, rule, server, state)
  const about = { rule_id: rule.id, rule: rule.name, condition: rule.condition.kind }
  if (!holds) {
    if (state.status === 'ok') return
    run.tally.recovered++
    await write(run, rule, server, {
      state: { ...state, status: 'ok', stepIndex: 0, since: null, referenceAt: now, holdReason: null, notified: false, updatedAt: now },
      steps: [],
      events: [
        {
          kind: 'watchdog.recovered',
          severity: 'info',
          message: `${rule.name}: the condition no longer holds (${detail}); the ladder starts again`,
          data: about,
        },
      ],
    })
    return
  }
  if (state.status === 'gave_up') {
    // Still holding after the page: look again after another settle time (an Xid counts when logged after now).
    await withTransaction(deps.db, (tx) => saveState(tx, { ...state, lastStepAt: now, referenceAt: now, updatedAt: now }))
    return
  }
  const d: Decision = { state: { ...state, status: 'active', since: state.since ?? now, updatedAt: now }, steps: [], events: [] }
  const rented = rentalRunning(server)
  for (;;) {
    const action = actionAt(rule, d.state.stepIndex)
    if (action === 'page') {
      const paged = (await stepsTakenSince(deps.db, rule.id, server.id, 'page', now - PAGE_EVERY_US)) > 0
      d.steps.push({ action: 'page', outcome: paged ? 'rate_limited' : 'done', commandId: null, note: paged ? 'paged less than an hour ago' : detail })
      if (!paged)
        d.events.push({
          kind: 'watchdog.gave_up',
          severity: 'critical',
          message: `${rule.name}: the watchdog gave up after its last step: ${detail}. Look at the server.`,
          data: { ...about, detail },
        })
      // An Xid counts again only when logged after the page; the last step's settle time applies to it too.
      d.state = { ...d.state, status: 'gave_up', lastStepAt: now, referenceAt: now, holdReason: null }
      if (!paged) run.tally.steps++
      break
    }
    const step = rule.steps[d.state.stepIndex]!
    if (action !== 'notify' && rented && !rule.allowDuringRental) {
      // A rental runs: restarts and reboots wait for its end; the owner hears of it once.
      if (d.state.holdReason === 'rental_running') return
      run.tally.held++
      d.state = { ...d.state, status: 'held', holdReason: 'rental_running' }
      d.events.push({
        kind: 'watchdog.held',
        severity: 'info',
        message: `${rule.name}: a rental runs, so the watchdog does not ${SAYS[action]} (${detail}); it goes on when the rental ends`,
        data: { ...about, action, detail },
      })
      if (!d.state.notified) {
        d.state.notified = true
        d.events.push({
          kind: 'watchdog.notified',
          severity: 'warning',
          message: `${rule.name}: ${detail}. A rental runs: the watchdog waits for its end before it would ${SAYS[action]}.`,
          data: { ...about, detail },
        })
      }
      break
    }
    const hour = await stepsTakenSince(deps.db, rule.id, server.id, action, now - HOUR)
    const day = await stepsTakenSince(deps.db, rule.id, server.id, action, now - DAY)
    if (hour >= step.max_per_hour || day >= step.max_per_day) {
      // Its allowance is spent: it counts as tried, and the ladder goes on to the next rung.
      run.tally.limited++
      d.steps.push({
        action,
        outcome: 'rate_limited',
        commandId: null,
        note: `${hour} in the last hour, ${day} in 24 hours: at most ${step.max_per_hour} an hour and ${step.max_per_day} a day`,
      })
      d.state = { ...d.state, stepIndex: d.state.stepIndex + 1 }
      continue
    }
    run.tally.steps++
    if (action === 'notify') {
      d.state.notified = true
      d.steps.push({ action, outcome: 'done', commandId: null, note: detail })
      d.events.push({ kind: 'watchdog.notified', severity: 'warning', message: `${rule.name}: ${detail}`, data: { ...about, detail } })
    } else {
      const type = COMMAND_OF[action]
      try {
        const commandId = await issueSystemCommand(
          deps,
          server,
          {
            type,
            params: {},
            // A rental that starts before delivery still holds it; a command not delivered within its settle time goes stale.
            requires: rule.allowDuringRental ? 'none' : 'after_rental',
            acceptBy: now + Math.max(step.settle_minutes * US_MIN, 5 * US_MIN),
          },
          rule.id,
        )
        d.steps.push({ action, outcome: 'done', commandId, note: detail })
        d.events.push({
          kind: 'watchdog.action',
          severity: 'warning',
          message: `${rule.name}: ${detail}; the watchdog asked the agent to ${SAYS[action]} (command ${type})`,
          data: { ...about, action, command_id: commandId, command_type: type, detail },
        })
      } catch (e) {
        // Refused (a full queue): counted as tried, so the ladder climbs on after the settle time.
        d.steps.push({ action, outcome: 'failed', commandId: null, note: (e instanceof Error ? e.message : String(e)).slice(0, 512) })
      }
    }
    d.state = { ...d.state, status: 'active', stepIndex: d.state.stepIndex + 1, lastStepAt: now, referenceAt: now, holdReason: null }
    break
  }
  await write(run, rule, server, d)
}

async function write(run: Run, rule: RuleRow, server: ServerSummary, d: Decision): Promise<void> {
  const { deps, now } = run
  await withTransaction(deps.db, async (tx) => {
    await saveState(tx, d.state)
    for (const s of d.steps) await insertStep(tx, { id: deps.newId(), tenantId: server.tenantId, ruleId: rule.id, serverId: server.id, at: now, ...s })
    for (const e of d.events) await recordServerEvent(tx, deps, server, e)
  })
}
