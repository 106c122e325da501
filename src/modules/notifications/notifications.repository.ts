import { and, eq } from 'drizzle-orm'
import { chatLinkCodes, notificationChannels, notificationSettings, telegramState } from '../../../db/schema/notifications'
import type { DbOrTx } from '../../../db/client'

export type SettingsRow = typeof notificationSettings.$inferSelect
export type ChannelRow = typeof notificationChannels.$inferSelect
export type ChannelKind = ChannelRow['kind']

export async function findSettings(db: DbOrTx, tenantId: string): Promise<SettingsRow | undefined> {
  return await db.select().from(notificationSettings).where(eq(notificationSettings.tenantId, tenantId)).get()
}

export async function saveSettings(tx: DbOrTx, row: SettingsRow): Promise<void> {
  const { tenantId: _t, ...set } = row
  await tx.insert(notificationSettings).values(row).onConflictDoUpdate({ target: notificationSettings.tenantId, set }).run()
}

export async function findChannel(db: DbOrTx, tenantId: string, kind: ChannelKind): Promise<ChannelRow | undefined> {
  return await db
    .select()
    .from(notificationChannels)
    .where(and(eq(notificationChannels.tenantId, tenantId), eq(notificationChannels.kind, kind)))
    .get()
}

export async function saveChannel(tx: DbOrTx, row: ChannelRow): Promise<void> {
  const { tenantId: _t, kind: _k, ...set } = row
  await tx
    .insert(notificationChannels)
    .values(row)
    .onConflictDoUpdate({ target: [notificationChannels.tenantId, notificationChannels.kind], set })
    .run()
}

export async function insertLinkCode(tx: DbOrTx, row: typeof chatLinkCodes.$inferInsert): Promise<void> {
  await tx.insert(chatLinkCodes).values(row).run()
}

/** Spends an unexpired, unused code; answers its tenant, or undefined. */
export async function spendLinkCode(tx: DbOrTx, codeHash: string, now: number): Promise<string | undefined> {
  const row = await tx.select().from(chatLinkCodes).where(eq(chatLinkCodes.codeHash, codeHash)).get()
  if (!row || row.usedAt !== null || row.expiresAt <= now) return undefined
  await tx.update(chatLinkCodes).set({ usedAt: now }).where(eq(chatLinkCodes.codeHash, codeHash)).run()
  return row.tenantId
}

export async function updateOffset(db: DbOrTx): Promise<number> {
  return (await db.select().from(telegramState).where(eq(telegramState.id, 'updates')).get())?.updateOffset ?? 0
}

export async function setUpdateOffset(tx: DbOrTx, offset: number): Promise<void> {
  await tx
    .insert(telegramState)
    .values({ id: 'updates', updateOffset: offset })
    .onConflictDoUpdate({ target: telegramState.id, set: { updateOffset: offset } })
    .run()
}
