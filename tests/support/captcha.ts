/**
 * A local fake of Cloudflare Turnstile's siteverify endpoint: POST form fields `secret`,
 * `response` (the token) and `remoteip`; answers JSON `{"success": …, "error-codes": […]}`.
 *
 * Modes:
 * - `accept`: every token with the right secret succeeds (the fake does not remember tokens: the
 *   app must refuse a replay on its own).
 * - `reject`: `{"success": false, "error-codes": ["invalid-input-response"]}`.
 * - `error`: HTTP 500 with a body that is not JSON.
 * - `slow`: never answers until the fake is closed or the mode changes (the app's 5 s timeout
 *   must give up first).
 */
export type CaptchaMode = 'accept' | 'reject' | 'error' | 'slow'

type CaptchaCall = { secret: string; response: string; remoteip: string; contentType: string }

export type FakeCaptcha = {
  url: string
  secret: string
  calls: CaptchaCall[]
  mode: (m: CaptchaMode) => void
  close: () => Promise<void>
}

const CAPTCHA_SECRET = 'test-captcha-secret'

export async function startFakeCaptcha(initial: CaptchaMode = 'accept'): Promise<FakeCaptcha> {
  let mode: CaptchaMode = initial
  const calls: CaptchaCall[] = []
  const hanging = new Set<() => void>()
  const releaseAll = () => {
    for (const release of hanging) release()
    hanging.clear()
  }
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    idleTimeout: 0,
    async fetch(request) {
      const url = new URL(request.url)
      if (request.method !== 'POST' || url.pathname !== '/siteverify') return new Response('not found', { status: 404 })
      const contentType = request.headers.get('content-type') ?? ''
      const form = new URLSearchParams(await request.text())
      const call = { secret: form.get('secret') ?? '', response: form.get('response') ?? '', remoteip: form.get('remoteip') ?? '', contentType }
      calls.push(call)
      if (mode === 'slow') {
        await new Promise<void>((resolve) => hanging.add(resolve))
        return Response.json({ success: true, 'error-codes': [] })
      }
      if (mode === 'error') return new Response('<html>internal error</html>', { status: 500, headers: { 'content-type': 'text/html' } })
      if (call.secret !== CAPTCHA_SECRET) return Response.json({ success: false, 'error-codes': ['invalid-input-secret'] })
      if (!call.response) return Response.json({ success: false, 'error-codes': ['missing-input-response'] })
      if (mode === 'reject') return Response.json({ success: false, 'error-codes': ['invalid-input-response'] })
      return Response.json({ success: true, 'error-codes': [], challenge_ts: new Date().toISOString(), hostname: 'gpuhq.test' })
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}/siteverify`,
    secret: CAPTCHA_SECRET,
    calls,
    mode: (m) => {
      mode = m
      if (m !== 'slow') releaseAll()
    },
    close: async () => {
      releaseAll()
      await server.stop(true)
    },
  }
}

/** A loopback URL nothing listens on (a port just released by the OS). */
export async function closedPortUrl(): Promise<string> {
  const s = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('') })
  const port = s.port
  await s.stop(true)
  return `http://127.0.0.1:${port}/siteverify`
}
