import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { type AdapterOptions, MarketplaceError, type MarketplaceCall } from '../marketplaces.adapter'
import { Pacer, type PlatformAnswer, PlatformUnreachable, recorded, send } from '../marketplaces.http'

/**
 * Clore.ai's wire (docs: reference sections 2.1–2.2): `${origin}/v1/<endpoint>`, the key in the
 * `auth:` header, and a `code` in every body that decides the outcome whatever the HTTP status:
 * 0 normal, 3 invalid key, 5 over the rate limit; 1, 2, 4, 6 are the platform's own failures.
 */

export type Json = Record<string, unknown>

/**
 * "1 request per second per API key" is the published limit, but the maintained third-party client
 * spaces calls 3 s and later 1.8 s apart, so the practical limit is stricter. A listing costs
 * 2 + 2 per server calls, so we take the low end of that band: 1.8 s between any two calls of one
 * key (one bucket for every endpoint: the limit is per key, not per endpoint).
 */
const INTERVAL_MS = 1800
const DEFAULT_RETRIES = 3
/** Hint for a platform that could not be reached or answered 5xx. */
const UNAVAILABLE_RETRY_AFTER_S = 30

type Verdict = { kind: 'ok'; body: Json } | { kind: 'rejected' } | { kind: 'rate_limited' } | { kind: 'failed'; reason: string; refused: boolean }

function parseBody(text: string): Json | null {
  try {
    const v = JSON.parse(text)
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : null
  } catch {
    return null
  }
}

/** The `code` decides first; only then the HTTP status (5xx) and the shape of the answer. */
function judge(answer: PlatformAnswer): Verdict {
  const body = parseBody(answer.text)
  const code = typeof body?.code === 'number' ? body.code : null
  if (code === 3) return { kind: 'rejected' }
  if (code === 5 || answer.status === 429) return { kind: 'rate_limited' }
  if (answer.status >= 500) return { kind: 'failed', reason: `answered HTTP ${answer.status}`, refused: false }
  if (body === null) return { kind: 'failed', reason: 'answered something other than a JSON object', refused: false }
  if (code === 0) return { kind: 'ok', body }
  if (code === null) return { kind: 'failed', reason: 'answered without a code', refused: false }
  const said = typeof body.error === 'string' ? `: ${body.error.slice(0, 200)}` : ''
  // 2 INVALID INPUT DATA and 6 (an error named in `error`) turn down the request itself.
  return { kind: 'failed', reason: `answered code ${code}${said}`, refused: code === 2 || code === 6 }
}

function retryAfterHeader(answer: PlatformAnswer): number | null {
  const raw = answer.headers['retry-after']
  const n = Number(Array.isArray(raw) ? raw[0] : raw)
  return Number.isFinite(n) && n > 0 ? Math.ceil(n) : null
}

/** `server_config` is a GET with a JSON body, which Bun's undici and fetch refuse to send: node:http does. */
async function sendGetWithBody(
  options: Pick<AdapterOptions, 'timeoutMs' | 'beforeCall'>,
  url: string,
  headers: Record<string, string>,
  body: string,
): Promise<PlatformAnswer> {
  const timeout = options.timeoutMs ?? 15_000
  const request = url.startsWith('https:') ? httpsRequest : httpRequest
  await options.beforeCall?.()
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, timeout }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => {
        text += chunk
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers }))
      res.on('error', (e) => reject(new PlatformUnreachable(e)))
    })
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeout} ms`)))
    req.on('error', (e) => reject(new PlatformUnreachable(e)))
    req.end(body)
  })
}

export type CloreWire = {
  /** GET `/v1/<endpoint>` (with a JSON body when given); the body of a code-0 answer, or throws MarketplaceError. */
  get(apiKey: string, operation: string, endpoint: string, jsonBody?: Json): Promise<Json>
  /** POST `/v1/<endpoint>` with a JSON body (a write): code 2 or 6 is `refused`, with Clore's reason. */
  post(apiKey: string, operation: string, endpoint: string, jsonBody: Json): Promise<Json>
}

export function cloreWire(options: AdapterOptions): CloreWire {
  const scale = options.paceScale ?? 1
  const retries = options.retries ?? DEFAULT_RETRIES
  const pacer = new Pacer(scale)
  const origin = options.baseUrl.replace(/\/+$/, '')
  const fail = (apiKey: string, failure: 'rejected_key' | 'unavailable' | 'refused', message: string, retryAfterSeconds?: number) =>
    // The key is never put in a message; the platform's own `error` text is scrubbed of it anyway.
    new MarketplaceError('marketplace_b', failure, message.split(apiKey).join('[key]'), retryAfterSeconds)

  async function call(method: 'GET' | 'POST', apiKey: string, operation: string, endpoint: string, jsonBody?: Json): Promise<Json> {
    const url = `${origin}/v1/${endpoint}`
    const headers = { auth: apiKey, accept: 'application/json', ...(jsonBody ? { 'content-type': 'application/json' } : {}) }
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= retries
      const outcomeOf = (answer: PlatformAnswer): MarketplaceCall['outcome'] => {
        const v = judge(answer)
        if (v.kind === 'ok') return 'ok'
        if (v.kind === 'rejected') return 'rejected_key'
        if (v.kind === 'failed' && v.refused && method === 'POST') return 'refused'
        return v.kind === 'rate_limited' && !last ? 'retried' : 'unavailable'
      }
      let answer: PlatformAnswer
      try {
        answer = await pacer.run(apiKey, 'all', INTERVAL_MS, () =>
          recorded(
            options,
            { marketplace: 'marketplace_b', operation, method, url },
            async () =>
              method === 'GET' && jsonBody
                ? sendGetWithBody(options, url, headers, JSON.stringify(jsonBody))
                : await send(options, { url, method, headers, body: jsonBody ? JSON.stringify(jsonBody) : undefined }),
            outcomeOf,
          ),
        )
      } catch (e) {
        if (e instanceof PlatformUnreachable) throw fail(apiKey, 'unavailable', 'marketplace_b could not be reached', UNAVAILABLE_RETRY_AFTER_S)
        throw e
      }
      const verdict = judge(answer)
      if (verdict.kind === 'ok') return verdict.body
      if (verdict.kind === 'rejected') throw fail(apiKey, 'rejected_key', 'marketplace_b rejected the API key (code 3)')
      // Backoff doubles per attempt: 2, 4, 8 … times the pacing interval (scaled like it).
      const backoffMs = INTERVAL_MS * 2 ** (attempt + 1)
      if (verdict.kind === 'failed' && verdict.refused && method === 'POST')
        throw fail(apiKey, 'refused', `marketplace_b refused the request: ${verdict.reason}`)
      if (verdict.kind === 'failed') throw fail(apiKey, 'unavailable', `marketplace_b ${verdict.reason}`, retryAfterHeader(answer) ?? UNAVAILABLE_RETRY_AFTER_S)
      if (last)
        throw fail(apiKey, 'unavailable', `marketplace_b kept rate-limiting after ${retries} retries`, retryAfterHeader(answer) ?? Math.ceil(backoffMs / 1000))
      await Bun.sleep(Math.max(backoffMs, (retryAfterHeader(answer) ?? 0) * 1000) * scale)
    }
  }

  return {
    get: (apiKey, operation, endpoint, jsonBody) => call('GET', apiKey, operation, endpoint, jsonBody),
    post: (apiKey, operation, endpoint, jsonBody) => call('POST', apiKey, operation, endpoint, jsonBody),
  }
}
