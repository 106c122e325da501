import { eq } from 'drizzle-orm'
import { serviceSettings, testProbes } from '../../../db/schema/testing'
import type { DbOrTx } from '../../../db/client'

export type ProbeRow = typeof testProbes.$inferSelect

export function findSetting(db: DbOrTx, key: string): string | undefined {
  return db.select().from(serviceSettings).where(eq(serviceSettings.key, key)).get()?.value
}

export function saveSetting(tx: DbOrTx, key: string, value: string, updatedAt: number): void {
  tx.insert(serviceSettings).values({ key, value, updatedAt }).onConflictDoUpdate({ target: serviceSettings.key, set: { value, updatedAt } }).run()
}

export function insertProbe(tx: DbOrTx, row: ProbeRow): void {
  tx.insert(testProbes).values(row).run()
}

export function findProbe(db: DbOrTx, id: string): ProbeRow | undefined {
  return db.select().from(testProbes).where(eq(testProbes.id, id)).get()
}

export function updateProbeRow(tx: DbOrTx, id: string, patch: Pick<ProbeRow, 'value' | 'version'>): void {
  tx.update(testProbes).set(patch).where(eq(testProbes.id, id)).run()
}
