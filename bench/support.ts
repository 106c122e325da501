/** Shared by the benchmarks: a free loopback port, and waiting for a service to answer. */

/** A loopback port nothing listens on right now. */
export function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = probe.port!
  probe.stop(true)
  return port
}

/** Resolves once `url` answers 2xx; gives up after 15 s. */
export async function waitFor(url: string): Promise<void> {
  const deadline = Date.now() + 15_000
  while (Date.now() < deadline) {
    try {
      if ((await fetch(url, { signal: AbortSignal.timeout(1000) })).ok) return
    } catch {
      // not up yet
    }
    await Bun.sleep(50)
  }
  throw new Error(`${url} did not answer within 15 s`)
}
