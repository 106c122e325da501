import { resolve } from 'node:path'
import { diskGb, HostReader } from './procfs'
import { fingerprint, hostname, localPublicIpv4, readMachineId } from './host'
import { GPU_METRICS, NvidiaSmi, type GpuInfo, type GpuValues } from './nvidia'
import { SimulatedGpus, type SimulationProfile } from './simulate'

/** What the agent knows about the machine it runs on: real (nvidia-smi, /proc) or simulated GPUs. */

export type Sample = { t: string; scope: 'host' | 'gpu'; gpu_index?: number; values: Record<string, number | null> }
export type AgentEvent = { kind: string; severity: 'info' | 'warning' | 'error' | 'critical'; message: string; data?: Record<string, unknown> }

export type HostFacts = {
  hostname: string
  fingerprint: string
  public_ip?: string
  disk_gb?: number
  port_range?: string
  gpus: GpuInfo[]
}

export type MachineOptions = {
  simulate?: number
  /** What the simulated GPUs are (model, memory, power, a hot rig); the CLI leaves the defaults. */
  simulation?: SimulationProfile
  stateDir: string
  nvidiaSmi?: string
  publicIp?: string
  portRange?: string
  /** The hostname to report instead of this host's (a demo runs a dozen simulated servers on one host). */
  hostname?: string
}

/** RFC 3339 UTC with microseconds, the service's own timestamp form. */
function rfc3339(d: Date = new Date()): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z')
}

export class Machine {
  readonly simulated: SimulatedGpus | null
  readonly nvidia: NvidiaSmi
  private readonly host = new HostReader()
  private known: GpuInfo[] = []
  private missing = new Set<number>()
  private telemetryFailing = false

  constructor(private readonly opts: MachineOptions) {
    const seed = `${readMachineId() ?? hostname()}:${resolve(opts.stateDir)}`
    this.simulated = opts.simulate ? new SimulatedGpus(opts.simulate, seed, opts.simulation) : null
    this.nvidia = new NvidiaSmi(opts.nvidiaSmi)
  }

  /**
   * Why the last inventory found no GPUs on a real host: nvidia-smi missing, failing, or listing
   * none; null when it listed some (or the GPUs are simulated).
   */
  gpuProblem: string | null = null

  /** The GPUs as enrolment and hello report them. Without nvidia-smi a real host reports none (and `gpuProblem` says why). */
  async inventory(): Promise<GpuInfo[]> {
    if (this.simulated) return (this.known = this.simulated.inventory())
    try {
      this.known = await this.nvidia.inventory()
      this.gpuProblem = this.known.length ? null : `${this.nvidia.bin} lists no GPUs`
    } catch (err) {
      this.known = []
      this.gpuProblem = (err as Error).message
    }
    return this.known
  }

  async facts(): Promise<HostFacts> {
    const gpus = await this.inventory()
    const publicIp = this.opts.publicIp ?? localPublicIpv4()
    const disk = diskGb('/')
    return {
      hostname: this.opts.hostname ?? hostname(),
      fingerprint: fingerprint({ machineId: readMachineId(), gpuUuids: gpus.map((g) => g.uuid) }),
      ...(publicIp ? { public_ip: publicIp } : {}),
      ...(disk !== null ? { disk_gb: disk } : {}),
      ...(this.opts.portRange ? { port_range: this.opts.portRange } : {}),
      gpus,
    }
  }

  /** Reads counters once so the first telemetry frame already carries rates. */
  prime(): void {
    this.host.prime()
  }

  /** One telemetry frame's samples, plus events for GPUs that stopped (or resumed) answering. */
  async sample(): Promise<{ samples: Sample[]; events: AgentEvent[] }> {
    const t = rfc3339()
    const events: AgentEvent[] = []
    let gpuValues: Map<number, GpuValues>
    if (this.simulated) gpuValues = this.simulated.sample()
    else if (!this.known.length)
      gpuValues = new Map() // no GPUs (or no nvidia-smi) at start: host metrics only
    else {
      try {
        gpuValues = await this.nvidia.telemetry()
        if (this.telemetryFailing) events.push({ kind: 'gpu.telemetry_restored', severity: 'info', message: 'nvidia-smi answers again' })
        this.telemetryFailing = false
      } catch (err) {
        gpuValues = new Map()
        if (!this.telemetryFailing)
          events.push({ kind: 'gpu.telemetry_failed', severity: 'error', message: `reading GPU telemetry failed: ${(err as Error).message}` })
        this.telemetryFailing = true
      }
      events.push(...this.presenceEvents(gpuValues))
    }
    const host = this.host.available() ? this.host.sample() : (this.simulated?.hostSample() ?? {})
    const samples: Sample[] = [{ t, scope: 'host', values: host }]
    for (const [index, values] of [...gpuValues].sort((a, b) => a[0] - b[0])) samples.push({ t, scope: 'gpu', gpu_index: index, values })
    // A GPU that no longer answers still gets a sample of nulls: "unknown", never "zero".
    for (const g of this.known)
      if (!gpuValues.has(g.index)) samples.push({ t, scope: 'gpu', gpu_index: g.index, values: Object.fromEntries(GPU_METRICS.map((m) => [m, null])) })
    return { samples, events }
  }

  private presenceEvents(seen: Map<number, GpuValues>): AgentEvent[] {
    if (this.telemetryFailing) return []
    const events: AgentEvent[] = []
    for (const g of this.known) {
      const gone = !seen.has(g.index)
      if (gone && !this.missing.has(g.index)) {
        this.missing.add(g.index)
        events.push({
          kind: 'gpu.missing',
          severity: 'critical',
          message: `GPU ${g.index} (${g.model}) no longer appears in nvidia-smi`,
          data: { gpu_index: g.index, uuid: g.uuid },
        })
      } else if (!gone && this.missing.delete(g.index))
        events.push({
          kind: 'gpu.returned',
          severity: 'info',
          message: `GPU ${g.index} appears in nvidia-smi again`,
          data: { gpu_index: g.index, uuid: g.uuid },
        })
    }
    return events
  }
}
