import type { ServerGpu, ServerHostDetails } from '../../../db/schema/fleet'
import { formatDecimal } from '../../platform/numbers'
import { formatTimestamp } from '../../platform/time'
import type { MarketplaceId } from '../../platform/marketplace-id'

/**
 * The readiness check list (docs/readiness.md): Vast's self-test pre-flight bar (vast-cli
 * `vastai/cli/self_test/machine_diagnostics.py` `preflight_requirement_checks` and
 * `vastai/cli/util.py` `required_inet_mbps`, at commit 5567983) plus what loses verification in
 * practice. Pure: every value comes in, one verdict per item comes out. A value is taken from the
 * platform's view of the machine (the link's projection the sync wrote) when it has one, since that
 * is what the platform judges by, else from the agent's facts; neither is `unknown`, never a guess.
 */

type Status = 'pass' | 'fail' | 'unknown'
type Source = 'marketplace' | 'agent'

export type Item = {
  id: string
  title: string
  /** Whether the item is part of the bar: `ready` needs every required item to pass. Any failing item makes the machine not ready. */
  required: boolean
  status: Status
  /** The measured value as text (decimal, never exponent notation), null when unknown. */
  value: string | null
  unit: string | null
  /** The bar, in words with its figure ("≥ 11.8"). */
  threshold: string
  value_source: Source | null
  /** Where the bar comes from (a published source, or gpuhq's own choice written in docs/readiness.md). */
  threshold_source: string
  /** What to do about it; null when it passes. */
  action: string | null
  detail: string
}

/** The platform's view of a machine, as far as readiness reads it (a link's `remote`; fields may be missing on an older link). */
type PlatformView = {
  verification?: string | null
  reliability?: number | null
  gpu_count?: number | null
  pcie_bandwidth_gbs?: number | null
  inet_up_mbps?: number | null
  inet_down_mbps?: number | null
  direct_port_count?: number | null
  cuda_version?: string | null
  driver_version?: string | null
  gpu_total_ram_mb?: number | null
  cpu_ram_mb?: number | null
  cpu_cores?: number | null
  error?: string | null
}

type Inputs = {
  marketplace: MarketplaceId
  /** The link's platform view; null when the server is not linked on this marketplace. */
  platform: PlatformView | null
  host: ServerHostDetails | null
  gpus: ServerGpu[]
  gpuCount: number
  portRange: string | null
  /** Whether the agent ever said hello with its facts (an agent that never did knows no kernel log either). */
  agentReported: boolean
  /** Latest readings by GPU index and metric. */
  readings: ReadonlyMap<number, ReadonlyMap<string, number | null>>
  xids: { gpuIndex: number; xid: number; count: number; lastAt: number }[]
  baseline: { driver: string | null; cuda: string | null; at: number } | null
  nowUs: number
}

const VAST_CLI = 'vast-cli self-test pre-flight'
const CUDA_MIN: [number, number] = [11, 8]
const RELIABILITY_MIN = 0.9
const PORTS_PER_GPU = 3
const PORTS_ADVISORY_PER_GPU = 64
const PCIE_MIN_GBS = 2.85
const GPU_RAM_MIN_MIB = 7 * 1024
const SYSTEM_RAM_CAP_MIB = 2_000_000
const CORES_PER_GPU = 2
/** gpuhq's own floor for free space where Docker keeps images (docs/readiness.md: no platform publishes one). */
const DISK_FREE_MIN_GB = 50
/** The Xids the agent rates critical (docs/agent.md "Kernel log"): a GPU that logged one in this window fails `gpu.xid`. */
const CRITICAL_XIDS = [48, 62, 64, 79, 95, 119, 120, 140]
const XID_WINDOW_US = 24 * 3600 * 1_000_000

const text = (n: number, digits = 6) => formatDecimal(n, digits)

/** "12.4" → [12, 4]; null when it is not a version. */
function version(v: string | null | undefined): [number, number] | null {
  const m = typeof v === 'string' ? /^(\d{1,4})(?:\.(\d{1,4}))?/.exec(v.trim()) : null
  return m ? [Number(m[1]), Number(m[2] ?? 0)] : null
}

/** The platform's value when it has one, else the agent's. */
function pick<T>(platform: T | null | undefined, agent: T | null | undefined): { value: T; source: Source } | null {
  if (platform !== null && platform !== undefined) return { value: platform, source: 'marketplace' }
  if (agent !== null && agent !== undefined) return { value: agent, source: 'agent' }
  return null
}

function item(
  base: Pick<Item, 'id' | 'title' | 'required' | 'threshold' | 'threshold_source' | 'unit'>,
  verdict: { status: Status; value?: string | null; source?: Source | null; detail: string; action?: string | null },
): Item {
  return {
    ...base,
    status: verdict.status,
    value: verdict.value ?? null,
    value_source: verdict.value === null || verdict.value === undefined ? null : (verdict.source ?? null),
    action: verdict.status === 'pass' ? null : (verdict.action ?? null),
    detail: verdict.detail,
  }
}

/** The size of an agent's port range "40000-40199" (200 ports); null when not a range. */
function portRangeSize(range: string | null): number | null {
  const m = range ? /^\s*(\d{1,5})\s*[-:]\s*(\d{1,5})\s*$/.exec(range) : null
  if (!m) return null
  const size = Number(m[2]) - Number(m[1]) + 1
  return size > 0 ? size : null
}

/** The agent's total VRAM (MiB): the sum over its GPUs when every one reported its memory. */
function agentVramMib(gpus: ServerGpu[]): number | null {
  if (gpus.length === 0 || gpus.some((g) => typeof g.memory_mb !== 'number')) return null
  return gpus.reduce((sum, g) => sum + (g.memory_mb as number), 0)
}

/** The download/upload floor of `required_inet_mbps`: min(500, max(100, 500 × VRAM GiB ÷ 192)), VRAM GiB = MiB ÷ 1024. */
function bandwidthFloorMbps(vramMib: number): number {
  return Math.min(500, Math.max(100, (500 * vramMib) / 1024 / 192))
}

/**
 * value ≥ min(500, max(100, 500 × MiB ÷ 196608)), compared without dividing (196608 = 1024 × 192),
 * so a speed exactly at the floor passes whatever the VRAM.
 */
function meetsFloor(value: number, vramMib: number): boolean {
  if (vramMib >= 196_608) return value >= 500
  if (500 * vramMib <= 100 * 196_608) return value >= 100
  return value * 196_608 >= 500 * vramMib
}

export function checkReadiness(i: Inputs): Item[] {
  const p = i.platform
  const linked = p !== null
  const isA = i.marketplace === 'marketplace_a'
  const gpus = pick(p?.gpu_count, i.gpuCount > 0 ? i.gpuCount : null)
  const vram = pick(p?.gpu_total_ram_mb, agentVramMib(i.gpus))
  const notLinked = linked ? '' : ' (not linked on this marketplace: only the agent’s facts are known)'
  const items: Item[] = []

  // cuda.version
  {
    const v = pick(p?.cuda_version, i.host?.cuda_version)
    const parsed = version(v?.value)
    const base = {
      id: 'cuda.version',
      title: 'CUDA version the driver supports',
      required: true,
      unit: null,
      threshold: '≥ 11.8 (Vast’s verification asks 12.0)',
      threshold_source: `${VAST_CLI}: cuda.version (cuda_max_good)`,
    }
    if (!parsed)
      items.push(
        item(base, {
          status: 'unknown',
          detail: `Neither the platform nor the agent reported the CUDA version${notLinked}.`,
          action: 'Check that the agent runs and nvidia-smi answers.',
        }),
      )
    else {
      const ok = parsed[0] > CUDA_MIN[0] || (parsed[0] === CUDA_MIN[0] && parsed[1] >= CUDA_MIN[1])
      items.push(
        item(base, {
          status: ok ? 'pass' : 'fail',
          value: `${parsed[0]}.${parsed[1]}`,
          source: v!.source,
          detail: ok ? 'The driver runs the self-test image (CUDA 11.8 or newer).' : 'The self-test image needs a driver stack for CUDA 11.8 or newer.',
          action: 'Install a newer NVIDIA driver (one that supports CUDA 12.0 or newer for verification), outside any rental, then reboot.',
        }),
      )
    }
  }

  // reliability
  {
    const r = p?.reliability
    const base = { id: 'reliability', title: 'Reliability', required: true, unit: null, threshold: '> 0.90', threshold_source: `${VAST_CLI}: reliability` }
    if (r === null || r === undefined)
      items.push(
        item(base, {
          status: 'unknown',
          detail: linked ? 'The platform sent no reliability.' : 'Only the platform measures reliability: link the server.',
          action: linked ? null : 'Link the server to its machine.',
        }),
      )
    else {
      const ok = r > RELIABILITY_MIN
      items.push(
        item(base, {
          status: ok ? 'pass' : 'fail',
          value: text(r, 7),
          source: 'marketplace',
          detail: ok ? 'Above the self-test’s guardrail.' : 'The self-test will not launch its temporary instance at or below 0.90.',
          action:
            'Keep the machine online and renters’ instances starting: reliability falls with every offline minute and failed start, and recovers with uptime.',
        }),
      )
    }
  }

  // network.direct_ports
  {
    const ports = pick(p?.direct_port_count, portRangeSize(i.portRange))
    const base = {
      id: 'network.direct_ports',
      title: 'Direct ports',
      required: isA,
      unit: 'ports',
      threshold: `≥ ${PORTS_PER_GPU} × GPUs${gpus ? ` = ${PORTS_PER_GPU * gpus.value}` : ''}`,
      threshold_source: `${VAST_CLI}: network.direct_ports (direct_port_count)`,
    }
    if (!ports || !gpus || gpus.value <= 0)
      items.push(
        item(base, {
          status: 'unknown',
          value: ports ? String(ports.value) : null,
          source: ports?.source,
          detail: `The port count or the GPU count is not known${notLinked}.`,
          action: 'Open a port range for the machine and tell the agent (--port-range).',
        }),
      )
    else {
      const need = PORTS_PER_GPU * gpus.value
      const ok = ports.value >= need
      const advisory =
        ports.value > PORTS_ADVISORY_PER_GPU * gpus.value ? ` More than ${PORTS_ADVISORY_PER_GPU} per GPU is advisory: an instance uses at most 64.` : ''
      items.push(
        item(base, {
          status: ok ? 'pass' : 'fail',
          value: String(ports.value),
          source: ports.source,
          detail:
            (ok
              ? `${ports.value} ports for ${gpus.value} GPUs.`
              : `${ports.value} ports for ${gpus.value} GPUs: remote progress, SSH checks and port allocation need 3 per GPU.`) + advisory,
          action: `Forward at least ${need} ports to the machine and declare them to the platform.`,
        }),
      )
    }
  }

  // pcie.bandwidth
  {
    const bw = p?.pcie_bandwidth_gbs
    const base = {
      id: 'pcie.bandwidth',
      title: 'PCIe bandwidth',
      required: isA,
      unit: 'GB/s',
      threshold: '> 2.85',
      threshold_source: `${VAST_CLI}: pcie.bandwidth (pcie_bw)`,
    }
    if (bw === null || bw === undefined)
      items.push(
        item(base, {
          status: 'unknown',
          detail: linked ? 'The platform sent no measured PCIe bandwidth.' : 'Only the platform measures PCIe bandwidth: link the server.',
        }),
      )
    else {
      const ok = bw > PCIE_MIN_GBS
      items.push(
        item(base, {
          status: ok ? 'pass' : 'fail',
          value: text(bw, 3),
          source: 'marketplace',
          detail: ok
            ? 'Transfers between host and GPUs are fast enough for the stress checks.'
            : 'Low PCIe bandwidth makes the self-test’s stress and transfer checks time out.',
          action: 'Check the slot’s generation and lanes in the BIOS, the riser, and that the card is seated.',
        }),
      )
    }
  }

  // network.download / network.upload
  for (const [id, title, value] of [
    ['network.download', 'Download speed', p?.inet_down_mbps],
    ['network.upload', 'Upload speed', p?.inet_up_mbps],
  ] as const) {
    const floor = vram ? bandwidthFloorMbps(vram.value) : null
    const floorText = floor === null ? 'between 100 and 500' : text(floor, 2)
    const base = {
      id,
      title,
      required: true,
      unit: 'Mb/s',
      threshold: vram
        ? `≥ ${floorText} (500 × ${text(vram.value / 1024, 2)} GiB VRAM ÷ 192, kept within 100..500)`
        : '≥ min(500, max(100, 500 × VRAM GiB ÷ 192)): VRAM not known',
      threshold_source: `${VAST_CLI}: ${id} (vast-cli util.py required_inet_mbps)`,
    }
    if (value === null || value === undefined) {
      items.push(
        item(base, {
          status: 'unknown',
          detail: linked ? 'The platform sent no measured speed.' : 'Only the platform measures the machine’s internet speed: link the server.',
        }),
      )
      continue
    }
    const pass = vram ? meetsFloor(value, vram.value) : value >= 500
    const fail = vram ? !pass : value < 100
    items.push(
      item(base, {
        status: pass ? 'pass' : fail ? 'fail' : 'unknown',
        value: text(value, 3),
        source: 'marketplace',
        detail: pass
          ? 'Fast enough for the machine’s VRAM.'
          : fail
            ? 'Renters pull images and datasets in proportion to the VRAM they rent.'
            : 'The floor depends on the VRAM, which is not known.',
        action: 'Get a faster line or fix the uplink, then let the platform measure again.',
      }),
    )
  }

  // gpu.ram
  {
    const base = {
      id: 'gpu.ram',
      title: 'VRAM per GPU',
      required: true,
      unit: 'MiB',
      threshold: '> 7168 (7 GiB)',
      threshold_source: `${VAST_CLI}: gpu.ram (gpu_total_ram ÷ num_gpus)`,
    }
    if (!vram || !gpus || gpus.value <= 0) items.push(item(base, { status: 'unknown', detail: 'The VRAM or the GPU count is not known.' }))
    else {
      const ok = vram.value > GPU_RAM_MIN_MIB * gpus.value
      items.push(
        item(base, {
          status: ok ? 'pass' : 'fail',
          value: text(vram.value / gpus.value, 1),
          source: vram.source,
          detail: ok ? 'Enough for the verification workload.' : 'The verification workload needs more than 7 GiB of VRAM per GPU.',
          action: 'List only GPUs with more than 7 GiB of memory.',
        }),
      )
    }
  }

  // system.ram
  {
    const ram = pick(p?.cpu_ram_mb, i.host?.ram_mb)
    const need = vram ? Math.min(0.95 * vram.value, SYSTEM_RAM_CAP_MIB) : null
    const base = {
      id: 'system.ram',
      title: 'System memory',
      required: true,
      unit: 'MiB',
      threshold: need === null ? '≥ min(0.95 × VRAM MiB, 2000000): VRAM not known' : `≥ ${text(need, 1)} (0.95 × ${vram!.value} MiB VRAM, at most 2000000)`,
      threshold_source: `${VAST_CLI}: system.ram (cpu_ram)`,
    }
    if (!ram || !vram)
      items.push(
        item(base, { status: 'unknown', value: ram ? String(ram.value) : null, source: ram?.source, detail: 'The system memory or the VRAM is not known.' }),
      )
    else {
      // ram ≥ 0.95 × VRAM ⇔ 20 × ram ≥ 19 × VRAM: whole numbers, no rounding.
      const ok = 0.95 * vram.value >= SYSTEM_RAM_CAP_MIB ? ram.value >= SYSTEM_RAM_CAP_MIB : 20 * ram.value >= 19 * vram.value
      items.push(
        item(base, {
          status: ok ? 'pass' : 'fail',
          value: String(ram.value),
          source: ram.source,
          detail: ok ? 'Enough memory to stage data for the GPUs.' : 'Renters stage data in system memory: it should be about as large as the VRAM.',
          action: 'Add memory, or list fewer GPUs on this machine.',
        }),
      )
    }
  }

  // cpu.cores
  {
    const cores = pick(p?.cpu_cores, i.host?.cpu_cores)
    const base = {
      id: 'cpu.cores',
      title: 'CPU cores',
      required: true,
      unit: 'cores',
      threshold: `≥ ${CORES_PER_GPU} × GPUs${gpus ? ` = ${CORES_PER_GPU * gpus.value}` : ''}`,
      threshold_source: `${VAST_CLI}: cpu.cores (cpu_cores)`,
    }
    if (!cores || !gpus || gpus.value <= 0)
      items.push(
        item(base, {
          status: 'unknown',
          value: cores ? String(cores.value) : null,
          source: cores?.source,
          detail: 'The core count or the GPU count is not known.',
        }),
      )
    else {
      const ok = cores.value >= CORES_PER_GPU * gpus.value
      items.push(
        item(base, {
          status: ok ? 'pass' : 'fail',
          value: String(cores.value),
          source: cores.source,
          detail: ok ? 'Enough cores to orchestrate the GPUs.' : 'Fewer than two logical CPUs per GPU make orchestration unstable.',
          action: 'Use a CPU with more cores, or list fewer GPUs.',
        }),
      )
    }
  }

  // verification (marketplace_a: the platform that verifies)
  if (isA) {
    const v = p?.verification
    const base = {
      id: 'verification',
      title: 'Verification',
      required: true,
      unit: null,
      threshold: 'verified',
      threshold_source: 'vast-ai/docs host/verification-stages.mdx',
    }
    if (v === null || v === undefined)
      items.push(
        item(base, { status: 'unknown', detail: linked ? 'The platform sent no verification state.' : 'Link the server to read its verification state.' }),
      )
    else
      items.push(
        item(base, {
          status: v === 'verified' ? 'pass' : 'fail',
          value: v,
          source: 'marketplace',
          detail:
            v === 'verified'
              ? 'The platform shows the machine verified.'
              : v === 'deverified'
                ? 'The platform removed verification (a daemon error, removed hardware, a changed driver, or failed checks).'
                : 'The platform has not verified the machine yet: verification is automated and weighs supply and demand.',
          action: 'Fix every failing item here, then run the platform’s self-test (vastai self-test machine) from outside the machine’s LAN.',
        }),
      )
  }

  // platform.error (marketplace_a: the host daemon's complaint)
  if (isA) {
    const base = {
      id: 'platform.error',
      title: 'Platform error',
      required: false,
      unit: null,
      threshold: 'none',
      threshold_source: 'vast-ai/docs host/understanding-verification.mdx',
    }
    if (!linked) items.push(item(base, { status: 'unknown', detail: 'Link the server to read the platform’s complaints.' }))
    else if (p.error)
      items.push(
        item(base, {
          status: 'fail',
          value: p.error,
          source: 'marketplace',
          detail: 'An error from the host daemon removes verification for a while.',
          action: 'Read the error on the platform, fix its cause, and restart the host daemon outside any rental.',
        }),
      )
    else items.push(item(base, { status: 'pass', detail: 'The platform reports no error for the machine.' }))
  }

  // ssh.password
  items.push(
    item(
      { id: 'ssh.password', title: 'Password SSH disabled', required: false, unit: null, threshold: 'keys only', threshold_source: 'vast-ai/docs pull 931' },
      {
        status: 'unknown',
        detail: 'Password SSH is not allowed on verified machines. Neither the platform nor the agent reports sshd’s setting yet.',
        action: 'Check that `sshd -T | grep passwordauthentication` reads `no`.',
      },
    ),
  )

  // disk.space
  {
    const free = pick<number>(null, i.host?.docker_disk_free_gb ?? i.host?.disk_free_gb)
    const base = {
      id: 'disk.space',
      title: 'Free disk space',
      required: false,
      unit: 'GB',
      threshold: `≥ ${DISK_FREE_MIN_GB} free where Docker keeps images`,
      threshold_source: 'gpuhq (docs/readiness.md); disk space low blocks new rentals and fails self-tests',
    }
    if (!free) items.push(item(base, { status: 'unknown', detail: 'The agent has not reported the free space.' }))
    else {
      const ok = free.value >= DISK_FREE_MIN_GB
      items.push(
        item(base, {
          status: ok ? 'pass' : 'fail',
          value: text(free.value, 1),
          source: 'agent',
          detail: ok ? 'Room for the self-test image and a renter’s.' : '“Disk space low” blocks new rentals and fails self-tests.',
          action: 'Remove stale images and expired instances’ storage (Vast: PUT /machines/{id}/cleanup/).',
        }),
      )
    }
  }

  // gpu.xid
  {
    const base = {
      id: 'gpu.xid',
      title: 'Critical Xid errors (24 h)',
      required: false,
      unit: null,
      threshold: `none of Xid ${CRITICAL_XIDS.join(', ')} in 24 h`,
      threshold_source: 'NVIDIA Xid catalogue, as the agent rates it (docs/agent.md "Kernel log")',
    }
    const recent = i.xids.filter((x) => CRITICAL_XIDS.includes(x.xid) && x.lastAt > i.nowUs - XID_WINDOW_US)
    if (!i.agentReported) items.push(item(base, { status: 'unknown', detail: 'The agent has not reported yet.' }))
    else if (recent.length === 0)
      items.push(item(base, { status: 'pass', value: 'none', source: 'agent', detail: 'No critical Xid logged in the last 24 hours.' }))
    else
      items.push(
        item(base, {
          status: 'fail',
          value: recent
            .map((x) => `Xid ${x.xid} on ${x.gpuIndex < 0 ? 'a GPU' : `GPU ${x.gpuIndex}`} (${x.count}×, last ${formatTimestamp(x.lastAt)})`)
            .join('; ')
            .slice(0, 512),
          source: 'agent',
          detail: 'A GPU that fell off the bus or hit an uncontained memory error fails renters’ jobs and the self-test.',
          action: 'Reset the GPU or reboot the machine when no rental runs; reseat or replace a GPU that logs it again.',
        }),
      )
  }

  // gpu.memory
  {
    const base = {
      id: 'gpu.memory',
      title: 'GPU memory faults',
      required: false,
      unit: null,
      threshold: 'no uncorrected ECC error since the driver loaded, no row remap pending or failed, no page retirement pending',
      threshold_source: 'NVIDIA nvidia-smi ECC and row-remapping counters (docs/agent.md "Health readings")',
    }
    const faults: string[] = []
    let known = false
    for (const [index, m] of [...i.readings].sort(([a], [b]) => a - b)) {
      if (index < 0) continue
      const v = (k: string) => m.get(k) ?? null
      for (const k of ['ecc_uncorrected_volatile', 'remapped_rows_pending', 'remapped_rows_failure', 'retired_pages_pending']) if (v(k) !== null) known = true
      if ((v('ecc_uncorrected_volatile') ?? 0) > 0) faults.push(`GPU ${index}: ${v('ecc_uncorrected_volatile')} uncorrected ECC errors`)
      if (v('remapped_rows_failure') === 1) faults.push(`GPU ${index}: row remapping failed`)
      if (v('remapped_rows_pending') === 1) faults.push(`GPU ${index}: row remap pending a reset`)
      if (v('retired_pages_pending') === 1) faults.push(`GPU ${index}: page retirement pending a reset`)
    }
    if (faults.length)
      items.push(
        item(base, {
          status: 'fail',
          value: faults.join('; ').slice(0, 512),
          source: 'agent',
          detail: 'A GPU with memory faults corrupts renters’ results and fails the self-test’s checks.',
          action: 'Reset the GPU when no rental runs (a pending remap applies then); a failed remap means the board needs service.',
        }),
      )
    else if (known) items.push(item(base, { status: 'pass', value: 'none', source: 'agent', detail: 'No memory fault in the latest readings.' }))
    else items.push(item(base, { status: 'unknown', detail: 'The GPUs report no ECC or row-remapping counters (boards without ECC, or no readings yet).' }))
  }

  // driver.unchanged (marketplace_a: changed since last verified)
  if (isA) {
    const driver = i.host?.driver_version ?? null
    const cuda = i.host?.cuda_version ?? null
    const b = i.baseline
    const base = {
      id: 'driver.unchanged',
      title: 'Driver unchanged since verified',
      required: false,
      unit: null,
      threshold: b ? `driver ${b.driver ?? '?'}, CUDA ${b.cuda ?? '?'} (as of ${formatTimestamp(b.at)})` : 'the versions when last seen verified',
      threshold_source: 'vast-ai/docs host/verification-stages.mdx (updates and hardware changes remove verification)',
    }
    const now = `driver ${driver ?? '?'}, CUDA ${cuda ?? '?'}`
    if (driver === null || !b)
      items.push(
        item(base, {
          status: 'unknown',
          value: driver === null ? null : now,
          source: 'agent',
          detail: driver === null ? 'The agent has not reported the driver version.' : 'No verified baseline yet.',
        }),
      )
    else {
      const ok = b.driver === driver && (b.cuda === null || cuda === null || b.cuda === cuda)
      items.push(
        item(base, {
          status: ok ? 'pass' : 'fail',
          value: now,
          source: 'agent',
          detail: ok
            ? 'The driver stack is the one the machine was verified with.'
            : 'The driver or CUDA changed since the machine was last seen verified: the platform may deverify it.',
          action: 'Run the self-test again, or go back to the verified driver; keep unattended driver upgrades off.',
        }),
      )
    }
  }
  return items
}

/** The verdict over a list: not ready when any item fails, ready when every required item passes, unknown otherwise. */
export function overall(items: Item[]): 'ready' | 'not_ready' | 'unknown' {
  if (items.some((x) => x.status === 'fail')) return 'not_ready'
  return items.every((x) => !x.required || x.status === 'pass') ? 'ready' : 'unknown'
}
