import { closeSync, constants, openSync, readSync } from 'node:fs'
import { uptime } from 'node:os'

/**
 * The NVIDIA driver's complaints in the kernel log (docs/agent.md "Kernel log"): Xid errors and
 * "GPU has fallen off the bus", each a typed server event with the Xid number and its meaning.
 * Follows `journalctl -k -f` (from now on), or /dev/kmsg where journalctl is missing, skipping what
 * was logged before the agent started.
 */

export type KernelEvent = { kind: string; severity: 'info' | 'warning' | 'error' | 'critical'; message: string; data: Record<string, unknown> }

/**
 * Common Xids from NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors), with the severity
 * a host should give them: critical when the GPU needs a reset or the machine a reboot, error when
 * a driver or hardware fault killed work, warning when an application's fault is the likely cause.
 */
const XID_MEANINGS: Record<number, { meaning: string; severity: KernelEvent['severity'] }> = {
  8: { meaning: 'GPU stopped processing (timeout)', severity: 'error' },
  13: { meaning: 'Graphics engine exception (usually an application fault)', severity: 'warning' },
  31: { meaning: 'GPU memory page fault (usually an application fault)', severity: 'warning' },
  32: { meaning: 'Invalid or corrupted push buffer stream', severity: 'error' },
  38: { meaning: 'Driver firmware error', severity: 'error' },
  43: { meaning: 'GPU stopped processing (an application hit a fault)', severity: 'warning' },
  45: { meaning: 'Preemptive cleanup, due to previous errors (a process was killed)', severity: 'info' },
  48: { meaning: 'Double-bit ECC error', severity: 'critical' },
  61: { meaning: 'Internal micro-controller breakpoint/warning', severity: 'error' },
  62: { meaning: 'Internal micro-controller halt', severity: 'critical' },
  63: { meaning: 'ECC page retirement or row remapping recorded', severity: 'warning' },
  64: { meaning: 'ECC page retirement or row remapping recording failure', severity: 'critical' },
  68: { meaning: 'Video decoder (NVDEC) exception', severity: 'error' },
  69: { meaning: 'Graphics engine class error', severity: 'error' },
  74: { meaning: 'NVLink error', severity: 'error' },
  79: { meaning: 'GPU has fallen off the bus', severity: 'critical' },
  92: { meaning: 'High single-bit ECC error rate', severity: 'warning' },
  94: { meaning: 'Contained ECC error (the application was stopped; reset the GPU when convenient)', severity: 'error' },
  95: { meaning: 'Uncontained ECC error (reset the GPU)', severity: 'critical' },
  109: { meaning: 'Context switch timeout', severity: 'error' },
  119: { meaning: 'GSP RPC timeout', severity: 'critical' },
  120: { meaning: 'GSP error', severity: 'critical' },
  121: { meaning: 'C2C link error', severity: 'error' },
  140: { meaning: 'Unrecovered ECC error', severity: 'critical' },
}

/** A /dev/kmsg record is "prio,seq,usec,flags;message"; journalctl -o cat prints the message alone. */
function messageOf(line: string): string {
  const kmsg = /^\d+,\d+,\d+,[^;]*;(.*)$/.exec(line)
  return (kmsg ? kmsg[1]! : line).trim()
}

const XID = /NVRM: Xid \(PCI:([0-9A-Fa-f:.]+)\): (\d{1,5}),\s*(.*)$/
const OFF_THE_BUS = /NVRM: GPU (?:at PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?):? GPU has fallen off the bus/i

/**
 * One kernel log line → its event, or null. `NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen
 * off the bus.` is one `gpu.xid` event (Xid 79 says the bus part itself); a bare
 * `NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.` is `gpu.fallen_off_bus`.
 */
export function parseKernelLine(line: string): KernelEvent | null {
  const text = messageOf(line)
  const xid = XID.exec(text)
  if (xid) {
    const number = Number(xid[2])
    const known = XID_MEANINGS[number]
    const detail = xid[3]!.slice(0, 512)
    const meaning = known?.meaning ?? 'Xid not in the agent’s table (see NVIDIA’s Xid catalogue)'
    return {
      kind: 'gpu.xid',
      severity: known?.severity ?? 'error',
      message: `Xid ${number} on PCI ${xid[1]}: ${meaning}`.slice(0, 1024),
      data: { xid: number, meaning, pci_bus_id: xid[1]!.toLowerCase(), detail },
    }
  }
  const bus = OFF_THE_BUS.exec(text)
  if (bus)
    return {
      kind: 'gpu.fallen_off_bus',
      severity: 'critical',
      message: `GPU at PCI ${bus[1]} has fallen off the bus`,
      data: { pci_bus_id: bus[1]!.toLowerCase(), detail: text.slice(0, 512) },
    }
  return null
}

/** At most this many events a minute: a GPU in trouble can log an Xid per millisecond. */
export const MAX_EVENTS_PER_MINUTE = 30

/**
 * Follows the kernel log and calls `onEvent` for each NVIDIA line that parses, at most
 * MAX_EVENTS_PER_MINUTE a minute (the next event after a quiet spell says how many were dropped).
 * `command` is the follower (default journalctl); when it cannot run, /dev/kmsg is read instead.
 */
export class KernelLogReader {
  private proc: ReturnType<typeof Bun.spawn> | null = null
  private kmsg: number | null = null
  private stopped = false
  private windowStart = 0
  private inWindow = 0
  private dropped = 0

  constructor(
    private readonly onEvent: (e: KernelEvent) => void,
    private readonly command: string[] = ['journalctl', '-k', '-f', '-n', '0', '-o', 'cat'],
    private readonly kmsgPath = '/dev/kmsg',
  ) {}

  /** Starts following; answers which source it follows, or null when neither can be read. */
  start(): 'journal' | 'kmsg' | null {
    try {
      this.proc = Bun.spawn(this.command, { stdin: 'ignore', stdout: 'pipe', stderr: 'ignore' })
      void this.pump(this.proc.stdout as ReadableStream<Uint8Array>)
      // journalctl that runs but cannot follow (no journal, no permission): the kernel's own buffer.
      void this.proc.exited.then((code) => {
        if (!this.stopped && code !== 0) this.startKmsg()
      })
      return 'journal'
    } catch {
      this.proc = null
    }
    return this.startKmsg() ? 'kmsg' : null
  }

  stop(): void {
    this.stopped = true
    this.proc?.kill('SIGTERM')
    if (this.kmsg !== null) closeSync(this.kmsg)
    this.kmsg = null
  }

  /** Feeds one line (what the follower printed). */
  line(text: string, now = Date.now()): void {
    const e = parseKernelLine(text)
    if (!e) return
    if (now - this.windowStart >= 60_000) {
      this.windowStart = now
      this.inWindow = 0
    }
    if (++this.inWindow > MAX_EVENTS_PER_MINUTE) {
      this.dropped++
      return
    }
    if (this.dropped) {
      e.data.dropped_before = this.dropped
      this.dropped = 0
    }
    this.onEvent(e)
  }

  private async pump(stream: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder()
    let rest = ''
    try {
      for await (const chunk of stream) {
        rest += decoder.decode(chunk, { stream: true })
        const lines = rest.split('\n')
        rest = lines.pop() ?? ''
        for (const l of lines) this.line(l)
        if (rest.length > 65_536) rest = ''
      }
    } catch {
      // the follower went away
    }
  }

  /** /dev/kmsg gives one record per read, from the start of the ring buffer: records older than the agent are skipped. */
  private startKmsg(): boolean {
    try {
      // Non-blocking: a read with nothing new fails with EAGAIN instead of holding the event loop.
      this.kmsg = openSync(this.kmsgPath, constants.O_RDONLY | constants.O_NONBLOCK)
    } catch {
      return false
    }
    const sinceUs = Math.floor(uptime() * 1e6)
    const buf = Buffer.alloc(8192)
    const poll = () => {
      if (this.stopped || this.kmsg === null) return
      try {
        const n = readSync(this.kmsg, buf, 0, buf.length, null)
        const record = buf.subarray(0, n).toString('utf8')
        const usec = Number(/^\d+,\d+,(\d+),/.exec(record)?.[1] ?? 0)
        if (usec >= sinceUs) this.line(record.split('\n')[0] ?? '')
        setImmediate(poll)
      } catch {
        // EAGAIN/EPIPE (records overwritten) or nothing new: look again shortly
        setTimeout(poll, 1000)
      }
    }
    setImmediate(poll)
    return true
  }
}
