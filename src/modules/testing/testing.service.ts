import { eq } from 'drizzle-orm'
import { serviceSettings, testProbes } from '../../../db/schema'
import { withTransaction, type DbOrTx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { assertIfMatch, etagOf } from '../../platform/etag'
import { problems } from '../../platform/problem'
import { formatTimestamp, parseTimestamp } from '../../platform/time'

/**
 * Test-only verbs (TEST_CLOCK=true, never in production): moving the clock, and "probes", a tiny
 * resource whose only purpose is to give the crash test, the HTTP benchmark and the conventions'
 * tests a real acknowledged write that belongs to no business feature.
 */

const CLOCK_OFFSET_KEY = 'test_clock_offset_us'

export function loadClockOffset(db: DbOrTx): number {
  const row = db.select().from(serviceSettings).where(eq(serviceSettings.key, CLOCK_OFFSET_KEY)).get()
  return row ? Number(row.value) : 0
}

export function saveClockOffset(db: DbOrTx, offsetUs: number, nowUs: number): void {
  withTransaction(db, (tx) =>
    tx
      .insert(serviceSettings)
      .values({ key: CLOCK_OFFSET_KEY, value: String(offsetUs), updatedAt: nowUs })
      .onConflictDoUpdate({ target: serviceSettings.key, set: { value: String(offsetUs), updatedAt: nowUs } })
      .run(),
  )
}

export function moveClock({ deps, input }: { deps: Deps; input: { advance_seconds?: number; now?: string } }) {
  const clock = deps.testClock!
  try {
    if (input.advance_seconds !== undefined) clock.advance(input.advance_seconds)
    else {
      const target = parseTimestamp(input.now!)
      if (target === null) throw problems.field('/now', 'format', 'now must be an RFC 3339 timestamp')
      clock.setNow(target)
    }
  } catch (e) {
    if (e instanceof RangeError) throw problems.field('/now', 'in_the_past', 'the test clock only moves forward')
    throw e
  }
  return { now: formatTimestamp(clock.nowUs()) }
}

type ProbeRow = typeof testProbes.$inferSelect

export function probeView(row: ProbeRow) {
  return { id: row.id, value: row.value, version: row.version, created_at: formatTimestamp(row.createdAt) }
}

export function createProbe({ deps, input }: { deps: Deps; input: { value: string } }): ProbeRow {
  const row: ProbeRow = { id: deps.newId(), value: input.value, version: 1, createdAt: deps.clock.nowUs() }
  withTransaction(deps.db, (tx) => tx.insert(testProbes).values(row).run())
  return row
}

export function getProbe({ deps, id }: { deps: Deps; id: string }): ProbeRow {
  const row = deps.db.select().from(testProbes).where(eq(testProbes.id, id)).get()
  if (!row) throw problems.notFound('no such probe')
  return row
}

export function updateProbe({ deps, id, ifMatch, input }: { deps: Deps; id: string; ifMatch: string | null; input: { value: string } }): ProbeRow {
  return withTransaction(deps.db, (tx) => {
    const row = tx.select().from(testProbes).where(eq(testProbes.id, id)).get()
    if (!row) throw problems.notFound('no such probe')
    assertIfMatch(ifMatch, etagOf(row.version))
    const next = { ...row, value: input.value, version: row.version + 1 }
    tx.update(testProbes).set({ value: next.value, version: next.version }).where(eq(testProbes.id, id)).run()
    return next
  })
}
