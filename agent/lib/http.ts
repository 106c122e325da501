/** The service's addresses and its problem documents, as the agent needs them. */

/** "https://gpuhq.example.com/", ".../api/v1" → "https://gpuhq.example.com" (the PUBLIC_URL). */
export function normaliseBaseUrl(input: string): string {
  const url = new URL(input)
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`--url must be http(s)://…, not ${url.protocol}`)
  url.search = ''
  url.hash = ''
  return url
    .toString()
    .replace(/\/+$/, '')
    .replace(/\/api\/v1$/, '')
}

export function apiUrl(base: string, path: string): string {
  return `${base}/api/v1${path}`
}

/** ws_url as the service gave it; a relative or http(s) address is turned into ws(s). */
export function websocketUrl(wsUrl: string, base: string): string {
  const url = new URL(wsUrl, base + '/')
  if (url.protocol === 'https:') url.protocol = 'wss:'
  else if (url.protocol === 'http:') url.protocol = 'ws:'
  return url.toString()
}

export function isLoopback(base: string): boolean {
  const host = new URL(base).hostname
  return host === 'localhost' || host === '[::1]' || host.startsWith('127.')
}

export type Problem = { status: number; code?: string; title?: string; detail?: string; errors?: { path: string; code: string }[] }

export async function readProblem(res: Response): Promise<Problem> {
  let body: Record<string, unknown> = {}
  try {
    body = (await res.json()) as Record<string, unknown>
  } catch {
    // not JSON (a proxy's HTML page): only the status is known
  }
  return {
    status: res.status,
    code: typeof body.code === 'string' ? body.code : undefined,
    title: typeof body.title === 'string' ? body.title : undefined,
    detail: typeof body.detail === 'string' ? body.detail : undefined,
    errors: Array.isArray(body.errors) ? (body.errors as Problem['errors']) : undefined,
  }
}

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}, timeoutMs = 20_000): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, application/problem+json', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
    // Never follow a redirect: it could carry the token to another origin. The caller reports it.
    redirect: 'manual',
  })
}

/** A network failure in words an owner can act on. */
export function describeNetworkError(err: unknown, url: string): string {
  const e = err as { code?: string; name?: string; message?: string }
  const origin = new URL(url).origin
  if (e?.name === 'TimeoutError') return `no answer from ${origin} within the time limit`
  if (e?.code === 'ConnectionRefused' || e?.code === 'ECONNREFUSED') return `${origin} refused the connection (is the service running and the URL right?)`
  if (e?.code === 'ENOTFOUND' || /getaddrinfo|DNS/i.test(e?.message ?? '')) return `the name in ${origin} does not resolve`
  if (/certificate|TLS|SSL/i.test(e?.message ?? '')) return `TLS to ${origin} failed: ${e?.message} (self-signed? set NODE_EXTRA_CA_CERTS to your CA file)`
  return `could not reach ${origin}: ${e?.message ?? String(err)}`
}
