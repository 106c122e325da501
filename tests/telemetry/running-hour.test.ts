import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { finishHour, startHour } from '../../src/modules/telemetry/running-hour'
import { rawBuckets } from '../../src/modules/telemetry/telemetry.repository'
import { startTestApp, type TestApp } from '../support/app'
import type { Owner } from '../support/fleet'
import { onPostgres } from '../support/postgres'
import {
  BASE,
  comparableAnswer,
  feed,
  getMetrics,
  HOUR,
  iso,
  MIN,
  newRig,
  noisyFrame,
  type Rig,
  rollup,
  runJob,
  type Sample,
  setNow,
  stopApp,
  US,
} from './helpers'

/**
 * The hourly bucket still running, late in the hour (docs/telemetry.md "The running hour"): on
 * SQLite its samples before the 5-minute watermark are read once and kept as what SQLite's
 * aggregates hold after them, and an answer reads only the samples after the watermark. The
 * answers must be, byte for byte, what the service answered when it read the whole hour's samples
 * for every answer (fixtures/running-hour.json, written by the service of commit ad6987b with
 * GPUHQ_WRITE_FIXTURE=1), through a late sample and a re-sent sample inside the kept part (which
 * show at once, before any rollup run) and a sample after the watermark. And the aggregates
 * continued from a kept part equal SQLite's own over the whole hour, to the bit.
 */

const FIXTURE = `${import.meta.dir}/fixtures/running-hour.json`
const HOUR0 = BASE + 5 * HOUR
const NOW = HOUR0 + 47 * MIN + 13 * US
const TO = iso(HOUR0 + 59 * MIN)

let app: TestApp
let rig: Rig
let owner: Owner

const METRICS: [string, string][] = ['temperature_c', 'utilization_pct', 'tokens_per_second', 'net_rx_mbps'].map((m): [string, string] => ['metric', m])

/** One answer without what differs from run to run: the server id and the instants of the running clock. */
async function answer(from: number): Promise<string> {
  const res = await getMetrics(app, owner, rig.serverId, [['resolution', '1h'], ['from', iso(from)], ['to', TO], ...METRICS])
  expect(res.status).toBe(200)
  return comparableAnswer(await res.text(), rig.serverId)
}

/** Writes what the agents sent without rolling anything up (presence.sweep flushes first). */
const flush = () => runJob(app, 'presence.sweep')

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  await setNow(app, NOW)
  rig = await newRig(app, { gpus: 2 })
  owner = rig.owner
  // Three hours before the running one at one sample a minute, then the running hour at one every
  // 10 s up to now; the job makes everything before 05:45 final.
  const samples: Sample[] = []
  for (let i = 0; i < 3 * 60; i++) samples.push(...noisyFrame(HOUR0 - 3 * HOUR + i * MIN + 1234, i))
  for (let i = 0; i < 47 * 6; i++) samples.push(...noisyFrame(HOUR0 + i * 10 * US + 77, 200 + i))
  await feed(rig.agent, samples)
  await rollup(app)
})

afterAll(() => stopApp(app))

describe('the running hour, from what was kept and the samples after the 5-minute watermark', () => {
  test('answers the bytes the service answered when it read the whole hour every time', async () => {
    const got: string[] = []
    // The same range twice, 1 µs apart (never the answer cache): the second from what the first kept.
    got.push(await answer(NOW - 6 * HOUR), await answer(NOW - 6 * HOUR + 1))
    // A late sample and a re-sent sample (another value for an instant already stored) inside the
    // kept part: they show at once, before any rollup run.
    await feed(rig.agent, [
      { t: HOUR0 + 20 * MIN + 5 * US, gpu: 0, values: { temperature_c: 199.9, tokens_per_second: 12.345678901234 } },
      { t: HOUR0 + 30 * 10 * US + 77, gpu: 1, values: { utilization_pct: 3, tokens_per_second: null } },
    ])
    await flush()
    got.push(await answer(NOW - 6 * HOUR + 2), await answer(NOW - 6 * HOUR + 3))
    // A sample after the watermark, in the part read every time.
    await feed(rig.agent, [{ t: HOUR0 + 46 * MIN + 55 * US, gpu: 1, values: { temperature_c: -7.25, tokens_per_second: 0.1 } }])
    await flush()
    got.push(await answer(NOW - 6 * HOUR + 4))
    // The job runs (the watermark row changes: what was kept is read again), then one more sample.
    await rollup(app)
    got.push(await answer(NOW - 6 * HOUR + 5))
    await feed(rig.agent, [{ t: HOUR0 + 2 * MIN, gpu: 0, values: { utilization_pct: 0, temperature_c: -20.05 } }])
    await flush()
    got.push(await answer(NOW - 6 * HOUR + 6), await answer(NOW - 6 * HOUR + 7))
    const strip = (a: string) => a.replace(/"from":"[^"]*"/, '')
    if (process.env.GPUHQ_WRITE_FIXTURE === '1') await Bun.write(FIXTURE, `${JSON.stringify(got.map(strip), null, 1)}\n`)
    expect(got.map(strip)).toEqual((await Bun.file(FIXTURE).json()) as string[])
  })

  test.skipIf(onPostgres)("continuing a kept part gives SQLite's own aggregates over the whole hour, to the bit", async () => {
    const series = 900_000_001
    const pick = [
      () => Math.round(Math.random() * 1000) / 10,
      () => Math.random() * 1e6,
      () => (Math.random() - 0.5) * 2e15,
      () => (Math.random() < 0.2 ? null : 0.1 + Math.random() * 300.123),
      () => [0.1, 0.2, 0.3, 1e15, -1e15, 1e-9, 0, 7][Math.floor(Math.random() * 8)]!,
      () => null,
    ]
    for (let trial = 0; trial < 120; trial++) {
      const gen = pick[trial % pick.length]!
      const sent = Array.from({ length: 1 + Math.floor(Math.random() * 360) }, gen)
      await app.deps.db.run(sql`DELETE FROM metric_samples WHERE series_id = ${series}`)
      await app.deps.db.run(
        sql`INSERT INTO metric_samples (series_id, t, value) SELECT ${series}, ${HOUR0 + 20 * HOUR} + key * 10000000, value FROM json_each(${JSON.stringify(sent)})`,
      )
      // The doubles as stored, which is what both sides read.
      const values = ((await app.deps.db.all(sql`SELECT value FROM metric_samples WHERE series_id = ${series} ORDER BY t`)) as { value: number | null }[]).map(
        (r) => r.value,
      )
      expect(values.length).toBe(sent.length)
      const [sqlite] = await rawBuckets(app.deps.db, 3600, [series], HOUR0 + 20 * HOUR, HOUR0 + 21 * HOUR)
      for (const cut of [0, 1, Math.floor(values.length / 2), values.length - 1, values.length]) {
        if (cut < 0 || cut > values.length) continue
        const ours = finishHour(startHour(values.slice(0, cut)), values.slice(cut))
        expect(ours!.map((v) => (Object.is(v, -0) ? 0 : v))).toEqual(sqlite!.slice(2).map((v) => (Object.is(v, -0) ? 0 : v)))
        // toEqual treats 0 and -0 apart only through Object.is; every other number must be the same double.
        ours!.forEach((v, k) => {
          expect(v === sqlite![k + 2] || (v === null && sqlite![k + 2] === null)).toBe(true)
        })
      }
    }
    await app.deps.db.run(sql`DELETE FROM metric_samples WHERE series_id = ${series}`)
  })
})
