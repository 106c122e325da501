import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { tenants } from './tenants'
import { servers } from './fleet'

/**
 * What readiness remembers per server and marketplace between evaluations (docs/readiness.md):
 * each item's last known verdict (`pass` or `fail`; an `unknown` keeps the one before), so an item
 * that passed and now fails is a regression once; and the driver and CUDA versions the agent
 * reported while the platform showed the machine verified (the baseline of `driver.unchanged`).
 */
export const readinessStates = sqliteTable(
  'readiness_states',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    serverId: text('server_id')
      .notNull()
      .references(() => servers.id),
    marketplace: text('marketplace').notNull(),
    /** Item id → its last known verdict. */
    verdicts: text('verdicts', { mode: 'json' }).$type<Record<string, 'pass' | 'fail'>>().notNull(),
    baselineDriver: text('baseline_driver'),
    baselineCuda: text('baseline_cuda'),
    /** When the baseline was taken (µs), null before the first. */
    baselineAt: integer('baseline_at'),
    /** The platform's verification state at the last evaluation: a change to `verified` moves the baseline. */
    lastVerification: text('last_verification'),
    evaluatedAt: integer('evaluated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.serverId, t.marketplace] }), index('readiness_states_tenant').on(t.tenantId)],
)
