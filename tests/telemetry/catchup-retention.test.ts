import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startTestApp, type TestApp } from '../support/app'
import {
  advance,
  BASE,
  DAY,
  dumpRollups,
  feed,
  HOUR,
  iso,
  MIN,
  metrics,
  newRig,
  percentileCont,
  rawCount,
  rollup,
  rollupRow,
  runJob,
  setNow,
  signInAgain,
  stopApp,
  type Rig,
  type Sample,
} from './helpers'

/**
 * The rollup job after downtime (one run catches up on every bucket the raw history still holds)
 * and retention: metrics.prune deletes raw samples and rollups past their configured age and
 * nothing newer. Each describe has its own app, because the rollup watermark is process-wide.
 */

describe('after downtime', () => {
  let app: TestApp
  beforeAll(async () => {
    app = await startTestApp({ LOG_LEVEL: 'silent' })
  })
  afterAll(() => stopApp(app))

  test('one run of a job that never ran rolls up every 5-minute and hourly bucket of seven hours, with the right numbers', async () => {
    // The agent sends seven hours it measured while the job was down (samples may not be dated ahead of the clock).
    await setNow(app, BASE + 7 * HOUR)
    const rig = await newRig(app, { gpus: 1 })
    // Every 2 minutes for 7 hours (past the job's 6-hour chunk): a GPU temperature and a host load.
    const samples: Sample[] = []
    const temp = (i: number) => 40 + ((i * 37) % 29)
    const load = (i: number) => (i * 53) % 100
    for (let i = 0; i < 210; i++)
      samples.push({ t: BASE + i * 2 * MIN, gpu: 0, values: { temperature_c: temp(i) } }, { t: BASE + i * 2 * MIN, values: { cpu_usage_pct: load(i) } })
    await feed(rig.agent, samples)
    const until = Date.now() + 5000
    while ((await rawCount(app, rig.serverId)) < 420 && Date.now() < until) await Bun.sleep(50)
    expect(await rawCount(app, rig.serverId)).toBe(420)
    expect(await dumpRollups(app)).toEqual([])

    await advance(app, 10 * 60) // the job was down the whole time
    await rollup(app)

    for (const [grain, width, buckets] of [
      [300, 5 * MIN, 84],
      [3600, HOUR, 7],
    ] as const) {
      for (let b = 0; b < buckets; b++) {
        const start = BASE + b * width
        const idx = Array.from({ length: 210 }, (_, i) => i).filter((i) => BASE + i * 2 * MIN >= start && BASE + i * 2 * MIN < start + width)
        const temps = idx.map(temp)
        const row = await rollupRow(app, rig.serverId, 'temperature_c', 0, grain, start)
        expect(row).not.toBeNull()
        expect(row!.samples).toBe(idx.length)
        expect(row!.min).toBe(Math.min(...temps))
        expect(row!.max).toBe(Math.max(...temps))
        expect(row!.avg!).toBeCloseTo(temps.reduce((a, c) => a + c, 0) / temps.length, 9)
        expect(row!.p50!).toBeCloseTo(percentileCont(temps, 0.5), 9)
        expect(row!.p95!).toBeCloseTo(percentileCont(temps, 0.95), 9)
        expect(row!.last).toBe(temp(idx[idx.length - 1]!))
        const loads = idx.map(load)
        expect(await rollupRow(app, rig.serverId, 'cpu_usage_pct', -1, grain, start)).toMatchObject({
          samples: idx.length,
          max: Math.max(...loads),
          last: loads[loads.length - 1],
        })
      }
    }
    const counts = await app.deps.db.all(sql`SELECT grain, count(*) AS n FROM metric_rollups GROUP BY grain ORDER BY grain`)
    expect(counts).toEqual([
      { grain: 300, n: 2 * 84 },
      { grain: 3600, n: 2 * 7 },
    ])

    // The API reads the same buckets back.
    const hourly = await metrics(app, rig.owner, rig.serverId, [
      ['from', iso(BASE)],
      ['to', iso(BASE + 7 * HOUR)],
      ['resolution', '1h'],
      ['metric', 'temperature_c'],
    ])
    expect(hourly.series[0]!.points.map((p) => p.max)).toEqual(
      Array.from({ length: 7 }, (_, h) => Math.max(...Array.from({ length: 30 }, (_, k) => temp(h * 30 + k)))),
    )
  })
})

describe('retention', () => {
  let app: TestApp
  let rig: Rig
  beforeAll(async () => {
    // The smallest settings the configuration accepts: 2 h raw, 3 days at 5 minutes, 7 days hourly.
    app = await startTestApp({ LOG_LEVEL: 'silent', METRICS_RAW_RETENTION_HOURS: '2', METRICS_5M_RETENTION_DAYS: '3', METRICS_1H_RETENTION_DAYS: '7' })
    await setNow(app, BASE + 10 * MIN)
    rig = await newRig(app, { gpus: 1 })
  })
  afterAll(() => stopApp(app))

  const rawTimes = async () => ((await app.deps.db.all(sql`SELECT t FROM metric_samples ORDER BY t`)) as { t: number }[]).map((r) => r.t)
  const buckets = async (grain: number) =>
    ((await app.deps.db.all(sql`SELECT DISTINCT bucket FROM metric_rollups WHERE grain = ${grain} ORDER BY bucket`)) as { bucket: number }[]).map(
      (r) => r.bucket,
    )
  const prune = () => runJob(app, 'metrics.prune')

  test('raw samples older than METRICS_RAW_RETENTION_HOURS are deleted, younger ones and every rollup stay', async () => {
    await feed(rig.agent, [{ t: BASE + MIN, gpu: 0, values: { temperature_c: 50 } }])
    await rollup(app)
    await setNow(app, BASE + 2 * HOUR + 30 * MIN)
    await feed(rig.agent, [
      { t: BASE + 20 * MIN, gpu: 0, values: { temperature_c: 51 } }, // 2 h 10 min old: past retention
      { t: BASE + 40 * MIN, gpu: 0, values: { temperature_c: 52 } }, // 1 h 50 min old: kept
      { t: BASE + 2 * HOUR + 20 * MIN, gpu: 0, values: { temperature_c: 53 } },
    ])
    await rollup(app)
    const rollupsBefore = await dumpRollups(app)

    const { detail } = await prune()
    expect(detail).toContain('2 raw samples')
    expect(await rawTimes()).toEqual([BASE + 40 * MIN, BASE + 2 * HOUR + 20 * MIN])
    expect(await dumpRollups(app)).toEqual(rollupsBefore)
    expect(await rollupRow(app, rig.serverId, 'temperature_c', 0, 3600, BASE)).toMatchObject({ min: 50, max: 52, samples: 3 })
  })

  test('rollups keep their numbers after their raw samples are gone, and a later run does not erase them', async () => {
    await advance(app, 5 * 60)
    await rollup(app)
    expect(await rollupRow(app, rig.serverId, 'temperature_c', 0, 300, BASE)).toMatchObject({ min: 50, max: 50, samples: 1 })
    expect(await rollupRow(app, rig.serverId, 'temperature_c', 0, 3600, BASE)).toMatchObject({ min: 50, max: 52, samples: 3 })
  })

  test('a late sample for a bucket whose raw history is already deleted does not replace that bucket with itself', async () => {
    // now ≈ 12:35, so raw history starts ≈ 10:35: the 10:00 bucket's raw samples are gone, the 10:00 hour's partly.
    await feed(rig.agent, [
      { t: BASE + 2 * MIN, gpu: 0, values: { temperature_c: 99 } },
      { t: BASE + 45 * MIN, gpu: 0, values: { temperature_c: 10 } },
    ])
    await rollup(app)
    expect(await rollupRow(app, rig.serverId, 'temperature_c', 0, 300, BASE)).toMatchObject({ min: 50, max: 50, last: 50, samples: 1 })
    expect(await rollupRow(app, rig.serverId, 'temperature_c', 0, 3600, BASE)).toMatchObject({ min: 50, max: 52, samples: 3 })
    // A bucket wholly inside the raw history takes the late sample in.
    expect(await rollupRow(app, rig.serverId, 'temperature_c', 0, 300, BASE + 45 * MIN)).toMatchObject({ min: 10, max: 10, samples: 1 })
    await prune()
  })

  test('5-minute buckets older than METRICS_5M_RETENTION_DAYS are deleted; hourly ones stay until METRICS_1H_RETENTION_DAYS', async () => {
    // Three days and 50 minutes after BASE: the 10:00, 10:20 and 10:40 buckets are past 3 days, 12:20 is not.
    await setNow(app, BASE + 3 * DAY + 50 * MIN)
    await feed(rig.agent, [{ t: BASE + 3 * DAY + 20 * MIN, gpu: 0, values: { temperature_c: 54 } }])
    await rollup(app)
    await prune()
    expect(await buckets(300)).toEqual([BASE + 2 * HOUR + 20 * MIN, BASE + 3 * DAY + 20 * MIN])
    expect(await buckets(3600)).toEqual([BASE, BASE + 2 * HOUR, BASE + 3 * DAY])
    expect(await rawTimes()).toEqual([BASE + 3 * DAY + 20 * MIN])

    // Seven days and 90 minutes after BASE: the 10:00 hour is past 7 days, the 12:00 hour is not.
    await setNow(app, BASE + 7 * DAY + 90 * MIN)
    await prune()
    expect(await buckets(3600)).toEqual([BASE + 2 * HOUR, BASE + 3 * DAY])
    expect(await buckets(300)).toEqual([])
    // The hourly history the API still answers, and a range that reaches back past it answers nulls.
    const owner = await signInAgain(app, rig.owner) // a week has passed
    const snap = await metrics(app, owner, rig.serverId, [
      ['from', iso(BASE)],
      ['to', iso(BASE + 3 * DAY + HOUR)],
      ['metric', 'temperature_c'],
    ])
    expect(snap.resolution).toBe('1h')
    expect(snap.series[0]!.points.filter((p) => p.max !== null).map((p) => [p.t, p.max])).toEqual([
      [iso(BASE + 2 * HOUR), 53],
      [iso(BASE + 3 * DAY), 54],
    ])
  })

  test('the defaults are 48 hours raw, 35 days at 5 minutes and two years hourly', async () => {
    const defaults = await startTestApp({ LOG_LEVEL: 'silent' })
    try {
      expect(defaults.deps.config.metricsRetention).toEqual({ rawHours: 48, fiveMinuteDays: 35, hourlyDays: 730 })
    } finally {
      await defaults.close()
    }
  })
})
