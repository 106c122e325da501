import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../support/app'
import { listServers, type Owner } from '../support/fleet'
import { BASE, feed, HOUR, MIN, newRig, runJob, setNow, stopApp, type Rig } from './helpers'

/**
 * The telemetry-derived fields of the fleet server row (docs/telemetry.md "Fleet-row vitals"): the
 * hottest GPU per temperature, the fastest fan, the average utilization as a decimal string and one
 * gpu_vitals entry per reporting GPU in index order, taken from the latest sample of each metric by
 * its time, as they appear after a snapshot refresh.
 */

let app: TestApp
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  await setNow(app, BASE + HOUR)
})
afterAll(() => stopApp(app))

/** Writes what the agents sent (presence.sweep flushes first), refreshes the snapshots, reads the row. */
async function refreshedRow(owner: Owner, serverId: string) {
  await runJob(app, 'presence.sweep')
  await runJob(app, 'fleet.snapshot')
  const list = await listServers(app, owner)
  const row = list.items.find((r) => r.id === serverId)
  expect(row).toBeDefined()
  return row!
}

const DECIMAL = /^-?[0-9]+(\.[0-9]{1,6})?$/

describe('fleet-row vitals', () => {
  let rig: Rig
  beforeAll(async () => {
    rig = await newRig(app, { gpus: 3 })
  })

  test('the row carries the hottest core, hotspot and memory temperature, the fastest fan and the average utilization', async () => {
    const t = BASE + 10 * MIN
    // Sent GPU 2 first: gpu_vitals must still come out in index order.
    await feed(rig.agent, [
      { t, gpu: 2, values: { temperature_c: 55, hotspot_temperature_c: 66, memory_temperature_c: 92, fan_pct: 40.5, utilization_pct: 80 } },
      { t, gpu: 0, values: { temperature_c: 61.5, hotspot_temperature_c: 70, memory_temperature_c: 80, fan_pct: 35, utilization_pct: 50 } },
      { t, gpu: 1, values: { temperature_c: 72, hotspot_temperature_c: 85.5, memory_temperature_c: 78, fan_pct: 60, utilization_pct: 75 } },
      // Host readings never count as a GPU's.
      { t, values: { temperature_c: 150, fan_pct: 100, utilization_pct: 0, cpu_usage_pct: 99 } },
    ])
    const row = await refreshedRow(rig.owner, rig.serverId)
    expect(row).toMatchObject({ max_temp_core_c: 72, max_temp_hotspot_c: 85.5, max_temp_vram_c: 92, max_fan_pct: 60 })
    expect(row.avg_util_pct).toMatch(DECIMAL)
    expect(Math.abs(Number(row.avg_util_pct) - 205 / 3)).toBeLessThan(0.01)
    expect(row.gpu_vitals).toHaveLength(3)
    expect(row.gpu_vitals).toMatchObject([
      { temp_c: 61.5, fan_pct: 35 },
      { temp_c: 72, fan_pct: 60 },
      { temp_c: 55, fan_pct: 40.5 },
    ])
  })

  test('the latest sample by its time wins, even when an older one arrives later', async () => {
    const newer = BASE + 20 * MIN
    await feed(rig.agent, [
      { t: newer, gpu: 0, values: { temperature_c: 64, fan_pct: 45, utilization_pct: 10 } },
      { t: newer, gpu: 1, values: { temperature_c: 66, fan_pct: 50, utilization_pct: 20 } },
    ])
    await runJob(app, 'presence.sweep')
    // A reconnecting agent flushes readings from before `newer`, hotter than anything since.
    await feed(rig.agent, [
      { t: newer - 5 * MIN, gpu: 0, values: { temperature_c: 95, fan_pct: 99, utilization_pct: 100 } },
      { t: newer - 5 * MIN, gpu: 1, values: { temperature_c: 96, fan_pct: 98, utilization_pct: 100 } },
    ])
    const row = await refreshedRow(rig.owner, rig.serverId)
    // GPU 2 last reported at 10:10 (55 °C, 40.5 %, 80 %); GPUs 0 and 1 at 10:20.
    expect(row).toMatchObject({ max_temp_core_c: 66, max_fan_pct: 50 })
    expect(Math.abs(Number(row.avg_util_pct) - (10 + 20 + 80) / 3)).toBeLessThan(0.01)
    expect(row.gpu_vitals).toMatchObject([
      { temp_c: 64, fan_pct: 45 },
      { temp_c: 66, fan_pct: 50 },
      { temp_c: 55, fan_pct: 40.5 },
    ])
  })

  test('within one frame too, the later reading wins whatever the order it was sent in', async () => {
    const t = BASE + 30 * MIN
    await feed(rig.agent, [
      { t: t + MIN, gpu: 2, values: { temperature_c: 58 } },
      { t, gpu: 2, values: { temperature_c: 88 } },
    ])
    const row = await refreshedRow(rig.owner, rig.serverId)
    expect(row.gpu_vitals[2]).toMatchObject({ temp_c: 58 })
    expect(row.max_temp_core_c).toBe(66)
  })

  test('a GPU whose latest temperature is null shows null and drops out of the maximum', async () => {
    const t = BASE + 40 * MIN
    await feed(rig.agent, [{ t, gpu: 1, values: { temperature_c: null, fan_pct: null, utilization_pct: null } }])
    const row = await refreshedRow(rig.owner, rig.serverId)
    expect(row.gpu_vitals[1]).toMatchObject({ temp_c: null, fan_pct: null })
    expect(row).toMatchObject({ max_temp_core_c: 64, max_fan_pct: 45 })
    expect(Math.abs(Number(row.avg_util_pct) - (10 + 80) / 2)).toBeLessThan(0.01)
  })

  test('a server that has not reported has null vitals; its first readings show after a refresh', async () => {
    const other = await newRig(app, { gpus: 1 })
    const before = await refreshedRow(other.owner, other.serverId)
    expect(before).toMatchObject({ max_temp_core_c: null, max_temp_hotspot_c: null, max_temp_vram_c: null, max_fan_pct: null, avg_util_pct: null })

    await feed(other.agent, [{ t: BASE + 50 * MIN, gpu: 0, values: { temperature_c: 70, utilization_pct: 33 } }])
    const after = await refreshedRow(other.owner, other.serverId)
    // (avg_util_pct is checked on its own: bun's toMatchObject with an asymmetric matcher replaces the received value.)
    expect(after.max_temp_core_c).toBe(70)
    expect(after.avg_util_pct).toMatch(DECIMAL)
    expect(Number(after.avg_util_pct)).toBe(33)
  })
})
