import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { catalogue } from '../../agent/lib/catalogue'
import { FinishedCommands } from '../../agent/lib/command-store'
import { CommandRunner } from '../../agent/lib/commands'
import { memoryLogger } from '../../agent/lib/log'
import { Machine } from '../../agent/lib/machine'
import { fakeDcgmi } from '../support/dcgmi'

/**
 * The agent's `diagnostics.dcgm` handler against a fake `dcgmi` replaying real `dcgmi diag` output
 * (tests/agent/captures/dcgmi/): each GPU's verdict read out of the table in both of DCGM's layouts,
 * and the clear failures of a host without DCGM or without its host engine.
 */

const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'gpuhq-agent-dcgm-'))
  dirs.push(d)
  return d
}

async function runDiag(opts: { dcgmi: string; simulate?: number; params?: Record<string, unknown> }) {
  const stateDir = tempDir()
  const frames: Record<string, any>[] = []
  const machine = new Machine({ simulate: opts.simulate ?? 0, stateDir, dcgmi: opts.dcgmi })
  const runner = new CommandRunner({
    handlers: catalogue({ machine, restart: () => {}, event: () => {} }),
    finished: new FinishedCommands(stateDir),
    emit: (f) => frames.push(f),
    flush: async () => {},
    log: memoryLogger(),
  })
  runner.receive({ command_id: 'c-dcgm', command_type: 'diagnostics.dcgm', schema_version: 1, params: opts.params ?? {}, requires: 'none', deadline: null })
  await runner.idle()
  return frames.find((f) => f.type === 'command.finished')!
}

describe('diagnostics.dcgm reads dcgmi diag', () => {
  test('DCGM 4.x: runs `dcgmi diag -r 2` when asked, and every test of the one GPU passes', async () => {
    const dir = tempDir()
    const fake = fakeDcgmi(dir, { capture: 'dcgm-4.4.2__diag-r2__1gpu-pass.txt' })
    const fin = await runDiag({ dcgmi: fake.bin, params: { level: 2 } })
    expect(fake.calls()).toEqual(['diag -r 2'])
    expect(fin.status).toBe('succeeded')
    expect(fin.result).toMatchObject({ level: 2, simulated: false, dcgm_version: '4.4.2', driver_version: '580.105.08', result: 'pass', passed: true })
    expect(fin.result.tests.map((t: any) => [t.name, t.category, t.result])).toEqual([
      ['software', 'Deployment', 'pass'],
      ['memory', 'Hardware', 'pass'],
      ['pcie', 'Integration', 'pass'],
    ])
    expect(fin.result.gpus).toEqual([
      {
        index: 0,
        result: 'pass',
        tests: [
          { name: 'software', result: 'pass' },
          { name: 'memory', result: 'pass' },
          { name: 'pcie', result: 'pass' },
        ],
        warnings: [],
      },
    ])
  })

  test('DCGM 4.x: a failing GPU is told apart from a passing one, with its wrapped warning joined again; the level defaults to 1', async () => {
    const dir = tempDir()
    const fake = fakeDcgmi(dir, { capture: 'dcgm-4.6.0__diag-r1__2gpu-gpu1-fail.txt', exitCode: 226 })
    const fin = await runDiag({ dcgmi: fake.bin })
    expect(fake.calls()).toEqual(['diag -r 1'])
    // The run found a failure: the command still succeeds, and its result says which GPU failed.
    expect(fin.status).toBe('succeeded')
    expect(fin.result).toMatchObject({ level: 1, exit_code: 226, result: 'fail', passed: false })
    const [gpu0, gpu1] = fin.result.gpus
    expect(gpu0).toEqual({ index: 0, result: 'pass', tests: [{ name: 'software', result: 'pass' }], warnings: [] })
    expect(gpu1).toMatchObject({ index: 1, result: 'fail', tests: [{ name: 'software', result: 'fail' }] })
    expect(gpu1.warnings).toEqual(['Persistence mode for GPU 1 is disabled. Enable persistence mode by running "nvidia-smi -i <gpuId> -pm 1 " as root.'])
  })

  test('DCGM 3.x: a deployment failure of the host reaches every GPU, and the message each GPU is named in', async () => {
    const dir = tempDir()
    const fake = fakeDcgmi(dir, { capture: 'dcgm-3.1.8__diag-r1__8gpu-persistence-fail.txt', exitCode: 226 })
    const fin = await runDiag({ dcgmi: fake.bin })
    expect(fin.result).toMatchObject({ dcgm_version: '3.1.8', driver_version: '550.127.08', result: 'fail', passed: false })
    expect(fin.result.gpus.map((g: any) => [g.index, g.result])).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((i) => [i, 'fail']))
    const persistence = fin.result.tests.find((t: any) => t.name === 'Persistence Mode')
    expect(persistence.result).toBe('fail')
    // The wrapped lines join back into DCGM's own words, even where it cut a word in two.
    expect(persistence.warnings[0]).toStartWith('Persistence mode for GPU 0 is currently disabled. The DCGM diagnostic requires peristence mode')
    expect(fin.result.gpus[2].warnings).toHaveLength(1)
    expect(fin.result.gpus[7].warnings).toEqual([])
    expect(fin.result.tests.filter((t: any) => t.result === 'pass')).toHaveLength(8)
  })

  test('without DCGM the command fails with the reason, not a crash', async () => {
    const fin = await runDiag({ dcgmi: join(tempDir(), 'no-such-dir', 'dcgmi') })
    expect(fin.status).toBe('failed')
    expect(fin.error).toMatchObject({ code: 'dcgm_not_installed', retryable: false })
    expect(fin.error.message).toContain('DCGM is not installed')
  })

  test('DCGM installed but its host engine down: a retryable failure that says to start it', async () => {
    const dir = tempDir()
    const fake = fakeDcgmi(dir, { stdout: 'Error: unable to establish a connection to the specified host: localhost', exitCode: 255 })
    const fin = await runDiag({ dcgmi: fake.bin })
    expect(fin).toMatchObject({ status: 'failed', error: { code: 'dcgm_unavailable', retryable: true, details: { exit_code: 255 } } })
  })

  test('a level other than 1 or 2 is refused; a simulated host passes every GPU without running dcgmi', async () => {
    const dir = tempDir()
    const fake = fakeDcgmi(dir, { capture: 'dcgm-4.4.2__diag-r2__1gpu-pass.txt' })
    expect((await runDiag({ dcgmi: fake.bin, params: { level: 3 } })).error.code).toBe('invalid_params')
    const sim = await runDiag({ dcgmi: fake.bin, simulate: 2 })
    expect(sim.result).toMatchObject({ simulated: true, passed: true })
    expect(sim.result.gpus.map((g: any) => g.index)).toEqual([0, 1])
    expect(fake.calls()).toEqual([])
  })
})
