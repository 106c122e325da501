#!/usr/bin/env bun
/**
 * gpuhq-agent: the reference agent of gpuhq (docs/agent.md). Enrols a GPU server once with an
 * init token, then keeps one WebSocket session to the service for presence, telemetry and commands.
 */
import { resolve } from 'node:path'
import { numberOption, type Parsed, parseArgs, stringOption, UsageError } from './lib/args'
import { CredentialError, DEFAULT_STATE_DIR } from './lib/credential'
import { enroll, EnrollError, readTokenFile, readTokenStdin } from './lib/enroll'
import { validPortRange } from './lib/host'
import { normaliseBaseUrl } from './lib/http'
import { createLogger, type Level } from './lib/log'
import { Machine } from './lib/machine'
import { type AgentHandle, type AgentOptions, startAgent } from './lib/session'
import { abandonInterruptedTrial, compiledExecutable } from './lib/update'
import { AGENT_VERSION, EXIT } from './lib/version'

const COMMON = ['state-dir', 'simulate', 'nvidia-smi', 'dcgmi', 'public-ip', 'port-range', 'log-level']
const SPEC = {
  enroll: { flags: ['token-stdin'], values: [...COMMON, 'url', 'token-file'] },
  run: {
    flags: [],
    values: [
      ...COMMON,
      'heartbeat-interval',
      'telemetry-interval',
      'update-command',
      'update-trial-s',
      'reconnect-base-ms',
      'reconnect-cap-ms',
      'replaced-pause-ms',
    ],
  },
  facts: { flags: [], values: COMMON },
  version: { flags: [], values: [] },
  help: { flags: [], values: [] },
}

const USAGE = `gpuhq-agent ${AGENT_VERSION}: the gpuhq agent for GPU servers

usage:
  gpuhq-agent enroll --url <PUBLIC_URL> (--token-file <path> | --token-stdin) [--state-dir <dir>] [--port-range 40000-40199]
  gpuhq-agent run [--state-dir <dir>] [--simulate N]
  gpuhq-agent facts [--simulate N]      print what enrolment and hello would report about this host
                                        (exit 1, gpu_error and a line on stderr when nvidia-smi finds no GPUs)
  gpuhq-agent version

options:
  --state-dir <dir>            where credential.json lives (default ${DEFAULT_STATE_DIR})
  --simulate N                 N fake GPUs instead of nvidia-smi; dangerous commands are no-ops
  --port-range A-B             ports this host offers to renters (sent at enrolment and hello)
  --public-ip <ipv4>           the host's public address when no local interface carries it
  --nvidia-smi <path>          the nvidia-smi binary (default: nvidia-smi on PATH)
  --dcgmi <path>               NVIDIA DCGM's dcgmi, for the diagnostics.dcgm command (default: dcgmi on PATH)
  --update-command <path>      executable run as "<path> <version>" for agent.update, instead of the
                               built-in self-update (the single executable replaces itself; from source
                               without this option, updates are refused)
  --update-trial-s <s>         how long a new version has to reconnect before it is rolled back (default 120)
  --heartbeat-interval <s>     override the service's heartbeat interval (tests, demos)
  --telemetry-interval <s>     override the service's telemetry interval
  --log-level debug|info|warn|error

The init token is read only from a file or standard input, never from the command line.
Exit codes: 0 stopped, 1 failed, 2 usage, 75 restart requested, 78 enrol again / upgrade (do not restart).`

async function main(argv: string[]): Promise<number> {
  let parsed: Parsed
  try {
    parsed = parseArgs(argv, SPEC)
  } catch (err) {
    if (err instanceof UsageError) return usageError(err.message)
    throw err
  }
  const { command, options } = parsed
  if (command === 'help') return print(USAGE)
  if (command === 'version') return print(AGENT_VERSION)

  const level = (stringOption(options, 'log-level') ?? 'info') as Level
  if (!['debug', 'info', 'warn', 'error'].includes(level)) return usageError('--log-level must be debug, info, warn or error')
  const log = createLogger(level)
  const stateDir = resolve(stringOption(options, 'state-dir') ?? DEFAULT_STATE_DIR)
  let simulate: number | undefined
  let portRange: string | undefined
  try {
    simulate = numberOption(options, 'simulate', (n) => Number.isInteger(n) && n >= 1 && n <= 128, 'an integer from 1 to 128')
    portRange = stringOption(options, 'port-range')
    if (portRange !== undefined && !validPortRange(portRange)) throw new UsageError('--port-range must look like 40000-40199')
  } catch (err) {
    return usageError((err as Error).message)
  }
  const machineOptions = {
    simulate,
    stateDir,
    nvidiaSmi: stringOption(options, 'nvidia-smi'),
    dcgmi: stringOption(options, 'dcgmi'),
    publicIp: stringOption(options, 'public-ip'),
    portRange,
  }

  if (command === 'facts') {
    // A host whose nvidia-smi is missing, failing or lists nothing: the facts still print (marked
    // with gpu_error), and stderr and the exit code say that enrolment would report no GPUs.
    const machine = new Machine(machineOptions)
    const facts = await machine.facts()
    const problem = machine.gpuProblem
    print(JSON.stringify({ agent_version: AGENT_VERSION, ...facts, ...(problem ? { gpu_error: problem } : {}) }, null, 2))
    if (!problem) return EXIT.ok
    process.stderr.write(
      `gpuhq-agent: no GPUs found (${problem}): enrolment and hello would report none; point --nvidia-smi at the binary, or try --simulate N\n`,
    )
    return EXIT.failure
  }

  if (command === 'enroll') {
    const rawUrl = stringOption(options, 'url')
    if (!rawUrl) return usageError('enroll needs --url <PUBLIC_URL> (the address of gpuhq, e.g. https://gpuhq.example.com)')
    const tokenFile = stringOption(options, 'token-file')
    if (!tokenFile === !options['token-stdin']) return usageError('enroll needs exactly one of --token-file <path> or --token-stdin')
    let url: string
    try {
      url = normaliseBaseUrl(rawUrl)
    } catch {
      return usageError(`--url is not a valid http(s) URL: ${rawUrl}`)
    }
    try {
      if (!tokenFile && process.stdin.isTTY) process.stderr.write('paste the init token, then press Enter and Ctrl-D: ')
      const token = tokenFile ? readTokenFile(tokenFile, (m) => log.warn(m)) : await readTokenStdin()
      const facts = await new Machine(machineOptions).facts()
      const credential = await enroll({ url, token, stateDir, facts, log, simulate })
      log.info('enrolled', { server_id: credential.server_id, credential: `${stateDir}/credential.json`, gpus: facts.gpus.length })
      return EXIT.ok
    } catch (err) {
      if (err instanceof EnrollError) {
        log.error(err.message)
        return err.exitCode
      }
      throw err
    }
  }

  // run
  const executable = compiledExecutable()
  if (executable && abandonInterruptedTrial(stateDir, executable, AGENT_VERSION)) {
    log.error('an update to this version was interrupted before it was proven; the previous agent is back in place, restarting into it')
    return EXIT.restart
  }
  let runOptions: AgentOptions
  try {
    const trialS = numberOption(options, 'update-trial-s', (n) => n >= 1 && n <= 3600, 'seconds between 1 and 3600')
    runOptions = {
      selfUpdate: executable ? { file: executable, args: argv, trialS } : undefined,
      ...machineOptions,
      log,
      heartbeatIntervalS: numberOption(options, 'heartbeat-interval', (n) => n >= 0.05 && n <= 3600, 'seconds between 0.05 and 3600'),
      telemetryIntervalS: numberOption(options, 'telemetry-interval', (n) => n >= 0.05 && n <= 3600, 'seconds between 0.05 and 3600'),
      updateCommand: stringOption(options, 'update-command'),
      reconnectBaseMs: numberOption(options, 'reconnect-base-ms', (n) => n >= 1, 'milliseconds ≥ 1'),
      reconnectCapMs: numberOption(options, 'reconnect-cap-ms', (n) => n >= 1, 'milliseconds ≥ 1'),
      replacedPauseMs: numberOption(options, 'replaced-pause-ms', (n) => n >= 0, 'milliseconds ≥ 0'),
    }
  } catch (err) {
    return usageError((err as Error).message)
  }
  let agent: AgentHandle
  try {
    agent = await startAgent(runOptions)
  } catch (err) {
    if (err instanceof CredentialError) {
      log.error(err.message)
      return EXIT.config
    }
    throw err
  }
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => void agent.stop())
  return agent.done
}

function print(text: string): number {
  process.stdout.write(text + '\n')
  return EXIT.ok
}

function usageError(message: string): number {
  process.stderr.write(`gpuhq-agent: ${message}\n`)
  return EXIT.usage
}

if (import.meta.main)
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      createLogger().error('the agent failed', { error: err instanceof Error ? err.message : String(err) })
      process.exit(EXIT.failure)
    },
  )

export { main }
