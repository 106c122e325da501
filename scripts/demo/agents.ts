import { join } from 'node:path'
import { enroll } from '../../agent/lib/enroll'
import { createLogger, type Level, type Logger } from '../../agent/lib/log'
import { Machine, type MachineOptions } from '../../agent/lib/machine'
import { type AgentHandle, startAgent } from '../../agent/lib/session'
import { type DemoClient, waitFor } from './client'
import { DEMO_SERVERS, type DemoServer } from './plan'

/**
 * The demo's servers are the reference agent in simulate mode, run inside this process: the same
 * enrolment and session code `gpuhq-agent enroll` and `gpuhq-agent run --simulate N` use, over real
 * HTTP and the real WebSocket to the demo's own port. Each has its own state directory (so its own
 * simulated GPU UUIDs and fingerprint), hostname and address.
 */
export type DemoFleet = { stop: () => Promise<void> }

const ONLINE_TIMEOUT_MS = 120_000
/** The flapping server stays up, then down, this long (± a quarter, so it never looks scheduled). */
const FLAP_MS = 60_000

function agentLogger(level: string, name: string): Logger {
  const quiet = level === 'silent'
  const agentLevel: Level = level === 'debug' ? 'debug' : level === 'info' ? 'info' : level === 'error' ? 'error' : 'warn'
  return createLogger(agentLevel, (line) => {
    if (!quiet) process.stdout.write(`{"agent":"${name}",${line.slice(1)}\n`)
  })
}

function machineOptions(s: DemoServer, index: number, dir: string): MachineOptions {
  return {
    simulate: s.gpus,
    simulation: { model: s.model, memoryMb: s.memoryMb, maxPowerW: s.maxPowerW, hot: s.role === 'hot' },
    stateDir: join(dir, 'agents', s.name),
    hostname: s.name,
    publicIp: `203.0.113.${11 + index}`,
    portRange: `${40000 + index * 200}-${40000 + index * 200 + 199}`,
  }
}

/** Enrols every server of the plan with its own init token (POST /tokens/init, then the agent's POST /agent/register). */
export async function enrolFleet(api: DemoClient, url: string, dir: string, logLevel: string): Promise<Map<string, string>> {
  const ids = new Map<string, string>()
  for (const [index, s] of DEMO_SERVERS.entries()) {
    const init = await api.call<{ token: string }>('POST', '/tokens/init', { purpose: `demo ${s.name}` }, 201)
    const options = machineOptions(s, index, dir)
    const facts = await new Machine(options).facts()
    const credential = await enroll({ url, token: init.token, stateDir: options.stateDir, facts, log: agentLogger(logLevel, s.name), simulate: s.gpus })
    ids.set(s.name, credential.server_id)
  }
  return ids
}

const presence = async (api: DemoClient, id: string) => (await api.get<{ presence: string }>(`/servers/${id}`)).presence

/**
 * Runs the fleet: every server's agent, until `stop`. The offline one connects until it is online
 * and then goes away for good; the flapping one comes and goes about every minute. Resolves once
 * every server that should be online is (or after a generous wait, with a warning).
 */
export async function runFleet(api: DemoClient, ids: Map<string, string>, dir: string, logLevel: string, warn: (line: string) => void): Promise<DemoFleet> {
  const agents = new Map<string, AgentHandle>()
  let stopped = false
  const start = async (s: DemoServer, index: number) => {
    agents.set(s.name, await startAgent({ ...machineOptions(s, index, dir), log: agentLogger(logLevel, s.name) }))
  }
  for (const [index, s] of DEMO_SERVERS.entries()) await start(s, index)

  const online = await waitFor(
    () => Promise.all(DEMO_SERVERS.map(async (s) => [s.name, await presence(api, ids.get(s.name)!)] as const)),
    (list) => list.every(([, p]) => p === 'online'),
    ONLINE_TIMEOUT_MS,
  )
  if (!online.ok) warn(`not every simulated server came online within ${ONLINE_TIMEOUT_MS / 1000} s: ${JSON.stringify(online.value)}`)

  // The offline server: enrolled, was online, now gone for good (its session closes: offline at once).
  for (const s of DEMO_SERVERS.filter((x) => x.role === 'offline')) {
    await agents.get(s.name)!.stop()
    agents.delete(s.name)
  }

  // The flapping server: its session drops and comes back, about a minute each way.
  const flapping = DEMO_SERVERS.map((s, index) => ({ s, index })).filter(({ s }) => s.role === 'flapping')
  const jitter = () => FLAP_MS * (0.75 + Math.random() / 2)
  let wake: (() => void) | null = null
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      if (stopped) return resolve()
      const t = setTimeout(resolve, ms)
      wake = () => {
        clearTimeout(t)
        resolve()
      }
    })
  const flapper = (async () => {
    for (;;) {
      await pause(jitter())
      if (stopped) return
      for (const { s } of flapping) {
        await agents.get(s.name)?.stop()
        agents.delete(s.name)
      }
      await pause(jitter())
      if (stopped) return
      for (const { s, index } of flapping) await start(s, index)
    }
  })()

  return {
    stop: async () => {
      stopped = true
      ;(wake as (() => void) | null)?.()
      await flapper
      await Promise.all([...agents.values()].map((a) => a.stop()))
      agents.clear()
    },
  }
}
