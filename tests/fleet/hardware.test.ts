import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Machine } from '../../agent/lib/machine'
import { NvidiaSmi } from '../../agent/lib/nvidia'
import { AGENT_VERSION } from '../../agent/lib/version'
import { startTestApp, type TestApp } from '../support/app'
import { closeAllAgents, enrolAgent, eventually, getServer, newOwner, RawAgent, runJob, serverEvents, stopApp, type Owner } from '../support/fleet'
import { expectProblem } from '../support/problem'

/**
 * Issue 38, the service side of the agent's facts (docs/agent.md "Facts", "Health readings",
 * "Kernel log"): what the reference agent derives from a real H100's nvidia-smi (a capture replayed
 * by the fake nvidia-smi) is enrolled and said hello with over the real HTTP and WebSocket
 * endpoints, stored, and shown by GET /servers/{id}: host details, per-GPU facts, the health
 * verdicts and the Xid counts. Bounds refuse what no hardware reports.
 */

const CAPTURE = join(import.meta.dir, '../agent/captures/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt')
const FAKE = join(import.meta.dir, '../agent/fake-nvidia-smi.ts')

let app: TestApp
let owner: Owner
let dir: string
let smi: string
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newOwner(app, 'hardware', 'pro')
  dir = mkdtempSync(join(tmpdir(), 'gpuhq-hardware-'))
  smi = join(dir, 'nvidia-smi')
  writeFileSync(smi, `#!/bin/sh\nFAKE_NVIDIA_SMI_CAPTURE='${CAPTURE}' exec '${process.execPath}' '${FAKE}' "$@"\n`, { mode: 0o755 })
})
afterAll(async () => {
  await closeAllAgents()
  await stopApp(app)
  rmSync(dir, { recursive: true, force: true })
})

/** The facts the reference agent reports on the H100 of the capture (its hello body but the version). */
async function h100Facts() {
  const facts = await new Machine({ stateDir: join(dir, 'state'), nvidiaSmi: smi }).facts()
  // Each its own server: the same capture would otherwise match the first one's fingerprint.
  const tag = Math.random().toString(36).slice(2, 10)
  return { ...facts, agent_version: AGENT_VERSION, hostname: `h100-${tag}`, fingerprint: `sha256:${tag}` }
}

/** An H100 enrolled and online with the capture's facts, and its telemetry as the agent reads it. */
async function onlineH100() {
  const facts = await h100Facts()
  const e = await enrolAgent(app, owner, facts as never)
  const { agent } = await RawAgent.start(app, e.agent_token, facts as never)
  agent.heartbeat()
  const values = (await new NvidiaSmi(smi).telemetry()).get(0)!
  return { e, agent, facts, values }
}

describe('GET /servers/{id} shows what the agent found on a real H100', () => {
  test('host details, per-GPU facts, the latest health readings and the verdicts', async () => {
    const { e, agent, values } = await onlineH100()
    agent.telemetry({ 0: values })
    await agent.barrier()
    await runJob(app, 'presence.sweep')
    const server = await getServer(app, owner, e.server_id)
    expect(server.host_details).toMatchObject({ driver_version: '590.48.01', cuda_version: '13.1' })
    expect(server.host_details.cpu_cores).toBeGreaterThan(0)
    expect(server.host_details.ram_mb).toBeGreaterThan(0)
    expect(server.gpus).toHaveLength(1)
    expect(server.gpus[0]).toMatchObject({
      index: 0,
      model: 'NVIDIA H100 80GB HBM3',
      pci_bus_id: '00000000:00:09.0',
      pcie_gen_max: 5,
      pcie_width_max: 16,
      power_limit_default_w: 700,
      power_limit_min_w: 200,
      power_limit_max_w: 700,
      ecc_mode: true,
      persistence_mode: true,
      mig_mode: false,
      mig_devices: 0,
      vbios_version: '96.00.A5.00.01',
    })
    const metrics = server.telemetry.gpus[0].metrics
    expect(metrics.pcie_link_width.value).toBe(16)
    expect(metrics.pcie_link_gen.value).toBe(5)
    expect(metrics.power_limit_w.value).toBe(700)
    expect(metrics.ecc_uncorrected_aggregate.value).toBe(0)
    expect(metrics.retired_pages_sbe.value).toBeNull()
    expect(server.gpu_health).toEqual([{ index: 0, pcie_link_degraded: false, clock_event_reasons: [], xids: [] }])
  })

  test('a link at x4 is degraded; gen 3 of 5 at idle is not, under load it is; the clock reasons are named', async () => {
    const { e, agent, values } = await onlineH100()
    const verdict = async (v: Record<string, number | null>) => {
      agent.telemetry({ 0: { ...values, ...v } })
      await agent.barrier()
      await runJob(app, 'presence.sweep')
      return (await getServer(app, owner, e.server_id)).gpu_health[0]
    }
    expect((await verdict({ pcie_link_width: 4 })).pcie_link_degraded).toBe(true)
    expect((await verdict({ pcie_link_gen: 3, utilization_pct: 0 })).pcie_link_degraded).toBe(false)
    expect((await verdict({ pcie_link_gen: 3, utilization_pct: 90 })).pcie_link_degraded).toBe(true)
    expect((await verdict({ clock_event_reasons: 0x44 })).clock_event_reasons).toEqual(['sw_power_cap', 'hw_thermal_slowdown'])
    expect((await verdict({ pcie_link_width: null, pcie_link_gen: null })).pcie_link_degraded).toBeNull()
  })

  test('Xid events are stored as events and counted per GPU and Xid; one the agent could not place is listed apart', async () => {
    const { e, agent } = await onlineH100()
    const fallen = { xid: 79, meaning: 'GPU has fallen off the bus', pci_bus_id: '0000:00:09', gpu_index: 0 }
    agent.event('gpu.xid', 'critical', 'Xid 79 on PCI 0000:00:09: GPU has fallen off the bus', fallen)
    agent.event('gpu.xid', 'critical', 'Xid 79 on PCI 0000:00:09: GPU has fallen off the bus', fallen)
    agent.event('gpu.xid', 'warning', 'Xid 13 on PCI 0000:3b:00: Graphics engine exception', { xid: 13, pci_bus_id: '0000:3b:00' })
    agent.event('gpu.xid', 'warning', 'a Xid without its number counts nowhere', { xid: 'seventy-nine' })
    await agent.barrier()
    const health = await eventually(async () => {
      const h = (await getServer(app, owner, e.server_id)).gpu_health
      return h.length === 2 ? h : null
    })
    expect(health.map((g: { index: number | null; xids: { xid: number; count: number }[] }) => [g.index, g.xids.map((x) => [x.xid, x.count])])).toEqual([
      [0, [[79, 2]]],
      [null, [[13, 1]]],
    ])
    const events = (await serverEvents(app, owner, e.server_id, { kind: 'agent.gpu.xid' })).items
    expect(events).toHaveLength(4)
    expect(events.find((x) => x.data?.xid === 79)).toMatchObject({ severity: 'critical', data: { meaning: 'GPU has fallen off the bus' } })
  })

  test('an agent older than these facts: host_details null, its GPUs as it reported them', async () => {
    const e = await enrolAgent(app, owner)
    const server = await getServer(app, owner, e.server_id)
    expect(server.host_details).toBeNull()
    expect(Object.keys(server.gpus[0]).sort()).toEqual(['index', 'memory_mb', 'model', 'uuid'])
    expect(server.gpu_health).toEqual([
      { index: 0, pcie_link_degraded: null, clock_event_reasons: null, xids: [] },
      { index: 1, pcie_link_degraded: null, clock_event_reasons: null, xids: [] },
    ])
  })
})

describe('bounds on what an agent reports', () => {
  test.each([
    ['a 65-character driver version', { driver_version: '5'.repeat(65) }],
    ['zero CPU cores', { cpu_cores: 0 }],
    ['a negative free disk', { disk_free_gb: -1 }],
    ['RAM past 256 TiB', { ram_mb: 268_435_457 }],
  ])('enrolment with %s is refused with 422 and stores nothing', async (_what, extra) => {
    const facts = { ...(await h100Facts()), ...extra }
    const { token } = await import('../support/fleet').then((m) => m.mintInitToken(app, owner))
    await expectProblem(await app.fetch('/api/v1/agent/register', { method: 'POST', json: { init_token: token, ...facts } }), 422, 'validation_failed')
  })

  test.each([
    ['a PCIe width of 128 lanes', { pcie_width_max: 128 }],
    ['a power limit of 6 kW', { power_limit_max_w: 6000 }],
    ['a VBIOS version of 65 characters', { vbios_version: 'v'.repeat(65) }],
    ['ECC mode as text', { ecc_mode: 'Enabled' }],
  ])('a hello with a GPU of %s gets an error frame and changes nothing', async (_what, extra) => {
    const { e, agent, facts } = await onlineH100()
    const error = await agent.expectError({ type: 'hello', ...facts, gpus: [{ ...facts.gpus[0], ...extra }] })
    expect(error).toMatchObject({ type: 'error', code: 'validation_failed' })
    expect((await getServer(app, owner, e.server_id)).gpus[0]).toMatchObject({ pcie_width_max: 16, power_limit_max_w: 700, ecc_mode: true })
  })

  test('health readings outside what hardware reports are dropped with an error frame, the rest stored', async () => {
    const { e, agent, values } = await onlineH100()
    const error = await agent.expectError({
      type: 'telemetry',
      samples: [
        {
          t: new Date().toISOString(),
          scope: 'gpu',
          gpu_index: 0,
          values: { ...values, pcie_link_width: 65, remapped_rows_pending: 2, ecc_corrected_aggregate: -1 },
        },
      ],
    })
    expect(error.message).toContain('3 value(s) outside')
    await runJob(app, 'presence.sweep')
    const metrics = (await getServer(app, owner, e.server_id)).telemetry.gpus[0].metrics
    expect(metrics.pcie_link_gen.value).toBe(5)
    expect(metrics.pcie_link_width).toBeUndefined()
  })
})
