/** Runs a program (argv, never a shell) with a time limit and an optional abort signal. */
export type ExecResult = { code: number; stdout: string; stderr: string; timedOut: boolean; notFound: boolean }

export async function run(argv: string[], opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<ExecResult> {
  let proc: ReturnType<typeof Bun.spawn>
  try {
    proc = Bun.spawn(argv, { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  } catch (err) {
    // ENOENT: the program is not installed (or not on PATH).
    const message = err instanceof Error ? err.message : String(err)
    return { code: 127, stdout: '', stderr: message, timedOut: false, notFound: true }
  }
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    proc.kill('SIGKILL')
  }, opts.timeoutMs ?? 15_000)
  const onAbort = () => proc.kill('SIGTERM')
  opts.signal?.addEventListener('abort', onAbort, { once: true })
  try {
    const [stdout, stderr, code] = await Promise.all([
      new Response(proc.stdout as ReadableStream).text(),
      new Response(proc.stderr as ReadableStream).text(),
      proc.exited,
    ])
    return { code, stdout, stderr, timedOut, notFound: false }
  } finally {
    clearTimeout(timer)
    opts.signal?.removeEventListener('abort', onAbort)
  }
}

/** First non-empty line of a program's output, bounded: fit for a command log line, never for an error. */
export function firstLine(text: string, max = 300): string {
  const line =
    text
      .split('\n')
      .map((l) => l.trim())
      .find(Boolean) ?? ''
  return line.length > max ? line.slice(0, max) + '…' : line
}
