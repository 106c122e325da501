import { and, eq } from 'drizzle-orm'
import { temperatureWatch } from '../../../db/schema/notifications'
import type { DbOrTx } from '../../../db/client'

export type WatchRow = typeof temperatureWatch.$inferSelect

export async function findWatch(db: DbOrTx, serverId: string, gpuIndex: number): Promise<WatchRow | undefined> {
  return await db
    .select()
    .from(temperatureWatch)
    .where(and(eq(temperatureWatch.serverId, serverId), eq(temperatureWatch.gpuIndex, gpuIndex)))
    .get()
}

export async function saveWatch(tx: DbOrTx, row: WatchRow): Promise<void> {
  const { serverId: _s, gpuIndex: _g, ...set } = row
  await tx
    .insert(temperatureWatch)
    .values(row)
    .onConflictDoUpdate({ target: [temperatureWatch.serverId, temperatureWatch.gpuIndex], set })
    .run()
}
