import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startTestApp, type TestApp } from '../support/app'
import {
  BASE,
  dumpRollups,
  feed,
  HOUR,
  iso,
  MIN,
  metrics,
  newRig,
  rawCount,
  rollup,
  runJob,
  setNow,
  stopApp,
  US,
  type Rig,
  type Sample,
  type Snapshot,
} from './helpers'

/**
 * The bulk jobs of telemetry work in short transactions (docs/telemetry.md "Slices"): metrics.rollup
 * takes a batch of series per transaction and metrics.prune a batch of rows, yielding between them.
 * Slicing changes no number: a rollup made in many transactions equals the same buckets computed at
 * read time from the raw samples in one query, a second run changes nothing, and samples written
 * while a run is under way are in their buckets after the next run.
 */

const METRICS = Array.from({ length: 16 }, (_, k) => `load_${k}_pct`)
const GPUS = 8

/** Every 30 s for two hours: 8 GPUs × 16 metrics (128 series, past the rollup's first batch of 64). */
function twoHours(): Sample[] {
  const samples: Sample[] = []
  for (let i = 0; i < 240; i++)
    for (let g = 0; g < GPUS; g++)
      samples.push({ t: BASE + i * 30 * US, gpu: g, values: Object.fromEntries(METRICS.map((m, k) => [m, ((i * 7 + g * 13 + k * 3) % 97) + k / 4])) })
  return samples
}

const transactions = (detail: string) => Number(/in (\d+) transactions/.exec(detail)?.[1] ?? 0)

describe('metrics.rollup in slices', () => {
  let app: TestApp
  let rig: Rig
  beforeAll(async () => {
    app = await startTestApp({ LOG_LEVEL: 'silent' })
    await setNow(app, BASE + 2 * HOUR + 10 * MIN)
    rig = await newRig(app, { gpus: GPUS })
  })
  afterAll(() => stopApp(app))

  const read = (resolution: '5m' | '1h', shift: number) =>
    metrics(app, rig.owner, rig.serverId, [
      ['from', iso(BASE + shift)], // a microsecond later each time: same buckets, not the cached answer
      ['to', iso(BASE + 2 * HOUR)],
      ['resolution', resolution],
      ...METRICS.map((m) => ['metric', m] as [string, string]),
    ])
  const seriesOf = (s: Snapshot) => s.series

  test('many transactions give the buckets one read of the raw samples gives, and a second run changes nothing', async () => {
    await feed(rig.agent, twoHours())
    await runJob(app, 'presence.sweep') // writes what the session sent
    expect(await rawCount(app, rig.serverId)).toBe(240 * GPUS * METRICS.length)

    // Before the job's first run every bucket is computed from the raw samples at read time.
    const fromRaw = { five: await read('5m', 0), hourly: await read('1h', 0) }
    expect(fromRaw.five.series).toHaveLength(GPUS * METRICS.length)

    const first = await rollup(app)
    // 128 series in batches (64 at first): more than one transaction per span of buckets and grain.
    expect(transactions(first.detail)).toBeGreaterThan(2)
    const stored = await dumpRollups(app)
    expect(stored.length).toBe(GPUS * METRICS.length * (24 + 2))

    expect(seriesOf(await read('5m', 1))).toEqual(seriesOf(fromRaw.five))
    expect(seriesOf(await read('1h', 1))).toEqual(seriesOf(fromRaw.hourly))

    await rollup(app)
    expect(await dumpRollups(app)).toEqual(stored)
  })

  test('a sample written while a run is under way is in its bucket after the next run', async () => {
    const late = BASE + 7 * MIN + 5 * US // the 10:05 bucket, long rolled up
    const running = rollup(app)
    await feed(rig.agent, [{ t: late, gpu: 3, values: { load_0_pct: 1000 } }])
    await runJob(app, 'presence.sweep') // written during the run or just after it: either way it counts
    await running
    await rollup(app)
    const snap = await read('5m', 2)
    const point = snap.series.find((s) => s.metric === 'load_0_pct' && s.gpu_index === 3)!.points.find((p) => p.t === iso(BASE + 5 * MIN))!
    expect(point.max).toBe(1000)
  })
})

describe('metrics.prune in slices', () => {
  let app: TestApp
  beforeAll(async () => {
    app = await startTestApp({ LOG_LEVEL: 'silent', METRICS_RAW_RETENTION_HOURS: '2' })
    await setNow(app, BASE + 2 * HOUR + 10 * MIN)
  })
  afterAll(() => stopApp(app))

  test('deletes in several transactions exactly what is past retention; a second run deletes nothing', async () => {
    const rig = await newRig(app, { gpus: GPUS })
    await feed(rig.agent, twoHours())
    await runJob(app, 'presence.sweep')
    await setNow(app, BASE + 3 * HOUR + 15 * US) // retention ends 15 s after 11:00, between two instants
    const total = await rawCount(app, rig.serverId)
    const kept = ((await app.deps.db.get(sql`SELECT count(*) AS n FROM metric_samples WHERE t >= ${BASE + HOUR + 15 * US}`)) as { n: number }).n

    const first = await runJob(app, 'metrics.prune')
    expect(first.detail).toContain(`removed ${total - kept} raw samples`)
    expect(transactions(first.detail)).toBeGreaterThan(3) // 14,000 rows, 2000 in the first batch, then the two rollup grains
    expect(await rawCount(app, rig.serverId)).toBe(kept)

    const again = await runJob(app, 'metrics.prune')
    expect(again.detail).toContain('removed 0 raw samples, 0 5-minute and 0 hourly buckets')
    expect(await rawCount(app, rig.serverId)).toBe(kept)
  })
})
