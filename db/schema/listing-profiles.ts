import { integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { servers } from './fleet'
import { MARKETPLACES } from '../../src/platform/marketplace-id'
import { serverGroups } from './groups'
import { tenants } from './tenants'

/** A profile's idle job: USD money as decimal strings (per GPU-hour, per TB). */
export type ProfileIdleJob = { image: string; args: string; price_gpu_hour: string; price_inet_up_tb: string | null; price_inet_down_tb: string | null }

/**
 * A group's listing profile on one marketplace (docs/marketplaces.md "Listing profiles"): what every
 * member server's link there should carry. Each setting is optional; null leaves that setting of a
 * member's link as it is. One profile per (group, marketplace); it goes with its group.
 */
export const listingProfiles = sqliteTable(
  'listing_profiles',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    groupId: text('group_id')
      .notNull()
      .references(() => serverGroups.id, { onDelete: 'cascade' }),
    marketplace: text('marketplace', { enum: MARKETPLACES }).notNull(),
    name: text('name').notNull(),
    /** The offer published on each member's link, as PUT …/offer takes it (prices, min bid, min GPU count). */
    offer: text('offer', { mode: 'json' }).$type<Record<string, unknown> | null>(),
    endDateDays: integer('end_date_days'),
    idleJob: text('idle_job', { mode: 'json' }).$type<ProfileIdleJob | null>(),
    keepOn: integer('keep_on', { mode: 'boolean' }),
    version: integer('version').notNull(),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
    appliedAt: integer('applied_at'),
  },
  (t) => [uniqueIndex('listing_profiles_group').on(t.tenantId, t.groupId, t.marketplace)],
)

/**
 * What applying a profile did to each member server, the last time (POST …/apply, or the
 * listing-profiles.apply job for a server that joined the group later). A member with no row has
 * not had the profile yet; the job applies it to those once the owner has applied the profile.
 */
export const listingProfileMembers = sqliteTable(
  'listing_profile_members',
  {
    profileId: text('profile_id')
      .notNull()
      .references(() => listingProfiles.id, { onDelete: 'cascade' }),
    serverId: text('server_id')
      .notNull()
      .references(() => servers.id),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    outcome: text('outcome', { enum: ['done', 'refused', 'skipped'] }).notNull(),
    reason: text('reason'),
    /** The profile's version that was applied. */
    version: integer('version').notNull(),
    appliedAt: integer('applied_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.profileId, t.serverId] })],
)
