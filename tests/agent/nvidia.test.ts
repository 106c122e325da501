import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  csvMode,
  csvNumber,
  GPU_METRICS,
  NvidiaSmi,
  HEALTH_METRICS,
  parseMigDevices,
  parseVersions,
  invalidQueryField,
  parseInventory,
  parseTelemetry,
  summariseNvidiaSmiQ,
  TELEMETRY_FIELDS,
} from '../../agent/lib/nvidia'

const FIELDS = Object.keys(TELEMETRY_FIELDS)

describe('nvidia-smi CSV', () => {
  test('the inventory query becomes index, model, memory and UUID per GPU, ordered by index', () => {
    const text = [
      '1, NVIDIA GeForce RTX 3090, 24576, GPU-bbbbbbbb-1111-2222-3333-444444444444',
      '0, NVIDIA GeForce RTX 4090, 24564, GPU-aaaaaaaa-1111-2222-3333-444444444444',
      '',
    ].join('\n')
    expect(parseInventory(text)).toEqual([
      { index: 0, model: 'NVIDIA GeForce RTX 4090', memory_mb: 24564, uuid: 'GPU-aaaaaaaa-1111-2222-3333-444444444444', pci_bus_id: null },
      { index: 1, model: 'NVIDIA GeForce RTX 3090', memory_mb: 24576, uuid: 'GPU-bbbbbbbb-1111-2222-3333-444444444444', pci_bus_id: null },
    ])
  })

  test('telemetry maps the query fields to the protocol metric names', () => {
    const text = '0, 64, 78, 97, 21034, 431.57, 68, 2520\n'
    const values = parseTelemetry(text, FIELDS).get(0)!
    expect(values).toEqual({
      temperature_c: 64,
      hotspot_temperature_c: null,
      memory_temperature_c: 78,
      utilization_pct: 97,
      memory_used_mb: 21034,
      power_w: 431.57,
      fan_pct: 68,
      clock_sm_mhz: 2520,
      ...Object.fromEntries(HEALTH_METRICS.map((m) => [m, null])),
    })
    expect(Object.keys(values).sort()).toEqual([...GPU_METRICS, ...HEALTH_METRICS].sort())
  })

  test('[N/A], [Not Supported] and other bracketed markers are unknown (null), never zero', () => {
    const text = '0, 41, [N/A], 0, 512, [Not Supported], [N/A], 210\n1, [GPU is lost], [Unknown Error], [N/A], [N/A], [N/A], [N/A], [N/A]'
    const rows = parseTelemetry(text, FIELDS)
    expect(rows.get(0)).toMatchObject({ temperature_c: 41, memory_temperature_c: null, utilization_pct: 0, power_w: null, fan_pct: null })
    expect(Object.values(rows.get(1)!).every((v) => v === null)).toBe(true)
  })

  test('a missing trailing column is null, and cells with a unit still parse', () => {
    expect(parseTelemetry('0, 50', FIELDS).get(0)).toMatchObject({ temperature_c: 50, clock_sm_mhz: null })
    expect(csvNumber('250.00 W')).toBe(250)
    expect(csvNumber('N/A')).toBeNull()
    expect(csvNumber('')).toBeNull()
    expect(csvNumber('abc')).toBeNull()
  })

  test('the clock event bitmask is hex, pending flags are Yes/No, modes are Enabled/Disabled; anything else unknown', () => {
    expect(csvNumber('0x00000000000001FF')).toBe(0x1ff)
    expect(csvNumber('0x0000000000000000')).toBe(0)
    expect(csvNumber('0xZZ')).toBeNull()
    expect([csvNumber('Yes'), csvNumber('No')]).toEqual([1, 0])
    expect([csvMode('Enabled'), csvMode('Disabled'), csvMode('[N/A]'), csvMode('None'), csvMode('[Requested functionality has been deprecated]')]).toEqual([
      true,
      false,
      null,
      null,
      null,
    ])
  })

  test('nvidia-smi -L: MIG devices are counted under their GPU, never as GPUs; --version gives driver and CUDA', () => {
    const list =
      'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)\n  MIG 3g.40gb     Device  0: (UUID: MIG-0)\n  MIG 1g.10gb     Device  1: (UUID: MIG-1)\nGPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n'
    expect([...parseMigDevices(list)]).toEqual([
      [0, 2],
      [1, 0],
    ])
    expect(parseVersions('NVIDIA-SMI version  : 590.48.01\nDRIVER version      : 590.48.01\nCUDA Version        : 13.1\n')).toEqual({
      driver_version: '590.48.01',
      cuda_version: '13.1',
    })
    expect(parseVersions('NVIDIA-SMI version  : 470.256.02\n')).toEqual({ driver_version: null, cuda_version: null })
  })

  test('when the query has fewer fields (an old driver), the remaining ones still land on the right metrics', () => {
    const fields = FIELDS.filter((f) => f !== 'temperature.memory')
    expect(parseTelemetry('0, 60, 90, 100, 300, 50, 1800', fields).get(0)).toMatchObject({
      temperature_c: 60,
      memory_temperature_c: null,
      utilization_pct: 90,
      clock_sm_mhz: 1800,
    })
  })

  test('an old driver refusing a field is recognised so the field can be dropped', () => {
    expect(invalidQueryField('Field "temperature.memory" is not a valid field to query.\n')).toBe('temperature.memory')
    expect(invalidQueryField('NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.')).toBeNull()
  })
})

const Q_SAMPLE = `
==============NVSMI LOG==============

Timestamp                                 : Sun Nov 22 14:00:00 2026
Driver Version                            : 550.54.14
CUDA Version                              : 12.4

Attached GPUs                             : 1
GPU 00000000:01:00.0
    Product Name                          : NVIDIA GeForce RTX 4090
    Product Brand                         : GeForce
    Persistence Mode                      : Enabled
    GPU UUID                              : GPU-aaaaaaaa-1111-2222-3333-444444444444
    VBIOS Version                         : 95.02.18.80.5F
    Performance State                     : P2
    ECC Errors
        Volatile
            SRAM Correctable              : N/A
            DRAM Uncorrectable            : N/A
    Temperature
        GPU Current Temp                  : 63 C
        GPU Shutdown Temp                 : 92 C
        GPU Slowdown Temp                 : 89 C
    GPU Power Readings
        Power Draw                        : 402.31 W
        Current Power Limit               : 450.00 W
        Default Power Limit               : 450.00 W
        Min Power Limit                   : 150.00 W
        Max Power Limit                   : 600.00 W
`

describe('nvidia-smi -q', () => {
  test('the diagnostics summary picks driver, CUDA and per-GPU facts out of the indented report', () => {
    expect(summariseNvidiaSmiQ(Q_SAMPLE)).toEqual({
      driver_version: '550.54.14',
      cuda_version: '12.4',
      attached_gpus: 1,
      gpus: [
        {
          bus_id: '00000000:01:00.0',
          product_name: 'NVIDIA GeForce RTX 4090',
          uuid: 'GPU-aaaaaaaa-1111-2222-3333-444444444444',
          vbios_version: '95.02.18.80.5F',
          persistence_mode: 'Enabled',
          performance_state: 'P2',
          temperature_c: 63,
          slowdown_temperature_c: 89,
          power_draw_w: 402.31,
          power_limit_w: 450,
          power_limit_min_w: 150,
          power_limit_max_w: 600,
          ecc_uncorrected_volatile: null,
        },
      ],
    })
  })
})

describe('an older driver', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpuhq-old-driver-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  test('without versions in --version and without the newer fields: versions from -q, the refused facts null, the inventory stands', async () => {
    const bin = join(dir, 'nvidia-smi')
    // As a 470 driver: --version is unknown, pcie.link.gen.max and mig.mode.current are accepted, vbios too; the rest refused one by one.
    writeFileSync(
      bin,
      `#!/bin/sh
case "$*" in
  --version) echo "Invalid combination of input arguments."; exit 2 ;;
  -q) printf 'Driver Version                            : 470.256.02\\nCUDA Version                              : 11.4\\n' ;;
  -L) echo "GPU 0: Tesla V100-SXM2-16GB (UUID: GPU-v100)" ;;
  *index,name,memory.total,uuid,pci.bus_id*) echo "0, Tesla V100-SXM2-16GB, 16160, GPU-v100, 00000000:00:1E.0" ;;
  *pcie.link.width.max*) echo 'Field "pcie.link.width.max" is not a valid field to query.'; exit 2 ;;
  *power.default_limit*) echo 'Field "power.default_limit" is not a valid field to query.'; exit 2 ;;
  *index,pcie.link.gen.max,power.min_limit*) echo "0, 3, 150.00, 300.00, Enabled, Enabled, [N/A], 88.00.4F.00.09" ;;
  *) exit 9 ;;
esac
`,
      { mode: 0o755 },
    )
    const facts = await new NvidiaSmi(bin).driverFacts()
    expect(facts).toEqual({
      driver_version: '470.256.02',
      cuda_version: '11.4',
      gpus: [
        {
          index: 0,
          model: 'Tesla V100-SXM2-16GB',
          memory_mb: 16160,
          uuid: 'GPU-v100',
          pci_bus_id: '00000000:00:1E.0',
          pcie_gen_max: 3,
          pcie_width_max: null,
          power_limit_default_w: null,
          power_limit_min_w: 150,
          power_limit_max_w: 300,
          ecc_mode: true,
          persistence_mode: true,
          mig_mode: null,
          mig_devices: 0,
          vbios_version: '88.00.4F.00.09',
        },
      ],
    })
  })
})
