import { and, eq } from 'drizzle-orm'
import { temperatureWatch } from '../../../db/schema/notifications'
import type { DbOrTx } from '../../../db/client'

export type WatchRow = typeof temperatureWatch.$inferSelect

export function findWatch(db: DbOrTx, serverId: string, gpuIndex: number): WatchRow | undefined {
  return db
    .select()
    .from(temperatureWatch)
    .where(and(eq(temperatureWatch.serverId, serverId), eq(temperatureWatch.gpuIndex, gpuIndex)))
    .get()
}

export function saveWatch(tx: DbOrTx, row: WatchRow): void {
  const { serverId: _s, gpuIndex: _g, ...set } = row
  tx.insert(temperatureWatch)
    .values(row)
    .onConflictDoUpdate({ target: [temperatureWatch.serverId, temperatureWatch.gpuIndex], set })
    .run()
}
