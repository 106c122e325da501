import { eq } from 'drizzle-orm'
import { serviceSettings, testProbes } from '../../../db/schema/testing'
import { rawSql, type DbOrTx } from '../../../db/client'

export type ProbeRow = typeof testProbes.$inferSelect

export async function findSetting(db: DbOrTx, key: string): Promise<string | undefined> {
  return (await db.select().from(serviceSettings).where(eq(serviceSettings.key, key)).get())?.value
}

export async function saveSetting(tx: DbOrTx, key: string, value: string, updatedAt: number): Promise<void> {
  await tx.insert(serviceSettings).values({ key, value, updatedAt }).onConflictDoUpdate({ target: serviceSettings.key, set: { value, updatedAt } }).run()
}

export async function insertProbe(tx: DbOrTx, row: ProbeRow): Promise<void> {
  await tx.insert(testProbes).values(row).run()
}

export async function findProbe(db: DbOrTx, id: string): Promise<ProbeRow | undefined> {
  return await db.select().from(testProbes).where(eq(testProbes.id, id)).get()
}

export async function updateProbeRow(tx: DbOrTx, id: string, patch: Pick<ProbeRow, 'value' | 'version'>): Promise<void> {
  await tx.update(testProbes).set(patch).where(eq(testProbes.id, id)).run()
}

/** PostgreSQL only: one statement that sleeps `seconds` on the server. */
export async function sleepOnServer(db: DbOrTx, seconds: number): Promise<void> {
  await rawSql(db).run('SELECT pg_sleep($1)', seconds)
}

/** A statement whose cost grows with `n`: a recursive count to it. */
export async function countTo(db: DbOrTx, n: number): Promise<void> {
  await rawSql(db).values('WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < $1) SELECT count(*) FROM c', n)
}
