import { afterAll, describe, expect, test } from 'bun:test'
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { catalogue } from '../../agent/lib/catalogue'
import { FinishedCommands } from '../../agent/lib/command-store'
import { CommandRunner, type CommandFrame, type Handler } from '../../agent/lib/commands'
import { memoryLogger } from '../../agent/lib/log'
import { Machine } from '../../agent/lib/machine'

const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'gpuhq-agent-cmd-'))
  dirs.push(d)
  return d
}

type Setup = { stateDir?: string; simulate?: number; handlers?: Record<string, Handler>; nvidiaSmi?: string; updateCommand?: string }

function setup(s: Setup = {}) {
  const stateDir = s.stateDir ?? tempDir()
  const frames: Record<string, unknown>[] = []
  const restarts: number[] = []
  const events: unknown[] = []
  const machine = new Machine({ simulate: s.simulate ?? 2, stateDir, nvidiaSmi: s.nvidiaSmi })
  const handlers = s.handlers ?? catalogue({ machine, updateCommand: s.updateCommand, restart: () => restarts.push(Date.now()), event: (e) => events.push(e) })
  const runner = new CommandRunner({
    handlers,
    finished: new FinishedCommands(stateDir),
    emit: (f) => frames.push(f),
    flush: async () => {},
    log: memoryLogger(),
  })
  const send = async (frame: Partial<CommandFrame> & { command_id: string; command_type: string }) => {
    runner.receive({ schema_version: 1, params: {}, requires: 'none', deadline: null, ...frame })
    await runner.idle()
  }
  const of = (id: string) => frames.filter((f) => f.command_id === id)
  const finished = (id: string) => of(id).find((f) => f.type === 'command.finished') as Record<string, any>
  return { stateDir, frames, restarts, events, machine, runner, send, of, finished }
}

/** A fake nvidia-smi: records its arguments, prints `out`, exits with `code`. */
function fakeNvidiaSmi(dir: string, code = 0, out = ''): { bin: string; calls: () => string[] } {
  const bin = join(dir, 'nvidia-smi')
  const log = join(dir, 'calls.log')
  writeFileSync(bin, `#!/bin/sh\necho "$*" >> '${log}'\nprintf '%s\\n' '${out}'\nexit ${code}\n`)
  chmodSync(bin, 0o755)
  return { bin, calls: () => readFileSync(log, 'utf8').trim().split('\n') }
}

describe('the command lifecycle', () => {
  test('diagnostics.run answers accepted, started, progress and log lines, then finished with the facts', async () => {
    const t = setup()
    await t.send({ command_id: 'c-diag', command_type: 'diagnostics.run' })
    const types = t.of('c-diag').map((f) => f.type)
    expect(types[0]).toBe('command.accepted')
    expect(types[1]).toBe('command.started')
    expect(types.at(-1)).toBe('command.finished')
    expect(types).toContain('command.progress')
    expect(types).toContain('command.log')
    const fin = t.finished('c-diag')
    expect(fin.status).toBe('succeeded')
    expect(fin.result.simulated).toBe(true)
    expect(fin.result.nvidia_smi.gpus).toHaveLength(2)
    expect(fin.result.host.cpu_count).toBeGreaterThan(0)
  })

  test('a command delivered twice runs once; the second delivery gets accepted and the same finished frame', async () => {
    let runs = 0
    const t = setup({ handlers: { 'test.count': async () => ({ result: { run: ++runs } }) } })
    await t.send({ command_id: 'c-dup', command_type: 'test.count' })
    await t.send({ command_id: 'c-dup', command_type: 'test.count' })
    expect(runs).toBe(1)
    expect(t.of('c-dup').map((f) => f.type)).toEqual(['command.accepted', 'command.started', 'command.finished', 'command.accepted', 'command.finished'])
    const finals = t.of('c-dup').filter((f) => f.type === 'command.finished')
    expect(finals[1]).toEqual(finals[0]!)
  })

  test('a command re-delivered while it is still running is acknowledged, not started again', async () => {
    let runs = 0
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    const t = setup({
      handlers: {
        'test.slow': async () => {
          runs++
          await gate
          return {}
        },
      },
    })
    t.runner.receive({ command_id: 'c-slow', command_type: 'test.slow' })
    t.runner.receive({ command_id: 'c-slow', command_type: 'test.slow' })
    release()
    await t.runner.idle()
    expect(runs).toBe(1)
    expect(t.of('c-slow').filter((f) => f.type === 'command.started')).toHaveLength(1)
  })

  test('finished commands are remembered across an agent restart, so a re-delivered reboot never runs twice', async () => {
    const stateDir = tempDir()
    let reboots = 0
    const handlers = { reboot: async () => ({ result: { rebooting: true }, after: () => void reboots++ }) }
    await setup({ stateDir, handlers }).send({ command_id: 'c-reboot', command_type: 'reboot' })
    const again = setup({ stateDir, handlers })
    await again.send({ command_id: 'c-reboot', command_type: 'reboot' })
    expect(reboots).toBe(1)
    expect(again.finished('c-reboot').status).toBe('succeeded')
    expect(again.of('c-reboot').map((f) => f.type)).not.toContain('command.started')
  })

  test('an unknown command type finishes failed with unknown_command_type', async () => {
    const t = setup()
    await t.send({ command_id: 'c-x', command_type: 'gpu.overclock' })
    expect(t.finished('c-x')).toMatchObject({ status: 'failed', error: { code: 'unknown_command_type', retryable: false } })
  })

  test('a newer command schema than the agent knows is refused', async () => {
    const t = setup()
    await t.send({ command_id: 'c-v2', command_type: 'diagnostics.run', schema_version: 2 })
    expect(t.finished('c-v2').error.code).toBe('unsupported_schema_version')
  })

  test('a command past its deadline is not run', async () => {
    let runs = 0
    const t = setup({
      handlers: {
        'test.count': async () => {
          runs++
          return {}
        },
      },
    })
    await t.send({ command_id: 'c-late', command_type: 'test.count', deadline: new Date(Date.now() - 1000).toISOString() })
    expect(runs).toBe(0)
    expect(t.finished('c-late').error.code).toBe('deadline_exceeded')
  })

  test('a command still running at its deadline is aborted', async () => {
    const t = setup({
      handlers: { 'test.hang': ({ signal }) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')))) },
    })
    await t.send({ command_id: 'c-hang', command_type: 'test.hang', deadline: new Date(Date.now() + 150).toISOString() })
    expect(t.finished('c-hang').error.code).toBe('deadline_exceeded')
  })
})

describe('cancelling', () => {
  test('a queued command that is cancelled never starts and finishes failed with cancelled', async () => {
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    const t = setup({
      handlers: {
        'test.slow': async () => {
          await gate
          return {}
        },
        'test.next': async () => ({}),
      },
    })
    t.runner.receive({ command_id: 'c-first', command_type: 'test.slow' })
    t.runner.receive({ command_id: 'c-second', command_type: 'test.next' })
    t.runner.cancel('c-second')
    release()
    await t.runner.idle()
    expect(t.of('c-second').map((f) => f.type)).toEqual(['command.accepted', 'command.finished'])
    expect(t.finished('c-second')).toMatchObject({ status: 'failed', error: { code: 'cancelled' } })
    expect(t.finished('c-first').status).toBe('succeeded')
  })

  test('a running command whose step can be aborted finishes failed with cancelled', async () => {
    const t = setup({
      handlers: { 'test.hang': ({ signal }) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')))) },
    })
    t.runner.receive({ command_id: 'c-run', command_type: 'test.hang' })
    await Bun.sleep(10)
    t.runner.cancel('c-run')
    await t.runner.idle()
    expect(t.finished('c-run')).toMatchObject({ status: 'failed', error: { code: 'cancelled', retryable: false } })
  })

  test('cancelling a finished or unknown command changes nothing', async () => {
    const t = setup()
    await t.send({ command_id: 'c-done', command_type: 'gpu.reset', params: { gpu_index: 0 } })
    t.runner.cancel('c-done')
    t.runner.cancel('never-seen')
    expect(t.of('c-done').filter((f) => f.type === 'command.finished')).toHaveLength(1)
  })
})

describe('the minimum catalogue', () => {
  test('simulated: gpu.set_power_limit records the limit on the GPU, or on all GPUs when gpu_index is null', async () => {
    const t = setup()
    await t.send({ command_id: 'c-pl1', command_type: 'gpu.set_power_limit', params: { gpu_index: 1, watts: 300 } })
    expect(t.finished('c-pl1')).toMatchObject({ status: 'succeeded', result: { gpu_indexes: [1], watts: 300, simulated: true } })
    expect(t.machine.simulated!.powerLimit(1)).toBe(300)
    expect(t.machine.simulated!.powerLimit(0)).toBe(450)
    await t.send({ command_id: 'c-pl-all', command_type: 'gpu.set_power_limit', params: { gpu_index: null, watts: 250 } })
    expect([0, 1].map((i) => t.machine.simulated!.powerLimit(i))).toEqual([250, 250])
  })

  test.each([
    [{ gpu_index: 0, watts: 49 }],
    [{ gpu_index: 0, watts: 1001 }],
    [{ gpu_index: 0, watts: 300.5 }],
    [{ gpu_index: -1, watts: 300 }],
    [{ gpu_index: 7, watts: 300 }],
    [{ gpu_index: '0', watts: 300 }],
  ])('gpu.set_power_limit with %j fails with invalid_params', async (params) => {
    const t = setup()
    await t.send({ command_id: 'c-bad', command_type: 'gpu.set_power_limit', params })
    expect(t.finished('c-bad').error.code).toBe('invalid_params')
  })

  test('real mode: gpu.set_power_limit runs nvidia-smi -i N -pl W', async () => {
    const dir = tempDir()
    const smi = fakeNvidiaSmi(dir, 0, 'Power limit for GPU 00000000:02:00.0 was set to 300.00 W from 450.00 W.')
    const t = setup({ simulate: 0, nvidiaSmi: smi.bin })
    await t.send({ command_id: 'c-real-pl', command_type: 'gpu.set_power_limit', params: { gpu_index: 1, watts: 300 } })
    expect(smi.calls()).toEqual(['-i 1 -pl 300'])
    expect(t.finished('c-real-pl')).toMatchObject({ status: 'succeeded', result: { gpu_index: 1, watts: 300 } })
    expect(t.of('c-real-pl').some((f) => f.type === 'command.log' && String(f.text).includes('was set to 300.00 W'))).toBe(true)
  })

  test('real mode: a failing nvidia-smi finishes failed with its exit code in details, not its output', async () => {
    const dir = tempDir()
    const smi = fakeNvidiaSmi(dir, 4, 'Insufficient Permissions')
    const t = setup({ simulate: 0, nvidiaSmi: smi.bin })
    await t.send({ command_id: 'c-real-fail', command_type: 'gpu.set_power_limit', params: { gpu_index: null, watts: 300 } })
    expect(smi.calls()).toEqual(['-pl 300'])
    const fin = t.finished('c-real-fail')
    expect(fin).toMatchObject({ status: 'failed', error: { code: 'power_limit_failed', retryable: true, stage: 'nvidia-smi', details: { exit_code: 4 } } })
    expect(fin.error.message).not.toContain('Insufficient')
  })

  test('real mode: gpu.reset runs nvidia-smi --gpu-reset -i N and reports its outcome', async () => {
    const dir = tempDir()
    const smi = fakeNvidiaSmi(dir)
    const t = setup({ simulate: 0, nvidiaSmi: smi.bin })
    await t.send({ command_id: 'c-reset', command_type: 'gpu.reset', params: { gpu_index: 2 } })
    expect(smi.calls()).toEqual(['--gpu-reset -i 2'])
    expect(t.finished('c-reset').status).toBe('succeeded')
  })

  test('simulated: gpu.reset and reboot are no-ops that report success', async () => {
    const t = setup()
    await t.send({ command_id: 'c-sreset', command_type: 'gpu.reset', params: { gpu_index: 0 } })
    await t.send({ command_id: 'c-sreboot', command_type: 'reboot' })
    expect(t.finished('c-sreset')).toMatchObject({ status: 'succeeded', result: { simulated: true } })
    expect(t.finished('c-sreboot')).toMatchObject({ status: 'succeeded', result: { simulated: true } })
    expect(t.restarts).toHaveLength(0)
  })

  test('agent.restart finishes first, then asks to be restarted', async () => {
    const t = setup()
    await t.send({ command_id: 'c-restart', command_type: 'agent.restart' })
    expect(t.finished('c-restart').status).toBe('succeeded')
    expect(t.restarts).toHaveLength(1)
  })

  test('agent.update without a configured update path is honestly refused with update_unsupported', async () => {
    const t = setup()
    await t.send({ command_id: 'c-upd', command_type: 'agent.update', params: { version: '1.1.0' } })
    expect(t.finished('c-upd')).toMatchObject({ status: 'failed', error: { code: 'update_unsupported', retryable: false } })
    expect(t.restarts).toHaveLength(0)
  })

  test('agent.update with an update command runs it with the version, then restarts', async () => {
    const dir = tempDir()
    const script = join(dir, 'update')
    writeFileSync(script, `#!/bin/sh\necho "$1" > '${join(dir, 'version')}'\n`)
    chmodSync(script, 0o755)
    const t = setup({ updateCommand: script })
    await t.send({ command_id: 'c-upd2', command_type: 'agent.update', params: { version: '1.1.0' } })
    expect(readFileSync(join(dir, 'version'), 'utf8').trim()).toBe('1.1.0')
    expect(t.finished('c-upd2')).toMatchObject({ status: 'succeeded', result: { version: '1.1.0', restarting: true } })
    expect(t.restarts).toHaveLength(1)
  })

  test('command log lines never carry a token, even when a step prints one', async () => {
    const token = 'gpuhq_agt_' + 'A'.repeat(46)
    const t = setup({
      handlers: {
        'test.leak': async ({ log }) => {
          log(`oops ${token}`)
          return {}
        },
      },
    })
    await t.send({ command_id: 'c-leak', command_type: 'test.leak' })
    expect(JSON.stringify(t.frames)).not.toContain(token)
    expect(t.of('c-leak').find((f) => f.type === 'command.log')!.text).toBe('oops gpuhq_agt_AAAA…')
  })
})
