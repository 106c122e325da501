import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../support/app'
import type { Owner } from '../support/fleet'
import {
  BASE,
  comparableAnswer,
  DAY,
  feed,
  getMetrics,
  HOUR,
  iso,
  MIN,
  metrics,
  newRig,
  noisyFrame,
  parseIso,
  pointAt,
  type Rig,
  rollup,
  type Sample,
  seriesOf,
  setNow,
  stopApp,
  US,
} from './helpers'

/**
 * GET /servers/{id}/metrics answers the same bytes whichever way it is built: from the stored
 * rollups, from the raw samples of buckets not final yet, or from the text of a series' final
 * buckets kept from an earlier answer (docs/telemetry.md "Reading"). A fixture of three hours at one
 * sample a minute (decimal noise, nulls, a metric of no unit) is read through ranges that share
 * buckets, overlap, reach past the data and end in the past; the answers must equal, byte for
 * byte (the server id aside), what the service answered before those texts were kept
 * (fixtures/metrics-identity.json, written by the service of commit 2ea48d7). Then a late sample
 * changes a final bucket: after the rollup job has redone it, every answer shows the new numbers.
 */

const FIXTURE = `${import.meta.dir}/fixtures/metrics-identity.json`
const NOW = BASE + 3 * HOUR + 2 * MIN + 17 * US
const TO = iso(NOW + 4 * MIN)

let app: TestApp
let rig: Rig
let owner: Owner

/** The answers, in order, without what differs from run to run: the server id, and the instants of the running clock. */
const QUERIES: [string, string | number][][] = [
  [['from', iso(NOW - 4 * HOUR)]],
  [['from', iso(NOW - 4 * HOUR + 1)]],
  [
    ['resolution', '1h'],
    ['from', iso(BASE - DAY)],
  ],
  [
    ['from', iso(BASE + HOUR + 1)],
    ['to', iso(BASE + 2 * HOUR + 30 * MIN)],
  ],
  [
    ['from', iso(BASE + 30 * MIN)],
    ['to', iso(BASE + 2 * HOUR + 3 * MIN)],
  ],
  [
    ['from', iso(BASE + HOUR)],
    ['metric', 'tokens_per_second'],
    ['metric', 'net_rx_mbps'],
    ['metric', 'temperature_c'],
    ['gpu_index', 1],
  ],
  [
    ['from', iso(BASE - HOUR)],
    ['to', iso(NOW + HOUR)],
  ],
  [
    ['from', iso(NOW - 2 * HOUR)],
    ['to', iso(NOW)],
  ],
  [['from', iso(BASE + 2 * HOUR + 30 * MIN)]],
  [
    ['resolution', '1h'],
    ['from', iso(NOW - 2 * HOUR)],
    ['to', iso(NOW)],
  ],
]
const METRICS: [string, string][] = ['temperature_c', 'utilization_pct', 'memory_used_mb', 'tokens_per_second', 'net_rx_mbps'].map((m): [string, string] => [
  'metric',
  m,
])

async function answers(shift: number): Promise<string[]> {
  const out: string[] = new Array(QUERIES.length)
  // The range ending in the past, one from its start to now (its kept texts grow), one from its end
  // to now, then the rest.
  for (const i of [3, 5, 8, 0, 1, 2, 4, 6, 7, 9]) {
    const q = QUERIES[i]!
    // Each query once as asked and once 1 µs later (never the answer cache: the key differs).
    // `to` always given: the default (now) moves with the service clock, which runs.
    const withTo = q.some(([k]) => k === 'to') ? q : [...q, ['to', TO] as [string, string]]
    const withMetrics = q.some(([k]) => k === 'metric') ? withTo : [...withTo, ...METRICS]
    const moved = withMetrics.map(([k, v]): [string, string | number] => (k === 'from' && shift ? [k, iso(parseIso(String(v)) + shift)] : [k, v]))
    const res = await getMetrics(app, owner, rig.serverId, moved)
    expect(res.status).toBe(200)
    out[i] = comparableAnswer(await res.text(), rig.serverId)
  }
  return out
}

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  await setNow(app, NOW)
  rig = await newRig(app, { gpus: 2 })
  owner = rig.owner
  const samples: Sample[] = []
  for (let i = 0; i < 3 * 60; i++) samples.push(...noisyFrame(BASE + i * MIN + 1234, i, { memory: true }))
  await feed(rig.agent, samples)
  await rollup(app)
  // The running bucket, after the job: computed from the raw samples when an answer is built.
  await feed(rig.agent, [...noisyFrame(BASE + 3 * HOUR + MIN, 400, { memory: true }), ...noisyFrame(BASE + 3 * HOUR + 90 * US, 401, { memory: true })])
  await rollup(app)
})

afterAll(() => stopApp(app))

describe('the metrics answer, built from kept text or afresh', () => {
  test('equals, byte for byte, what the service answered for the same fixture before', async () => {
    const expected = (await Bun.file(FIXTURE).json()) as string[]
    expect(await answers(0)).toEqual(expected)
    // Again with every `from` 1 µs later: the same buckets, now from what the first answers kept.
    const again = await answers(1)
    expect(again.map((a) => a.replace(/"from":"[^"]*"/, ''))).toEqual(expected.map((a) => a.replace(/"from":"[^"]*"/, '')))
  })

  test('a late sample in a final bucket shows in every answer once the rollup job has redone it', async () => {
    const bucket = BASE + HOUR + 5 * MIN
    const before = pointAt(
      seriesOf(await metrics(app, owner, rig.serverId, [['from', iso(NOW - 24 * HOUR + 7)], ['to', TO], ...METRICS]), 'temperature_c', 0),
      bucket,
    )
    expect(before.max).not.toBe(99.9)
    await feed(rig.agent, [{ t: bucket + 30 * US, gpu: 0, values: { temperature_c: 99.9 } }])
    await rollup(app)
    const cases: [number, [string, string][]][] = [
      [8, []],
      [9, [['resolution', '1h']]],
    ]
    for (const [k, q] of cases) {
      const snap = await metrics(app, owner, rig.serverId, [['from', iso(NOW - 24 * HOUR + k)], ['to', TO], ...q, ...METRICS])
      const at = q.length ? BASE + HOUR : bucket
      expect(pointAt(seriesOf(snap, 'temperature_c', 0), at).max).toBe(99.9)
    }
  })
})
