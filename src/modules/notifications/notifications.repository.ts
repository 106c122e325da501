import { and, eq } from 'drizzle-orm'
import { chatLinkCodes, notificationChannels, notificationSettings, telegramState } from '../../../db/schema/notifications'
import type { DbOrTx } from '../../../db/client'

export type SettingsRow = typeof notificationSettings.$inferSelect
export type ChannelRow = typeof notificationChannels.$inferSelect
export type ChannelKind = ChannelRow['kind']

export function findSettings(db: DbOrTx, tenantId: string): SettingsRow | undefined {
  return db.select().from(notificationSettings).where(eq(notificationSettings.tenantId, tenantId)).get()
}

export function saveSettings(tx: DbOrTx, row: SettingsRow): void {
  const { tenantId: _t, ...set } = row
  tx.insert(notificationSettings).values(row).onConflictDoUpdate({ target: notificationSettings.tenantId, set }).run()
}

export function findChannel(db: DbOrTx, tenantId: string, kind: ChannelKind): ChannelRow | undefined {
  return db
    .select()
    .from(notificationChannels)
    .where(and(eq(notificationChannels.tenantId, tenantId), eq(notificationChannels.kind, kind)))
    .get()
}

export function saveChannel(tx: DbOrTx, row: ChannelRow): void {
  const { tenantId: _t, kind: _k, ...set } = row
  tx.insert(notificationChannels)
    .values(row)
    .onConflictDoUpdate({ target: [notificationChannels.tenantId, notificationChannels.kind], set })
    .run()
}

export function insertLinkCode(tx: DbOrTx, row: typeof chatLinkCodes.$inferInsert): void {
  tx.insert(chatLinkCodes).values(row).run()
}

/** Spends an unexpired, unused code; answers its tenant, or undefined. */
export function spendLinkCode(tx: DbOrTx, codeHash: string, now: number): string | undefined {
  const row = tx.select().from(chatLinkCodes).where(eq(chatLinkCodes.codeHash, codeHash)).get()
  if (!row || row.usedAt !== null || row.expiresAt <= now) return undefined
  tx.update(chatLinkCodes).set({ usedAt: now }).where(eq(chatLinkCodes.codeHash, codeHash)).run()
  return row.tenantId
}

export function updateOffset(db: DbOrTx): number {
  return db.select().from(telegramState).where(eq(telegramState.id, 'updates')).get()?.updateOffset ?? 0
}

export function setUpdateOffset(tx: DbOrTx, offset: number): void {
  tx.insert(telegramState)
    .values({ id: 'updates', updateOffset: offset })
    .onConflictDoUpdate({ target: telegramState.id, set: { updateOffset: offset } })
    .run()
}
