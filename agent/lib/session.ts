import { checkAnyFrame, checkServiceFrame, firstFrameError, type AgentFrame, type HostFactsBody, type ServiceFrame, type UpdateEventKind } from '#protocol'
import { catalogue } from './catalogue'
import { FinishedCommands } from './command-store'
import { CommandRunner } from './commands'
import { backoffDelay } from './backoff'
import { loadCredential, type Credential } from './credential'
import { httpsHello, REVOKED, TOO_OLD } from './hello'
import { websocketUrl } from './http'
import type { Logger } from './log'
import { Machine, type AgentEvent, type HostFacts } from './machine'
import type { SimulationProfile } from './simulate'
import type { CommandContext } from './commands'
import { downloadVerified, readUpdateState, runTrial, swapBack, swapIn, TRIAL_ENV, writeUpdateState, type UpdateState } from './update'
import { AGENT_VERSION, EXIT } from './version'

/**
 * `run`: one WebSocket session to the service, kept alive across drops with jittered exponential
 * backoff. hello → welcome → heartbeats and telemetry on their intervals; commands answered by the
 * runner. Frames the runner emits while the socket is down wait in a bounded outbox.
 */

export type AgentOptions = {
  stateDir: string
  log: Logger
  simulate?: number
  /** What the simulated GPUs are, and the hostname to report (demos running many servers in one process). */
  simulation?: SimulationProfile
  hostname?: string
  /** Override the service's intervals (tests, demos). */
  heartbeatIntervalS?: number
  telemetryIntervalS?: number
  nvidiaSmi?: string
  /** NVIDIA DCGM's `dcgmi` (default: on PATH). */
  dcgmi?: string
  /** The kernel log follower (tests); default journalctl, then /dev/kmsg (machine.ts). */
  kernelLogCommand?: string[]
  updateCommand?: string
  publicIp?: string
  portRange?: string
  reconnectBaseMs?: number
  reconnectCapMs?: number
  /** Pause after being replaced by a newer session (close 4409) before trying again. */
  replacedPauseMs?: number
  welcomeTimeoutMs?: number
  /**
   * The built-in self-update (lib/update.ts), for the single executable: the file it runs from, the
   * arguments it was started with (the trial child gets the same), and how long the new version has
   * to be welcomed before it is rolled back (default 120 s).
   */
  selfUpdate?: { file: string; args: string[]; trialS?: number }
}

export type AgentHandle = {
  /** Resolves with the exit code the process should end with. */
  done: Promise<number>
  stop: () => Promise<void>
  runner: CommandRunner
  machine: Machine
  credential: Credential
}

type SessionEnd = { opened: boolean; welcomed: boolean; code: number; reason: string; upgradeStatus: number | null; lastedMs: number }

const OUTBOX_MAX = 1000

export async function startAgent(opts: AgentOptions): Promise<AgentHandle> {
  const credential = loadCredential(opts.stateDir, (msg) => opts.log.warn(msg))
  const agent = new Agent(opts, credential)
  await agent.init()
  agent.start()
  return { done: agent.done, stop: () => agent.stop(), runner: agent.runner, machine: agent.machine, credential }
}

class Agent {
  readonly machine: Machine
  readonly runner: CommandRunner
  readonly done: Promise<number>
  private resolveDone!: (code: number) => void
  private facts!: HostFacts
  private ws: WebSocket | null = null
  private welcomed = false
  private stopped = false
  private attempt = 0
  private seq = 0
  private outbox: AgentFrame[] = []
  private timers: ReturnType<typeof setInterval>[] = []
  private wake: (() => void) | null = null
  private sampling = false
  private heartbeatS: number
  private telemetryS: number
  /** While a trial child holds the session (lib/update.ts step 4), this process stays off it. */
  private paused: Promise<void> | null = null

  constructor(
    private readonly opts: AgentOptions,
    private readonly cred: Credential,
  ) {
    this.done = new Promise((resolve) => (this.resolveDone = resolve))
    this.heartbeatS = opts.heartbeatIntervalS ?? cred.heartbeat_interval_s
    this.telemetryS = opts.telemetryIntervalS ?? cred.telemetry_interval_s
    this.machine = new Machine({
      simulate: opts.simulate ?? cred.simulate,
      simulation: opts.simulation,
      hostname: opts.hostname,
      stateDir: opts.stateDir,
      nvidiaSmi: opts.nvidiaSmi,
      dcgmi: opts.dcgmi,
      kernelLogCommand: opts.kernelLogCommand,
      publicIp: opts.publicIp,
      portRange: opts.portRange ?? cred.port_range,
    })
    this.runner = new CommandRunner({
      handlers: catalogue({
        machine: this.machine,
        updateCommand: opts.updateCommand,
        selfUpdate: opts.selfUpdate ? (version, ctx) => this.prepareUpdate(version, ctx) : undefined,
        restart: () => void this.finish(EXIT.restart, "restarting at the service's request"),
        event: (e) => this.event(e),
      }),
      finished: new FinishedCommands(opts.stateDir),
      emit: (frame) => this.emit(frame),
      flush: () => this.flush(),
      log: opts.log,
    })
  }

  async init(): Promise<void> {
    this.facts = await this.machine.facts()
    this.machine.prime()
    const log = this.opts.log
    log.info('agent starting', { version: AGENT_VERSION, server_id: this.cred.server_id, gpus: this.facts.gpus.length, simulated: !!this.machine.simulated })
    if (!this.machine.simulated && !this.facts.gpus.length) {
      // Never a silent empty host: the service hears why there are no GPUs (docs/agent.md).
      const why = this.machine.gpuProblem ?? 'nvidia-smi lists no GPUs'
      log.warn('no GPUs found (nvidia-smi missing or failing): sending host metrics only', { reason: why })
      this.event({ kind: 'gpu.unavailable', severity: 'error', message: `no GPUs found: ${why}`, data: { reason: why } })
    }
    this.machine.watchKernelLog((e) => this.event(e))
  }

  start(): void {
    void httpsHello(this.cred, this.hello(), this.opts.log).then((code) => (code === null ? this.loop() : this.finish(code)))
  }

  async stop(): Promise<void> {
    await this.finish(EXIT.ok, 'stopping')
  }

  private hello(): HostFactsBody {
    return { agent_version: AGENT_VERSION, ...this.facts }
  }

  private async loop(): Promise<void> {
    const log = this.opts.log
    while (!this.stopped) {
      // A self-update's trial child holds the session (also when it began while this one was down).
      if (this.paused) {
        await this.paused
        if (this.stopped) return
        this.attempt = 0
      }
      const end = await this.connectOnce()
      if (this.stopped) return
      if (this.paused) continue
      if (end.upgradeStatus === 401) {
        log.error(REVOKED)
        return this.finish(EXIT.config)
      }
      if (end.upgradeStatus === 426) {
        log.error(TOO_OLD)
        return this.finish(EXIT.config)
      }
      const backoff = { baseMs: this.opts.reconnectBaseMs ?? 1000, capMs: this.opts.reconnectCapMs ?? 60_000 }
      // A session that was welcomed and then lived a while was healthy: start the backoff over.
      if (end.welcomed && end.lastedMs >= 10_000) this.attempt = 0
      let delay = backoffDelay(this.attempt++, backoff)
      if (end.code === 4409) {
        delay += this.opts.replacedPauseMs ?? 30_000
        log.warn(
          'another session with this credential replaced this one (close 4409); is the agent running twice, or was this host cloned? pausing before reconnecting',
          { pause_ms: delay },
        )
      } else
        log.warn('session closed; reconnecting', {
          code: end.code,
          reason: end.reason || undefined,
          status: end.upgradeStatus ?? undefined,
          opened: end.opened,
          delay_ms: delay,
        })
      await this.sleep(delay)
    }
  }

  private connectOnce(): Promise<SessionEnd> {
    const url = websocketUrl(this.cred.ws_url, this.cred.url)
    const started = Date.now()
    return new Promise((resolve) => {
      let opened = false
      let errorText = ''
      let welcomeTimer: ReturnType<typeof setTimeout> | undefined
      const ws = new WebSocket(url, {
        headers: { authorization: `Bearer ${this.cred.agent_token}`, 'user-agent': `gpuhq-agent/${AGENT_VERSION}` },
      })
      this.ws = ws
      ws.onopen = () => {
        opened = true
        this.seq = 0
        this.opts.log.info('session open; sending hello', { url })
        ws.send(JSON.stringify({ type: 'hello', ...this.hello() } satisfies AgentFrame<'hello'>))
        welcomeTimer = setTimeout(() => {
          this.opts.log.warn('no welcome from the service; reconnecting')
          ws.close(4000, 'no welcome')
        }, this.opts.welcomeTimeoutMs ?? 30_000)
      }
      ws.onmessage = (e) =>
        this.onFrame(typeof e.data === 'string' ? e.data : Buffer.from(e.data as ArrayBuffer).toString('utf8'), () => clearTimeout(welcomeTimer))
      ws.onerror = (e) => {
        errorText = (e as ErrorEvent).message ?? ''
      }
      ws.onclose = (e) => {
        clearTimeout(welcomeTimer)
        const welcomed = this.welcomed
        this.endSession()
        const status = /status code:?\s*(\d{3})/i.exec(errorText)?.[1]
        resolve({ opened, welcomed, code: e.code, reason: e.reason, upgradeStatus: status ? Number(status) : null, lastedMs: Date.now() - started })
      }
    })
  }

  /**
   * Every frame from the service is checked by the protocol's compiled checker (protocol/agent.ts)
   * before anything reads it. One that fails is refused as the protocol refuses a malformed frame:
   * dropped, with a warning naming its first schema error; the session stays open. (The protocol
   * has no agent → service `error` frame, so the service is not told.) Unknown types are ignored,
   * so a newer service can add frames.
   */
  private onFrame(text: string, welcomeArrived: () => void): void {
    const log = this.opts.log
    let frame: unknown
    try {
      frame = JSON.parse(text)
    } catch {
      frame = undefined
    }
    if (!checkAnyFrame.Check(frame)) {
      log.warn('ignoring a frame that is not a JSON object with a string type', { bytes: text.length })
      return
    }
    const type = frame.type
    if (!Object.hasOwn(checkServiceFrame, type)) {
      log.debug('ignoring a frame of unknown type', { type: type.slice(0, 64) })
      return
    }
    const check = checkServiceFrame[type as keyof typeof checkServiceFrame]
    if (!check.Check(frame)) {
      log.warn('ignoring a frame the protocol does not allow', { type, error: firstFrameError(type, check.Errors(frame)) })
      return
    }
    const valid = frame as ServiceFrame
    switch (valid.type) {
      case 'welcome':
        welcomeArrived()
        this.onWelcome(valid)
        return
      case 'command':
        this.runner.receive(valid)
        return
      case 'command.cancel':
        this.runner.cancel(valid.command_id)
        return
      case 'error':
        log.warn('the service could not accept a frame', { code: valid.code, message: valid.message })
        return
    }
  }

  private onWelcome(frame: ServiceFrame<'welcome'>): void {
    if (this.welcomed) return // one welcome per session; a repeat must not double the timers
    const positive = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : null)
    if (frame.server_id !== this.cred.server_id)
      this.opts.log.warn('the service welcomed this agent as a different server than it enrolled as', {
        enrolled: this.cred.server_id,
        welcomed: frame.server_id,
      })
    this.heartbeatS = this.opts.heartbeatIntervalS ?? positive(frame.heartbeat_interval_s) ?? this.heartbeatS
    this.telemetryS = this.opts.telemetryIntervalS ?? positive(frame.telemetry_interval_s) ?? this.telemetryS
    this.welcomed = true
    this.opts.log.info('welcomed', { heartbeat_interval_s: this.heartbeatS, telemetry_interval_s: this.telemetryS })
    this.heartbeat()
    this.updateWelcomed()
    this.sendOutbox()
    this.timers.push(setInterval(() => this.heartbeat(), this.heartbeatS * 1000))
    // The first telemetry comes within 5 s so a fresh server shows numbers at once, then on the interval.
    const first = setTimeout(() => {
      void this.telemetry()
      if (this.welcomed) this.timers.push(setInterval(() => void this.telemetry(), this.telemetryS * 1000))
    }, Math.min(this.telemetryS, 5) * 1000)
    this.timers.push(first as unknown as ReturnType<typeof setInterval>)
  }

  /** agent.update with the built-in self-update: steps 1–2 now, the swap and the trial once the command is reported (lib/update.ts). */
  private async prepareUpdate(version: string, ctx: CommandContext) {
    if (version === AGENT_VERSION) return { result: { version, already_running: true, restarting: false } }
    const { file } = this.opts.selfUpdate!
    let verified: { sha256: string; bytes: number }
    try {
      verified = await downloadVerified({ baseUrl: this.cred.url, file, version, signal: ctx.signal, log: ctx.log })
    } catch (e) {
      const body = (e as { body?: { code: string; message: string } }).body
      this.updateEvent({
        kind: 'update.failed',
        severity: 'error',
        message: `the update to ${version} failed: ${body?.message ?? String(e)}`,
        data: { from_version: AGENT_VERSION, to_version: version, code: body?.code ?? 'agent_error' },
      })
      throw e
    }
    ctx.log(`agent ${version} downloaded and verified (sha256 ${verified.sha256}); it replaces this one once this command is reported`)
    this.updateEvent({
      kind: 'update.verified',
      severity: 'info',
      message: `agent ${version} downloaded; its SHA-256 and version check out`,
      data: { from_version: AGENT_VERSION, to_version: version, sha256: verified.sha256, bytes: verified.bytes },
    })
    return {
      result: { from_version: AGENT_VERSION, version, sha256: verified.sha256, restarting: true },
      after: () => this.installUpdate(version, verified.sha256),
    }
  }

  /** Steps 3–5: swap the files, let the new version prove itself, then restart into it or roll back. */
  private async installUpdate(version: string, sha256: string): Promise<void> {
    const { file, args, trialS } = this.opts.selfUpdate!
    const log = this.opts.log
    const state: UpdateState = { state: 'trial', from_version: AGENT_VERSION, to_version: version, sha256, at: new Date().toISOString() }
    try {
      swapIn(file)
    } catch (e) {
      this.updateEvent({
        kind: 'update.failed',
        severity: 'error',
        message: `could not put agent ${version} in place: ${(e as Error).message}`,
        data: { from_version: AGENT_VERSION, to_version: version, code: 'update_swap_failed' },
      })
      return
    }
    writeUpdateState(this.opts.stateDir, state)
    this.updateEvent({
      kind: 'update.installed',
      severity: 'info',
      message: `agent ${version} is in place (the previous one kept); starting it`,
      data: { from_version: AGENT_VERSION, to_version: version, file, previous: `${file}.previous` },
    })
    await this.flush()
    let resume!: () => void
    this.paused = new Promise((r) => (resume = r))
    this.ws?.close(1000, 'agent updating')
    log.info('trying the new agent', { version })
    const trial = await runTrial({ file, args, stateDir: this.opts.stateDir, trialMs: (trialS ?? 120) * 1000, log })
    if (trial.ok) {
      resume()
      return this.finish(EXIT.restart, `agent ${version} was welcomed by the service; restarting into it`)
    }
    log.error('the new agent did not reconnect; rolling back', { version, reason: trial.reason })
    let restored = true
    try {
      swapBack(file)
    } catch (e) {
      restored = false
      log.error('could not put the previous agent back', { error: (e as Error).message })
    }
    writeUpdateState(this.opts.stateDir, { ...state, state: 'rolled_back', reason: trial.reason, reported: true, at: new Date().toISOString() })
    this.updateEvent({
      kind: 'update.rolled_back',
      severity: 'error',
      message: `agent ${version} was rolled back: ${trial.reason}`,
      data: { from_version: AGENT_VERSION, to_version: version, reason: trial.reason, restored, kept_as: `${file}.failed` },
    })
    this.paused = null
    resume()
  }

  /** After a welcome: a trial child confirms; the first welcomed run of a new version reports the update completed. */
  private updateWelcomed(): void {
    const st = readUpdateState(this.opts.stateDir)
    if (!st) return
    if (process.env[TRIAL_ENV] === '1') {
      if (st.state === 'trial' && st.to_version === AGENT_VERSION)
        writeUpdateState(this.opts.stateDir, { ...st, state: 'confirmed', at: new Date().toISOString() })
      return
    }
    if ((st.state === 'confirmed' || st.state === 'trial') && st.to_version === AGENT_VERSION) {
      this.updateEvent({
        kind: 'update.completed',
        severity: 'info',
        message: `agent updated from ${st.from_version} to ${AGENT_VERSION}`,
        data: { from_version: st.from_version, to_version: AGENT_VERSION, sha256: st.sha256 },
      })
      writeUpdateState(this.opts.stateDir, { ...st, state: 'done', at: new Date().toISOString() })
    } else if (st.state === 'rolled_back' && !st.reported && st.from_version === AGENT_VERSION) {
      this.updateEvent({
        kind: 'update.rolled_back',
        severity: 'error',
        message: `agent ${st.to_version} was rolled back: ${st.reason ?? 'unknown reason'}`,
        data: { from_version: st.from_version, to_version: st.to_version, reason: st.reason ?? null, restored: true },
      })
      writeUpdateState(this.opts.stateDir, { ...st, reported: true })
    }
  }

  private heartbeat(): void {
    this.sendNow({ type: 'heartbeat', seq: ++this.seq })
  }

  private async telemetry(): Promise<void> {
    if (this.sampling || !this.welcomed) return
    this.sampling = true
    try {
      const { samples, events } = await this.machine.sample()
      this.sendNow({ type: 'telemetry', samples })
      for (const e of events) this.event(e)
    } catch (err) {
      this.opts.log.warn('reading telemetry failed', { error: String(err) })
    } finally {
      this.sampling = false
    }
  }

  /** A self-update step (protocol/agent.ts UpdateEventKind). */
  private updateEvent(e: AgentEvent & { kind: UpdateEventKind; data: { from_version: string; to_version: string } & Record<string, unknown> }): void {
    this.event(e)
  }

  private event(e: AgentEvent): void {
    this.opts.log.info('event', { kind: e.kind, severity: e.severity, message: e.message })
    this.emit({ type: 'event', ...e })
  }

  /** Heartbeats and telemetry are worth nothing late: sent now or never. */
  private sendNow(frame: AgentFrame): boolean {
    if (!this.welcomed || this.ws?.readyState !== WebSocket.OPEN) return false
    try {
      this.ws.send(JSON.stringify(frame))
      return true
    } catch {
      return false
    }
  }

  /** Command answers and events must arrive: sent now, or after the next welcome. */
  private emit(frame: AgentFrame): void {
    if (this.outbox.length === 0 && this.sendNow(frame)) return
    this.outbox.push(frame)
    if (this.outbox.length > OUTBOX_MAX) this.outbox.shift()
    this.sendOutbox()
  }

  private sendOutbox(): void {
    while (this.outbox.length && this.sendNow(this.outbox[0]!)) this.outbox.shift()
  }

  /** Waits (≤10 s) until the outbox is empty and the socket has handed everything to the kernel. */
  private async flush(): Promise<void> {
    const until = Date.now() + 10_000
    while (Date.now() < until && (this.outbox.length || (this.ws?.bufferedAmount ?? 0) > 0)) await Bun.sleep(50)
  }

  private endSession(): void {
    this.welcomed = false
    this.ws = null
    for (const t of this.timers) clearInterval(t)
    this.timers = []
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms)
      function done() {
        clearTimeout(t)
        resolve()
      }
      this.wake = done
    })
  }

  private async finish(code: number, why?: string): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    this.machine.stopKernelLog()
    if (why) this.opts.log.info(why)
    const ws = this.ws
    this.endSession()
    ws?.close(1000, 'agent stopping')
    this.wake?.()
    this.resolveDone(code)
  }
}
