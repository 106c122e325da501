import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { enroll } from '../../agent/lib/enroll'
import { memoryLogger } from '../../agent/lib/log'
import { Machine } from '../../agent/lib/machine'
import { csvNumber, GPU_METRICS, HEALTH_METRICS, NvidiaSmi, TELEMETRY_FIELDS } from '../../agent/lib/nvidia'
import { startAgent } from '../../agent/lib/session'
import { FakeService, waitFor, type Frame } from './fake-service'
import { project } from './fake-nvidia-smi'

/**
 * The agent's parsing proved against what real drivers print (docs/agent.md "Facts", "Health
 * readings"): each capture of tests/agent/captures/ (five real machines, their README) is replayed
 * through a fake `nvidia-smi` on PATH that answers every command the agent runs from the file.
 * The facts and the telemetry the agent derives are asserted per capture, against values read
 * off the capture text by hand (the table below) and, for every telemetry field, against the
 * capture's own CSV cell.
 */

const CAPTURES = join(import.meta.dir, 'captures')
const FAKE = join(import.meta.dir, 'fake-nvidia-smi.ts')
const AGENT = join(import.meta.dir, '../../agent/gpuhq-agent.ts')

type Expected = {
  driver: string
  cuda: string
  gpu: Record<string, unknown>
  telemetry: Record<string, number | null>
}

const CONSUMER_HEALTH = {
  ecc_corrected_volatile: null,
  ecc_uncorrected_volatile: null,
  ecc_corrected_aggregate: null,
  ecc_uncorrected_aggregate: null,
  retired_pages_sbe: null,
  retired_pages_dbe: null,
  retired_pages_pending: null,
  remapped_rows_correctable: null,
  remapped_rows_uncorrectable: null,
  remapped_rows_pending: null,
  remapped_rows_failure: null,
}
const HOPPER_HEALTH = {
  ecc_corrected_volatile: 0,
  ecc_uncorrected_volatile: 0,
  ecc_corrected_aggregate: 0,
  ecc_uncorrected_aggregate: 0,
  // Hopper remaps rows instead of retiring pages: the driver answers [N/A] for pages.
  retired_pages_sbe: null,
  retired_pages_dbe: null,
  retired_pages_pending: null,
  remapped_rows_correctable: 0,
  remapped_rows_uncorrectable: 0,
  remapped_rows_pending: 0,
  remapped_rows_failure: 0,
}

/** Read off each capture's "load" sections by hand. */
const EXPECTED: Record<string, Expected> = {
  'linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.txt': {
    driver: '595.71.05',
    cuda: '13.2',
    gpu: {
      model: 'NVIDIA GeForce RTX 2080 SUPER',
      memory_mb: 8192,
      pcie_gen_max: 3,
      pcie_width_max: 16,
      power_limit_default_w: 250,
      power_limit_min_w: 105,
      power_limit_max_w: 350,
      ecc_mode: null,
      persistence_mode: false,
      mig_mode: null,
      mig_devices: 0,
      vbios_version: '90.04.7A.40.73',
    },
    telemetry: {
      pcie_link_gen: 3,
      pcie_link_width: 16,
      power_limit_w: 250,
      clock_event_reasons: 0,
      memory_temperature_c: null,
      clock_sm_mhz: 2055,
      ...CONSUMER_HEALTH,
    },
  },
  'linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt': {
    driver: '595.71.05',
    cuda: '13.2',
    gpu: {
      model: 'NVIDIA GeForce RTX 4080 SUPER',
      memory_mb: 16376,
      pcie_gen_max: 4,
      pcie_width_max: 16,
      power_limit_default_w: 320,
      power_limit_min_w: 150,
      power_limit_max_w: 400,
      ecc_mode: null,
      persistence_mode: false,
      mig_mode: null,
      mig_devices: 0,
      vbios_version: '95.03.44.00.B2',
    },
    telemetry: {
      pcie_link_gen: 4,
      pcie_link_width: 16,
      power_limit_w: 320,
      clock_event_reasons: 0,
      memory_temperature_c: null,
      clock_sm_mhz: 2805,
      ...CONSUMER_HEALTH,
    },
  },
  'linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt': {
    driver: '590.48.01',
    cuda: '13.1',
    gpu: {
      model: 'NVIDIA H100 80GB HBM3',
      memory_mb: 81559,
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
    },
    telemetry: {
      pcie_link_gen: 5,
      pcie_link_width: 16,
      power_limit_w: 700,
      clock_event_reasons: 0,
      memory_temperature_c: 54,
      clock_sm_mhz: 1980,
      ...HOPPER_HEALTH,
    },
  },
  'linux-x86_64__nvidia-h100-mig__590.48.01.txt': {
    driver: '590.48.01',
    cuda: '13.1',
    gpu: {
      model: 'NVIDIA H100 80GB HBM3',
      memory_mb: 81559,
      pcie_gen_max: 5,
      pcie_width_max: 16,
      power_limit_default_w: 700,
      power_limit_min_w: 200,
      power_limit_max_w: 700,
      ecc_mode: true,
      persistence_mode: true,
      mig_mode: true,
      // Four MIG devices under GPU 0 in `nvidia-smi -L`: still one GPU.
      mig_devices: 4,
      vbios_version: '96.00.A5.00.01',
    },
    // In MIG mode the driver answers [N/A] for the row remapper.
    telemetry: {
      pcie_link_gen: 5,
      pcie_link_width: 16,
      power_limit_w: 700,
      clock_event_reasons: 0,
      memory_temperature_c: 59,
      clock_sm_mhz: 1980,
      ...HOPPER_HEALTH,
      remapped_rows_correctable: null,
      remapped_rows_uncorrectable: null,
      remapped_rows_pending: null,
      remapped_rows_failure: null,
    },
  },
  'linux-x86_64__nvidia-h200__590.48.01.txt': {
    driver: '590.48.01',
    cuda: '13.1',
    gpu: {
      model: 'NVIDIA H200',
      pcie_gen_max: 5,
      pcie_width_max: 16,
      power_limit_default_w: 700,
      power_limit_min_w: 200,
      power_limit_max_w: 700,
      ecc_mode: true,
      persistence_mode: true,
      mig_mode: false,
      mig_devices: 0,
      vbios_version: '96.00.A5.00.03',
    },
    telemetry: {
      pcie_link_gen: 5,
      pcie_link_width: 16,
      power_limit_w: 700,
      clock_event_reasons: 0,
      memory_temperature_c: 40,
      clock_sm_mhz: 1980,
      ...HOPPER_HEALTH,
    },
  },
}

let svc: FakeService
const dirs: string[] = []
beforeAll(() => {
  svc = new FakeService()
})
afterAll(async () => {
  await svc.stop()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** A directory holding `nvidia-smi` that replays `capture` (and nothing else the agent could find there). */
function fakeBinDir(capture: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'gpuhq-fake-smi-'))
  dirs.push(dir)
  writeFileSync(join(dir, 'nvidia-smi'), `#!/bin/sh\nFAKE_NVIDIA_SMI_CAPTURE='${join(CAPTURES, capture)}' exec '${process.execPath}' '${FAKE}' "$@"\n`, {
    mode: 0o755,
  })
  return dir
}

const files = readdirSync(CAPTURES).filter((f) => f.endsWith('.txt'))

test('every capture in tests/agent/captures/ has its expectations here, with the attribution kept', () => {
  expect(files.sort()).toEqual(Object.keys(EXPECTED).sort())
  expect(readFileSync(join(CAPTURES, 'LICENSE'), 'utf8')).toContain('Utku Özdemir')
  expect(readFileSync(join(CAPTURES, 'README.md'), 'utf8')).toContain('utkuozdemir/nvidia_gpu_exporter')
})

describe.each(files)('replaying %s', (file) => {
  const expected = EXPECTED[file]!
  const text = () => readFileSync(join(CAPTURES, file), 'utf8')

  test('`gpuhq-agent facts` with the fake nvidia-smi on PATH: driver, CUDA and the GPU facts, one GPU, exit 0', async () => {
    const bin = fakeBinDir(file)
    const proc = Bun.spawn([process.execPath, AGENT, 'facts', '--state-dir', join(bin, 'state')], {
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' })
    const facts = JSON.parse(stdout)
    expect(facts.driver_version).toBe(expected.driver)
    expect(facts.cuda_version).toBe(expected.cuda)
    expect(facts.gpus).toHaveLength(1)
    expect(facts.gpus[0]).toMatchObject({ index: 0, uuid: 'GPU-00000000-0000-0000-0000-000000000000', ...expected.gpu })
    expect(facts.gpus[0].pci_bus_id).toMatch(/^[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.0$/)
    expect(facts.cpu_cores).toBeGreaterThan(0)
    expect(facts.ram_mb).toBeGreaterThan(0)
  })

  test('the telemetry the agent derives: every field equal to its CSV cell, [N/A] null and never zero', async () => {
    const smi = new NvidiaSmi(join(fakeBinDir(file), 'nvidia-smi'))
    const values = (await smi.telemetry()).get(0)!
    expect(values).toMatchObject(expected.telemetry)
    expect(Object.keys(values).sort()).toEqual([...new Set([...GPU_METRICS, ...HEALTH_METRICS])].sort())
    const fields = Object.keys(TELEMETRY_FIELDS)
    const row = project(text(), fields, 'csv,noheader,nounits')
    if (!row.ok) throw new Error(row.message)
    const cells = row.lines[0]!.split(', ')
    fields.forEach((field, k) => {
      const metric = TELEMETRY_FIELDS[field]!
      const cell = cells[k]!
      if (/^\[|^N\/A$/.test(cell)) expect({ metric, value: values[metric] }).toEqual({ metric, value: null })
      else expect({ metric, value: values[metric] }).toEqual({ metric, value: csvNumber(cell) })
    })
  })

  test('a session: hello carries the facts, telemetry the health readings, both accepted by the protocol checkers', async () => {
    const bin = fakeBinDir(file)
    const stateDir = join(bin, 'state')
    const log = memoryLogger()
    const nvidiaSmi = join(bin, 'nvidia-smi')
    const facts = await new Machine({ stateDir, nvidiaSmi }).facts()
    const cred = await enroll({ url: svc.url, token: svc.issueInitToken(), stateDir, facts, log })
    const serverId = svc.credentials.get(cred.agent_token)!
    const agent = await startAgent({ stateDir, log, nvidiaSmi, kernelLogCommand: ['true'], telemetryIntervalS: 0.2, heartbeatIntervalS: 0.2 })
    try {
      const conn = await waitFor(() => svc.conns.find((c) => c.serverId === serverId && c.frames.some((f) => f.type === 'telemetry')))
      expect(conn.refused).toEqual([])
      const hello = conn.frames.find((f) => f.type === 'hello') as Frame & { gpus: Record<string, unknown>[] }
      expect(hello).toMatchObject({ driver_version: expected.driver, cuda_version: expected.cuda })
      expect(hello.gpus).toHaveLength(1)
      expect(hello.gpus[0]).toMatchObject(expected.gpu)
      const telemetry = conn.frames.find((f) => f.type === 'telemetry') as Frame & {
        samples: { scope: string; gpu_index?: number; values: Record<string, number | null> }[]
      }
      const gpu = telemetry.samples.filter((s) => s.scope === 'gpu')
      expect(gpu.map((s) => s.gpu_index)).toEqual([0])
      expect(gpu[0]!.values).toMatchObject(expected.telemetry)
      expect(conn.frames.filter((f) => f.type === 'event')).toEqual([])
    } finally {
      await agent.stop()
    }
  })
})

test('the idle phase of the RTX 2080 SUPER: the link trained down to gen 1 at idle is reported as it is', async () => {
  const dir = fakeBinDir('linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.txt')
  const wrapper = join(dir, 'nvidia-smi')
  writeFileSync(wrapper, readFileSync(wrapper, 'utf8').replace('exec', 'FAKE_NVIDIA_SMI_PHASE=idle exec'), { mode: 0o755 })
  const text = readFileSync(join(CAPTURES, 'linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.txt'), 'utf8')
  const row = project(text, ['pcie.link.gen.current', 'pcie.link.width.current'], 'csv,noheader,nounits', 'idle')
  if (!row.ok) throw new Error(row.message)
  const [gen, width] = row.lines[0]!.split(', ').map(Number)
  const values = (await new NvidiaSmi(wrapper).telemetry()).get(0)!
  expect({ gen: values.pcie_link_gen, width: values.pcie_link_width }).toEqual({ gen: gen!, width: width! })
})

describe('the host beside the GPUs', () => {
  const H100 = 'linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt'
  async function facts(path: string, stateDir: string) {
    const proc = Bun.spawn([process.execPath, AGENT, 'facts', '--state-dir', stateDir], { env: { ...process.env, PATH: path }, stdout: 'pipe', stderr: 'pipe' })
    const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited])
    expect(code).toBe(0)
    return JSON.parse(stdout)
  }

  test('Docker, its data root and the NVIDIA container toolkit as their own --version and docker info print them', async () => {
    const bin = fakeBinDir(H100)
    const root = mkdtempSync(join(tmpdir(), 'gpuhq-docker-root-'))
    dirs.push(root)
    writeFileSync(
      join(bin, 'docker'),
      `#!/bin/sh\ncase "$1" in\n  --version) echo "Docker version 27.3.1, build ce12230" ;;\n  info) echo "${root}" ;;\n  *) exit 1 ;;\nesac\n`,
      { mode: 0o755 },
    )
    writeFileSync(join(bin, 'nvidia-ctk'), '#!/bin/sh\necho "NVIDIA Container Toolkit CLI version 1.17.3"\necho "commit: 0123abc"\n', { mode: 0o755 })
    const f = await facts(`${bin}:/usr/bin:/bin`, join(bin, 'state'))
    expect(f).toMatchObject({ docker_version: '27.3.1', docker_root: root, nvidia_container_toolkit_version: '1.17.3' })
    expect(f.docker_disk_free_gb).toBeGreaterThanOrEqual(0)
    expect(f.disk_free_gb).toBeGreaterThanOrEqual(0)
  })

  test('without Docker or the toolkit: null, not an empty string or a zero', async () => {
    const bin = fakeBinDir(H100)
    const f = await facts(`${bin}:/usr/bin:/bin`, join(bin, 'state'))
    expect(f).toMatchObject({ docker_version: null, docker_root: null, docker_disk_free_gb: null, nvidia_container_toolkit_version: null })
  })
})
