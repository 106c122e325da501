import { Type } from '@sinclair/typebox'
import { Money, Nullable } from '../../platform/schemas'

/** A catalogue code: a lowercase letter, then 1 to 63 lowercase letters, digits, _ or -. */
export const PLAN_CODE_PATTERN = '^[a-z][a-z0-9_-]{1,63}$'

/** Capabilities every plan has (docs/billing.md), and the ones a plan adds through its features. */
export const BASE_CAPABILITIES = ['fleet', 'telemetry', 'commands', 'marketplaces', 'earnings', 'cost_basis', 'notifications'] as const
export const EXTRA_CAPABILITIES = ['strategy', 'ai_access'] as const

const Capabilities = Type.Object(
  {
    'fleet.servers.max': Nullable(Type.Integer({ description: 'Managed servers; null means unlimited' })),
    ...Object.fromEntries([...BASE_CAPABILITIES, ...EXTRA_CAPABILITIES].map((c) => [c, Type.Boolean()])),
  },
  { description: 'What the plan allows' },
)

export const Plan = Type.Object({
  code: Type.String({ pattern: PLAN_CODE_PATTERN }),
  label: Type.String(),
  monthly_price_per_server_usd: Nullable(Money({ description: 'null when contract-priced' })),
  contract_priced: Type.Boolean(),
  upgrade_effective: Type.String(),
  downgrade_effective: Type.String(),
  capabilities: Capabilities,
})
