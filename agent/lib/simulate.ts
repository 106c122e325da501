import { createHash } from 'node:crypto'
import type { GpuInfo, GpuValues } from './nvidia'

/**
 * Fake GPUs for demos and tests: each drifts between idle and busy spells, and temperature, fan
 * and power follow the load the way a real card's do. Power limits set by commands are kept and
 * cap the simulated draw, so a demo shows the effect of gpu.set_power_limit.
 */
type SimGpu = GpuInfo & {
  util: number
  target: number
  temp: number
  limitW: number
  memUsed: number
}

/**
 * What the simulated cards are (the CLI's `--simulate N` takes the defaults: RTX 4090s). `hot`
 * cards run like a rig with clogged fans: always busy and at 86 to 92 °C whatever their power, from
 * the first sample on (gpuhq's temperature alert opens at 85 °C).
 */
export type SimulationProfile = { model?: string; memoryMb?: number; maxPowerW?: number; hot?: boolean }

const MODEL = 'NVIDIA GeForce RTX 4090'
const MEMORY_MB = 24564
const DEFAULT_LIMIT_W = 450
const IDLE_W = 25

export class SimulatedGpus {
  readonly gpus: SimGpu[]
  private readonly maxPowerW: number
  private readonly memoryMb: number
  private readonly hot: boolean

  /** `seed` makes the UUIDs stable for one installation (state dir) and distinct between two. */
  constructor(
    count: number,
    seed: string,
    profile: SimulationProfile = {},
    private readonly random: () => number = Math.random,
  ) {
    this.maxPowerW = profile.maxPowerW ?? DEFAULT_LIMIT_W
    this.memoryMb = profile.memoryMb ?? MEMORY_MB
    this.hot = profile.hot ?? false
    this.gpus = Array.from({ length: count }, (_, index) => ({
      index,
      model: profile.model ?? MODEL,
      memory_mb: this.memoryMb,
      uuid: simulatedUuid(seed, index),
      util: this.hot ? 95 : 0,
      target: this.hot ? 95 : 0,
      temp: this.hot ? 90 : 32 + index,
      limitW: this.maxPowerW,
      memUsed: 300,
    }))
  }

  inventory(): GpuInfo[] {
    return this.gpus.map(({ index, model, memory_mb, uuid }) => ({ index, model, memory_mb, uuid }))
  }

  setPowerLimit(index: number | null, watts: number): number[] {
    const touched = this.gpus.filter((g) => index === null || g.index === index)
    for (const g of touched) g.limitW = watts
    return touched.map((g) => g.index)
  }

  powerLimit(index: number): number | undefined {
    return this.gpus.find((g) => g.index === index)?.limitW
  }

  /** One step of the drift; call once per telemetry interval. */
  sample(): Map<number, GpuValues> {
    const out = new Map<number, GpuValues>()
    for (const g of this.gpus) {
      if (this.random() < 0.1) g.target = this.hot || this.random() < 0.6 ? 85 + this.random() * 15 : this.random() * 5
      g.util = clamp(g.util + (g.target - g.util) * 0.5 + (this.random() - 0.5) * 4, 0, 100)
      const power = Math.min(g.limitW, IDLE_W + (g.util / 100) * (this.maxPowerW - IDLE_W))
      const settle = this.hot ? 86 + (power / this.maxPowerW) * 6 : 30 + (power / this.maxPowerW) * 50
      g.temp = clamp(g.temp + (settle - g.temp) * 0.3 + (this.random() - 0.5), 20, 95)
      g.memUsed = clamp(g.util > 20 ? g.memUsed + (this.memoryMb * 0.8 - g.memUsed) * 0.3 : g.memUsed * 0.7, 300, this.memoryMb)
      out.set(g.index, {
        temperature_c: round(g.temp),
        hotspot_temperature_c: round(g.temp + 8 + g.util / 20),
        memory_temperature_c: round(g.temp + 6),
        utilization_pct: round(g.util),
        memory_used_mb: Math.round(g.memUsed),
        power_w: round(power),
        fan_pct: round(clamp(30 + (g.temp - 40) * 1.6, 30, 100)),
        clock_sm_mhz: Math.round(g.util > 5 ? 2520 - (power >= g.limitW ? 300 : 0) : 210),
      })
    }
    return out
  }

  /** Host values for a simulated machine when /proc is not there to read (macOS demos). */
  hostSample(): Record<string, number> {
    const busy = this.gpus.reduce((s, g) => s + g.util, 0) / Math.max(1, this.gpus.length)
    return {
      cpu_usage_pct: round(clamp(5 + busy / 4 + this.random() * 5, 0, 100)),
      memory_used_pct: round(20 + busy / 3),
      disk_used_pct: 41.5,
      net_rx_mbps: round(busy * 2 * this.random()),
      net_tx_mbps: round(busy * 0.5 * this.random()),
    }
  }
}

/** A repeatable random source for a simulation (mulberry32 seeded by the text), so a run can be told again. */
export function seededRandom(seed: string): () => number {
  let a = [...seed].reduce((h, c) => Math.imul(h ^ c.charCodeAt(0), 16777619), 2166136261)
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", derived from the seed like a real UUID is fixed in silicon. */
export function simulatedUuid(seed: string, index: number): string {
  const h = createHash('sha256').update(`gpuhq-simulated-gpu:${seed}:${index}`).digest('hex')
  return `GPU-${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`
}

function clamp(n: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, n))
}

function round(n: number): number {
  return Math.round(n * 10) / 10
}
