import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { formatDecimal, formatShortest, formatSignificant } from '../../src/platform/numbers'
import { startTestApp, type TestApp } from '../support/app'
import { api, enrolAgent, listServers, mintInitToken, type Owner } from '../support/fleet'
import { BASE, feed, HOUR, iso, MIN, newRig, rawCount, runJob, seriesOf, setNow, stopApp, type Rig } from './helpers'

/**
 * Issue 34 (9): agent-reported numbers are bounded at ingest (docs/telemetry.md "Bounds of reported
 * values"): a value outside its metric's physical range is dropped with an `error` frame, the rest
 * of the frame stored; and no formatter writes a number in exponent notation, so even a value
 * stored before the bounds existed cannot break an answer's schema (a utilisation of 1e308 made
 * GET /servers a 500 until a normal sample arrived).
 */

let app: TestApp
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'error' })
  await setNow(app, BASE + HOUR)
})
afterAll(() => stopApp(app))

const DECIMAL = /^-?[0-9]+(\.[0-9]+)?$/

/** Writes what the agents sent, refreshes the fleet snapshot, and reads the whole list (which must answer 200). */
async function fleetRow(owner: Owner, serverId: string) {
  await runJob(app, 'presence.sweep')
  await runJob(app, 'fleet.snapshot')
  return (await listServers(app, owner)).items.find((r) => r.id === serverId)!
}

describe('a telemetry value outside its metric range', () => {
  let rig: Rig
  beforeAll(async () => {
    rig = await newRig(app, { gpus: 2 })
  })

  test('a utilisation of 1e308 is dropped with a value_out_of_range error frame; the rest of the frame is stored and GET /servers answers', async () => {
    const t = BASE + 5 * MIN
    const before = await rawCount(app, rig.serverId)
    const error = await rig.agent.expectError({
      type: 'telemetry',
      samples: [
        { t: iso(t), scope: 'gpu', gpu_index: 0, values: { utilization_pct: 1e308, temperature_c: 64 } },
        { t: iso(t), scope: 'gpu', gpu_index: 1, values: { utilization_pct: 40 } },
      ],
    })
    expect(error).toMatchObject({ type: 'error', code: 'value_out_of_range' })
    expect(error.message).toContain('samples/0/values/utilization_pct')
    expect(rig.agent.open).toBe(true)
    const row = await fleetRow(rig.owner, rig.serverId)
    expect(await rawCount(app, rig.serverId)).toBe(before + 2)
    expect(row.avg_util_pct).toBe('40.00')
    expect(row.max_temp_core_c).toBe(64)
  })

  test('each protocol metric keeps its bounds and refuses just past them, on either side', async () => {
    const cases: [metric: string, scope: 'gpu' | 'host', min: number, max: number][] = [
      ['temperature_c', 'gpu', -50, 200],
      ['hotspot_temperature_c', 'gpu', -50, 200],
      ['memory_temperature_c', 'gpu', -50, 200],
      ['utilization_pct', 'gpu', 0, 100],
      ['fan_pct', 'gpu', 0, 100],
      ['memory_used_mb', 'gpu', 0, 1_048_576],
      ['power_w', 'gpu', 0, 5_000],
      ['clock_sm_mhz', 'gpu', 0, 10_000],
      ['cpu_usage_pct', 'host', 0, 100],
      ['memory_used_pct', 'host', 0, 100],
      ['disk_used_pct', 'host', 0, 100],
      ['net_rx_mbps', 'host', 0, 10_000_000],
      ['net_tx_mbps', 'host', 0, 10_000_000],
      ['power_w', 'host', 0, 100_000],
      ['hashrate', 'host', 0, 1e15],
      // Not in the protocol: magnitude only, whatever the name's unit.
      ['inlet_temperature_c', 'host', -1e15, 1e15],
      ['tokens_per_second', 'gpu', -1e15, 1e15],
    ]
    let at = BASE + 10 * MIN
    for (const [metric, scope, min, max] of cases) {
      const sample = (value: number) => ({ t: iso(at++), scope, ...(scope === 'gpu' ? { gpu_index: 0 } : {}), values: { [metric]: value } })
      // The bounds themselves are stored.
      const okFrame = { type: 'telemetry', samples: [sample(min), sample(max)] }
      const since = rig.agent.frames.length
      rig.agent.send(okFrame)
      await rig.agent.barrier()
      expect({ metric, scope, errors: rig.agent.frames.slice(since).filter((f) => f.type === 'error') }).toEqual({ metric, scope, errors: [] })
      for (const bad of [min - Math.max(1, Math.abs(min) * 1e-6), max + Math.max(1, max * 1e-6), 1e308, -1e308]) {
        const error = await rig.agent.expectError({ type: 'telemetry', samples: [sample(bad)] })
        expect({ metric, scope, bad, code: error.code }).toEqual({ metric, scope, bad, code: 'value_out_of_range' })
      }
    }
  })

  test('null ("no reading") is always stored', async () => {
    await feed(rig.agent, [{ t: BASE + 20 * MIN, gpu: 0, values: { utilization_pct: null, temperature_c: null } }])
  })
})

describe('host facts an agent reports', () => {
  test('a disk or GPU memory size past its bound is a 422 at enrolment, never a database error', async () => {
    const rig = await newRig(app)
    const { token } = await mintInitToken(app, rig.owner)
    const facts = {
      agent_version: '1.4.0',
      hostname: 'huge',
      disk_gb: 1e308,
      gpus: [{ index: 0, model: 'NVIDIA GeForce RTX 4090', memory_mb: 1e19 }],
    }
    const res = await app.fetch('/api/v1/agent/register', { method: 'POST', json: { init_token: token, ...facts } })
    expect(res.status).toBe(422)
    const paths = ((await res.json()) as { errors: { path: string }[] }).errors.map((e) => e.path).sort()
    expect(paths).toEqual(['/disk_gb', '/gpus/0/memory_mb'])
    // Within the bounds, enrolment works.
    await enrolAgent(app, rig.owner, { disk_gb: 10_000_000, gpus: [{ index: 0, model: 'NVIDIA H200', memory_mb: 141_312 }] })
  })
})

describe('values stored before the bounds existed', () => {
  test('a latest utilisation, temperature and fan of 1e308 still give GET /servers 200 with plain numbers, and the metrics answer plain numbers', async () => {
    const rig = await newRig(app, { gpus: 1 })
    const t = BASE + 30 * MIN
    await feed(rig.agent, [{ t, gpu: 0, values: { utilization_pct: 50, temperature_c: 70, fan_pct: 30, tokens_per_second: 3 } }])
    await runJob(app, 'presence.sweep')
    // As an older service stored them: straight into the rows the answers read.
    await app.deps.db.run(
      sql`UPDATE server_latest_metrics SET value = 1e308 WHERE server_id = ${rig.serverId} AND metric IN ('utilization_pct', 'temperature_c', 'fan_pct')`,
    )
    await app.deps.db.run(
      sql`UPDATE metric_samples SET value = 1.5e-9 WHERE series_id IN (SELECT id FROM metric_series WHERE server_id = ${rig.serverId} AND metric = 'tokens_per_second')`,
    )
    const row = await fleetRow(rig.owner, rig.serverId)
    // The row's numbers: a stored value out of its metric's range reads as no reading, and the
    // rounding of a 1e308 temperature no longer overflows into a 500.
    expect(row).toMatchObject({ avg_util_pct: null, max_temp_core_c: null, max_fan_pct: null, gpu_vitals: [{ index: 0, temp_c: null, fan_pct: null }] })
    for (const path of ['/servers', `/servers/${rig.serverId}`]) {
      const res = await api(app, rig.owner, 'GET', path)
      expect({ path, status: res.status }).toEqual({ path, status: 200 })
      expect(await res.text()).not.toMatch(/[:,[]-?[0-9.]+e[+-]?[0-9]/i)
    }
    const res = await api(app, rig.owner, 'GET', `/servers/${rig.serverId}/metrics?metric=tokens_per_second&metric=utilization_pct`)
    const text = await res.text()
    expect(res.status).toBe(200)
    // No JSON number with an exponent (an id's "…4e5…" is inside a string, after a quote).
    expect(text).not.toMatch(/[:,[]-?[0-9.]+e[+-]?[0-9]/i)
    const snap = JSON.parse(text)
    expect(seriesOf(snap, 'tokens_per_second', 0).points.find((p: { last: number | null }) => p.last !== null)!.last).toBe(0.0000000015)
  })
})

describe('the shared number formatter (src/platform/numbers.ts)', () => {
  const extremes = [0, -0, 1, -1, 0.1, 1e-7, -1e-7, 5e-324, 1e21, -1e21, 1e308, -1e308, Number.MAX_VALUE, 2 ** 53 + 2, 123456.789, 32.699999999999996]

  test('never writes an exponent, for any finite number', () => {
    for (const v of extremes) {
      for (const d of [0, 1, 2, 6, 12]) expect({ v, d, text: formatDecimal(v, d) }).toEqual({ v, d, text: expect.stringMatching(DECIMAL) })
      expect({ v, text: formatSignificant(v, 12) }).toEqual({ v, text: expect.stringMatching(DECIMAL) })
      expect({ v, text: formatShortest(v) }).toEqual({ v, text: expect.stringMatching(DECIMAL) })
      expect(Number(formatShortest(v))).toBe(v === 0 ? 0 : v)
    }
    expect(formatDecimal(97.5, 2, 2)).toBe('97.50')
    expect(formatDecimal(-0.004, 2)).toBe('0')
    expect(formatSignificant(123456789012345, 12)).toBe('123456789012000')
    expect(formatShortest(1.5e-7)).toBe('0.00000015')
    for (const v of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      expect(formatDecimal(v, 2)).toBeNull()
      expect(formatSignificant(v, 12)).toBeNull()
      expect(formatShortest(v)).toBeNull()
    }
  })

  test('no other formatter in src/ writes numbers as text (toFixed, toPrecision, toExponential)', async () => {
    const offenders: string[] = []
    for await (const file of new Bun.Glob('src/**/*.ts').scan({ cwd: `${import.meta.dir}/../..` })) {
      if (file === 'src/platform/numbers.ts') continue
      const text = await Bun.file(`${import.meta.dir}/../../${file}`).text()
      for (const m of text.matchAll(/\.(toFixed|toPrecision|toExponential)\(/g)) offenders.push(`${file}: ${m[0]}`)
    }
    expect(offenders).toEqual([])
  })
})
