import { and, eq } from 'drizzle-orm'
import { notificationChannels, notificationSettings } from '../../../db/schema'
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
