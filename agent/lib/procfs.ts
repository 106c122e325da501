import { existsSync, readFileSync, statfsSync } from 'node:fs'

/** Host metrics read from /proc and statfs. The parsers are pure; the reader keeps the deltas. */

export type CpuTimes = { total: number; idle: number }
export type NetTotals = { rx: number; tx: number }
export type MemInfo = { totalKb: number; availableKb: number }

/** The aggregate "cpu " line: idle time is idle + iowait; guest time is already inside user. */
export function parseProcStat(text: string): CpuTimes | null {
  const line = text.split('\n').find((l) => l.startsWith('cpu '))
  if (!line) return null
  const f = line.trim().split(/\s+/).slice(1).map(Number)
  if (f.length < 4 || f.some((n) => !Number.isFinite(n))) return null
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = f
  return { total: user + nice + system + idle + iowait + irq + softirq + steal, idle: idle + iowait }
}

export function cpuUsagePct(prev: CpuTimes | null, next: CpuTimes | null): number | null {
  if (!prev || !next) return null
  const total = next.total - prev.total
  const idle = next.idle - prev.idle
  if (total <= 0 || idle < 0) return null
  return clampPct(((total - idle) / total) * 100)
}

/** MemAvailable when the kernel has it (3.14+), otherwise free + buffers + cached. */
export function parseMeminfo(text: string): MemInfo | null {
  const kb: Record<string, number> = {}
  for (const line of text.split('\n')) {
    const m = /^(\w+(?:\(\w+\))?):\s+(\d+)/.exec(line)
    if (m) kb[m[1]!] = Number(m[2])
  }
  if (!kb.MemTotal) return null
  const available = kb.MemAvailable ?? (kb.MemFree ?? 0) + (kb.Buffers ?? 0) + (kb.Cached ?? 0)
  return { totalKb: kb.MemTotal, availableKb: available }
}

export function memoryUsedPct(info: MemInfo | null): number | null {
  if (!info || info.totalKb <= 0) return null
  return clampPct(((info.totalKb - info.availableKb) / info.totalKb) * 100)
}

/**
 * Sums receive and transmit bytes over the interfaces `include` accepts (never `lo`).
 * /proc/net/dev: two header lines, then "iface: rx_bytes rx_packets … (8 rx fields) tx_bytes …".
 */
export function parseNetDev(text: string, include: (iface: string) => boolean = () => true): NetTotals | null {
  let rx = 0
  let tx = 0
  let seen = false
  for (const line of text.split('\n')) {
    const m = /^\s*([^:\s]+):\s*(.*)$/.exec(line)
    if (!m) continue
    const iface = m[1]!
    if (iface === 'lo' || !include(iface)) continue
    const f = m[2]!.trim().split(/\s+/).map(Number)
    if (f.length < 9 || !Number.isFinite(f[0]) || !Number.isFinite(f[8])) continue
    rx += f[0]!
    tx += f[8]!
    seen = true
  }
  return seen ? { rx, tx } : null
}

/** Megabits per second between two readings; null across a counter reset or without a reading. */
export function netMbps(prev: NetTotals | null, next: NetTotals | null, seconds: number): { rx: number | null; tx: number | null } {
  if (!prev || !next || !(seconds > 0)) return { rx: null, tx: null }
  const rate = (a: number, b: number) => (b < a ? null : round2(((b - a) * 8) / 1e6 / seconds))
  return { rx: rate(prev.rx, next.rx), tx: rate(prev.tx, next.tx) }
}

/** Used share of a filesystem as df shows it: used / (used + available to unprivileged users). */
export function diskUsedPct(s: { blocks: number; bfree: number; bavail: number }): number | null {
  const used = s.blocks - s.bfree
  const denominator = used + s.bavail
  if (!(denominator > 0)) return null
  return clampPct((used / denominator) * 100)
}

/** Size of the filesystem holding `path` in decimal gigabytes (what disk vendors and marketplaces quote). */
export function diskGb(path = '/'): number | null {
  try {
    const s = statfsSync(path) as ReturnType<typeof statfsSync> & { frsize?: number }
    // f_blocks counts fragments of f_frsize; Node's type lacks it, Bun reports it.
    return Math.floor((Number(s.blocks) * Number(s.frsize ?? s.bsize)) / 1e9)
  } catch {
    return null
  }
}

/**
 * Physical and VM network cards have /sys/class/net/<iface>/device; bridges, veth pairs, docker0
 * and tunnels do not, and counting them would count a container's traffic two or three times.
 */
function isPhysicalInterface(iface: string): boolean {
  return existsSync(`/sys/class/net/${iface}/device`)
}

export class HostReader {
  private cpu: CpuTimes | null = null
  private net: NetTotals | null = null
  private netAt = 0

  constructor(private readonly root = '/proc') {}

  /** Reads counters without producing a sample, so the first sample already has deltas. */
  prime(): void {
    this.cpu = parseProcStat(this.read('stat'))
    this.net = this.readNet()
    this.netAt = performance.now()
  }

  available(): boolean {
    return existsSync(`${this.root}/stat`)
  }

  sample(): Record<string, number | null> {
    const cpu = parseProcStat(this.read('stat'))
    const net = this.readNet()
    const at = performance.now()
    const rates = netMbps(this.net, net, (at - this.netAt) / 1000)
    const values = {
      cpu_usage_pct: cpuUsagePct(this.cpu, cpu),
      memory_used_pct: memoryUsedPct(parseMeminfo(this.read('meminfo'))),
      disk_used_pct: this.disk(),
      net_rx_mbps: rates.rx,
      net_tx_mbps: rates.tx,
    }
    this.cpu = cpu
    this.net = net
    this.netAt = at
    return values
  }

  private disk(): number | null {
    try {
      const s = statfsSync('/')
      return diskUsedPct({ blocks: Number(s.blocks), bfree: Number(s.bfree), bavail: Number(s.bavail) })
    } catch {
      return null
    }
  }

  private readNet(): NetTotals | null {
    const text = this.read('net/dev')
    // Outside a VM or container where /sys tells nothing useful, fall back to "everything but lo".
    return parseNetDev(text, isPhysicalInterface) ?? parseNetDev(text)
  }

  private read(name: string): string {
    try {
      return readFileSync(`${this.root}/${name}`, 'utf8')
    } catch {
      return ''
    }
  }
}

function clampPct(n: number): number {
  return round2(Math.min(100, Math.max(0, n)))
}

function round2(n: number): number {
  return Math.round(n * 100) / 100
}

/** Space available to unprivileged users on the filesystem holding `path`, decimal gigabytes (one decimal); null when it cannot be read. */
export function diskFreeGb(path: string): number | null {
  try {
    const s = statfsSync(path) as ReturnType<typeof statfsSync> & { frsize?: number }
    return Math.floor((Number(s.bavail) * Number(s.frsize ?? s.bsize)) / 1e8) / 10
  } catch {
    return null
  }
}
