import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { Subprocess } from 'bun'

/**
 * The real service as a child process (`bun run src/main.ts`) on loopback, for the tests that kill
 * it, stop it or start two of it. Every wait here has a deadline, so a hung child fails the test
 * instead of hanging the suite.
 */

const ROOT = resolve(import.meta.dir, '../..')
const SECRET_KEY = 'b'.repeat(64)

export type Service = {
  proc: Subprocess<'ignore', 'pipe', 'pipe'>
  url: string
  port: number
  /** Everything the child has written so far (collected in the background). */
  stdout: () => string
  stderr: () => string
  /** Resolves with the exit code once the child has ended. */
  exited: Promise<number>
  /** Resolves once both pipes are read to the end (after exit, so the last log lines are in). */
  drained: Promise<void>
}

export function freshDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'gpuhq-durability-'))
}

/** A port nothing listens on right now: bind port 0 on loopback, read it, release it. */
export function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = probe.port!
  probe.stop(true)
  return port
}

export function serviceEnv(dir: string, port: number, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? dir,
    NODE_ENV: 'test',
    TEST_CLOCK: 'true',
    PORT: String(port),
    DATA_DIR: dir,
    DATABASE_URL: `file:${join(dir, 'gpuhq.db')}`,
    SECRET_KEY,
    LOG_LEVEL: 'warn',
    JOBS_ENABLED: 'false',
    ...extra,
  }
}

/** Starts `bun run src/main.ts` with exactly `env` (nothing inherited beyond what serviceEnv passes). */
export function spawnService(env: Record<string, string>): Service {
  const proc = Bun.spawn([process.execPath, 'run', 'src/main.ts'], {
    cwd: ROOT,
    env,
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const out = collect(proc.stdout)
  const err = collect(proc.stderr)
  const port = Number(env.PORT)
  return {
    proc,
    port,
    url: `http://127.0.0.1:${port}`,
    stdout: out.text,
    stderr: err.text,
    exited: proc.exited,
    drained: Promise.all([out.done, err.done]).then(() => {}),
  }
}

/** Starts the service on a free port and waits until /readyz answers 200. */
export async function startService(dir: string, extra: Record<string, string> = {}): Promise<Service> {
  const service = spawnService(serviceEnv(dir, freePort(), extra))
  await waitReady(service)
  return service
}

/** Polls /readyz every 25 ms for at most `ms`; fails early with the child's stderr if it exits. */
export async function waitReady(service: Service, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (service.proc.exitCode !== null || service.proc.signalCode !== null)
      throw new Error(`gpuhq exited (${service.proc.exitCode ?? service.proc.signalCode}) before it was ready:\n${service.stderr()}`)
    try {
      const res = await fetch(`${service.url}/readyz`, { signal: AbortSignal.timeout(1000) })
      if (res.status === 200) return
      await res.body?.cancel()
    } catch {
      // not listening yet
    }
    await Bun.sleep(25)
  }
  throw new Error(`gpuhq did not become ready within ${ms} ms:\n${service.stderr()}`)
}

/** Waits for the child to end and its output to be read, killing it outright if it has not after `ms`. */
export async function waitExit(service: Service, ms = 10_000): Promise<number | 'timeout'> {
  const timer = Bun.sleep(ms).then(() => 'timeout' as const)
  const result = await Promise.race([service.exited, timer])
  if (result === 'timeout') service.proc.kill('SIGKILL')
  await Promise.race([service.drained, Bun.sleep(2000)])
  return result
}

/** Polls `check` every 10 ms for at most `ms`; says whether it became true. */
export async function until(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() >= deadline) return false
    await Bun.sleep(10)
  }
  return true
}

/** Reads a child's pipe to the end in the background. */
function collect(stream: ReadableStream<Uint8Array>): { text: () => string; done: Promise<void> } {
  let text = ''
  const decoder = new TextDecoder()
  const done = (async () => {
    for await (const chunk of stream) text += decoder.decode(chunk, { stream: true })
  })().catch(() => {})
  return { text: () => text, done }
}
