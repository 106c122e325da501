import { machinesOf } from './marketplace-a.mapping'
import {
  type AccountIdentity,
  type AdapterOptions,
  type MarketplaceAdapter,
  MarketplaceError,
  type MarketplaceFailure,
  type RemoteMachine,
} from './marketplaces.adapter'
import { type PlatformAnswer, Pacer, PlatformUnreachable, recorded, send } from './marketplaces.http'

/**
 * marketplace_a: Vast.ai's host API (docs/marketplaces.md). Every request goes to
 * `${baseUrl}/api/v0/…` with `Authorization: Bearer <key>`; the legacy `?api_key=` fallback is never
 * sent, because keys in URLs end up in logs. Calls are paced per key and endpoint at Vast's
 * per-endpoint minimum interval; 429 and 502/503/504 are retried like the official client (0.15 s,
 * growing × 1.5); then the three outcomes: rejected_key, missing_permission, unavailable.
 */

const MARKETPLACE = 'marketplace_a'
const PREFIX = '/api/v0'

/**
 * Minimum spacing per endpoint in milliseconds. The notes give no `x-rate-limit.threshold` for these
 * two, so the smallest documented one (1.0 s, charges) is used, plus 10 %: Vast measures the
 * interval between arrivals, and a call sent exactly on time can arrive early relative to the last.
 */
const PACE_MS = { users: 1100, machines: 1100 } as const
type Endpoint = keyof typeof PACE_MS

const BACKOFF_MS = 150
const BACKOFF_GROWTH = 1.5
const DEFAULT_RETRIES = 3
const RETRIED_STATUSES = new Set([429, 502, 503, 504])

type Verdict = { kind: 'ok'; body: unknown } | { kind: 'retry'; hint?: number } | { kind: 'fail'; error: MarketplaceError }

function fail(failure: MarketplaceFailure, message: string, retryAfterSeconds?: number): Verdict {
  return { kind: 'fail', error: new MarketplaceError(MARKETPLACE, failure, message, retryAfterSeconds) }
}

/** Never lets the key (or a query parameter that would carry it) into a message. */
function redact(text: string, apiKey: string): string {
  const out = apiKey.length > 0 ? text.split(apiKey).join('[redacted]') : text
  return out.replace(/api_key=[^&\s"']*/gi, 'api_key=[redacted]')
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

/** What an error body says: Vast uses `msg`, sometimes `message` or `detail`, or plain text. */
function errorText(answer: PlatformAnswer): { error: string | null; msg: string } {
  const parsed = parseJson(answer.text)
  if (parsed.ok && typeof parsed.value === 'object' && parsed.value !== null) {
    const b = parsed.value as Record<string, unknown>
    const msg = [b.msg, b.message, b.detail].find((v): v is string => typeof v === 'string') ?? ''
    return { error: typeof b.error === 'string' ? b.error : null, msg }
  }
  return { error: null, msg: answer.text.trim() }
}

/** A key limited to permission groups that lacks the one asked for (notes 1.1 "Scoped keys"). */
const PERMISSION = /permission|machine_read|machine_write|billing_read|not authori[sz]ed|scope/i
/** A 2FA-restricted key, or an expired 2FA session key (notes 1.1 "2FA caveat"). */
const TWO_FACTOR = /two factor authentication|session expired/i

/**
 * 401/403/404. The key is rejected (the only outcome that marks a stored connection invalid) when
 * Vast says `auth_error` about the key itself, or answers 401 with no usable body (the CLI reads
 * that as "please log in"). A 2FA requirement or a missing permission group is missing_permission
 * whatever the status. A 403 without auth_error is a refusal of this action, not of the key; a 404
 * without auth_error is not an answer about the key at all.
 */
function authVerdict(answer: PlatformAnswer, apiKey: string): Verdict {
  const { error, msg } = errorText(answer)
  const said = redact(msg, apiKey).slice(0, 200)
  const tail = said === '' ? '' : `: ${said}`
  if (TWO_FACTOR.test(msg)) return fail('missing_permission', `marketplace_a needs a two-factor session for this key${tail}`)
  if (PERMISSION.test(msg)) return fail('missing_permission', `the marketplace_a key lacks a permission group (machine_read is needed)${tail}`)
  if (error === 'auth_error' || answer.status === 401) return fail('rejected_key', `marketplace_a rejected the key (HTTP ${answer.status})${tail}`)
  if (answer.status === 403) return fail('missing_permission', `marketplace_a refused this key the action (HTTP 403)${tail}`)
  return fail('unavailable', `marketplace_a answered HTTP 404 where an answer was due${tail}`)
}

/** Vast's 429 may name its threshold in seconds ("endpoint threshold=1.8"); there is no Retry-After. */
function thresholdSeconds(text: string): number | undefined {
  const m = /threshold\s*=\s*([0-9]+(?:\.[0-9]+)?)/i.exec(text)
  return m ? Number(m[1]) : undefined
}

function judge(answer: PlatformAnswer, canRetry: boolean, apiKey: string, endpoint: Endpoint): Verdict {
  const { status } = answer
  if (status >= 200 && status < 300) {
    const parsed = parseJson(answer.text)
    return parsed.ok ? { kind: 'ok', body: parsed.value } : fail('unavailable', `marketplace_a answered HTTP ${status} with something other than JSON`)
  }
  if (RETRIED_STATUSES.has(status) && canRetry) return { kind: 'retry' }
  if (status === 429) {
    const seconds = Math.max(1, Math.ceil(thresholdSeconds(answer.text) ?? PACE_MS[endpoint] / 1000))
    return fail('unavailable', 'marketplace_a kept answering "API requests too frequent" (HTTP 429) after the retries', seconds)
  }
  if (status === 401 || status === 403 || status === 404) return authVerdict(answer, apiKey)
  if (status >= 500) return fail('unavailable', `marketplace_a answered HTTP ${status}`)
  const { msg } = errorText(answer)
  return fail('unavailable', `marketplace_a answered HTTP ${status}: ${redact(msg, apiKey).slice(0, 200)}`)
}

function unreachable(e: PlatformUnreachable): MarketplaceError {
  const cause = e.cause as { code?: unknown; name?: unknown } | undefined
  const code = typeof cause?.code === 'string' ? cause.code : typeof cause?.name === 'string' ? cause.name : 'error'
  // The cause's own message is not repeated: it may quote what was sent.
  return new MarketplaceError(MARKETPLACE, 'unavailable', `marketplace_a could not be reached (${code})`)
}

export function createMarketplaceAAdapter(options: AdapterOptions): MarketplaceAdapter {
  const pacer = new Pacer(options.paceScale ?? 1)
  const retries = options.retries ?? DEFAULT_RETRIES
  const origin = options.baseUrl.replace(/\/+$/, '')

  async function get(apiKey: string, operation: string, endpoint: Endpoint, path: string): Promise<unknown> {
    // A key that cannot travel in a header is no key of Vast's; refusing it here keeps undici's
    // header errors (which may quote the value) out of every message.
    if (apiKey === '' || !/^[\x21-\x7e]+$/.test(apiKey)) throw new MarketplaceError(MARKETPLACE, 'rejected_key', 'that is not a marketplace_a API key')
    const url = `${origin}${PREFIX}${path}`
    const headers = { authorization: `Bearer ${apiKey}`, accept: 'application/json' }
    for (let attempt = 0; ; attempt++) {
      if (attempt > 0) await Bun.sleep(BACKOFF_MS * BACKOFF_GROWTH ** (attempt - 1))
      let verdict: Verdict | undefined
      try {
        await pacer.run(apiKey, endpoint, PACE_MS[endpoint], () =>
          recorded(
            options,
            { marketplace: MARKETPLACE, operation, method: 'GET', url },
            () => send(options, { url, method: 'GET', headers }),
            (answer) => {
              verdict = judge(answer, attempt < retries, apiKey, endpoint)
              return verdict.kind === 'ok' ? 'ok' : verdict.kind === 'retry' ? 'retried' : verdict.error.failure
            },
          ),
        )
      } catch (e) {
        if (e instanceof PlatformUnreachable) throw unreachable(e)
        throw e
      }
      if (verdict?.kind === 'ok') return verdict.body
      if (verdict?.kind === 'fail') throw verdict.error
    }
  }

  return {
    marketplace: MARKETPLACE,

    /**
     * The owner is Vast's numeric user `id`: it never changes, while the email can. The email
     * stands in only when an answer carries no id. users/current needs no permission group, so the
     * machine list is read too: a key that cannot see the owner's machines (no machine_read, or a
     * two-factor session) is refused as missing_permission here, not at the first sync.
     */
    async verifyKey(apiKey: string): Promise<AccountIdentity> {
      const body = await get(apiKey, 'account.verify', 'users', '/users/current/')
      await get(apiKey, 'account.verify_machines', 'machines', '/machines/?owner=me')
      const user = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {}
      const owner = Number.isSafeInteger(user.id) ? String(user.id) : typeof user.email === 'string' && user.email !== '' ? user.email : null
      if (owner === null) throw new MarketplaceError(MARKETPLACE, 'unavailable', 'marketplace_a answered users/current without an account id')
      return { owner: owner.slice(0, 256), holdingUsd: null }
    },

    async listMachines(apiKey: string): Promise<RemoteMachine[]> {
      const body = await get(apiKey, 'machines.list', 'machines', '/machines/?owner=me')
      const list = Array.isArray(body) ? body : typeof body === 'object' && body !== null ? (body as Record<string, unknown>).machines : undefined
      if (!Array.isArray(list)) throw new MarketplaceError(MARKETPLACE, 'unavailable', 'marketplace_a answered the machine list without a `machines` array')
      return machinesOf(list, options.nowUs())
    },

    /** Vast has no holding programme. */
    readHolding: async () => null,
  }
}
