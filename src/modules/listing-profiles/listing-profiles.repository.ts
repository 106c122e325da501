import { and, asc, eq, isNotNull } from 'drizzle-orm'
import type { DbOrTx } from '../../../db/client'
import { changesOf } from '../../../db/client'
import { listingProfileMembers, listingProfiles } from '../../../db/schema/listing-profiles'

export type ProfileRow = typeof listingProfiles.$inferSelect

/** The most profiles a tenant keeps: one per group and marketplace is the natural bound. */
export const MAX_PROFILES = 200

export async function findProfile(db: DbOrTx, tenantId: string, id: string): Promise<ProfileRow | undefined> {
  return await db
    .select()
    .from(listingProfiles)
    .where(and(eq(listingProfiles.tenantId, tenantId), eq(listingProfiles.id, id)))
    .get()
}

export async function profilesOf(db: DbOrTx, tenantId: string): Promise<ProfileRow[]> {
  return await db
    .select()
    .from(listingProfiles)
    .where(eq(listingProfiles.tenantId, tenantId))
    .orderBy(asc(listingProfiles.createdAt), asc(listingProfiles.id))
    .limit(MAX_PROFILES)
    .all()
}

export async function profileOfGroup(db: DbOrTx, tenantId: string, groupId: string, marketplace: ProfileRow['marketplace']): Promise<ProfileRow | undefined> {
  return await db
    .select()
    .from(listingProfiles)
    .where(and(eq(listingProfiles.tenantId, tenantId), eq(listingProfiles.groupId, groupId), eq(listingProfiles.marketplace, marketplace)))
    .get()
}

export async function insertProfile(tx: DbOrTx, row: ProfileRow): Promise<void> {
  await tx.insert(listingProfiles).values(row).run()
}

export async function updateProfile(
  tx: DbOrTx,
  tenantId: string,
  id: string,
  patch: Partial<Omit<ProfileRow, 'id' | 'tenantId' | 'createdAt'>>,
): Promise<void> {
  await tx
    .update(listingProfiles)
    .set(patch)
    .where(and(eq(listingProfiles.tenantId, tenantId), eq(listingProfiles.id, id)))
    .run()
}

export async function deleteProfileRow(tx: DbOrTx, tenantId: string, id: string): Promise<number> {
  return changesOf(
    await tx
      .delete(listingProfiles)
      .where(and(eq(listingProfiles.tenantId, tenantId), eq(listingProfiles.id, id)))
      .run(),
  )
}

export type MemberRow = typeof listingProfileMembers.$inferSelect

/** Profiles the owner has applied at least once, of every tenant (the listing-profiles.apply job walks them). */
export async function appliedProfiles(db: DbOrTx): Promise<ProfileRow[]> {
  return await db
    .select()
    .from(listingProfiles)
    .where(isNotNull(listingProfiles.appliedAt))
    .orderBy(asc(listingProfiles.tenantId), asc(listingProfiles.id))
    .all()
}

export async function membersOf(db: DbOrTx, tenantId: string, profileId: string): Promise<MemberRow[]> {
  return await db
    .select()
    .from(listingProfileMembers)
    .where(and(eq(listingProfileMembers.tenantId, tenantId), eq(listingProfileMembers.profileId, profileId)))
    .all()
}

/** Records what applying the profile did to one member (the last time wins). */
export async function upsertMember(tx: DbOrTx, row: MemberRow): Promise<void> {
  await tx
    .insert(listingProfileMembers)
    .values(row)
    .onConflictDoUpdate({
      target: [listingProfileMembers.profileId, listingProfileMembers.serverId],
      set: { outcome: row.outcome, reason: row.reason, version: row.version, appliedAt: row.appliedAt },
    })
    .run()
}
