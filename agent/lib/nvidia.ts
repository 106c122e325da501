import { run } from './exec'

/**
 * Reading GPUs through nvidia-smi's CSV query interface. Values like "[N/A]", "[Not Supported]",
 * "[Unknown Error]" or "[GPU is lost]" become null: unknown, never zero.
 */

export type GpuInfo = { index: number; model: string; memory_mb: number | null; uuid: string }
export type GpuValues = Record<string, number | null>

const INVENTORY_FIELDS = ['index', 'name', 'memory.total', 'uuid']

/** Query field → protocol metric name, GPU scope (docs/agent.md "Behaviour, frame by frame"). */
export const TELEMETRY_FIELDS: Record<string, string> = {
  'temperature.gpu': 'temperature_c',
  'temperature.memory': 'memory_temperature_c',
  'utilization.gpu': 'utilization_pct',
  'memory.used': 'memory_used_mb',
  'power.draw': 'power_w',
  'fan.speed': 'fan_pct',
  'clocks.sm': 'clock_sm_mhz',
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

function parseCsvRows(text: string): string[][] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => l.split(',').map((cell) => cell.trim()))
}

/** A CSV cell as a number; bracketed markers, "N/A" and anything non-numeric are null. */
export function csvNumber(cell: string | undefined): number | null {
  if (cell === undefined) return null
  const s = cell.trim()
  if (!s || s.startsWith('[') || /^n\/?a$/i.test(s)) return null
  // With nounits the cell is a bare number; older drivers may still append a unit ("45 %").
  const m = /^-?\d+(?:\.\d+)?/.exec(s)
  if (!m) return null
  const n = Number(m[0])
  return Number.isFinite(n) ? n : null
}

export function parseInventory(text: string): GpuInfo[] {
  const gpus: GpuInfo[] = []
  for (const [index, name, memory, uuid] of parseCsvRows(text)) {
    const i = csvNumber(index)
    if (i === null || !Number.isInteger(i)) continue
    gpus.push({ index: i, model: name ?? 'unknown', memory_mb: csvNumber(memory), uuid: uuid ?? '' })
  }
  return gpus.sort((a, b) => a.index - b.index)
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

export class NvidiaSmi {
  private fields = Object.keys(TELEMETRY_FIELDS)

  constructor(readonly bin = 'nvidia-smi') {}

  async inventory(): Promise<GpuInfo[]> {
    const r = await run([this.bin, `--query-gpu=${INVENTORY_FIELDS.join(',')}`, '--format=csv,noheader,nounits'])
    if (r.code !== 0) throw new Error(r.notFound ? `${this.bin} not found` : `${this.bin} exited with ${r.code}`)
    return parseInventory(r.stdout)
  }

  async telemetry(): Promise<Map<number, GpuValues>> {
    // An old driver refuses the whole query for one unknown field; drop that field and ask again.
    for (let attempt = 0; attempt < 3; attempt++) {
      const r = await run([this.bin, `--query-gpu=index,${this.fields.join(',')}`, '--format=csv,noheader,nounits'])
      if (r.code === 0) return parseTelemetry(r.stdout, this.fields)
      const bad = invalidQueryField(r.stdout + r.stderr)
      if (!bad || !this.fields.includes(bad)) throw new Error(r.notFound ? `${this.bin} not found` : `${this.bin} exited with ${r.code}`)
      this.fields = this.fields.filter((f) => f !== bad)
    }
    throw new Error(`${this.bin} refused the telemetry query`)
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
