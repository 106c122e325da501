import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { tenants } from './tenants'
import { users } from './users'
import { MARKETPLACES } from '../../src/platform/marketplace-id'

/** What a pricing policy applies to: named servers, one group, or every server of one GPU model. */
export type PolicyTarget = { kind: 'servers'; serverIds: string[] } | { kind: 'group'; groupId: string } | { kind: 'gpu_model'; gpuModel: string }

/**
 * A pricing policy of a tenant (docs/strategy.md): on one marketplace, for its target, the price a
 * listed offer should have: the market's price at `target_percentile`, never below the floor
 * (the owner's costs per GPU-hour plus `min_margin_percent`, grossed up by the platform's cut) nor
 * above `ceiling`, rounded to `rounding_step`, looked at every `cadence_minutes`. Money is integer
 * micro-USD per GPU-hour.
 */
export const strategyPolicies = sqliteTable(
  'strategy_policies',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    name: text('name').notNull(),
    marketplace: text('marketplace', { enum: MARKETPLACES }).notNull(),
    target: text('target', { mode: 'json' }).$type<PolicyTarget>().notNull(),
    /** Percent as a decimal string (0..1000), e.g. "15". */
    minMarginPercent: text('min_margin_percent').notNull(),
    targetPercentile: integer('target_percentile').notNull(),
    ceilingMicros: integer('ceiling_micros'),
    roundingStepMicros: integer('rounding_step_micros').notNull(),
    cadenceMinutes: integer('cadence_minutes').notNull(),
    /** marketplace_a: whether to raise a price while renters run (each gets a pending increase) or hold it. */
    raiseWhileRented: text('raise_while_rented', { enum: ['hold', 'allow'] }).notNull(),
    /** marketplace_b: the coin the per-day server price is set in. */
    coin: text('coin'),
    enabled: integer('enabled', { mode: 'boolean' }).notNull(),
    version: integer('version').notNull(),
    lastRunAt: integer('last_run_at'),
    createdBy: text('created_by').references(() => users.id),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [index('strategy_policies_tenant').on(t.tenantId, t.id)],
)

/**
 * One suggestion of a policy for one offer: the price it would set, why, and what it expects the
 * change to earn. `pending` until accepted, dismissed, or superseded by a newer suggestion for the
 * same offer; `accepting` while its publication is under way (claimed, so two accepts publish once).
 */
export const strategySuggestions = sqliteTable(
  'strategy_suggestions',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    policyId: text('policy_id').notNull(),
    serverId: text('server_id').notNull(),
    marketplace: text('marketplace', { enum: MARKETPLACES }).notNull(),
    state: text('state', { enum: ['pending', 'accepting', 'accepted', 'dismissed', 'superseded'] }).notNull(),
    /** The evaluation as the API shows it (prices, reasons, expected change), fixed when made. */
    evaluation: text('evaluation', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    /** The offer body accept publishes (the API's offer fields). */
    offer: text('offer', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    currentMicros: integer('current_micros'),
    suggestedMicros: integer('suggested_micros').notNull(),
    createdAt: integer('created_at').notNull(),
    claimedAt: integer('claimed_at'),
    decidedAt: integer('decided_at'),
    decidedBy: text('decided_by'),
    dismissReason: text('dismiss_reason'),
    /** What accepting answered (the publication's warnings), kept so a repeated accept answers the same. */
    outcome: text('outcome', { mode: 'json' }).$type<Record<string, unknown>>(),
  },
  (t) => [index('strategy_suggestions_tenant').on(t.tenantId, t.id), index('strategy_suggestions_offer').on(t.tenantId, t.serverId, t.marketplace, t.state)],
)
