import { existsSync } from 'node:fs'
import { availableParallelism, totalmem } from 'node:os'
import { resolve } from 'node:path'
import { run } from './exec'
import { diskFreeGb, diskGb, HostReader } from './procfs'
import { fingerprint, hostname, localPublicIpv4, readMachineId, versionIn } from './host'
import { KernelLogReader } from './kernel-log'
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
} & Partial<HostDetails>

/** The host's hardware and software beside the GPUs (docs/agent.md "Facts"); null when unknown. */
export type HostDetails = {
  driver_version: string | null
  cuda_version: string | null
  cpu_cores: number | null
  ram_mb: number | null
  /** Free space on the root filesystem, where the agent and the system keep their data. */
  disk_free_gb: number | null
  docker_version: string | null
  /** Docker's data root (`docker info`'s DockerRootDir), where renters' images and containers go. */
  docker_root: string | null
  docker_disk_free_gb: number | null
  nvidia_container_toolkit_version: string | null
}

/** `docker --version`, Docker's data root and the NVIDIA container toolkit's version; null for what is not installed. */
async function softwareFacts(): Promise<Pick<HostDetails, 'docker_version' | 'docker_root' | 'docker_disk_free_gb' | 'nvidia_container_toolkit_version'>> {
  const opts = { timeoutMs: 10_000 }
  const docker = await run(['docker', '--version'], opts)
  const dockerVersion = docker.code === 0 ? versionIn(docker.stdout) : null
  let dockerRoot: string | null = null
  if (dockerVersion) {
    const info = await run(['docker', 'info', '--format', '{{.DockerRootDir}}'], opts)
    const dir = info.code === 0 ? info.stdout.trim() : ''
    dockerRoot = dir.startsWith('/') ? dir.slice(0, 256) : existsSync('/var/lib/docker') ? '/var/lib/docker' : null
  }
  let toolkit: string | null = null
  for (const argv of [
    ['nvidia-ctk', '--version'],
    ['nvidia-container-cli', '--version'],
  ]) {
    const r = await run(argv, opts)
    if (r.code === 0 && (toolkit = versionIn(r.stdout))) break
  }
  return {
    docker_version: dockerVersion,
    docker_root: dockerRoot,
    docker_disk_free_gb: dockerRoot ? diskFreeGb(dockerRoot) : null,
    nvidia_container_toolkit_version: toolkit,
  }
}

export type MachineOptions = {
  simulate?: number
  /** What the simulated GPUs are (model, memory, power, a hot rig); the CLI leaves the defaults. */
  simulation?: SimulationProfile
  stateDir: string
  nvidiaSmi?: string
  /** NVIDIA DCGM's command-line tool (default `dcgmi` on PATH), for the diagnostics.dcgm command. */
  dcgmi?: string
  publicIp?: string
  portRange?: string
  /** The hostname to report instead of this host's (a demo runs a dozen simulated servers on one host). */
  hostname?: string
  /** The kernel log follower (default `journalctl -k -f -n 0 -o cat`, /dev/kmsg when it cannot run). */
  kernelLogCommand?: string[]
}

/** A PCI address without leading zeros of its domain and without the function: "0000:3b:00" and "00000000:3B:00.0" meet. */
function busKey(id: string): string {
  const m = /^(?:([0-9a-f]+):)?([0-9a-f]{1,2}):([0-9a-f]{1,2})/i.exec(id.trim())
  return m ? `${Number.parseInt(m[1] ?? '0', 16)}:${m[2]!.toLowerCase().padStart(2, '0')}:${m[3]!.toLowerCase().padStart(2, '0')}` : id
}

/** RFC 3339 UTC with microseconds, the service's own timestamp form. */
function rfc3339(d: Date = new Date()): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z')
}

export class Machine {
  readonly simulated: SimulatedGpus | null
  readonly nvidia: NvidiaSmi
  readonly dcgmi: string
  private readonly host = new HostReader()
  private known: GpuInfo[] = []
  private missing = new Set<number>()
  private telemetryFailing = false

  constructor(private readonly opts: MachineOptions) {
    const seed = `${readMachineId() ?? hostname()}:${resolve(opts.stateDir)}`
    this.simulated = opts.simulate ? new SimulatedGpus(opts.simulate, seed, opts.simulation) : null
    this.nvidia = new NvidiaSmi(opts.nvidiaSmi)
    this.dcgmi = opts.dcgmi ?? 'dcgmi'
  }

  /**
   * Why the last inventory found no GPUs on a real host: nvidia-smi missing, failing, or listing
   * none; null when it listed some (or the GPUs are simulated).
   */
  gpuProblem: string | null = null

  private versions: Pick<HostDetails, 'driver_version' | 'cuda_version'> = { driver_version: null, cuda_version: null }

  /** The GPUs as enrolment and hello report them. Without nvidia-smi a real host reports none (and `gpuProblem` says why). */
  async inventory(): Promise<GpuInfo[]> {
    if (this.simulated) return (this.known = this.simulated.inventory())
    try {
      const { gpus, driver_version, cuda_version } = await this.nvidia.driverFacts()
      this.known = gpus
      this.versions = { driver_version, cuda_version }
      this.gpuProblem = this.known.length ? null : `${this.nvidia.bin} lists no GPUs`
    } catch (err) {
      this.known = []
      this.versions = { driver_version: null, cuda_version: null }
      this.gpuProblem = (err as Error).message
    }
    return this.known
  }

  async facts(): Promise<HostFacts> {
    const gpus = await this.inventory()
    const publicIp = this.opts.publicIp ?? localPublicIpv4()
    const disk = diskGb('/')
    // A simulated host reports its GPUs only: the real host's software is not the simulation's.
    const details: Partial<HostDetails> = this.simulated
      ? {}
      : {
          ...this.versions,
          cpu_cores: availableParallelism(),
          ram_mb: Math.floor(totalmem() / 1024 / 1024),
          disk_free_gb: diskFreeGb('/'),
          ...(await softwareFacts()),
        }
    return {
      hostname: this.opts.hostname ?? hostname(),
      fingerprint: fingerprint({ machineId: readMachineId(), gpuUuids: gpus.map((g) => g.uuid) }),
      ...(publicIp ? { public_ip: publicIp } : {}),
      ...(disk !== null ? { disk_gb: disk } : {}),
      ...(this.opts.portRange ? { port_range: this.opts.portRange } : {}),
      gpus,
      ...details,
    }
  }

  private kernelLog: KernelLogReader | null = null

  /**
   * Follows the kernel log for the NVIDIA driver's Xid and "fallen off the bus" lines, each an event
   * (docs/agent.md "Kernel log"). Not on a simulated host. Answers the source it follows, or null.
   */
  watchKernelLog(onEvent: (e: AgentEvent) => void): 'journal' | 'kmsg' | null {
    if (this.simulated || this.kernelLog) return null
    this.kernelLog = new KernelLogReader((e) => onEvent(this.withGpuIndex(e)), this.opts.kernelLogCommand)
    return this.kernelLog.start()
  }

  stopKernelLog(): void {
    this.kernelLog?.stop()
    this.kernelLog = null
  }

  /** The GPU's index when the kernel names its PCI address (the Xid's "0000:3b:00" matches bus id "00000000:3B:00.0"). */
  private withGpuIndex(e: AgentEvent): AgentEvent {
    const bus = typeof e.data?.pci_bus_id === 'string' ? busKey(e.data.pci_bus_id) : null
    const gpu = bus ? this.known.find((g) => g.pci_bus_id && busKey(g.pci_bus_id) === bus) : undefined
    return gpu ? { ...e, data: { ...e.data, gpu_index: gpu.index } } : e
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
