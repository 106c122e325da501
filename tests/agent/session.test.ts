import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { enroll } from '../../agent/lib/enroll'
import { memoryLogger } from '../../agent/lib/log'
import { Machine } from '../../agent/lib/machine'
import { HEALTH_METRICS } from '../../agent/lib/nvidia'
import { startAgent, type AgentOptions } from '../../agent/lib/session'
import { FakeService, waitFor, type Frame } from './fake-service'

/**
 * The agent against a local service that speaks the service side of the protocol (docs/agent.md):
 * the real CLI as a subprocess for the whole journey, the library in-process for the edge cases.
 */

const AGENT = join(import.meta.dir, '../../agent/gpuhq-agent.ts')
const HOST_METRICS = ['cpu_usage_pct', 'disk_used_pct', 'memory_used_pct', 'net_rx_mbps', 'net_tx_mbps']
const GPU_METRICS = [
  'clock_sm_mhz',
  'fan_pct',
  'hotspot_temperature_c',
  'memory_temperature_c',
  'memory_used_mb',
  'power_w',
  'temperature_c',
  'utilization_pct',
]
const GPU_DETAILS = [
  'pcie_gen_max',
  'pcie_width_max',
  'power_limit_default_w',
  'power_limit_min_w',
  'power_limit_max_w',
  'ecc_mode',
  'persistence_mode',
  'mig_mode',
  'mig_devices',
  'vbios_version',
]
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/

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
  const d = mkdtempSync(join(tmpdir(), 'gpuhq-agent-session-'))
  dirs.push(d)
  return d
}

const ofType = (frames: Frame[], type: string) => frames.filter((f) => f.type === type)

describe('the agent process against the service', () => {
  test('enrol, connect with the bearer credential, hello, heartbeats, telemetry, a command, and a reconnect', async () => {
    const dir = tempDir()
    const stateDir = join(dir, 'state')
    const init = svc.issueInitToken()
    const enrolled = Bun.spawn([process.execPath, AGENT, 'enroll', '--url', svc.url, '--token-stdin', '--state-dir', stateDir, '--simulate', '2'], {
      stdin: new Blob([init]),
      stdout: 'pipe',
    })
    expect(await enrolled.exited).toBe(0)
    const cred = JSON.parse(readFileSync(join(stateDir, 'credential.json'), 'utf8'))
    const firstConn = svc.conns.length

    // --simulate 2 is remembered from enrolment.
    const run = Bun.spawn([process.execPath, AGENT, 'run', '--state-dir', stateDir, '--reconnect-base-ms', '200'], { stdout: 'pipe', stderr: 'pipe' })
    const stdout = new Response(run.stdout).text()
    try {
      // The HTTPS hello, with the credential, once.
      await waitFor(() => svc.hellos.find((h) => h.auth === `Bearer ${cred.agent_token}`), 10_000, 'HTTPS hello')
      const conn = await waitFor(() => svc.conns[firstConn], 10_000, 'a session')
      expect(svc.upgradeAuth.at(-1)).toBe(`Bearer ${cred.agent_token}`)

      // hello first, then heartbeats with rising seq, telemetry on the welcome's 1 s interval.
      await waitFor(() => ofType(conn.frames, 'telemetry').length >= 2 && ofType(conn.frames, 'heartbeat').length >= 2, 10_000, 'telemetry')
      const hello = conn.frames[0]!
      expect(hello).toMatchObject({ type: 'hello', agent_version: '1.0.0', fingerprint: expect.stringMatching(/^sha256:/) })
      expect(hello.gpus).toHaveLength(2)
      const seqs = ofType(conn.frames, 'heartbeat').map((f) => f.seq as number)
      expect(seqs.slice(0, 2)).toEqual([1, 2])
      for (const frame of ofType(conn.frames, 'telemetry')) {
        const samples = frame.samples as { t: string; scope: string; gpu_index?: number; values: Record<string, unknown> }[]
        const host = samples.filter((s) => s.scope === 'host')
        const gpus = samples.filter((s) => s.scope === 'gpu')
        expect(host).toHaveLength(1)
        expect(Object.keys(host[0]!.values).sort()).toEqual(HOST_METRICS)
        expect(gpus.map((s) => s.gpu_index)).toEqual([0, 1])
        for (const s of samples) {
          expect(s.t).toMatch(RFC3339)
          for (const v of Object.values(s.values)) expect(v === null || (typeof v === 'number' && Number.isFinite(v))).toBe(true)
        }
        for (const g of gpus) expect(Object.keys(g.values).sort()).toEqual(GPU_METRICS)
      }

      // A command: accepted, started, finished.
      const command = {
        type: 'command',
        command_id: '01a203a6-d4dd-7130-a1e3-37cba93aed51',
        command_type: 'diagnostics.run',
        schema_version: 1,
        params: {},
        requires: 'none',
        deadline: null,
      }
      svc.send(command)
      await waitFor(() => conn.frames.find((f) => f.type === 'command.finished'), 10_000, 'command.finished')
      const answers = conn.frames.filter((f) => f.command_id === command.command_id).map((f) => f.type)
      expect(answers[0]).toBe('command.accepted')
      expect(answers[1]).toBe('command.started')
      expect(answers.at(-1)).toBe('command.finished')
      expect(conn.frames.find((f) => f.type === 'command.finished')).toMatchObject({ status: 'succeeded', result: { simulated: true } })

      // The service drops the socket; the agent comes back with a new session that starts with hello.
      conn.ws.close(1011, 'service restarting')
      const again = await waitFor(() => svc.conns[firstConn + 1], 10_000, 'a second session')
      await waitFor(() => ofType(again.frames, 'heartbeat').length >= 1, 10_000, 'heartbeat on the new session')
      expect(again.frames[0]!.type).toBe('hello')

      // The same command re-delivered after the reconnect is answered, not run again.
      svc.send(command)
      await waitFor(() => again.frames.find((f) => f.type === 'command.finished'), 10_000, 'the finished frame again')
      expect(again.frames.filter((f) => f.command_id === command.command_id).map((f) => f.type)).toEqual(['command.accepted', 'command.finished'])
    } finally {
      run.kill('SIGTERM')
    }
    expect(await run.exited).toBe(0)
    const log = await stdout
    expect(log).not.toContain(cred.agent_token)
    expect(log).not.toContain(init)
    for (const line of log.trim().split('\n')) expect(() => JSON.parse(line)).not.toThrow()
  }, 30_000)
})

async function enrolled(simulate = 2): Promise<{ stateDir: string; token: string }> {
  const stateDir = join(tempDir(), 'state')
  const log = memoryLogger()
  const facts = await new Machine({ simulate, stateDir }).facts()
  const cred = await enroll({ url: svc.url, token: svc.issueInitToken(), stateDir, facts, log })
  return { stateDir, token: cred.agent_token }
}

async function inProcess(stateDir: string, extra: Partial<AgentOptions> = {}) {
  const log = memoryLogger()
  const agent = await startAgent({ stateDir, log, simulate: 2, reconnectBaseMs: 50, reconnectCapMs: 200, ...extra })
  return { agent, log }
}

describe('session edge cases', () => {
  test('replaced by a newer session (4409): the agent says so, pauses, then takes its session back', async () => {
    const { stateDir, token } = await enrolled()
    const { agent, log } = await inProcess(stateDir, { replacedPauseMs: 300 })
    try {
      const mine = await waitFor(() =>
        svc.conns.find((c) => c.frames.some((f) => f.type === 'heartbeat') && svc.credentials.get(token) === c.serverId && !c.closed),
      )
      const intruder = new WebSocket(svc.url.replace('http', 'ws') + '/api/v1/agent/ws', { headers: { authorization: `Bearer ${token}` } })
      await new Promise((resolve) => (intruder.onopen = resolve))
      await waitFor(() => mine.closed, 5000, 'the agent session to be replaced')
      const warned = await waitFor(() => log.lines.find((l) => String(l.msg).includes('4409')))
      expect(warned.level).toBe('warn')
      const before = Date.now()
      const back = await waitFor(
        () => svc.conns.find((c) => c !== mine && c.serverId === mine.serverId && c.frames[0]?.type === 'hello' && !c.closed),
        5000,
        'the agent to come back',
      )
      expect(Date.now() - before).toBeGreaterThanOrEqual(200)
      expect(back.frames[0]!.type).toBe('hello')
      intruder.close()
    } finally {
      await agent.stop()
    }
  })

  test('a credential revoked while connected: the next upgrade answers 401 and the agent stops for good (exit 78)', async () => {
    const { stateDir, token } = await enrolled()
    const { agent, log } = await inProcess(stateDir)
    const conn = await waitFor(() => svc.conns.find((c) => c.serverId === svc.credentials.get(token) && c.frames.some((f) => f.type === 'heartbeat')))
    svc.revoke(token)
    conn.ws.close(1011, 'decommissioned')
    expect(await agent.done).toBe(78)
    expect(log.lines.some((l) => l.level === 'error' && String(l.msg).includes('enrol again'))).toBe(true)
  })

  test('a credential already revoked at start: the HTTPS hello answers 401 and the agent stops (exit 78)', async () => {
    const { stateDir, token } = await enrolled()
    svc.revoke(token)
    const { agent } = await inProcess(stateDir)
    expect(await agent.done).toBe(78)
  })

  test('agent.restart over the session: finished is delivered, then the agent ends with the restart exit code', async () => {
    const { stateDir, token } = await enrolled()
    const { agent } = await inProcess(stateDir)
    const conn = await waitFor(() => svc.conns.find((c) => c.serverId === svc.credentials.get(token) && c.frames.some((f) => f.type === 'heartbeat')))
    conn.ws.send(
      JSON.stringify({
        type: 'command',
        command_id: 'restart-1',
        command_type: 'agent.restart',
        schema_version: 1,
        params: {},
        requires: 'none',
        deadline: null,
      }),
    )
    expect(await agent.done).toBe(75)
    await waitFor(() => conn.frames.find((f) => f.type === 'command.finished' && f.command_id === 'restart-1'), 2000, 'finished before exit')
  })

  test('a command that finishes while the socket is down is reported on the next session', async () => {
    const dir = tempDir()
    const smi = join(dir, 'nvidia-smi')
    writeFileSync(smi, '#!/bin/sh\ncase "$*" in *-pl*) sleep 0.6 ;; esac\nexit 0\n')
    chmodSync(smi, 0o755)
    const { stateDir, token } = await enrolled()
    const { agent } = await inProcess(stateDir, { simulate: 0, nvidiaSmi: smi })
    try {
      const conn = await waitFor(() => svc.conns.find((c) => c.serverId === svc.credentials.get(token) && c.frames.some((f) => f.type === 'heartbeat')))
      conn.ws.send(
        JSON.stringify({
          type: 'command',
          command_id: 'pl-1',
          command_type: 'gpu.set_power_limit',
          schema_version: 1,
          params: { gpu_index: null, watts: 300 },
          requires: 'none',
          deadline: null,
        }),
      )
      await waitFor(() => conn.frames.find((f) => f.type === 'command.started'))
      conn.ws.close(1011, 'blip')
      const next = await waitFor(
        () => svc.conns.find((c) => c !== conn && c.serverId === conn.serverId && c.frames.some((f) => f.type === 'command.finished')),
        5000,
        'finished on the next session',
      )
      expect(next.frames.find((f) => f.type === 'command.finished')).toMatchObject({ command_id: 'pl-1', status: 'succeeded' })
      expect(conn.frames.some((f) => f.type === 'command.finished')).toBe(false)
    } finally {
      await agent.stop()
    }
  })

  test('real mode reads telemetry from nvidia-smi, drops a field an old driver refuses, and reports [N/A] as null', async () => {
    const dir = tempDir()
    const smi = join(dir, 'nvidia-smi')
    writeFileSync(
      smi,
      `#!/bin/sh
case "$*" in
  *index,name,memory.total,uuid*) printf '0, NVIDIA GeForce RTX 3090, 24576, GPU-11111111-2222-3333-4444-555555555555\\n' ;;
  *temperature.memory*) echo 'Field "temperature.memory" is not a valid field to query.'; exit 2 ;;
  *temperature.gpu*) printf '0, 71, 100, 22000, 349.10, [N/A], 1695\\n' ;;
esac
`,
    )
    chmodSync(smi, 0o755)
    const { stateDir, token } = await enrolled(0)
    const { agent } = await inProcess(stateDir, { simulate: 0, nvidiaSmi: smi })
    try {
      const conn = await waitFor(() => svc.conns.find((c) => c.serverId === svc.credentials.get(token) && c.frames.some((f) => f.type === 'telemetry')), 10_000)
      // This driver answers the inventory alone: every other fact is unknown (null), never zero.
      expect((conn.frames[0]!.gpus as unknown[])[0]).toEqual({
        index: 0,
        model: 'NVIDIA GeForce RTX 3090',
        memory_mb: 24576,
        uuid: 'GPU-11111111-2222-3333-4444-555555555555',
        pci_bus_id: null,
        ...Object.fromEntries(GPU_DETAILS.map((k) => [k, null])),
      })
      const samples = ofType(conn.frames, 'telemetry')[0]!.samples as { scope: string; values: Record<string, unknown> }[]
      expect(samples.find((s) => s.scope === 'gpu')!.values).toEqual({
        temperature_c: 71,
        hotspot_temperature_c: null,
        memory_temperature_c: null,
        utilization_pct: 100,
        memory_used_mb: 22000,
        power_w: 349.1,
        fan_pct: null,
        clock_sm_mhz: 1695,
        ...Object.fromEntries(HEALTH_METRICS.map((m) => [m, null])),
      })
    } finally {
      await agent.stop()
    }
  })
})
