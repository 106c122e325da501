import { and, asc, eq, gte, lte } from 'drizzle-orm'
import type { DbOrTx } from '../../../db/client'
import { platformPayouts, reconciliationFlags, reconciliationSettings, walletBalances } from '../../../db/schema/reconciliation'

export type SettingsRow = typeof reconciliationSettings.$inferSelect
export type PayoutRow = typeof platformPayouts.$inferSelect
export type WalletRow = typeof walletBalances.$inferSelect
export type FlagRow = typeof reconciliationFlags.$inferSelect

export async function findSettings(db: DbOrTx, tenantId: string): Promise<SettingsRow | undefined> {
  return await db.select().from(reconciliationSettings).where(eq(reconciliationSettings.tenantId, tenantId)).get()
}

export async function saveSettings(tx: DbOrTx, row: SettingsRow): Promise<void> {
  await tx
    .insert(reconciliationSettings)
    .values(row)
    .onConflictDoUpdate({
      target: reconciliationSettings.tenantId,
      set: { gapThresholdUsdMicros: row.gapThresholdUsdMicros, version: row.version, updatedAt: row.updatedAt },
    })
    .run()
}

/** Inserts each payout, or refreshes the one with its id (a platform may correct an entry). */
export async function upsertPayouts(tx: DbOrTx, rows: PayoutRow[]): Promise<void> {
  for (const row of rows)
    await tx
      .insert(platformPayouts)
      .values(row)
      .onConflictDoUpdate({
        target: [platformPayouts.tenantId, platformPayouts.marketplace, platformPayouts.externalId],
        set: {
          type: row.type,
          day: row.day,
          startAt: row.startAt,
          endAt: row.endAt,
          amountUsdMicros: row.amountUsdMicros,
          description: row.description,
          observedAt: row.observedAt,
        },
      })
      .run()
}

export async function payoutsBetween(db: DbOrTx, tenantId: string, fromDay: string, toDay: string): Promise<PayoutRow[]> {
  return await db
    .select()
    .from(platformPayouts)
    .where(and(eq(platformPayouts.tenantId, tenantId), gte(platformPayouts.day, fromDay), lte(platformPayouts.day, toDay)))
    .orderBy(asc(platformPayouts.startAt), asc(platformPayouts.externalId))
    .all()
}

/** The day's last reading of each wallet replaces an earlier one of the same day. */
export async function upsertWallets(tx: DbOrTx, rows: WalletRow[]): Promise<void> {
  for (const row of rows)
    await tx
      .insert(walletBalances)
      .values(row)
      .onConflictDoUpdate({
        target: [walletBalances.tenantId, walletBalances.marketplace, walletBalances.currency, walletBalances.day],
        set: { balance: row.balance, usdMicros: row.usdMicros, observedAt: row.observedAt },
      })
      .run()
}

export async function walletsBetween(db: DbOrTx, tenantId: string, fromDay: string, toDay: string): Promise<WalletRow[]> {
  return await db
    .select()
    .from(walletBalances)
    .where(and(eq(walletBalances.tenantId, tenantId), gte(walletBalances.day, fromDay), lte(walletBalances.day, toDay)))
    .orderBy(asc(walletBalances.day), asc(walletBalances.marketplace), asc(walletBalances.currency))
    .all()
}

export async function flagsOf(db: DbOrTx, tenantId: string): Promise<FlagRow[]> {
  return await db.select().from(reconciliationFlags).where(eq(reconciliationFlags.tenantId, tenantId)).all()
}

/** Replaces the tenant's flagged rows with `rows`. */
export async function replaceFlags(tx: DbOrTx, tenantId: string, rows: FlagRow[]): Promise<void> {
  await tx.delete(reconciliationFlags).where(eq(reconciliationFlags.tenantId, tenantId)).run()
  if (rows.length) await tx.insert(reconciliationFlags).values(rows).run()
}

/** Tenants with a flagged row (their alert may need resolving although no account is connected any more). */
export async function flaggedTenants(db: DbOrTx): Promise<string[]> {
  return (await db.selectDistinct({ tenantId: reconciliationFlags.tenantId }).from(reconciliationFlags).all()).map((r) => r.tenantId)
}
