import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { tenants } from './tenants'
import { MARKETPLACES } from '../../src/platform/marketplace-id'

/**
 * One machine, one marketplace, one UTC day of earnings (the spec's "Earnings row";
 * docs/earnings.md). The accrual is gpuhq's own count of running deals' price × time, before the
 * platform's cut; `platform_usd_micros` is the platform's own figure after its cut (Vast's
 * machine-earnings), null when it said nothing. Times are kept in microseconds, reported in seconds.
 * `by_currency` maps a deal currency (the platform's spelling) to its coin amount in units of
 * 10^-12 (as decimal text) and its USD at the rates of the accrual moments.
 */
export const earningsDays = sqliteTable(
  'earnings_days',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    serverId: text('server_id').notNull(),
    marketplace: text('marketplace', { enum: MARKETPLACES }).notNull(),
    day: text('day').notNull(),
    accruedUsdMicros: integer('accrued_usd_micros').notNull(),
    accruedUs: integer('accrued_us').notNull(),
    gapUs: integer('gap_us').notNull(),
    samples: integer('samples').notNull(),
    platformUsdMicros: integer('platform_usd_micros'),
    byCurrency: text('by_currency', { mode: 'json' }).$type<Record<string, { amount12: string; usdMicros: number }>>().notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.serverId, t.marketplace, t.day] }), index('earnings_days_tenant_day').on(t.tenantId, t.day)],
)

/**
 * How far each (server, marketplace) has been accrued: the next sample covers [accrued_until, now).
 * Moving it is the exactly-once step: a sample that finds it moved accrues nothing.
 */
export const earningsWatermarks = sqliteTable(
  'earnings_watermarks',
  {
    tenantId: text('tenant_id').notNull(),
    serverId: text('server_id').notNull(),
    marketplace: text('marketplace', { enum: MARKETPLACES }).notNull(),
    accruedUntil: integer('accrued_until').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.serverId, t.marketplace] })],
)

/** When the platform's own earnings report was last read for a tenant's account (read at most hourly). */
export const earningsReports = sqliteTable(
  'earnings_reports',
  {
    tenantId: text('tenant_id').notNull(),
    marketplace: text('marketplace', { enum: MARKETPLACES }).notNull(),
    readAt: integer('read_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.marketplace] })],
)
