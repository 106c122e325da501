import { withTransaction, type DbOrTx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { formatMoney, parseMoney } from '../../platform/money'
import { recordPriceChange } from './plan-history.repository'
import { invalidPlanField as invalid } from './plans.errors'
import { BASE_CAPABILITIES, EXTRA_CAPABILITIES, PLAN_CODE_PATTERN } from './plans.model'
import { findPlan, listPlans, savePlan, type PlanRow } from './plans.repository'

export function planView(p: PlanRow) {
  return {
    code: p.code,
    label: p.label,
    monthly_price_per_server_usd: p.priceMicrosPerServerMonth === null ? null : formatMoney(p.priceMicrosPerServerMonth),
    contract_priced: p.priceMicrosPerServerMonth === null,
    upgrade_effective: p.upgradeEffective,
    downgrade_effective: p.downgradeEffective,
    capabilities: {
      'fleet.servers.max': p.serversMax,
      ...Object.fromEntries(BASE_CAPABILITIES.map((c) => [c, true])),
      ...Object.fromEntries(EXTRA_CAPABILITIES.map((c) => [c, p.features.includes(c)])),
    },
  }
}

export async function listPlanViews({ deps }: { deps: Deps }) {
  return { items: (await listPlans(deps.db)).map(planView) }
}

/** The features of a plan code ([] when unknown): what access checks read for plan entitlement. */
export async function featuresOfPlan(db: DbOrTx, code: string): Promise<string[]> {
  return (await findPlan(db, code))?.features ?? []
}

const CODE = new RegExp(PLAN_CODE_PATTERN)

/** Operator verb (scripts/admin): creates or edits a catalogue entry. A price of "contract" makes it contract-priced. */
export async function upsertPlan({
  deps,
  input,
}: {
  deps: Deps
  input: { code: string; label?: string; price?: string; serversMax?: string; features?: string }
}) {
  if (!CODE.test(input.code)) throw invalid('/code', 'pattern', 'a plan code is 2 to 64 characters: a lowercase letter, then lowercase letters, digits, _ or -')
  const existing = await findPlan(deps.db, input.code)
  if (!existing && (input.label === undefined || input.price === undefined)) throw invalid('/label', 'required', 'a new plan needs --label and --price')
  let price = existing?.priceMicrosPerServerMonth ?? null
  if (input.price !== undefined) {
    if (input.price === 'contract') price = null
    else {
      try {
        price = parseMoney(input.price)
      } catch {
        throw invalid('/price', 'format', `--price ${input.price} is not a USD amount (or "contract")`)
      }
      if (price < 0) throw invalid('/price', 'too_small', 'a price cannot be negative')
    }
  }
  let serversMax = existing?.serversMax ?? null
  if (input.serversMax !== undefined) {
    if (input.serversMax === 'unlimited') serversMax = null
    else if (/^\d+$/.test(input.serversMax)) serversMax = Number(input.serversMax)
    else throw invalid('/servers_max', 'format', '--servers-max is a whole number or "unlimited"')
  }
  const features =
    input.features === undefined
      ? (existing?.features ?? [])
      : input.features
          .split(',')
          .map((f) => f.trim())
          .filter(Boolean)
  const known: readonly string[] = EXTRA_CAPABILITIES
  for (const f of features)
    if (!known.includes(f)) throw invalid('/features', 'unknown_feature', `unknown feature ${f} (known: ${EXTRA_CAPABILITIES.join(', ')})`)
  const row: PlanRow = {
    code: input.code,
    label: input.label ?? existing!.label,
    priceMicrosPerServerMonth: price,
    serversMax,
    features,
    upgradeEffective: existing?.upgradeEffective ?? 'same_day',
    downgradeEffective: existing?.downgradeEffective ?? 'next_month',
    position: existing?.position ?? 100,
    updatedAt: deps.clock.nowUs(),
  }
  await withTransaction(deps.db, async (tx) => {
    const before = await findPlan(tx, input.code)
    // A price edit is a new price version from the current hour on: hours that passed keep theirs.
    if (before && before.priceMicrosPerServerMonth !== row.priceMicrosPerServerMonth)
      await recordPriceChange(tx, deps, row.code, before.priceMicrosPerServerMonth, row.priceMicrosPerServerMonth)
    await savePlan(tx, row)
  })
  return { created: !existing, plan: row }
}
