import { eq } from 'drizzle-orm'
import { plans, tenants } from '../../../db/schema'
import { withTransaction } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { MoneyFormatError, parseMoney } from '../../platform/money'
import { problems } from '../../platform/problem'
import { recordSystemEvent } from '../audit/audit.service'
import { findPlan } from '../plans/plans.repository'
import { findTenant } from '../tenants/tenants.repository'
import { switchPlan } from '../subscription/subscription.service'
import { utcDay } from '../../platform/time'
import { assignPlan, hourStartOf, recordPriceChange } from '../plans/plan-history'
import { appendEntry } from './ledger'

/** Operator verbs (scripts/admin): they act as the system and leave an audit row. */

export function adjustBalance({ deps, input }: { deps: Deps; input: { tenantId: string; amount: string; reason: string } }) {
  let micros: number
  try {
    micros = parseMoney(input.amount)
  } catch (e) {
    if (e instanceof MoneyFormatError) throw problems.field('/amount', 'format', `${input.amount}: ${e.message}`)
    throw e
  }
  if (micros === 0) throw problems.field('/amount', 'zero', 'an adjustment of zero changes nothing')
  const reason = input.reason.trim()
  if (!reason || reason.length > 400) throw problems.field('/reason', 'too_long', 'the reason must have 1 to 400 characters')
  return withTransaction(deps.db, (tx) => {
    if (!findTenant(tx, input.tenantId)) throw problems.notFound(`no tenant ${input.tenantId}`)
    const row = appendEntry(tx, deps, {
      tenantId: input.tenantId,
      kind: 'adjustment',
      amountMicros: micros,
      occurredAt: deps.clock.nowUs(),
      detail: `adjustment: ${reason}`,
    })
    recordSystemEvent(tx, deps, input.tenantId, 'billing.adjust', `${input.amount} USD: ${reason}`)
    return row
  })
}

export function setTenantPlan({ deps, input }: { deps: Deps; input: { tenantId: string; plan: string | null } }) {
  return withTransaction(deps.db, (tx) => {
    const tenant = findTenant(tx, input.tenantId)
    if (!tenant) throw problems.notFound(`no tenant ${input.tenantId}`)
    if (input.plan !== null && !findPlan(tx, input.plan)) throw problems.notFound(`no plan ${input.plan}`)
    // The charge job prices each hour by the tenant's plan assignments, so the operator's plan is
    // one from the current hour on (no plan: nothing billed from then); earlier hours keep theirs.
    if (input.plan !== null) switchPlan(tx, deps, input.tenantId, tenant.planCode, input.plan, utcDay(deps.clock.nowUs()))
    else {
      assignPlan(tx, deps, input.tenantId, tenant.planCode, null, hourStartOf(deps.clock.nowUs()))
      tx.update(tenants).set({ planCode: null }).where(eq(tenants.id, input.tenantId)).run()
    }
    // GET /subscription shows the plan under the subscription version's ETag.
    tx.update(tenants)
      .set({ subscriptionVersion: tenant.subscriptionVersion + 1 })
      .where(eq(tenants.id, input.tenantId))
      .run()
    recordSystemEvent(tx, deps, input.tenantId, 'plans.set', input.plan ?? 'no plan')
  })
}

const CODE = /^[a-z][a-z0-9_-]{1,63}$/

/** Creates or edits a catalogue entry. A price of "contract" makes it contract-priced. */
export function upsertPlan({ deps, input }: { deps: Deps; input: { code: string; label?: string; price?: string; serversMax?: string; features?: string } }) {
  if (!CODE.test(input.code))
    throw problems.field('/code', 'pattern', 'a plan code is 2 to 64 characters: a lowercase letter, then lowercase letters, digits, _ or -')
  const existing = findPlan(deps.db, input.code)
  if (!existing && (input.label === undefined || input.price === undefined)) throw problems.field('/label', 'required', 'a new plan needs --label and --price')
  let price = existing?.priceMicrosPerServerMonth ?? null
  if (input.price !== undefined) {
    if (input.price === 'contract') price = null
    else {
      try {
        price = parseMoney(input.price)
      } catch {
        throw problems.field('/price', 'format', `--price ${input.price} is not a USD amount (or "contract")`)
      }
      if (price < 0) throw problems.field('/price', 'too_small', 'a price cannot be negative')
    }
  }
  let serversMax = existing?.serversMax ?? null
  if (input.serversMax !== undefined) {
    if (input.serversMax === 'unlimited') serversMax = null
    else if (/^\d+$/.test(input.serversMax)) serversMax = Number(input.serversMax)
    else throw problems.field('/servers_max', 'format', '--servers-max is a whole number or "unlimited"')
  }
  const features =
    input.features === undefined
      ? existing
        ? JSON.parse(existing.features)
        : []
      : input.features
          .split(',')
          .map((f) => f.trim())
          .filter(Boolean)
  for (const f of features)
    if (!['strategy', 'ai_access'].includes(f)) throw problems.field('/features', 'unknown_feature', `unknown feature ${f} (known: strategy, ai_access)`)
  const row = {
    code: input.code,
    label: input.label ?? existing!.label,
    priceMicrosPerServerMonth: price,
    serversMax,
    features: JSON.stringify(features),
    upgradeEffective: existing?.upgradeEffective ?? ('same_day' as const),
    downgradeEffective: existing?.downgradeEffective ?? ('next_month' as const),
    position: existing?.position ?? 100,
    updatedAt: deps.clock.nowUs(),
  }
  withTransaction(deps.db, (tx) => {
    const before = findPlan(tx, input.code)
    // A price edit is a new price version from the current hour on: hours that passed keep theirs.
    if (before && before.priceMicrosPerServerMonth !== row.priceMicrosPerServerMonth)
      recordPriceChange(tx, deps, row.code, before.priceMicrosPerServerMonth, row.priceMicrosPerServerMonth)
    tx.insert(plans).values(row).onConflictDoUpdate({ target: plans.code, set: row }).run()
  })
  return { created: !existing, plan: row }
}
