import { Elysia } from 'elysia'
import { Type } from '@sinclair/typebox'
import { actorOf, describe } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { formatMoney } from '../../platform/money'
import { Money, Nullable, responses } from '../../platform/schemas'
import { managedServerCount } from '../billing/billing.service'
import { findTenant } from '../tenants/tenants.repository'
import { findPlan, listPlans, planFeatures, type PlanRow } from './plans.repository'

/** Capabilities every plan has (decisions.md), and the ones a plan adds. */
export const BASE_CAPABILITIES = ['fleet', 'telemetry', 'commands', 'marketplaces', 'earnings', 'cost_basis', 'notifications'] as const
export const EXTRA_CAPABILITIES = ['strategy', 'ai_access'] as const

const Capabilities = Type.Object(
  {
    'fleet.servers.max': Nullable(Type.Integer({ description: 'Managed servers; null means unlimited' })),
    ...Object.fromEntries([...BASE_CAPABILITIES, ...EXTRA_CAPABILITIES].map((c) => [c, Type.Boolean()])),
  },
  { description: 'What the plan allows' },
)
const Plan = Type.Object({
  code: Type.String({ pattern: '^[a-z][a-z0-9_-]{1,63}$' }),
  label: Type.String(),
  monthly_price_per_server_usd: Nullable(Money({ description: 'null when contract-priced' })),
  contract_priced: Type.Boolean(),
  upgrade_effective: Type.String(),
  downgrade_effective: Type.String(),
  capabilities: Capabilities,
})

export function planView(p: PlanRow) {
  const features = planFeatures(p)
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
      ...Object.fromEntries(EXTRA_CAPABILITIES.map((c) => [c, features.includes(c)])),
    },
  }
}

export function plansRoutes(deps: Deps) {
  return new Elysia({ name: 'plans', prefix: '/api/v1' })
    .get('/plans', () => ({ items: listPlans(deps.db).map(planView) }), {
      response: responses({ 200: Type.Object({ items: Type.Array(Plan) }) }, []),
      detail: describe({ public: true }, { tags: ['plans'], summary: 'Public plan catalogue with its capability matrix' }),
    })
    .get(
      '/plans/current',
      ({ request }) => {
        const actor = actorOf(request)
        const tenant = findTenant(deps.db, actor.tenantId)!
        const plan = tenant.planCode ? findPlan(deps.db, tenant.planCode) : undefined
        const used = managedServerCount(deps, actor.tenantId)
        return {
          plan: plan ? planView(plan) : null,
          usage: { managed_servers: used, servers_left: plan ? (plan.serversMax === null ? null : Math.max(0, plan.serversMax - used)) : 0 },
          account_state: tenant.accountState,
        }
      },
      {
        response: responses(
          {
            200: Type.Object({
              plan: Nullable(Plan),
              usage: Type.Object({ managed_servers: Type.Integer(), servers_left: Nullable(Type.Integer({ description: 'null means unlimited' })) }),
              account_state: Type.String(),
            }),
          },
          [401, 403],
        ),
        detail: describe(
          { role: 'viewer', scope: 'billing:read' },
          { tags: ['plans'], summary: "What the tenant's plan allows now", description: 'plan is null when the tenant has no plan assignment.' },
        ),
      },
    )
}
