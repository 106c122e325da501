import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startTestApp, type TestApp } from '../support/app'
import { onPostgres } from '../support/postgres'
import { advance, BASE, feed, HOUR, iso, MIN, metrics, newRig, parseIso, pointAt, rollup, runJob, seriesOf, setNow, stopApp, US } from './helpers'

/**
 * A new server's graph: its first samples show within a minute of its first telemetry, whether or
 * not the metrics.rollup job has run (buckets it has not made final are read from the raw
 * samples), and points carry the precision their unit deserves, not float noise.
 */

let app: TestApp
const NOW = BASE + 2 * HOUR + 2 * MIN + 30 * US // 12:02:30, inside the 12:00 bucket
const FIVE = 5 * MIN
const bucketOf = (us: number) => Math.floor(us / FIVE) * FIVE

beforeAll(async () => {
  // JOBS_ENABLED is false in test apps: the rollup job runs only when a test asks for it.
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  await setNow(app, NOW)
})
afterAll(() => stopApp(app))

/** Writes what the agents sent without rolling anything up (presence.sweep flushes first). */
const flush = () => runJob(app, 'presence.sweep')

describe("a new server's graph", () => {
  test('shows its first samples before the rollup job has ever run', async () => {
    const { owner, serverId, agent } = await newRig(app)
    const t = NOW - 20 * US
    await feed(agent, [
      { t, gpu: 0, values: { temperature_c: 61 } },
      { t: t + 10 * US, gpu: 0, values: { temperature_c: 63 } },
    ])
    await flush()
    expect(await app.deps.db.get(sql`SELECT count(*) AS n FROM rollup_watermarks`)).toEqual({ n: 0 })

    const snap = await metrics(app, owner, serverId, [['metric', 'temperature_c']])
    expect(pointAt(seriesOf(snap, 'temperature_c', 0), bucketOf(t))).toEqual({ t: iso(bucketOf(t)), min: 61, max: 63, avg: 62, p50: 62, p95: 62.9, last: 63 })
    // Read from the raw samples, the answer is as of now, not as of a rollup that never ran.
    expect(parseIso(snap.data_as_of)).toBe(parseIso(snap.generated_at))
  })

  test('an answer cached before the first telemetry gives way to the samples within a minute', async () => {
    const { owner, serverId, agent } = await newRig(app)
    const query: [string, string][] = [['metric', 'power_w']]
    expect((await metrics(app, owner, serverId, query)).series).toEqual([]) // cached for up to 60 s

    const t = parseIso((await metrics(app, owner, serverId, [['metric', 'fan_pct']])).generated_at) - US
    await feed(agent, [{ t, gpu: 1, values: { power_w: 250 } }])
    await flush()
    await advance(app, 60)
    const p = pointAt(seriesOf(await metrics(app, owner, serverId, query), 'power_w', 1), bucketOf(t))
    expect(p).toMatchObject({ min: 250, max: 250, last: 250 })
  })

  test('after the job has run, samples in the running bucket still show at once, with the stored buckets before them', async () => {
    const { owner, serverId, agent } = await newRig(app)
    const before = bucketOf(parseIso((await metrics(app, owner, serverId, [['metric', 'fan_pct']])).generated_at)) - FIVE
    await feed(agent, [{ t: before + MIN, gpu: 0, values: { utilization_pct: 40 } }])
    await rollup(app) // the earlier bucket is final now; the watermark sits at the running bucket
    const now = parseIso((await metrics(app, owner, serverId, [['metric', 'fan_pct']])).generated_at)
    await feed(agent, [{ t: now - US, gpu: 0, values: { utilization_pct: 90 } }])
    await flush()

    const series = seriesOf(await metrics(app, owner, serverId, [['metric', 'utilization_pct']]), 'utilization_pct', 0)
    expect(pointAt(series, before)).toMatchObject({ min: 40, max: 40, last: 40 })
    expect(pointAt(series, bucketOf(now))).toMatchObject({ min: 90, max: 90, last: 90 })
  })
})

describe('the precision of a point', () => {
  test('°C, % and W to 0.1, MiB and MHz whole, Mbit/s to 0.01, and an unknown unit without float noise', async () => {
    const { owner, serverId, agent } = await newRig(app)
    const t0 = bucketOf(parseIso((await metrics(app, owner, serverId, [['metric', 'fan_pct']])).generated_at)) - 2 * FIVE
    const values = [
      // Three readings whose average is 32.699999999999996 in floating point.
      { temperature_c: 32.6, fan_pct: 33.33, power_w: 250.123, memory_used_mb: 1000.4, sm_clock_mhz: 1410.6, net_rx_mbps: 0.123, hashrate: 0.1 },
      { temperature_c: 32.7, fan_pct: 33.33, power_w: 250.123, memory_used_mb: 1000.4, sm_clock_mhz: 1410.6, net_rx_mbps: 0.123, hashrate: 0.2 },
      { temperature_c: 32.8, fan_pct: 33.34, power_w: 250.123, memory_used_mb: 1000.4, sm_clock_mhz: 1410.6, net_rx_mbps: 0.123, hashrate: 0.3 },
    ]
    await feed(
      agent,
      values.map((v, i) => ({ t: t0 + i * 10 * US, gpu: 0, values: v })),
    )
    await rollup(app)
    // SQLite's avg() leaves float noise here (PostgreSQL's summation happens to land on 32.7 itself).
    expect(
      (
        (await app.deps.db.get(
          sql`SELECT r.avg FROM metric_rollups r JOIN metric_series s ON s.id = r.series_id WHERE s.server_id = ${serverId} AND s.metric = 'temperature_c' AND r.grain = 300`,
        )) as { avg: number }
      ).avg,
    ).not.toBe(onPostgres ? Number.NaN : 32.7)

    const metricNames = Object.keys(values[0]!)
    const snap = await metrics(
      app,
      owner,
      serverId,
      metricNames.map((m) => ['metric', m] as [string, string]),
    )
    const avg = (m: string) => pointAt(seriesOf(snap, m, 0), t0).avg
    expect(Object.fromEntries(metricNames.map((m) => [m, avg(m)]))).toEqual({
      temperature_c: 32.7,
      fan_pct: 33.3,
      power_w: 250.1,
      memory_used_mb: 1000,
      sm_clock_mhz: 1411,
      net_rx_mbps: 0.12,
      hashrate: 0.2,
    })
    expect(seriesOf(snap, 'hashrate', 0).unit).toBeNull()
  })

  test('halves round away from zero, below zero too, and a value rounding to nothing is 0, not -0', async () => {
    const { owner, serverId, agent } = await newRig(app)
    const t0 = bucketOf(parseIso((await metrics(app, owner, serverId, [['metric', 'fan_pct']])).generated_at)) - 2 * FIVE
    // One reading per metric and bucket: min, max, avg, p50, p95 and last are that reading.
    const values = { ambient_c: -3.25, offset_c: -0.04, drift_pct: 12.25, memory_used_mb: 1000.5, swap_used_mb: -1000.5, net_rx_mbps: 9.125 }
    await feed(agent, [{ t: t0, gpu: 0, values }])
    await rollup(app)
    const names = Object.keys(values)
    const snap = await metrics(
      app,
      owner,
      serverId,
      names.map((m) => ['metric', m] as [string, string]),
    )
    const point = (m: string) => pointAt(seriesOf(snap, m, 0), t0)
    expect(Object.fromEntries(names.map((m) => [m, point(m).last]))).toEqual({
      ambient_c: -3.3,
      offset_c: 0,
      drift_pct: 12.3,
      memory_used_mb: 1001,
      swap_used_mb: -1001,
      net_rx_mbps: 9.13,
    })
    expect(Object.is(point('offset_c').min, 0)).toBe(true)
  })
})
