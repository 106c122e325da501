import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Machine } from '../../agent/lib/machine'
import { NvidiaSmi } from '../../agent/lib/nvidia'
import { AGENT_VERSION } from '../../agent/lib/version'
import { call, mintPat, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { closeAllAgents, enrolAgent, newOwner, RawAgent, runJob, stopApp, type Owner } from '../support/fleet'
import { parseExposition, promtool, samplesOf, sampleValue } from './exposition'

/**
 * Issue 38, the counters that matter on real hardware (docs/prometheus.md "Metrics"): two H100s
 * whose facts and readings come from a real nvidia-smi capture through the reference agent's
 * parser, one of them with its link fallen to x8, ECC errors and remapped rows, and Xid events;
 * the scrape passes `promtool check metrics` and shows each counter per GPU.
 */

const CAPTURE = join(import.meta.dir, '../agent/captures/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt')
const FAKE = join(import.meta.dir, '../agent/fake-nvidia-smi.ts')

let app: TestApp
let owner: Owner
let dir: string
let token: string
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newOwner(app, 'prom-hw', 'pro')
  const member: Member = { userId: owner.userId, tenantId: owner.tenantId, email: owner.email, role: 'owner', session: owner.session }
  token = (await mintPat(app, member, { scopes: ['servers:read'] })).token
  dir = mkdtempSync(join(tmpdir(), 'gpuhq-prom-hw-'))
})
afterAll(async () => {
  await closeAllAgents()
  await stopApp(app)
  rmSync(dir, { recursive: true, force: true })
})

test('PCIe degradation, ECC errors, remapped rows and Xids per GPU, and promtool passes the scrape', async () => {
  const smi = join(dir, 'nvidia-smi')
  writeFileSync(smi, `#!/bin/sh\nFAKE_NVIDIA_SMI_CAPTURE='${CAPTURE}' exec '${process.execPath}' '${FAKE}' "$@"\n`, { mode: 0o755 })
  const facts = await new Machine({ stateDir: join(dir, 'state'), nvidiaSmi: smi }).facts()
  const read = (await new NvidiaSmi(smi).telemetry()).get(0)!
  const servers: Record<string, { id: string; agent: RawAgent }> = {}
  for (const name of ['healthy', 'sick']) {
    const f = { ...facts, agent_version: AGENT_VERSION, hostname: name, fingerprint: `sha256:${name}` }
    const e = await enrolAgent(app, owner, f as never)
    const { agent } = await RawAgent.start(app, e.agent_token, f as never)
    agent.heartbeat()
    servers[name] = { id: e.server_id, agent }
  }
  servers.healthy!.agent.telemetry({ 0: read })
  servers.sick!.agent.telemetry({
    0: { ...read, pcie_link_width: 8, ecc_corrected_aggregate: 1234, ecc_uncorrected_aggregate: 2, remapped_rows_correctable: 3, remapped_rows_pending: 1 },
  })
  const xid = (n: number, gpu?: number) => ({ xid: n, meaning: 'm', pci_bus_id: '0000:00:09', ...(gpu === undefined ? {} : { gpu_index: gpu }) })
  servers.sick!.agent.event('gpu.xid', 'critical', 'Xid 79', xid(79, 0))
  servers.sick!.agent.event('gpu.xid', 'critical', 'Xid 79', xid(79, 0))
  servers.sick!.agent.event('gpu.xid', 'critical', 'Xid 48', xid(48, 0))
  servers.sick!.agent.event('gpu.xid', 'warning', 'Xid 13', xid(13))
  for (const s of Object.values(servers)) await s.agent.barrier()
  await runJob(app, 'presence.sweep')

  const res = await call(app, 'GET', '/metrics/prometheus', token)
  const text = await res.text()
  expect(res.status).toBe(200)
  expect(promtool(['check', 'metrics'], text)).toEqual({ code: 0, output: '' })
  const p = parseExposition(text)
  const healthy = { server: servers.healthy!.id, gpu: '0', model: 'NVIDIA H100 80GB HBM3' }
  const sick = { server: servers.sick!.id, gpu: '0' }
  expect(p.types.get('gpuhq_gpu_xid_errors_total')).toBe('counter')
  expect(p.types.get('gpuhq_gpu_ecc_corrected_errors_total')).toBe('counter')
  expect(sampleValue(p, 'gpuhq_gpu_pcie_link_degraded', healthy)).toBe('0')
  expect(sampleValue(p, 'gpuhq_gpu_pcie_link_degraded', sick)).toBe('1')
  expect(sampleValue(p, 'gpuhq_gpu_pcie_link_width_lanes', sick)).toBe('8')
  expect(sampleValue(p, 'gpuhq_gpu_pcie_link_generation', healthy)).toBe('5')
  expect(sampleValue(p, 'gpuhq_gpu_power_limit_watts', healthy)).toBe('700')
  expect(sampleValue(p, 'gpuhq_gpu_ecc_corrected_errors_total', healthy)).toBe('0')
  expect(sampleValue(p, 'gpuhq_gpu_ecc_corrected_errors_total', sick)).toBe('1234')
  expect(sampleValue(p, 'gpuhq_gpu_ecc_uncorrected_errors_total', sick)).toBe('2')
  expect(sampleValue(p, 'gpuhq_gpu_remapped_rows_correctable', sick)).toBe('3')
  expect(sampleValue(p, 'gpuhq_gpu_remapped_rows_pending', sick)).toBe('1')
  expect(sampleValue(p, 'gpuhq_gpu_remapped_rows_failed', healthy)).toBe('0')
  // The H100 retires no pages (row remapping replaced it): [N/A] is no sample, never a zero.
  expect(samplesOf(p, 'gpuhq_gpu_retired_pages_single_bit')).toEqual([])
  expect(
    samplesOf(p, 'gpuhq_gpu_xid_errors_total')
      .map((s) => [s.labels.server === servers.sick!.id, s.labels.gpu ?? 'none', s.labels.xid, s.value])
      .sort(),
  ).toEqual(
    [
      [true, '0', '48', '1'],
      [true, '0', '79', '2'],
      [true, 'none', '13', '1'],
    ].sort(),
  )
})
