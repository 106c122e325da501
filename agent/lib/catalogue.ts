import { readFileSync } from 'node:fs'
import { cpus, loadavg, release, totalmem, uptime } from 'node:os'
import { CommandFailure, type CommandContext, type Handler } from './commands'
import { DIAG_RAN, parseDcgmDiag } from './dcgm'
import { firstLine, run } from './exec'
import { summariseNvidiaSmiQ } from './nvidia'
import { diskGb } from './procfs'
import type { AgentEvent, Machine } from './machine'
import { AGENT_VERSION } from './version'

/** The minimum command catalogue the protocol asks of an agent (docs/agent.md). Simulated machines treat dangerous ones as no-ops. */

export type CatalogueDeps = {
  machine: Machine
  /** Ends the process so its supervisor (systemd) starts it again. */
  restart: () => void
  /** An executable that installs agent version $1 (a package-manager wrapper); it wins over the built-in self-update. */
  updateCommand?: string
  /** The built-in self-update of the single executable (lib/update.ts); absent when run from source. */
  selfUpdate?: (version: string, ctx: CommandContext) => Promise<{ result: Record<string, unknown>; after?: () => Promise<void> | void }>
  event: (e: AgentEvent) => void
}

export function catalogue(deps: CatalogueDeps): Record<string, Handler> {
  const { machine } = deps
  const sim = machine.simulated
  const smi = machine.nvidia.bin
  return {
    'diagnostics.run': async (ctx) => {
      ctx.log('collecting host facts')
      const host = hostFacts()
      ctx.progress(30)
      if (sim) {
        ctx.log(`simulated machine with ${sim.gpus.length} GPUs`)
        const gpus = sim.inventory().map((g) => ({ ...g, power_limit_w: sim.powerLimit(g.index) }))
        return { result: { agent_version: AGENT_VERSION, simulated: true, host, nvidia_smi: { available: true, simulated: true, gpus } } }
      }
      ctx.log(`running ${smi} -q`)
      const r = await run([smi, '-q'], { timeoutMs: 60_000, signal: ctx.signal })
      ctx.progress(90)
      let nvidia: Record<string, unknown>
      if (r.notFound) nvidia = { available: false, reason: 'nvidia-smi not found' }
      else if (r.code !== 0) {
        ctx.log(`${smi} -q exited with ${r.code}: ${firstLine(r.stderr || r.stdout)}`)
        nvidia = { available: false, reason: r.timedOut ? 'nvidia-smi timed out' : `nvidia-smi exited with ${r.code}` }
      } else nvidia = { available: true, ...summariseNvidiaSmiQ(r.stdout) }
      return { result: { agent_version: AGENT_VERSION, simulated: false, host, nvidia_smi: nvidia } }
    },

    'diagnostics.dcgm': async (ctx) => {
      const level = ctx.params.level ?? 1
      if (level !== 1 && level !== 2) throw invalid('level must be 1 (quick, seconds) or 2 (medium, about two minutes)')
      if (sim) {
        ctx.log(`simulated: dcgmi diag -r ${level} on ${sim.gpus.length} GPUs`)
        return {
          result: simulatedDiag(
            sim.inventory().map((g) => g.index),
            level,
          ),
        }
      }
      const argv = [machine.dcgmi, 'diag', '-r', String(level)]
      ctx.log(`running ${argv.join(' ')}`)
      ctx.progress(5)
      // Level 1 takes seconds and level 2 about two minutes (NVIDIA's dcgmi-diag page); the limits leave room for a slow host.
      const r = await run(argv, { timeoutMs: level === 1 ? 600_000 : 1_800_000, signal: ctx.signal })
      if (r.notFound)
        throw new CommandFailure({
          code: 'dcgm_not_installed',
          message: `DCGM is not installed on this host (${machine.dcgmi} was not found): install NVIDIA's datacenter-gpu-manager and start nv-hostengine to run GPU diagnostics`,
          retryable: false,
        })
      // A run that found a failing GPU exits non-zero, yet printed its table: the table is the answer.
      if (r.stdout.includes(DIAG_RAN)) {
        const diag = parseDcgmDiag(r.stdout)
        ctx.log(`dcgmi diag -r ${level}: ${diag.result}; ${diag.gpus.map((g) => `GPU ${g.index} ${g.result}`).join(', ') || 'no GPU results'}`)
        return { result: { level, simulated: false, exit_code: r.code, ...diag } }
      }
      const said = firstLine(r.stdout + '\n' + r.stderr)
      if (said) ctx.log(said)
      if (/unable to establish a connection|host engine/i.test(r.stdout + r.stderr))
        throw new CommandFailure({
          code: 'dcgm_unavailable',
          message: 'DCGM is installed but its host engine does not answer: start nv-hostengine (systemctl start nvidia-dcgm)',
          retryable: true,
          stage: 'dcgmi',
          details: { exit_code: r.code },
        })
      throw new CommandFailure({
        code: 'dcgm_diag_failed',
        message: r.timedOut ? `dcgmi diag -r ${level} did not finish in time` : `dcgmi diag -r ${level} exited with ${r.code} without a result`,
        retryable: true,
        stage: 'dcgmi',
        details: { exit_code: r.code },
      })
    },

    'agent.restart': async (ctx) => {
      ctx.log('the agent exits now; its service manager starts it again')
      return { result: { restarting: true }, after: () => deps.restart() }
    },

    'agent.update': async (ctx) => {
      const version = ctx.params.version
      if (typeof version !== 'string' || !/^[0-9A-Za-z][0-9A-Za-z.+~-]{0,31}$/.test(version)) throw invalid('version must be a version string such as 1.2.0')
      if (!deps.updateCommand && deps.selfUpdate) return deps.selfUpdate(version, ctx)
      if (!deps.updateCommand)
        throw new CommandFailure({
          code: 'update_unsupported',
          message:
            'this agent runs from source, which cannot replace itself (the single executable can); start it with --update-command, or update it by re-running install.sh',
          retryable: false,
        })
      ctx.log(`running the update command for version ${version}`)
      const r = await run([deps.updateCommand, version], { timeoutMs: 600_000, signal: ctx.signal })
      if (r.code !== 0) {
        ctx.log(`update command exited with ${r.code}: ${firstLine(r.stderr || r.stdout)}`)
        throw new CommandFailure({
          code: 'update_failed',
          message: 'the update command failed',
          retryable: true,
          stage: 'install',
          details: { exit_code: r.code },
        })
      }
      ctx.log('update installed; the agent restarts into the new version')
      return { result: { version, restarting: true }, after: () => deps.restart() }
    },

    'gpu.set_power_limit': async (ctx) => {
      const { gpu_index: index, watts } = ctx.params
      if (!(index === null || index === undefined || isIndex(index))) throw invalid('gpu_index must be an integer ≥ 0 or null (all GPUs)')
      if (!Number.isInteger(watts) || (watts as number) < 50 || (watts as number) > 1000) throw invalid('watts must be an integer from 50 to 1000')
      const gpu = (index ?? null) as number | null
      checkKnown(machine, gpu)
      if (sim) {
        const touched = sim.setPowerLimit(gpu, watts as number)
        ctx.log(`simulated: power limit of GPU ${gpu ?? 'all'} set to ${watts} W`)
        return { result: { gpu_indexes: touched, watts, simulated: true } }
      }
      const argv = gpu === null ? [smi, '-pl', String(watts)] : [smi, '-i', String(gpu), '-pl', String(watts)]
      ctx.log(`running ${argv.join(' ')}`)
      await runOrFail(ctx, argv, 'power_limit_failed', 60_000)
      ctx.log('the limit holds until the next reboot or driver reload')
      return { result: { gpu_index: gpu, watts } }
    },

    'gpu.reset': async (ctx) => {
      const index = ctx.params.gpu_index
      if (!isIndex(index)) throw invalid('gpu_index must be an integer ≥ 0')
      checkKnown(machine, index as number)
      if (sim) {
        ctx.log(`simulated: GPU ${index} reset (no-op)`)
        return { result: { gpu_index: index, simulated: true } }
      }
      // Unlike a reboot the agent survives a GPU reset, so it reports the real outcome.
      const argv = [smi, '--gpu-reset', '-i', String(index)]
      ctx.log(`running ${argv.join(' ')}`)
      await runOrFail(ctx, argv, 'gpu_reset_failed', 120_000)
      return { result: { gpu_index: index } }
    },

    'docker.restart': async (ctx) => {
      if (sim) {
        ctx.log('simulated: container runtime restarted (no-op)')
        return { result: { simulated: true } }
      }
      // The agent runs beside Docker, not in it: it survives the restart and reports the outcome.
      ctx.log('running systemctl restart docker')
      const r = await run(['systemctl', 'restart', 'docker'], { timeoutMs: 180_000, signal: ctx.signal })
      const out = firstLine(r.stderr || r.stdout)
      if (out) ctx.log(out)
      if (r.notFound) throw new CommandFailure({ code: 'systemctl_missing', message: 'systemctl is not installed on this host', retryable: false })
      if (r.code !== 0)
        throw new CommandFailure({
          code: 'docker_restart_failed',
          message: r.timedOut ? 'systemctl restart docker did not finish in time' : `systemctl restart docker exited with ${r.code}`,
          retryable: true,
          stage: 'systemctl',
          details: { exit_code: r.code },
        })
      return { result: { restarted: 'docker' } }
    },

    reboot: async (ctx) => {
      if (sim) {
        ctx.log('simulated: reboot (no-op)')
        return { result: { simulated: true } }
      }
      ctx.log('rebooting the host once this command is reported finished')
      return {
        result: { rebooting: true },
        after: async () => {
          const r = await run(['systemctl', 'reboot'], { timeoutMs: 60_000 })
          if (r.code !== 0)
            deps.event({ kind: 'agent.reboot_failed', severity: 'error', message: `systemctl reboot exited with ${r.code}`, data: { exit_code: r.code } })
        },
      }
    },
  }
}

async function runOrFail(ctx: CommandContext, argv: string[], code: string, timeoutMs: number): Promise<void> {
  const r = await run(argv, { timeoutMs, signal: ctx.signal })
  const out = firstLine(r.stdout + '\n' + r.stderr)
  if (out) ctx.log(out)
  if (r.notFound) throw new CommandFailure({ code: 'nvidia_smi_missing', message: 'nvidia-smi is not installed on this host', retryable: false })
  if (r.code !== 0)
    throw new CommandFailure({
      code,
      message: r.timedOut ? 'nvidia-smi did not finish in time' : `nvidia-smi exited with ${r.code}`,
      retryable: true,
      stage: 'nvidia-smi',
      details: { exit_code: r.code },
    })
}

function checkKnown(machine: Machine, index: number | null): void {
  const gpus = machine.simulated ? machine.simulated.inventory() : null
  if (index !== null && gpus && !gpus.some((g) => g.index === index)) throw invalid(`there is no GPU ${index} on this host`)
}

/** What a simulated host answers: every GPU passes the tests of the level (DCGM 4.x names them). */
function simulatedDiag(indexes: number[], level: number) {
  const names = level === 1 ? ['software'] : ['software', 'memory', 'pcie']
  const tests = names.map((name) => ({
    name,
    category: name === 'software' ? 'Deployment' : name === 'memory' ? 'Hardware' : 'Integration',
    result: 'pass',
    warnings: [],
  }))
  return {
    level,
    simulated: true,
    dcgm_version: null,
    driver_version: null,
    result: 'pass',
    passed: true,
    tests,
    gpus: indexes.map((index) => ({ index, result: 'pass', tests: names.map((name) => ({ name, result: 'pass' })), warnings: [] })),
  }
}

function isIndex(v: unknown): boolean {
  return Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 127
}

function invalid(message: string): CommandFailure {
  return new CommandFailure({ code: 'invalid_params', message, retryable: false })
}

function hostFacts() {
  let os: string | null = null
  try {
    os = /^PRETTY_NAME="?([^"\n]*)"?/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] ?? null
  } catch {
    // not Linux, or a minimal container
  }
  return {
    os,
    kernel: release(),
    uptime_s: Math.round(uptime()),
    load_avg: loadavg().map((n) => Math.round(n * 100) / 100),
    cpu_count: cpus().length,
    memory_total_mb: Math.round(totalmem() / 2 ** 20),
    disk_gb: diskGb('/'),
    bun_version: Bun.version,
  }
}
