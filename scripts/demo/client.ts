/**
 * The demo's client of its own service: plain HTTP to the loopback address, as a member's browser
 * (the session cookie) or a script (a bearer token) would call it. Any answer other than the one
 * expected stops the demo with the service's problem document.
 */
export type Credential = { cookie: string } | { bearer: string }

export class DemoClient {
  constructor(
    readonly base: string,
    private credential: Credential | null = null,
  ) {}

  as(credential: Credential): DemoClient {
    return new DemoClient(this.base, credential)
  }

  /** The raw answer (for a cookie, a status the caller handles itself). */
  async send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
    const h = new Headers(headers)
    if (body !== undefined) h.set('content-type', 'application/json')
    if (this.credential && 'cookie' in this.credential) h.set('cookie', this.credential.cookie)
    if (this.credential && 'bearer' in this.credential) h.set('authorization', `Bearer ${this.credential.bearer}`)
    const url = path.startsWith('/api/') || path.startsWith('/sandbox/') ? `${this.base}${path}` : `${this.base}/api/v1${path}`
    return fetch(url, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) })
  }

  /** The JSON answer of a request that must succeed with `status` (200 unless said). */
  async call<T = unknown>(method: string, path: string, body?: unknown, status = 200): Promise<T> {
    const res = await this.send(method, path, body)
    const text = await res.text()
    if (res.status !== status) throw new Error(`${method} ${path} answered ${res.status} (expected ${status}): ${text.slice(0, 500)}`)
    return (text ? JSON.parse(text) : null) as T
  }

  get = <T = unknown>(path: string) => this.call<T>('GET', path)
}

/** Polls `read` until `done` holds, every `everyMs`, for at most `timeoutMs`; answers the last value and whether it held. */
export async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number, everyMs = 500): Promise<{ value: T; ok: boolean }> {
  const until = Date.now() + timeoutMs
  for (;;) {
    const value = await read()
    if (done(value)) return { value, ok: true }
    if (Date.now() >= until) return { value, ok: false }
    await Bun.sleep(everyMs)
  }
}
