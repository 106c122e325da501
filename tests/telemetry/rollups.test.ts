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
  percentileCont,
  pointAt,
  rawCount,
  rollup,
  rollupRow,
  seriesOf,
  setNow,
  stopApp,
  US,
  type Sample,
} from './helpers'

/**
 * The metrics.rollup job over samples fed through a real agent session: every statistic of a
 * 5-minute and an hourly bucket, half-open bucket boundaries, null values, idempotence and the
 * re-roll of a bucket that receives a late sample. The service clock sits at BASE + 2 h 30 min, so
 * every sample below lies in the past when the job runs.
 */

let app: TestApp
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  await setNow(app, BASE + 2 * HOUR + 30 * MIN)
})
afterAll(() => stopApp(app))

const FIVE = 5 * MIN

describe('a 5-minute bucket', () => {
  test('carries min, max, avg, p50, p95 (percentile_cont, linear interpolation), the latest sample as last, and the sample count', async () => {
    const { owner, serverId, agent } = await newRig(app)
    // Ten readings in [10:00, 10:05), sent out of time order: `last` is the latest by t, not by arrival.
    const readings: [number, number][] = [
      [4 * MIN + 50 * US, 53], // the latest reading of the bucket, sent first
      [0, 50],
      [30 * US, 61],
      [MIN, 55],
      [MIN + 30 * US, 70],
      [2 * MIN, 48],
      [2 * MIN + 30 * US, 66],
      [3 * MIN, 59],
      [3 * MIN + 30 * US, 62],
      [4 * MIN, 75],
    ]
    await feed(
      agent,
      readings.map(([dt, v]) => ({ t: BASE + dt, gpu: 0, values: { temperature_c: v } })),
    )
    await rollup(app)

    const values = readings.map(([, v]) => v)
    const snap = await metrics(app, owner, serverId, [
      ['from', iso(BASE)],
      ['to', iso(BASE + FIVE)],
      ['resolution', '5m'],
      ['metric', 'temperature_c'],
    ])
    expect(snap.resolution).toBe('5m')
    const series = seriesOf(snap, 'temperature_c', 0)
    expect(series).toMatchObject({ scope: 'gpu', gpu_index: 0 })
    expect(series.points).toHaveLength(1)
    const p = pointAt(series, BASE)
    expect(p.min).toBe(48)
    expect(p.max).toBe(75)
    expect(p.avg!).toBeCloseTo(59.9, 9)
    expect(p.p50!).toBeCloseTo(percentileCont(values, 0.5), 9) // (59 + 61) / 2 = 60
    expect(p.p50!).toBeCloseTo(60, 9)
    // 70 + 0.55 × (75 − 70) = 72.75, stored as computed; the answer gives °C to 0.1.
    expect((await rollupRow(app, serverId, 'temperature_c', 0, 300, BASE))!.p95!).toBeCloseTo(percentileCont(values, 0.95), 9)
    expect((await rollupRow(app, serverId, 'temperature_c', 0, 300, BASE))!.p95!).toBeCloseTo(72.75, 9)
    expect(p.p95).toBe(72.8)
    expect(p.last).toBe(53)
    expect((await rollupRow(app, serverId, 'temperature_c', 0, 300, BASE))?.samples).toBe(10)
  })

  test('a sample exactly at 10:05:00.000000 belongs to the 10:05 bucket and one a microsecond earlier to the 10:00 bucket', async () => {
    const { owner, serverId, agent } = await newRig(app)
    await feed(agent, [
      { t: BASE + FIVE - 1, gpu: 1, values: { fan_pct: 10 } },
      { t: BASE + FIVE, gpu: 1, values: { fan_pct: 20 } },
      { t: BASE + HOUR - 1, gpu: 1, values: { fan_pct: 30 } },
      { t: BASE + HOUR, gpu: 1, values: { fan_pct: 40 } },
    ])
    await rollup(app)

    const five = seriesOf(
      await metrics(app, owner, serverId, [
        ['from', iso(BASE)],
        ['to', iso(BASE + 2 * HOUR)],
        ['resolution', '5m'],
        ['metric', 'fan_pct'],
      ]),
      'fan_pct',
      1,
    )
    expect(pointAt(five, BASE)).toMatchObject({ min: 10, max: 10, last: 10 })
    expect(pointAt(five, BASE + FIVE)).toMatchObject({ min: 20, max: 20, last: 20 })
    expect(pointAt(five, BASE + HOUR - FIVE)).toMatchObject({ min: 30, max: 30, last: 30 })
    expect(pointAt(five, BASE + HOUR)).toMatchObject({ min: 40, max: 40, last: 40 })
    expect((await rollupRow(app, serverId, 'fan_pct', 1, 300, BASE))?.samples).toBe(1)
    expect((await rollupRow(app, serverId, 'fan_pct', 1, 300, BASE + FIVE))?.samples).toBe(1)

    const hourly = seriesOf(
      await metrics(app, owner, serverId, [
        ['from', iso(BASE)],
        ['to', iso(BASE + 2 * HOUR)],
        ['resolution', '1h'],
        ['metric', 'fan_pct'],
      ]),
      'fan_pct',
      1,
    )
    expect(hourly.points.map((x) => [x.t, x.min, x.max, x.last])).toEqual([
      [iso(BASE), 10, 30, 30],
      [iso(BASE + HOUR), 40, 40, 40],
    ])
  })
})

describe('an hourly bucket', () => {
  test('is computed from every raw sample of the hour, not from the 5-minute buckets', async () => {
    const { owner, serverId, agent } = await newRig(app)
    // 11:00–12:00: twelve readings in the first 5-minute bucket, one in each of three later ones.
    // The average of the 5-minute averages (≈ 208.9) differs from the hour's average (≈ 133.1).
    const h = BASE + HOUR
    const samples: Sample[] = []
    for (let i = 0; i < 12; i++) samples.push({ t: h + i * 20 * US, gpu: 1, values: { power_w: 100 + i } })
    samples.push({ t: h + 20 * MIN, gpu: 1, values: { power_w: 300 } })
    samples.push({ t: h + 40 * MIN, gpu: 1, values: { power_w: 50 } })
    samples.push({ t: h + 59 * MIN + 59 * US, gpu: 1, values: { power_w: 380 } })
    await feed(agent, samples)
    await rollup(app)

    const values = samples.map((s) => s.values.power_w as number)
    const snap = await metrics(app, owner, serverId, [
      ['from', iso(h)],
      ['to', iso(h + HOUR)],
      ['resolution', '1h'],
      ['metric', 'power_w'],
    ])
    expect(snap.resolution).toBe('1h')
    const p = pointAt(seriesOf(snap, 'power_w', 1), h)
    expect(p.min).toBe(50)
    expect(p.max).toBe(380)
    // 1996 / 15 = 133.0666…, stored as computed; the answer gives watts to 0.1.
    expect((await rollupRow(app, serverId, 'power_w', 1, 3600, h))!.avg!).toBeCloseTo(values.reduce((a, b) => a + b, 0) / values.length, 9)
    expect(p.avg).toBe(133.1)
    expect(p.p50!).toBeCloseTo(percentileCont(values, 0.5), 9)
    expect(p.p50!).toBeCloseTo(106, 9) // the 8th of 15 sorted readings
    expect(p.p95!).toBeCloseTo(percentileCont(values, 0.95), 9)
    expect(p.p95!).toBeCloseTo(324, 9) // rank 13.3 (0-based) of 15: 300 + 0.3 × (380 − 300)
    expect(p.last).toBe(380)
    expect((await rollupRow(app, serverId, 'power_w', 1, 3600, h))?.samples).toBe(15)
    // The same hour at 5 minutes: the first bucket holds only its own twelve readings.
    const first = pointAt(
      seriesOf(
        await metrics(app, owner, serverId, [
          ['from', iso(h)],
          ['to', iso(h + HOUR)],
          ['resolution', '5m'],
          ['metric', 'power_w'],
        ]),
        'power_w',
        1,
      ),
      h,
    )
    expect(first).toMatchObject({ min: 100, max: 111, last: 111 })
    expect(first.avg!).toBeCloseTo(105.5, 9)
  })
})

describe('null readings', () => {
  test('a null value is stored; the statistics skip it, and a bucket of nothing but nulls answers nulls', async () => {
    const { owner, serverId, agent } = await newRig(app)
    await feed(agent, [
      { t: BASE + 10 * MIN, gpu: 0, values: { utilization_pct: 40 } },
      { t: BASE + 11 * MIN, gpu: 0, values: { utilization_pct: null } },
      { t: BASE + 12 * MIN, gpu: 0, values: { utilization_pct: 60 } },
      { t: BASE + 13 * MIN, gpu: 0, values: { utilization_pct: 80 } },
      { t: BASE + 20 * MIN, gpu: 0, values: { utilization_pct: null } },
      { t: BASE + 21 * MIN, gpu: 0, values: { utilization_pct: null } },
    ])
    await rollup(app)

    expect(await rawCount(app, serverId)).toBe(6)
    const nulls = (await app.deps.db.get(
      sql`SELECT count(*) AS n FROM metric_samples m JOIN metric_series s ON s.id = m.series_id WHERE s.server_id = ${serverId} AND m.value IS NULL`,
    )) as { n: number }
    expect(nulls.n).toBe(3)

    const series = seriesOf(
      await metrics(app, owner, serverId, [
        ['from', iso(BASE + 10 * MIN)],
        ['to', iso(BASE + 25 * MIN)],
        ['metric', 'utilization_pct'],
      ]),
      'utilization_pct',
      0,
    )
    const mixed = pointAt(series, BASE + 10 * MIN)
    expect(mixed).toMatchObject({ min: 40, max: 80, p50: 60, last: 80 })
    expect(mixed.avg!).toBeCloseTo(60, 9)
    expect(mixed.p95!).toBeCloseTo(percentileCont([40, 60, 80], 0.95), 9)
    expect(pointAt(series, BASE + 15 * MIN)).toEqual({ t: iso(BASE + 15 * MIN), min: null, max: null, avg: null, p50: null, p95: null, last: null })
    expect(pointAt(series, BASE + 20 * MIN)).toEqual({ t: iso(BASE + 20 * MIN), min: null, max: null, avg: null, p50: null, p95: null, last: null })
  })
})

describe('running the job', () => {
  test('a second run over the same data leaves every rollup row identical', async () => {
    const { agent } = await newRig(app)
    const samples: Sample[] = []
    for (let i = 0; i < 90; i++)
      samples.push({ t: BASE + i * 97 * US, gpu: i % 2, values: { temperature_c: 40 + ((i * 7) % 23), power_w: 200 + ((i * 13) % 41) } })
    for (let i = 0; i < 30; i++) samples.push({ t: BASE + i * 290 * US, values: { cpu_usage_pct: (i * 11) % 100 } })
    await feed(agent, samples)
    await rollup(app)
    const first = await dumpRollups(app)
    expect(first.length).toBeGreaterThan(0)
    await rollup(app)
    expect(await dumpRollups(app)).toEqual(first)
  })

  test('a late sample for a bucket already rolled up is folded in by the next run, in both grains', async () => {
    const { owner, serverId, agent } = await newRig(app)
    const bucket = BASE + 30 * MIN
    await feed(agent, [
      { t: bucket + MIN, gpu: 0, values: { memory_used_mb: 1000 } },
      { t: bucket + 2 * MIN, gpu: 0, values: { memory_used_mb: 2000 } },
    ])
    await rollup(app)
    expect(await rollupRow(app, serverId, 'memory_used_mb', 0, 300, bucket)).toMatchObject({ min: 1000, max: 2000, last: 2000, samples: 2 })

    // The agent reconnects and flushes a reading it buffered, for a bucket two hours old.
    await feed(agent, [{ t: bucket + 3 * MIN, gpu: 0, values: { memory_used_mb: 500 } }])
    await rollup(app)
    expect(await rollupRow(app, serverId, 'memory_used_mb', 0, 300, bucket)).toMatchObject({ min: 500, max: 2000, last: 500, samples: 3 })
    expect(await rollupRow(app, serverId, 'memory_used_mb', 0, 3600, BASE)).toMatchObject({ min: 500, max: 2000, last: 500, samples: 3 })
    const p = pointAt(
      seriesOf(
        await metrics(app, owner, serverId, [
          ['from', iso(bucket)],
          ['to', iso(bucket + FIVE)],
          ['metric', 'memory_used_mb'],
        ]),
        'memory_used_mb',
        0,
      ),
      bucket,
    )
    expect(p).toMatchObject({ min: 500, max: 2000, p50: 1000, last: 500 })
    // 3500 / 3 stored as computed; the answer gives memory in whole MiB.
    expect((await rollupRow(app, serverId, 'memory_used_mb', 0, 300, bucket))!.avg!).toBeCloseTo(3500 / 3, 9)
    expect(p.avg).toBe(1167)
  })
})
