import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type SQL, sql } from 'drizzle-orm'
import { startTestApp, type TestApp } from '../support/app'
import { BASE, feed, HOUR, iso, MIN, newRig, rawCount, runJob, setNow, stopApp, type Rig } from './helpers'

/**
 * Telemetry frames on a real agent session (docs/telemetry.md "Ingestion"): a frame the service
 * cannot accept gets an `error` frame, stores nothing (no sample, no series, no latest value) and
 * leaves the session open; a good frame is written by the group commit within about a second.
 */

let app: TestApp
let rig: Rig
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  await setNow(app, BASE + 2 * HOUR)
  rig = await newRig(app, { gpus: 2 })
})
afterAll(() => stopApp(app))

const t = iso(BASE + MIN)
const good = { t, scope: 'gpu', gpu_index: 0, values: { temperature_c: 61 } }

async function stored() {
  const n = async (query: SQL) => ((await app.deps.db.get(query)) as { n: number }).n
  return {
    samples: await rawCount(app, rig.serverId),
    series: await n(sql`SELECT count(*) AS n FROM metric_series WHERE server_id = ${rig.serverId}`),
    latest: await n(sql`SELECT count(*) AS n FROM server_latest_metrics WHERE server_id = ${rig.serverId}`),
  }
}

/** Writes whatever the runtime holds (presence.sweep flushes first), then counts. */
async function flushedCounts() {
  await runJob(app, 'presence.sweep')
  return await stored()
}

describe('a telemetry frame the service cannot accept', () => {
  const bad: [string, string | Record<string, unknown>][] = [
    ['a timestamp that is not RFC 3339', { type: 'telemetry', samples: [good, { ...good, t: '2031-05-14 10:01:00' }] }],
    ['an impossible date', { type: 'telemetry', samples: [good, { ...good, t: '2031-02-30T10:00:00Z' }] }],
    ['a string value', { type: 'telemetry', samples: [good, { ...good, values: { temperature_c: '61' } }] }],
    ['a boolean value', { type: 'telemetry', samples: [{ ...good, values: { fan_pct: true } }] }],
    ['an object value', { type: 'telemetry', samples: [{ ...good, values: { fan_pct: { v: 1 } } }] }],
    // JSON has no Infinity; 1e999 is how a sender ends up with one after parsing.
    ['a value that is not finite', `{"type":"telemetry","samples":[{"t":"${t}","scope":"gpu","gpu_index":0,"values":{"power_w":1e999}}]}`],
    ['a GPU sample without gpu_index', { type: 'telemetry', samples: [good, { t, scope: 'gpu', values: { temperature_c: 61 } }] }],
    ['a GPU sample with a null gpu_index', { type: 'telemetry', samples: [{ t, scope: 'gpu', gpu_index: null, values: { temperature_c: 61 } }] }],
    ['a gpu_index past 127', { type: 'telemetry', samples: [{ ...good, gpu_index: 128 }] }],
    ['a metric name with a capital', { type: 'telemetry', samples: [good, { ...good, values: { Temperature_c: 61 } }] }],
    ['a metric name that starts with a digit', { type: 'telemetry', samples: [{ ...good, values: { '1temp': 61 } }] }],
    ['a one-letter metric name', { type: 'telemetry', samples: [{ ...good, values: { t: 61 } }] }],
    ['a metric name over 64 characters', { type: 'telemetry', samples: [{ ...good, values: { [`a${'b'.repeat(64)}`]: 61 } }] }],
    ['a scope other than host or gpu', { type: 'telemetry', samples: [{ ...good, scope: 'cpu' }] }],
    ['samples that are not an array', { type: 'telemetry', samples: good }],
    ['a sample dated a day ahead of the service clock', { type: 'telemetry', samples: [good, { ...good, t: iso(BASE + 26 * HOUR) }] }],
  ]

  test.each(bad)('with %s gets an error frame and stores nothing', async (_name, frame) => {
    const before = await flushedCounts()
    const error = await rig.agent.expectError(frame)
    expect(error).toMatchObject({ type: 'error', code: expect.any(String), message: expect.any(String) })
    expect(await flushedCounts()).toEqual(before)
    expect(rig.agent.open).toBe(true)
  })

  test('after rejected frames the same session still stores a good one', async () => {
    await rig.agent.expectError({ type: 'telemetry', samples: [{ ...good, t: 'soon' }] })
    const before = await stored()
    await feed(rig.agent, [{ t: BASE + 2 * MIN, gpu: 1, values: { temperature_c: 62, fan_pct: 33 } }])
    expect(await flushedCounts()).toEqual({ samples: before.samples + 2, series: expect.any(Number), latest: expect.any(Number) })
  })
})

describe('a telemetry frame the service accepts', () => {
  test('is written within about a second, without any job running', async () => {
    const before = await stored()
    await feed(rig.agent, [{ t: BASE + 3 * MIN, values: { cpu_usage_pct: 12.5, memory_used_pct: 40 } }])
    const until = Date.now() + 3000
    while ((await stored()).samples < before.samples + 2 && Date.now() < until) await Bun.sleep(50)
    expect((await stored()).samples).toBe(before.samples + 2)
  })

  test('unknown but well-formed metric names and null values are stored as sent', async () => {
    await feed(rig.agent, [
      { t: BASE + 4 * MIN, gpu: 1, values: { vram_junction_c: 95, pcie_rx_mbps: null } },
      { t: BASE + 4 * MIN, values: { hashrate_mhs: 120.25 } },
    ])
    await flushedCounts()
    const rows = await app.deps.db.all(
      sql`SELECT s.gpu_index, s.metric, m.t, m.value FROM metric_samples m JOIN metric_series s ON s.id = m.series_id WHERE s.server_id = ${rig.serverId} AND s.metric IN (${'vram_junction_c'}, ${'pcie_rx_mbps'}, ${'hashrate_mhs'}) ORDER BY s.metric`,
    )
    const at = BASE + 4 * MIN
    expect(rows).toEqual([
      { gpu_index: -1, metric: 'hashrate_mhs', t: at, value: 120.25 },
      { gpu_index: 1, metric: 'pcie_rx_mbps', t: at, value: null },
      { gpu_index: 1, metric: 'vram_junction_c', t: at, value: 95 },
    ])
  })

  test('a sample re-sent for the same series and instant keeps one row with the newer value', async () => {
    const at = BASE + 5 * MIN
    await feed(rig.agent, [{ t: at, gpu: 0, values: { power_w: 300 } }])
    await flushedCounts()
    const before = (await stored()).samples
    await feed(rig.agent, [{ t: at, gpu: 0, values: { power_w: 310 } }])
    expect((await flushedCounts()).samples).toBe(before)
    const row = await app.deps.db.all(
      sql`SELECT m.value FROM metric_samples m JOIN metric_series s ON s.id = m.series_id WHERE s.server_id = ${rig.serverId} AND s.metric = 'power_w' AND m.t = ${at}`,
    )
    expect(row).toEqual([{ value: 310 }])
  })
})
