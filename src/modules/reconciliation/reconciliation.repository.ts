import { and, asc, eq, gte, lte } from 'drizzle-orm'
import type { DbOrTx } from '../../../db/client'
import { platformPayouts, reconciliationFlags, reconciliationSettings, walletBalances } from '../../../db/schema/reconciliation'

export type SettingsRow = typeof reconciliationSettings.$inferSelect
export type PayoutRow = typeof platformPayouts.$inferSelect
export type WalletRow = typeof walletBalances.$inferSelect
export type FlagRow = typeof reconciliationFlags.$inferSelect

export function findSettings(db: DbOrTx, tenantId: string): SettingsRow | undefined {
  return db.select().from(reconciliationSettings).where(eq(reconciliationSettings.tenantId, tenantId)).get()
}

export function saveSettings(tx: DbOrTx, row: SettingsRow): void {
  tx.insert(reconciliationSettings)
    .values(row)
    .onConflictDoUpdate({
      target: reconciliationSettings.tenantId,
      set: { gapThresholdUsdMicros: row.gapThresholdUsdMicros, version: row.version, updatedAt: row.updatedAt },
    })
    .run()
}

/** Inserts each payout, or refreshes the one with its id (a platform may correct an entry). */
export function upsertPayouts(tx: DbOrTx, rows: PayoutRow[]): void {
  for (const row of rows)
    tx.insert(platformPayouts)
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

export function payoutsBetween(db: DbOrTx, tenantId: string, fromDay: string, toDay: string): PayoutRow[] {
  return db
    .select()
    .from(platformPayouts)
    .where(and(eq(platformPayouts.tenantId, tenantId), gte(platformPayouts.day, fromDay), lte(platformPayouts.day, toDay)))
    .orderBy(asc(platformPayouts.startAt), asc(platformPayouts.externalId))
    .all()
}

/** The day's last reading of each wallet replaces an earlier one of the same day. */
export function upsertWallets(tx: DbOrTx, rows: WalletRow[]): void {
  for (const row of rows)
    tx.insert(walletBalances)
      .values(row)
      .onConflictDoUpdate({
        target: [walletBalances.tenantId, walletBalances.marketplace, walletBalances.currency, walletBalances.day],
        set: { balance: row.balance, usdMicros: row.usdMicros, observedAt: row.observedAt },
      })
      .run()
}

export function walletsBetween(db: DbOrTx, tenantId: string, fromDay: string, toDay: string): WalletRow[] {
  return db
    .select()
    .from(walletBalances)
    .where(and(eq(walletBalances.tenantId, tenantId), gte(walletBalances.day, fromDay), lte(walletBalances.day, toDay)))
    .orderBy(asc(walletBalances.day), asc(walletBalances.marketplace), asc(walletBalances.currency))
    .all()
}

export function flagsOf(db: DbOrTx, tenantId: string): FlagRow[] {
  return db.select().from(reconciliationFlags).where(eq(reconciliationFlags.tenantId, tenantId)).all()
}

/** Replaces the tenant's flagged rows with `rows`. */
export function replaceFlags(tx: DbOrTx, tenantId: string, rows: FlagRow[]): void {
  tx.delete(reconciliationFlags).where(eq(reconciliationFlags.tenantId, tenantId)).run()
  if (rows.length) tx.insert(reconciliationFlags).values(rows).run()
}

/** Tenants with a flagged row (their alert may need resolving although no account is connected any more). */
export function flaggedTenants(db: DbOrTx): string[] {
  return db
    .selectDistinct({ tenantId: reconciliationFlags.tenantId })
    .from(reconciliationFlags)
    .all()
    .map((r) => r.tenantId)
}
