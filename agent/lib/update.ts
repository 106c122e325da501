import { chmodSync, closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { CommandFailure } from './commands'
import { run } from './exec'
import { writeFileAtomic0600 } from './files'
import type { Logger } from './log'

/**
 * Self-update of the single executable (docs/agent.md "Self-update"). The service asks with an
 * `agent.update {version}` command (it offers its own build when the rental has ended; an owner may
 * force one). The steps, each a server event the agent sends (`update.*`, stored as `agent.update.*`):
 *
 *  1. download `<url>/agent/gpuhq-agent-linux-<arch>` beside the running file as `<file>.new`, with
 *     its SHA-256 from `….sha256`; a mismatch deletes it and fails the command (`update.failed`);
 *  2. run `<file>.new version`: it must print the version asked for (`update.verified`);
 *  3. the command finishes (`restarting: true`); then the files swap: the running one becomes
 *     `<file>.previous`, the new one `<file>` (`update.installed`), and `update.json` in the state
 *     directory says `trial`;
 *  4. the old process closes its session and starts the new file as a trial child; the child,
 *     once welcomed by the service, writes `confirmed`; the old process then exits 75 and systemd
 *     starts the new file, which reports `update.completed` after its welcome;
 *  5. a child that exits, or is not welcomed within the trial bound (default 120 s), is stopped,
 *     the files swap back (the new one kept as `<file>.failed`), and the old process reconnects and
 *     reports `update.rolled_back` (severity error: it becomes an alert).
 */

export type UpdateState = {
  state: 'trial' | 'confirmed' | 'done' | 'rolled_back'
  from_version: string
  to_version: string
  sha256: string
  at: string
  reason?: string
  /** rolled_back: whether the old version has told the service yet. */
  reported?: boolean
}

/** Set in the environment of the trial child (step 4). */
export const TRIAL_ENV = 'GPUHQ_AGENT_UPDATE_TRIAL'

/** How long a downloaded file may be: an agent is about 110 MiB. */
const MAX_BYTES = 512 * 2 ** 20

function updateStatePath(stateDir: string): string {
  return join(stateDir, 'update.json')
}

export function readUpdateState(stateDir: string): UpdateState | null {
  try {
    const s = JSON.parse(readFileSync(updateStatePath(stateDir), 'utf8')) as UpdateState
    return typeof s?.to_version === 'string' && typeof s.from_version === 'string' ? s : null
  } catch {
    return null
  }
}

export function writeUpdateState(stateDir: string, s: UpdateState): void {
  writeFileAtomic0600(updateStatePath(stateDir), `${JSON.stringify(s, null, 2)}\n`)
}

/** The executable this process runs from, when it is the single file `bun build --compile` makes; null when run from source. */
export function compiledExecutable(): string | null {
  return Bun.main.startsWith('/$bunfs/') ? process.execPath : null
}

/** The build this host needs, as the service names it. */
function hostTarget(): string | null {
  if (process.platform !== 'linux') return null
  return process.arch === 'x64' ? 'linux-x64' : process.arch === 'arm64' ? 'linux-arm64' : null
}

function failure(code: string, message: string, retryable: boolean, details?: Record<string, unknown>): CommandFailure {
  return new CommandFailure({ code, message, retryable, stage: 'update', ...(details ? { details } : {}) })
}

/**
 * Steps 1 and 2: `<file>.new`, checked against the service's SHA-256 and its own `version`.
 * Throws a CommandFailure (update_download_failed, update_checksum_mismatch, update_version_mismatch).
 */
export async function downloadVerified(opts: {
  baseUrl: string
  file: string
  version: string
  signal: AbortSignal
  log: (line: string) => void
}): Promise<{ sha256: string; bytes: number }> {
  const target = hostTarget()
  if (!target) throw failure('update_unsupported', `no agent build exists for ${process.platform}-${process.arch}`, false)
  const url = `${opts.baseUrl}/agent/gpuhq-agent-${target}`
  const next = `${opts.file}.new`
  rmSync(next, { force: true })
  let expected: string
  try {
    const res = await fetch(`${url}.sha256`, { signal: AbortSignal.any([opts.signal, AbortSignal.timeout(60_000)]) })
    if (!res.ok) throw new Error(`${url}.sha256 answered ${res.status}`)
    const hex = /^([0-9a-f]{64})\b/.exec((await res.text()).trim())?.[1]
    if (!hex) throw new Error(`${url}.sha256 holds no SHA-256`)
    expected = hex
  } catch (e) {
    throw failure('update_download_failed', `could not get the checksum: ${(e as Error).message}`, true)
  }
  opts.log(`downloading ${url} (sha256 ${expected})`)
  const hasher = new Bun.CryptoHasher('sha256')
  let bytes = 0
  try {
    const res = await fetch(url, { signal: AbortSignal.any([opts.signal, AbortSignal.timeout(600_000)]) })
    if (!res.ok || !res.body) throw new Error(`${url} answered ${res.status}`)
    // Plain descriptors, closed before the file is run: an executable still open for writing cannot be started (ETXTBSY).
    const fd = openSync(next, 'w', 0o700)
    try {
      for await (const chunk of res.body) {
        bytes += chunk.byteLength
        if (bytes > MAX_BYTES) throw new Error(`more than ${MAX_BYTES} bytes`)
        hasher.update(chunk)
        writeSync(fd, chunk)
      }
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
  } catch (e) {
    rmSync(next, { force: true })
    throw failure('update_download_failed', `could not download the agent: ${(e as Error).message}`, true)
  }
  const actual = hasher.digest('hex')
  if (actual !== expected) {
    rmSync(next, { force: true })
    throw failure('update_checksum_mismatch', 'the downloaded agent does not match its published SHA-256; nothing was installed', true, {
      expected,
      actual,
    })
  }
  chmodSync(next, 0o755)
  let v = await run([next, 'version'], { timeoutMs: 30_000, signal: opts.signal })
  // A descriptor another thread's child inherited for an instant can keep the file "busy": try again.
  for (let i = 0; i < 5 && v.notFound && v.stderr.includes('ETXTBSY'); i++) {
    await Bun.sleep(100)
    v = await run([next, 'version'], { timeoutMs: 30_000, signal: opts.signal })
  }
  const reported = v.stdout.trim()
  if (v.code !== 0 || reported !== opts.version) {
    rmSync(next, { force: true })
    throw failure(
      'update_version_mismatch',
      v.code !== 0
        ? `the downloaded agent does not run (exit ${v.code}${v.notFound ? `: ${v.stderr.slice(0, 200)}` : ''})`
        : `the service serves agent ${reported.slice(0, 32)}, not ${opts.version}`,
      false,
      { served: reported.slice(0, 32) || null },
    )
  }
  return { sha256: actual, bytes }
}

/** Step 3: `<file>` → `<file>.previous`, `<file>.new` → `<file>` (renames within one directory: never a half-written file). */
export function swapIn(file: string): void {
  renameSync(file, `${file}.previous`)
  renameSync(`${file}.new`, file)
}

/** Step 5: the new file is kept as `<file>.failed`, the previous one is put back. */
export function swapBack(file: string): void {
  if (!existsSync(`${file}.previous`)) throw new Error(`${file}.previous is missing`)
  renameSync(file, `${file}.failed`)
  renameSync(`${file}.previous`, file)
}

/**
 * Step 4: runs the new file with the same arguments and waits until it writes `confirmed` (it was
 * welcomed), exits, or the bound passes. The child is stopped either way: on success systemd
 * starts the new file as the service's main process.
 */
export async function runTrial(opts: {
  file: string
  args: string[]
  stateDir: string
  trialMs: number
  log: Logger
}): Promise<{ ok: true } | { ok: false; reason: string }> {
  const child = Bun.spawn([opts.file, ...opts.args], { env: { ...process.env, [TRIAL_ENV]: '1' }, stdin: 'ignore', stdout: 'inherit', stderr: 'inherit' })
  let exited: number | null = null
  void child.exited.then((code) => {
    exited = code
  })
  const until = Date.now() + opts.trialMs
  let outcome: { ok: true } | { ok: false; reason: string }
  for (;;) {
    if (readUpdateState(opts.stateDir)?.state === 'confirmed') {
      outcome = { ok: true }
      break
    }
    if (exited !== null) {
      outcome = { ok: false, reason: `the new agent exited with ${exited} before the service welcomed it` }
      break
    }
    if (Date.now() >= until) {
      outcome = { ok: false, reason: `the new agent was not welcomed by the service within ${Math.round(opts.trialMs / 1000)} s` }
      break
    }
    await Promise.race([child.exited, Bun.sleep(200)])
  }
  if (child.exitCode === null && child.signalCode === null) {
    child.kill('SIGTERM')
    const stopped = await Promise.race([child.exited.then(() => true), Bun.sleep(10_000).then(() => false)])
    if (!stopped) child.kill('SIGKILL')
    await child.exited
  }
  return outcome
}

/**
 * At the start of `run`, outside a trial: a `trial` left for this very version means the old
 * process died while trying it (host reboot, `systemctl restart`), so nobody saw it welcomed. It
 * counts as failed: the files swap back and the caller exits 75, so systemd starts the previous
 * version, which reports `update.rolled_back`. Answers whether that happened.
 */
export function abandonInterruptedTrial(stateDir: string, file: string, running: string): boolean {
  const st = readUpdateState(stateDir)
  if (process.env[TRIAL_ENV] === '1' || st?.state !== 'trial' || st.to_version !== running || !existsSync(`${file}.previous`)) return false
  swapBack(file)
  writeUpdateState(stateDir, {
    ...st,
    state: 'rolled_back',
    reason: 'the update was interrupted before the new agent was welcomed',
    reported: false,
    at: new Date().toISOString(),
  })
  return true
}
