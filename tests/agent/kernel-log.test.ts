import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { enroll } from '../../agent/lib/enroll'
import { KernelLogReader, MAX_EVENTS_PER_MINUTE, parseKernelLine, type KernelEvent } from '../../agent/lib/kernel-log'
import { memoryLogger } from '../../agent/lib/log'
import { Machine } from '../../agent/lib/machine'
import { startAgent } from '../../agent/lib/session'
import { checkAgentFrame } from '#protocol'
import { FakeService, waitFor, type Frame } from './fake-service'

/**
 * The kernel-log reader (docs/agent.md "Kernel log"): NVIDIA's Xid lines and "GPU has fallen off
 * the bus", in the formats the kernel really prints them (journalctl -o cat, journalctl -k's
 * default, /dev/kmsg records), each one event with the Xid number and its meaning. The follower is
 * a stand-in for journalctl printing those lines; the service is the local protocol stand-in.
 */

const FALLEN = 'NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.'
const CAPTURES = join(import.meta.dir, 'captures')
const FAKE = join(import.meta.dir, 'fake-nvidia-smi.ts')

let svc: FakeService
const dirs: string[] = []
beforeAll(() => {
  svc = new FakeService()
})
afterAll(async () => {
  await svc.stop()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'gpuhq-kernel-log-'))
  dirs.push(d)
  return d
}

/** A journalctl stand-in that prints `lines` and then keeps following (sleeps), as `journalctl -f` does. */
function follower(lines: string[]): string[] {
  const path = join(tempDir(), 'journalctl')
  writeFileSync(path, `#!/bin/sh\ncat <<'EOF'\n${lines.join('\n')}\nEOF\nexec sleep 30\n`, { mode: 0o755 })
  return [path, '-k', '-f', '-n', '0', '-o', 'cat']
}

describe('kernel log lines', () => {
  test('a Xid line becomes one gpu.xid event with its number, meaning, PCI address and severity', () => {
    expect(parseKernelLine(FALLEN)).toEqual({
      kind: 'gpu.xid',
      severity: 'critical',
      message: 'Xid 79 on PCI 0000:3b:00: GPU has fallen off the bus',
      data: { xid: 79, meaning: 'GPU has fallen off the bus', pci_bus_id: '0000:3b:00', detail: 'pid=0, GPU has fallen off the bus.' },
    })
  })

  test.each([
    [
      'journalctl -o cat',
      'NVRM: Xid (PCI:0000:17:00): 48, pid=2875, name=python3, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 0, subpartition 0.',
      48,
      'critical',
    ],
    [
      'journalctl -k',
      'Nov 27 23:58:01 rig-07 kernel: NVRM: Xid (PCI:0000:b1:00): 13, pid=4101, name=python, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address',
      13,
      'warning',
    ],
    ['/dev/kmsg', '3,1834,98765432,-;NVRM: Xid (PCI:0000:41:00): 94, pid=9911, name=train, Ch 00000008', 94, 'error'],
    ['an Xid outside the table', 'NVRM: Xid (PCI:0000:41:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (Reset Required).', 154, 'error'],
  ])('%s', (_format, line, xid, severity) => {
    const e = parseKernelLine(line)!
    expect(e.kind).toBe('gpu.xid')
    expect(e.data.xid).toBe(xid)
    expect(e.severity).toBe(severity as KernelEvent['severity'])
    expect(typeof e.data.meaning).toBe('string')
  })

  test('"GPU has fallen off the bus" without a Xid is its own critical event; other lines are nothing', () => {
    expect(parseKernelLine('NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.')).toMatchObject({
      kind: 'gpu.fallen_off_bus',
      severity: 'critical',
      data: { pci_bus_id: '0000:3b:00.0' },
    })
    expect(parseKernelLine('NVRM: GPU at PCI:0000:3b:00: GPU-00000000-0000-0000-0000-000000000000')).toBeNull()
    expect(parseKernelLine('nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms  590.48.01')).toBeNull()
    expect(parseKernelLine('')).toBeNull()
  })
})

describe('the reader', () => {
  test('follows journalctl: each Xid line it prints is one event, the rest ignored', async () => {
    const events: KernelEvent[] = []
    const reader = new KernelLogReader(
      (e) => events.push(e),
      follower([
        'usb 1-1: new high-speed USB device number 2 using xhci_hcd',
        FALLEN,
        'NVRM: Xid (PCI:0000:3b:00): 63, pid=0, Row Remapper: New row marked for remapping, reset gpu to activate.',
      ]),
    )
    expect(reader.start()).toBe('journal')
    try {
      await waitFor(() => events.length >= 2, 10_000, 'two events')
      expect(events.map((e) => [e.kind, e.data.xid])).toEqual([
        ['gpu.xid', 79],
        ['gpu.xid', 63],
      ])
    } finally {
      reader.stop()
    }
  })

  test(`a GPU logging Xids in a storm: at most ${MAX_EVENTS_PER_MINUTE} events a minute, the next one says how many were dropped`, () => {
    const events: KernelEvent[] = []
    const reader = new KernelLogReader((e) => events.push(e), ['true'])
    for (let i = 0; i < MAX_EVENTS_PER_MINUTE + 12; i++) reader.line(FALLEN, 1_000_000 + i)
    expect(events).toHaveLength(MAX_EVENTS_PER_MINUTE)
    reader.line(FALLEN, 1_000_000 + 60_000)
    expect(events).toHaveLength(MAX_EVENTS_PER_MINUTE + 1)
    expect(events.at(-1)!.data.dropped_before).toBe(12)
  })
})

function fakeSmi(capture: string): string {
  const path = join(tempDir(), 'nvidia-smi')
  writeFileSync(path, `#!/bin/sh\nFAKE_NVIDIA_SMI_CAPTURE='${join(CAPTURES, capture)}' exec '${process.execPath}' '${FAKE}' "$@"\n`, { mode: 0o755 })
  return path
}

describe('in a session', () => {
  test("a Xid on the H100's bus is one event frame naming the GPU, accepted by the protocol's checker", async () => {
    const stateDir = join(tempDir(), 'state')
    const log = memoryLogger()
    // The capture's GPU is at 00000000:00:09.0; the kernel writes that as PCI:0000:00:09.
    const nvidiaSmi = fakeSmi('linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt')
    const facts = await new Machine({ stateDir, nvidiaSmi }).facts()
    const cred = await enroll({ url: svc.url, token: svc.issueInitToken(), stateDir, facts, log })
    const kernelLogCommand = follower(['NVRM: Xid (PCI:0000:00:09): 79, pid=0, GPU has fallen off the bus.'])
    const agent = await startAgent({ stateDir, log, nvidiaSmi, kernelLogCommand, telemetryIntervalS: 60, heartbeatIntervalS: 1 })
    try {
      const serverId = svc.credentials.get(cred.agent_token)
      const event = await waitFor(() =>
        svc.conns
          .filter((c) => c.serverId === serverId)
          .flatMap((c) => c.frames)
          .find((f) => f.type === 'event'),
      )
      expect(event).toMatchObject({ type: 'event', kind: 'gpu.xid', severity: 'critical', data: { xid: 79, gpu_index: 0, pci_bus_id: '0000:00:09' } })
      expect(checkAgentFrame.event.Check(event)).toBe(true)
      expect(
        svc.conns
          .filter((c) => c.serverId === serverId)
          .flatMap((c) => c.frames)
          .filter((f) => f.type === 'event'),
      ).toHaveLength(1)
    } finally {
      await agent.stop()
    }
  })

  test.each([
    ['missing', () => join(tempDir(), 'no-such-nvidia-smi'), 'not found'],
    [
      'listing no GPU',
      () => {
        const path = join(tempDir(), 'nvidia-smi')
        writeFileSync(path, '#!/bin/sh\nexit 0\n', { mode: 0o755 })
        return path
      },
      'lists no GPUs',
    ],
  ])('nvidia-smi %s: the session says so with an error event, not a silent empty host', async (_what, bin, reason) => {
    const stateDir = join(tempDir(), 'state')
    const log = memoryLogger()
    const nvidiaSmi = bin()
    const facts = await new Machine({ stateDir, nvidiaSmi }).facts()
    const cred = await enroll({ url: svc.url, token: svc.issueInitToken(), stateDir, facts, log })
    const agent = await startAgent({ stateDir, log, nvidiaSmi, kernelLogCommand: ['true'], heartbeatIntervalS: 1, telemetryIntervalS: 60 })
    try {
      const serverId = svc.credentials.get(cred.agent_token)
      const event = (await waitFor(() =>
        svc.conns
          .filter((c) => c.serverId === serverId)
          .flatMap((c) => c.frames)
          .find((f) => f.type === 'event'),
      )) as Frame
      expect(event).toMatchObject({ kind: 'gpu.unavailable', severity: 'error' })
      expect(String(event.message)).toContain(reason)
    } finally {
      await agent.stop()
    }
  })
})
