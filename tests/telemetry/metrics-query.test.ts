import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { MetricsSnapshot } from '../../src/modules/telemetry/metrics.model'
import { startTestApp, type TestApp } from '../support/app'
import type { Owner } from '../support/fleet'
import {
  BASE,
  DAY,
  feed,
  getMetrics,
  HOUR,
  iso,
  MIN,
  metrics,
  newRig,
  parseIso,
  pointAt,
  rollup,
  seriesOf,
  setNow,
  stopApp,
  type Sample,
  type Snapshot,
} from './helpers'

/**
 * GET /servers/{id}/metrics: the default range, resolution selection (auto, the 1m alias, hourly
 * rollups past 48 h), one point per bucket with nulls where nothing was measured, the default
 * metric set, ?metric=a&metric=b, gpu_index, and unknown but well-formed metric names.
 *
 * One rig with two GPUs reported twice: at T0 (day one, 10:01) and at T1 (day two, 15:01).
 * The clock stands at day two, 16:02, so the last 24 hours hold T1 but not T0.
 */

const T0 = BASE + MIN
const T1 = BASE + 29 * HOUR + MIN
const FIVE = 5 * MIN

let app: TestApp
let owner: Owner
let serverId: string

const gpuValues = (gpu: number, base: number) => ({
  temperature_c: base + gpu,
  hotspot_temperature_c: base + 10 + gpu,
  utilization_pct: 50 + gpu,
  power_w: 300 + gpu,
  fan_pct: 40 + gpu,
  memory_used_mb: 1000 + gpu,
  clock_sm_mhz: 2500,
  vram_junction_c: 90 + gpu, // not in the protocol's list, but well-formed: stored and queryable
})
const hostValues = { cpu_usage_pct: 12, memory_used_pct: 34, disk_used_pct: 56, power_w: 700, hashrate: 1234.5 }

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  await setNow(app, BASE + 30 * HOUR + 2 * MIN)
  const rig = await newRig(app, { gpus: 2 })
  owner = rig.owner
  serverId = rig.serverId
  const samples: Sample[] = []
  for (const [t, base] of [
    [T0, 60],
    [T1, 70],
  ] as const) {
    samples.push({ t, gpu: 0, values: gpuValues(0, base) }, { t, gpu: 1, values: gpuValues(1, base) }, { t, values: hostValues })
  }
  await feed(rig.agent, samples)
  await rollup(app)
})
afterAll(() => stopApp(app))

/** Checks the points are exactly the buckets of [from, to) at the answered resolution. */
function expectEveryBucket(snap: Snapshot) {
  const step = snap.resolution === '5m' ? FIVE : HOUR
  const from = parseIso(snap.from)
  const to = parseIso(snap.to)
  const first = Math.floor(from / step) * step
  const count = Math.ceil((to - first) / step)
  for (const s of snap.series) {
    expect(s.points).toHaveLength(count)
    for (const [i, p] of s.points.entries()) expect(p.t).toBe(iso(first + i * step))
  }
  return { first, count }
}

const EMPTY = { min: null, max: null, avg: null, p50: null, p95: null, last: null }
const keys = (s: Snapshot) => s.series.map((x) => `${x.metric}/${x.scope}/${x.gpu_index}`).sort()

describe('the range and its resolution', () => {
  test('without parameters it answers the last 24 hours at 5 minutes, every bucket a point, nulls where nothing was measured', async () => {
    const snap = await metrics(app, owner, serverId)
    expect(snap).toMatchObject({ server_id: serverId, resolution: '5m', version: expect.any(Number), stale: false })
    const to = parseIso(snap.to)
    expect(to - parseIso(snap.from)).toBe(24 * HOUR)
    expect(Math.abs(to - parseIso(snap.generated_at))).toBeLessThan(5 * 1_000_000)
    const { count } = expectEveryBucket(snap)
    expect([288, 289]).toContain(count)
    const temp = seriesOf(snap, 'temperature_c', 1)
    expect(temp).toMatchObject({ scope: 'gpu', unit: '°C' })
    const bucket = Math.floor(T1 / FIVE) * FIVE
    expect(pointAt(temp, bucket)).toEqual({ t: iso(bucket), min: 71, max: 71, avg: 71, p50: 71, p95: 71, last: 71 })
    expect(temp.points.filter((p) => p.max !== null)).toHaveLength(1) // T0 lies outside the last 24 h
    expect(pointAt(temp, bucket - FIVE)).toEqual({ t: iso(bucket - FIVE), ...EMPTY })
  })

  test('a range of 49 hours reads hourly rollups', async () => {
    const to = BASE + 31 * HOUR
    const snap = await metrics(app, owner, serverId, [
      ['from', iso(to - 49 * HOUR)],
      ['to', iso(to)],
      ['metric', 'temperature_c'],
    ])
    expect(snap.resolution).toBe('1h')
    expect(expectEveryBucket(snap).count).toBe(49)
    const temp = seriesOf(snap, 'temperature_c', 0)
    expect(pointAt(temp, BASE)).toMatchObject({ min: 60, max: 60, last: 60 })
    expect(pointAt(temp, BASE + 29 * HOUR)).toMatchObject({ min: 70, max: 70, last: 70 })
    expect(temp.points.filter((p) => p.max !== null)).toHaveLength(2)
  })

  test('exactly 48 hours is not "over 48 hours" and stays at 5 minutes', async () => {
    const snap = await metrics(app, owner, serverId, [
      ['from', iso(BASE)],
      ['to', iso(BASE + 48 * HOUR)],
      ['metric', 'temperature_c'],
    ])
    expect(snap.resolution).toBe('5m')
    expect(expectEveryBucket(snap).count).toBe(576)
  })

  test('resolution=1h on a two-hour range answers hourly points', async () => {
    const snap = await metrics(app, owner, serverId, [
      ['from', iso(BASE)],
      ['to', iso(BASE + 2 * HOUR)],
      ['resolution', '1h'],
      ['metric', 'power_w'],
    ])
    expect(snap.resolution).toBe('1h')
    expect(seriesOf(snap, 'power_w', 1).points).toEqual([
      { t: iso(BASE), min: 301, max: 301, avg: 301, p50: 301, p95: 301, last: 301 },
      { t: iso(BASE + HOUR), ...EMPTY },
    ])
  })

  test('resolution=1m is the legacy alias of 5m and answers resolution "5m"', async () => {
    const q = (r: string): [string, string][] => [
      ['from', iso(BASE)],
      ['to', iso(BASE + HOUR + (r === '1m' ? 1 : 2))],
      ['resolution', r],
      ['metric', 'fan_pct'],
    ]
    const legacy = await metrics(app, owner, serverId, q('1m'))
    const five = await metrics(app, owner, serverId, q('5m'))
    expect(legacy.resolution).toBe('5m')
    expect(expectEveryBucket(legacy).count).toBe(13)
    expect(legacy.series).toEqual(five.series)
    expect(pointAt(seriesOf(legacy, 'fan_pct', 0), BASE)).toMatchObject({ max: 40 })
  })

  test('resolution=5m on a 72-hour range answers the effective resolution 1h', async () => {
    const snap = await metrics(app, owner, serverId, [
      ['from', iso(BASE - DAY)],
      ['to', iso(BASE + 2 * DAY)],
      ['resolution', '5m'],
      ['metric', 'fan_pct'],
    ])
    expect(snap.resolution).toBe('1h')
    expect(expectEveryBucket(snap).count).toBe(72)
    expect(pointAt(seriesOf(snap, 'fan_pct', 1), BASE)).toMatchObject({ max: 41 })
  })

  test('a range that does not start on a bucket boundary starts at the bucket holding `from`', async () => {
    const snap = await metrics(app, owner, serverId, [
      ['from', iso(BASE + 3 * MIN)],
      ['to', iso(BASE + 11 * MIN)],
      ['metric', 'power_w'],
    ])
    expect(snap.from).toBe(iso(BASE + 3 * MIN))
    expect(seriesOf(snap, 'power_w', null).points.map((p) => [p.t, p.max])).toEqual([
      [iso(BASE), 700],
      [iso(BASE + FIVE), null],
      [iso(BASE + 2 * FIVE), null],
    ])
  })
})

describe('which series', () => {
  const day1 = (extra: [string, string | number][] = []): [string, string | number][] => [['from', iso(BASE)], ['to', iso(BASE + HOUR)], ...extra]

  test('without metric it answers the default graph set for every GPU and the host', async () => {
    const snap = await metrics(app, owner, serverId, day1())
    expect(keys(snap)).toEqual(
      [
        ...['temperature_c', 'utilization_pct', 'power_w', 'fan_pct', 'memory_used_mb'].flatMap((m) => [`${m}/gpu/0`, `${m}/gpu/1`]),
        'power_w/host/null',
        'cpu_usage_pct/host/null',
        'memory_used_pct/host/null',
      ].sort(),
    )
  })

  test('?metric=a&metric=b answers exactly those metrics, host and GPU series alike', async () => {
    const snap = await metrics(
      app,
      owner,
      serverId,
      day1([
        ['metric', 'hotspot_temperature_c'],
        ['metric', 'hashrate'],
      ]),
    )
    expect(keys(snap)).toEqual(['hashrate/host/null', 'hotspot_temperature_c/gpu/0', 'hotspot_temperature_c/gpu/1'])
    expect(pointAt(seriesOf(snap, 'hashrate', null), BASE)).toMatchObject({ max: 1234.5, last: 1234.5 })
    expect(pointAt(seriesOf(snap, 'hotspot_temperature_c', 1), BASE)).toMatchObject({ max: 71 })
  })

  test('a single metric parameter is a list of one', async () => {
    const snap = await metrics(app, owner, serverId, day1([['metric', 'clock_sm_mhz']]))
    expect(keys(snap)).toEqual(['clock_sm_mhz/gpu/0', 'clock_sm_mhz/gpu/1'])
  })

  test('twenty metric names are accepted; names without data simply have no series', async () => {
    const names = ['temperature_c', ...Array.from({ length: 19 }, (_, i) => `never_reported_${i}`)]
    const snap = await metrics(app, owner, serverId, day1(names.map((m) => ['metric', m])))
    expect(keys(snap)).toEqual(['temperature_c/gpu/0', 'temperature_c/gpu/1'])
  })

  test('gpu_index restricts the GPU series to that GPU and keeps the host series', async () => {
    const snap = await metrics(app, owner, serverId, day1([['gpu_index', 1]]))
    expect(keys(snap)).toEqual(
      [
        ...['temperature_c', 'utilization_pct', 'power_w', 'fan_pct', 'memory_used_mb'].map((m) => `${m}/gpu/1`),
        'power_w/host/null',
        'cpu_usage_pct/host/null',
        'memory_used_pct/host/null',
      ].sort(),
    )
    expect(pointAt(seriesOf(snap, 'power_w', 1), BASE)).toMatchObject({ max: 301 })
    expect(pointAt(seriesOf(snap, 'power_w', null), BASE)).toMatchObject({ max: 700 })
  })

  test('an unknown but well-formed metric name is stored and can be queried', async () => {
    const snap = await metrics(app, owner, serverId, day1([['metric', 'vram_junction_c']]))
    expect(keys(snap)).toEqual(['vram_junction_c/gpu/0', 'vram_junction_c/gpu/1'])
    expect(pointAt(seriesOf(snap, 'vram_junction_c', 1), BASE)).toEqual({ t: iso(BASE), min: 91, max: 91, avg: 91, p50: 91, p95: 91, last: 91 })
  })
})

describe('the answer as sent', () => {
  // The route sends the JSON text it builds, not an object Elysia would check on the way out: the
  // schema check is here instead, over answers with stored rollups, raw buckets, nulls and host series.
  const snapshot = TypeCompiler.Compile(MetricsSnapshot)
  const hour1 = (extra: [string, string][]): [string, string][] => [['from', iso(BASE)], ['to', iso(BASE + HOUR)], ...extra]

  test('is a metrics snapshot by its schema, JSON, with its fields in the order of the spec', async () => {
    for (const query of [
      [],
      hour1([]),
      hour1([
        ['metric', 'vram_junction_c'],
        ['metric', 'hashrate'],
        ['metric', 'clock_sm_mhz'],
      ]),
      [
        ['from', iso(BASE - DAY)],
        ['to', iso(BASE + 30 * HOUR)],
      ],
      [['metric', 'never_reported']],
    ] as [string, string][][]) {
      const res = await getMetrics(app, owner, serverId, query)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toStartWith('application/json')
      const body = (await res.json()) as Snapshot
      expect([...snapshot.Errors(body)].map((e) => `${e.path}: ${e.message}`)).toEqual([])
      expect(Object.keys(body)).toEqual(['generated_at', 'data_as_of', 'version', 'stale', 'stale_reason', 'server_id', 'resolution', 'from', 'to', 'series'])
      for (const s of body.series) {
        expect(Object.keys(s)).toEqual(['metric', 'scope', 'gpu_index', 'unit', 'points'])
        for (const p of s.points) expect(Object.keys(p)).toEqual(['t', 'min', 'max', 'avg', 'p50', 'p95', 'last'])
      }
    }
  })

  test('a selection without series answers an empty list', async () => {
    const snap = await metrics(app, owner, serverId, [['metric', 'never_reported']])
    expect(snap.series).toEqual([])
  })
})
