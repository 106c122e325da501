import { run } from './exec'

/**
 * Reading GPUs through nvidia-smi's CSV query interface. Values like "[N/A]", "[Not Supported]",
 * "[Unknown Error]" or "[GPU is lost]" become null: unknown, never zero.
 */

/**
 * Per-GPU facts that change only with the hardware, the driver or the owner's settings (docs/agent.md
 * "Facts"); each null when the driver does not know it ("[N/A]", "[Not Supported]").
 */
type GpuDetails = {
  pcie_gen_max: number | null
  pcie_width_max: number | null
  power_limit_default_w: number | null
  power_limit_min_w: number | null
  power_limit_max_w: number | null
  ecc_mode: boolean | null
  persistence_mode: boolean | null
  mig_mode: boolean | null
  /** MIG devices listed under the GPU by `nvidia-smi -L` (0 without MIG); they are not GPUs of their own. */
  mig_devices: number | null
  vbios_version: string | null
}
export type GpuInfo = { index: number; model: string; memory_mb: number | null; uuid: string; pci_bus_id?: string | null } & Partial<GpuDetails>
export type GpuValues = Record<string, number | null>

const INVENTORY_FIELDS = ['index', 'name', 'memory.total', 'uuid', 'pci.bus_id']

/** Query field → GpuDetails key (docs/agent.md "Facts" names each field). */
const DETAIL_FIELDS: [string, keyof GpuDetails, 'number' | 'mode' | 'text'][] = [
  ['pcie.link.gen.max', 'pcie_gen_max', 'number'],
  ['pcie.link.width.max', 'pcie_width_max', 'number'],
  ['power.default_limit', 'power_limit_default_w', 'number'],
  ['power.min_limit', 'power_limit_min_w', 'number'],
  ['power.max_limit', 'power_limit_max_w', 'number'],
  ['ecc.mode.current', 'ecc_mode', 'mode'],
  ['persistence_mode', 'persistence_mode', 'mode'],
  ['mig.mode.current', 'mig_mode', 'mode'],
  ['vbios_version', 'vbios_version', 'text'],
]

/** Query field → protocol metric name, GPU scope (docs/agent.md "Behaviour, frame by frame"). */
export const TELEMETRY_FIELDS: Record<string, string> = {
  'temperature.gpu': 'temperature_c',
  'temperature.memory': 'memory_temperature_c',
  'utilization.gpu': 'utilization_pct',
  'memory.used': 'memory_used_mb',
  'power.draw': 'power_w',
  'fan.speed': 'fan_pct',
  'clocks.sm': 'clock_sm_mhz',
  // Health (docs/agent.md "Health readings"): the link now, the limit in force, why clocks are held
  // down (clocks_event_reasons.active, a hex bitmask sent as a number), and the memory's error
  // counters as the driver keeps them.
  'pcie.link.gen.current': 'pcie_link_gen',
  'pcie.link.width.current': 'pcie_link_width',
  'power.limit': 'power_limit_w',
  'clocks_throttle_reasons.active': 'clock_event_reasons',
  'ecc.errors.corrected.volatile.total': 'ecc_corrected_volatile',
  'ecc.errors.uncorrected.volatile.total': 'ecc_uncorrected_volatile',
  'ecc.errors.corrected.aggregate.total': 'ecc_corrected_aggregate',
  'ecc.errors.uncorrected.aggregate.total': 'ecc_uncorrected_aggregate',
  'retired_pages.single_bit_ecc.count': 'retired_pages_sbe',
  'retired_pages.double_bit.count': 'retired_pages_dbe',
  'retired_pages.pending': 'retired_pages_pending',
  'remapped_rows.correctable': 'remapped_rows_correctable',
  'remapped_rows.uncorrectable': 'remapped_rows_uncorrectable',
  'remapped_rows.pending': 'remapped_rows_pending',
  'remapped_rows.failure': 'remapped_rows_failure',
}

/** Every GPU metric the protocol names, so each sample carries all of them (null when unknown). */
export const GPU_METRICS = [
  'temperature_c',
  'hotspot_temperature_c',
  'memory_temperature_c',
  'utilization_pct',
  'memory_used_mb',
  'power_w',
  'fan_pct',
  'clock_sm_mhz',
]

/** The health readings a real driver adds (null when it does not know them). */
export const HEALTH_METRICS = Object.values(TELEMETRY_FIELDS).filter((m) => !GPU_METRICS.includes(m))

function parseCsvRows(text: string): string[][] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => l.split(',').map((cell) => cell.trim()))
}

/**
 * A CSV cell as a number; bracketed markers, "N/A" and anything non-numeric are null. Hex cells
 * (the clock event bitmask, "0x00000000000001FF") are read as hex; "Yes"/"No" flags (pending page
 * retirement, a pending or failed row remapping) as 1/0.
 */
export function csvNumber(cell: string | undefined): number | null {
  if (cell === undefined) return null
  const s = cell.trim()
  if (!s || s.startsWith('[') || /^n\/?a$/i.test(s)) return null
  if (/^yes$/i.test(s)) return 1
  if (/^no$/i.test(s)) return 0
  const hex = /^0x([0-9a-f]{1,13})$/i.exec(s.replace(/^0x0+(?=[0-9a-f])/i, '0x'))
  if (hex) return Number.parseInt(hex[1]!, 16)
  if (/^0x/i.test(s)) return null
  // With nounits the cell is a bare number; older drivers may still append a unit ("45 %").
  const m = /^-?\d+(?:\.\d+)?/.exec(s)
  if (!m) return null
  const n = Number(m[0])
  return Number.isFinite(n) ? n : null
}

/** "Enabled" / "Disabled" (also "On"/"Off") as a boolean; anything else (N/A, None, deprecated …) is unknown. */
export function csvMode(cell: string | undefined): boolean | null {
  const s = (cell ?? '').trim().toLowerCase()
  if (s === 'enabled' || s === 'on') return true
  if (s === 'disabled' || s === 'off') return false
  return null
}

/** Text a driver reports, or null for its markers of "unknown". */
function csvText(cell: string | undefined, max = 64): string | null {
  const s = (cell ?? '').trim()
  if (!s || s.startsWith('[') || /^n\/?a$/i.test(s)) return null
  return s.slice(0, max)
}

export function parseInventory(text: string): GpuInfo[] {
  const gpus: GpuInfo[] = []
  for (const [index, name, memory, uuid, bus] of parseCsvRows(text)) {
    const i = csvNumber(index)
    if (i === null || !Number.isInteger(i)) continue
    gpus.push({ index: i, model: name ?? 'unknown', memory_mb: csvNumber(memory), uuid: uuid ?? '', pci_bus_id: csvText(bus, 32) })
  }
  return gpus.sort((a, b) => a.index - b.index)
}

/** Rows of `index,<fields…>` of DETAIL_FIELDS (those the driver accepted) → GPU index → details. */
function parseDetails(text: string, fields: string[]): Map<number, Omit<GpuDetails, 'mig_devices'>> {
  const out = new Map<number, Omit<GpuDetails, 'mig_devices'>>()
  for (const [index, ...cells] of parseCsvRows(text)) {
    const i = csvNumber(index)
    if (i === null || !Number.isInteger(i)) continue
    const d = Object.fromEntries(DETAIL_FIELDS.map(([, key]) => [key, null])) as Omit<GpuDetails, 'mig_devices'>
    for (const [field, key, kind] of DETAIL_FIELDS) {
      const k = fields.indexOf(field)
      if (k < 0) continue
      const cell = cells[k]
      ;(d as Record<string, unknown>)[key] = kind === 'number' ? csvNumber(cell) : kind === 'mode' ? csvMode(cell) : csvText(cell)
    }
    out.set(i, d)
  }
  return out
}

/**
 * `nvidia-smi -L`: "GPU 0: … (UUID: …)" lines, each followed by its "  MIG 3g.40gb Device 0: …"
 * lines. Answers the MIG devices per GPU index (0 for a GPU without any).
 */
export function parseMigDevices(text: string): Map<number, number> {
  const out = new Map<number, number>()
  let current: number | null = null
  for (const line of text.split('\n')) {
    const gpu = /^GPU (\d+):/.exec(line)
    if (gpu) out.set((current = Number(gpu[1])), 0)
    else if (current !== null && /^\s+MIG\s/.test(line)) out.set(current, out.get(current)! + 1)
  }
  return out
}

/** `nvidia-smi --version`: "DRIVER version : 590.48.01" and "CUDA Version : 13.1" (drivers from 2023 on). */
export function parseVersions(text: string): { driver_version: string | null; cuda_version: string | null } {
  const value = (re: RegExp) => csvText(re.exec(text)?.[1])
  return { driver_version: value(/^DRIVER version\s*:\s*(\S+)/im), cuda_version: value(/^CUDA Version\s*:\s*(\S+)/im) }
}

/** Rows of `index,<fields…>` → per-GPU metric values, every protocol metric present. */
export function parseTelemetry(text: string, fields: string[]): Map<number, GpuValues> {
  const out = new Map<number, GpuValues>()
  for (const [index, ...cells] of parseCsvRows(text)) {
    const i = csvNumber(index)
    if (i === null || !Number.isInteger(i)) continue
    const values: GpuValues = Object.fromEntries(GPU_METRICS.map((m) => [m, null]))
    fields.forEach((field, k) => {
      const metric = TELEMETRY_FIELDS[field]
      if (metric) values[metric] = csvNumber(cells[k])
    })
    out.set(i, values)
  }
  return out
}

/** 'Field "temperature.memory" is not a valid field to query.' → the field, so it can be dropped. */
export function invalidQueryField(stderrOrStdout: string): string | null {
  return /Field "([^"]+)" is not a valid field/i.exec(stderrOrStdout)?.[1] ?? null
}

export type DriverFacts = { driver_version: string | null; cuda_version: string | null; gpus: GpuInfo[] }

export class NvidiaSmi {
  private fields = Object.keys(TELEMETRY_FIELDS)
  private detailFields = DETAIL_FIELDS.map(([f]) => f)

  constructor(readonly bin = 'nvidia-smi') {}

  private failure(r: { code: number; notFound: boolean }): Error {
    return new Error(r.notFound ? `${this.bin} not found` : `${this.bin} exited with ${r.code}`)
  }

  /**
   * `--query-gpu=index,<fields>`: an older driver refuses the whole query for one field it does not
   * know; that field is dropped (for good, `fields` is the caller's list) and the query asked again.
   */
  private async query(fields: string[]): Promise<{ text: string; fields: string[] }> {
    let asked = [...fields]
    for (let attempt = 0; attempt <= fields.length; attempt++) {
      const r = await run([this.bin, `--query-gpu=index${asked.length ? ',' : ''}${asked.join(',')}`, '--format=csv,noheader,nounits'])
      if (r.code === 0) return { text: r.stdout, fields: asked }
      const bad = invalidQueryField(r.stdout + r.stderr)
      if (!bad || !asked.includes(bad)) throw this.failure(r)
      asked = asked.filter((f) => f !== bad)
    }
    throw new Error(`${this.bin} refused the query`)
  }

  async inventory(): Promise<GpuInfo[]> {
    const r = await run([this.bin, `--query-gpu=${INVENTORY_FIELDS.join(',')}`, '--format=csv,noheader,nounits'])
    if (r.code !== 0) throw this.failure(r)
    return parseInventory(r.stdout)
  }

  /**
   * The inventory with each GPU's details, and the driver's and CUDA's versions. Only the inventory
   * must answer: a driver that refuses the rest leaves those facts null.
   */
  async driverFacts(): Promise<DriverFacts> {
    const gpus = await this.inventory()
    const versions = await run([this.bin, '--version'])
    let { driver_version, cuda_version } = versions.code === 0 ? parseVersions(versions.stdout) : { driver_version: null, cuda_version: null }
    if (!driver_version || !cuda_version) {
      // Drivers before 2023 print no versions with --version: -q's header has both.
      const q = await run([this.bin, '-q'])
      const summary = q.code === 0 ? summariseNvidiaSmiQ(q.stdout) : null
      driver_version ??= csvText(summary?.driver_version ?? undefined)
      cuda_version ??= csvText(summary?.cuda_version ?? undefined)
    }
    let details = new Map<number, Omit<GpuDetails, 'mig_devices'>>()
    try {
      const q = await this.query(this.detailFields)
      this.detailFields = q.fields
      details = parseDetails(q.text, q.fields)
    } catch {
      // the inventory stands without its details
    }
    const list = await run([this.bin, '-L'])
    const mig = list.code === 0 ? parseMigDevices(list.stdout) : new Map<number, number>()
    const empty = Object.fromEntries(DETAIL_FIELDS.map(([, key]) => [key, null])) as Omit<GpuDetails, 'mig_devices'>
    return {
      driver_version,
      cuda_version,
      gpus: gpus.map((g) => ({ ...g, ...(details.get(g.index) ?? empty), mig_devices: mig.get(g.index) ?? null })),
    }
  }

  async telemetry(): Promise<Map<number, GpuValues>> {
    const q = await this.query(this.fields)
    this.fields = q.fields
    return parseTelemetry(q.text, q.fields)
  }
}

/**
 * `nvidia-smi -q` is indented "Key : Value" text; sections are keys without a value. This turns
 * it into nested objects so a diagnostics summary can pick fields by name.
 */
export type QNode = { [key: string]: string | QNode }

function parseNvidiaSmiQ(text: string): QNode {
  const root: QNode = {}
  const stack: { indent: number; node: QNode }[] = [{ indent: -1, node: root }]
  for (const raw of text.split('\n')) {
    if (!raw.trim() || raw.trim().startsWith('=')) continue
    const indent = raw.length - raw.trimStart().length
    while (stack.length > 1 && stack[stack.length - 1]!.indent >= indent) stack.pop()
    const parent = stack[stack.length - 1]!.node
    const m = /^\s*(.+?)\s+:\s?(.*)$/.exec(raw)
    if (m) parent[m[1]!] = m[2]!.trim()
    else {
      const child: QNode = {}
      parent[raw.trim()] = child
      stack.push({ indent, node: child })
    }
  }
  return root
}

function pick(node: QNode | string | undefined, ...path: string[]): string | null {
  let cur: QNode | string | undefined = node
  for (const key of path) cur = typeof cur === 'object' ? cur[key] : undefined
  return typeof cur === 'string' ? cur : null
}

/** The bounded, secret-free summary diagnostics.run returns. */
export function summariseNvidiaSmiQ(text: string) {
  const q = parseNvidiaSmiQ(text)
  const gpus = Object.entries(q)
    .filter(([key, v]) => key.startsWith('GPU ') && typeof v === 'object')
    .slice(0, 128)
    .map(([key, v]) => {
      const g = v as QNode
      const power = (g['GPU Power Readings'] ?? g['Power Readings']) as QNode | undefined
      return {
        bus_id: key.slice(4),
        product_name: pick(g, 'Product Name'),
        uuid: pick(g, 'GPU UUID'),
        vbios_version: pick(g, 'VBIOS Version'),
        persistence_mode: pick(g, 'Persistence Mode'),
        performance_state: pick(g, 'Performance State'),
        temperature_c: csvNumber(pick(g, 'Temperature', 'GPU Current Temp') ?? undefined),
        slowdown_temperature_c: csvNumber(pick(g, 'Temperature', 'GPU Slowdown Temp') ?? undefined),
        power_draw_w: csvNumber(pick(power, 'Power Draw') ?? pick(power, 'Instantaneous Power Draw') ?? undefined),
        power_limit_w: csvNumber(pick(power, 'Current Power Limit') ?? pick(power, 'Power Limit') ?? undefined),
        power_limit_min_w: csvNumber(pick(power, 'Min Power Limit') ?? undefined),
        power_limit_max_w: csvNumber(pick(power, 'Max Power Limit') ?? undefined),
        ecc_uncorrected_volatile: csvNumber(
          pick(g, 'ECC Errors', 'Volatile', 'DRAM Uncorrectable') ?? pick(g, 'ECC Errors', 'Volatile', 'Double Bit', 'Total') ?? undefined,
        ),
      }
    })
  return {
    driver_version: pick(q, 'Driver Version'),
    cuda_version: pick(q, 'CUDA Version'),
    attached_gpus: csvNumber(pick(q, 'Attached GPUs') ?? undefined),
    gpus,
  }
}
