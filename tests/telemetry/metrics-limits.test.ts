import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../support/app'
import { insertSecondTenant, type Owner } from '../support/fleet'
import { expectProblem } from '../support/problem'
import {
  advance,
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
  type Rig,
  type Sample,
} from './helpers'

/**
 * The "Metric ranges" limits of GET /servers/{id}/metrics (20 names, gpu_index ≤ 127, 200 series,
 * 5000 points), bad ranges, tenant isolation, and the snapshot's ETag / If-None-Match.
 */

let app: TestApp
let rig: Rig
const NOW = BASE + 30 * HOUR

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  await setNow(app, NOW)
  rig = await newRig(app, { gpus: 2 })
  await feed(rig.agent, [
    { t: BASE + MIN, gpu: 0, values: { temperature_c: 60, fan_pct: 30 } },
    { t: BASE + MIN, gpu: 1, values: { temperature_c: 61, fan_pct: 31 } },
  ])
  await rollup(app)
})
afterAll(() => stopApp(app))

const range: [string, string][] = [
  ['from', iso(BASE)],
  ['to', iso(BASE + HOUR)],
]
const get = (query: [string, string | number][], owner: Owner = rig.owner, id = rig.serverId) => getMetrics(app, owner, id, query)

describe('the metric list', () => {
  test('21 metric names answer 422', async () => {
    const names = Array.from({ length: 21 }, (_, i) => `metric_${i}`)
    await expectProblem(await get([...range, ...names.map((m): [string, string] => ['metric', m])]), 422, 'validation_failed')
  })

  test.each(['Temperature_c', '1temp', 't', 'temp-c', 'temp c', `a${'b'.repeat(64)}`, ''])('the malformed metric name %p answers 422', async (name) => {
    await expectProblem(await get([...range, ['metric', 'fan_pct'], ['metric', name]]), 422, 'validation_failed')
  })
})

describe('gpu_index', () => {
  test.each(['128', '-1', '1.5', 'zero'])('gpu_index=%s answers 422', async (value) => {
    await expectProblem(await get([...range, ['gpu_index', value]]), 422, 'validation_failed')
  })

  test('gpu_index=127 is accepted and, on a two-GPU server, leaves no GPU series', async () => {
    const snap = await metrics(app, rig.owner, rig.serverId, [...range, ['gpu_index', 127], ['metric', 'fan_pct']])
    expect(snap.series).toEqual([])
  })
})

describe('series and points', () => {
  test('more than 200 series answer 422; narrowing by gpu_index or metric makes the same server readable', async () => {
    const big = await newRig(app, { gpus: 128 })
    const samples: Sample[] = Array.from({ length: 128 }, (_, gpu) => ({
      t: BASE + 2 * MIN,
      gpu,
      values: { temperature_c: 50 + (gpu % 30), fan_pct: gpu % 100 },
    }))
    await feed(big.agent, samples)
    await rollup(app)
    const q = (extra: [string, string | number][]) => getMetrics(app, big.owner, big.serverId, [...range, ...extra])

    const problem = await expectProblem(
      await q([
        ['metric', 'temperature_c'],
        ['metric', 'fan_pct'],
      ]),
      422,
      'validation_failed',
    )
    expect(problem.errors?.length).toBeGreaterThan(0)
    await expectProblem(await q([]), 422, 'validation_failed') // the default set: 2 of its metrics × 128 GPUs

    const one = await metrics(app, big.owner, big.serverId, [...range, ['metric', 'temperature_c'], ['metric', 'fan_pct'], ['gpu_index', 127]])
    expect(one.series.map((s) => [s.metric, s.gpu_index])).toEqual([
      ['temperature_c', 127],
      ['fan_pct', 127],
    ])
    expect(pointAt(seriesOf(one, 'fan_pct', 127), BASE)).toMatchObject({ max: 27 })
    const temps = await metrics(app, big.owner, big.serverId, [...range, ['metric', 'temperature_c']])
    expect(temps.series).toHaveLength(128)
    expect(temps.series.map((s) => s.gpu_index)).toEqual(Array.from({ length: 128 }, (_, i) => i))
  })

  test('more than 5000 points per series answer 422 (300 days at 1 h is 7200)', async () => {
    const to = NOW
    await expectProblem(
      await get([
        ['from', iso(to - 300 * DAY)],
        ['to', iso(to)],
        ['metric', 'fan_pct'],
      ]),
      422,
      'validation_failed',
    )
    await expectProblem(
      await get([
        ['from', iso(to - 5001 * HOUR)],
        ['to', iso(to)],
        ['metric', 'fan_pct'],
      ]),
      422,
      'validation_failed',
    )
    const most = await metrics(app, rig.owner, rig.serverId, [
      ['from', iso(to - 5000 * HOUR)],
      ['to', iso(to)],
      ['metric', 'fan_pct'],
    ])
    expect(most.resolution).toBe('1h')
    expect(most.series[0]!.points).toHaveLength(5000)
  })
})

describe('the range', () => {
  test('from equal to or after to answers 422', async () => {
    await expectProblem(
      await get([
        ['from', iso(BASE)],
        ['to', iso(BASE)],
      ]),
      422,
      'validation_failed',
    )
    await expectProblem(
      await get([
        ['from', iso(BASE + 1)],
        ['to', iso(BASE)],
      ]),
      422,
      'validation_failed',
    )
    await expectProblem(await get([['from', iso(NOW + DAY)]]), 422, 'validation_failed') // to defaults to now
  })

  test.each(['yesterday', '2031-05-14', '2031-02-30T10:00:00Z', '2031-05-14T25:00:00Z'])('from=%p is not a timestamp and answers 422', async (from) => {
    await expectProblem(
      await get([
        ['from', from],
        ['to', iso(BASE + HOUR)],
      ]),
      422,
      'validation_failed',
    )
  })

  test('resolution outside auto, 1m, 5m and 1h answers 422', async () => {
    await expectProblem(await get([...range, ['resolution', '10s']]), 422, 'validation_failed')
  })

  test('a timestamp with an offset is the same instant', async () => {
    const snap = await metrics(app, rig.owner, rig.serverId, [
      ['from', '2031-05-14T12:00:00+02:00'],
      ['to', '2031-05-14T12:05:00.000000+02:00'],
      ['metric', 'fan_pct'],
    ])
    expect(parseIso(snap.from)).toBe(BASE)
    expect(pointAt(seriesOf(snap, 'fan_pct', 1), BASE)).toMatchObject({ max: 31 })
  })
})

describe('whose server', () => {
  test('an unknown server answers 404', async () => {
    await expectProblem(await get(range, rig.owner, '0190f1a2-0000-7000-8000-000000000000'), 404, 'not_found')
  })

  test("another tenant's server answers the same 404", async () => {
    const stranger = await insertSecondTenant(app)
    const mine = await expectProblem(await get(range, stranger), 404, 'not_found')
    const unknown = await expectProblem(await get(range, stranger, '0190f1a2-0000-7000-8000-000000000000'), 404, 'not_found')
    expect(mine.detail).toBe(unknown.detail)
  })

  test('without a session it answers 401', async () => {
    await expectProblem(await getMetrics(app, { headers: {} } as Owner, rig.serverId, range), 401, 'unauthorized')
  })
})

describe('ETag and If-None-Match', () => {
  test('a matching If-None-Match answers 304 with the tag; another tag answers 200', async () => {
    const q: [string, string][] = [
      ['from', iso(BASE)],
      ['to', iso(BASE + 2 * HOUR)],
      ['metric', 'temperature_c'],
    ]
    const first = await get(q)
    expect(first.status).toBe(200)
    const tag = first.headers.get('etag')
    expect(tag).toMatch(/^(W\/)?"[^"]{1,250}"$/)
    const again = await getMetrics(app, rig.owner, rig.serverId, q, { 'if-none-match': tag! })
    expect(again.status).toBe(304)
    expect(await again.text()).toBe('')
    expect(again.headers.get('etag')).toBe(tag)
    const other = await getMetrics(app, rig.owner, rig.serverId, q, { 'if-none-match': '"something-else"' })
    expect(other.status).toBe(200)
    expect(other.headers.get('etag')).toBe(tag)
  })

  test('a hot range answers the cached snapshot for 60 s, then new data gives a new tag and a 200', async () => {
    const from = NOW - HOUR
    const q: [string, string][] = [
      ['from', iso(from)],
      ['to', iso(NOW + HOUR)],
      ['metric', 'utilization_pct'],
    ]
    const before = await get(q)
    const tag = before.headers.get('etag')!
    expect(((await before.json()) as any).series).toEqual([])

    await feed(rig.agent, [{ t: from + MIN, gpu: 0, values: { utilization_pct: 88 } }])
    await rollup(app)
    expect((await getMetrics(app, rig.owner, rig.serverId, q, { 'if-none-match': tag })).status).toBe(304)

    await advance(app, 61)
    const after = await getMetrics(app, rig.owner, rig.serverId, q, { 'if-none-match': tag })
    expect(after.status).toBe(200)
    expect(after.headers.get('etag')).not.toBe(tag)
    const snap = (await after.json()) as any
    expect(snap.series.map((s: any) => [s.metric, s.gpu_index])).toEqual([['utilization_pct', 0]])
    expect(snap.series[0].points.find((p: any) => p.max !== null)).toMatchObject({ t: iso(Math.floor((from + MIN) / (5 * MIN)) * 5 * MIN), max: 88 })
  })
})
