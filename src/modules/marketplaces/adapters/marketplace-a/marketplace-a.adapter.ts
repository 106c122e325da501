import { dayEarningsOf, machinesOf, marketOffersOf, payoutsOf, reportsOf } from './marketplace-a.mapping'
import {
  type AccountIdentity,
  type AdapterOptions,
  type MachineRef,
  type MarketplaceAdapter,
  MarketplaceError,
  type MarketplaceFailure,
  type PayoutRead,
  type RemoteMachine,
} from '../marketplaces.adapter'
import { type PlatformAnswer, Pacer, PlatformUnreachable, recorded, send } from '../marketplaces.http'

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
const PACE_MS = {
  users: 1100,
  machines: 1100,
  // Writes: the documented thresholds (1.3: unlist 1.8, schedule maint 2.5) plus 10 %; create_asks
  // and cancel_maint have none documented, so the smallest one, as above.
  create_asks: 1100,
  unlist: 1980,
  dnotify: 2750,
  cancel_maint: 1100,
  bundles: 1100,
  // machine-earnings: the documented threshold (1.3: earnings 2.0) plus 10 %.
  earnings: 2200,
  // A machine's renter reports: the documented threshold (reports 1.2) plus 10 %.
  reports: 1320,
  // The default (idle) job: the documented thresholds (set defjob 2.8, remove defjob 1.2) plus 10 %.
  create_bids: 3080,
  defjob: 1320,
  // The invoice / payout history (v1): the documented threshold (1.3: v1 invoices 3.0) plus 10 %.
  invoices: 3300,
} as const
/** The pages of invoice history one read follows at most (each up to INVOICE_PAGE entries). */
const INVOICE_PAGES = 20
const INVOICE_PAGE = 100
type Endpoint = keyof typeof PACE_MS

/** The most offers one market read takes (the search's own `limit`). */
const MARKET_LIMIT = 5000

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

function judge(answer: PlatformAnswer, canRetry: boolean, apiKey: string, endpoint: Endpoint, write: boolean): Verdict {
  const { status } = answer
  if (status >= 200 && status < 300) {
    const parsed = parseJson(answer.text)
    if (!parsed.ok) return fail('unavailable', `marketplace_a answered HTTP ${status} with something other than JSON`)
    // A write Vast turned down answers 200 with {"success": false, "msg": …}.
    const b = parsed.value as Record<string, unknown> | null
    if (write && typeof b === 'object' && b !== null && b.success === false) return refused(answer, apiKey)
    return { kind: 'ok', body: parsed.value }
  }
  // A write with a bad value, about a machine Vast does not know, or about one that is not the
  // key owner's ("Only machine owner can create ask contracts", not_authorized): the request, not the key.
  const said = errorText(answer).error
  if (write && (status === 400 || status === 422 || (status === 404 && said !== 'auth_error') || (status === 403 && said === 'not_authorized')))
    return refused(answer, apiKey)
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

function refused(answer: PlatformAnswer, apiKey: string): Verdict {
  const said = redact(errorText(answer).msg, apiKey).slice(0, 300)
  return fail('refused', `marketplace_a refused the request (HTTP ${answer.status})${said ? `: ${said}` : ''}`)
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

  /**
   * One call to `${origin}/api/v0${path}`, paced per key and endpoint, retried on 429 and 502–504.
   * `apiKey` null calls anonymously (the public offer search); the pacing bucket is then shared.
   */
  async function call(
    apiKey: string | null,
    operation: string,
    endpoint: Endpoint,
    method: 'GET' | 'PUT' | 'POST' | 'DELETE',
    path: string,
    body?: unknown,
  ): Promise<unknown> {
    // A key that cannot travel in a header is no key of Vast's; refusing it here keeps undici's
    // header errors (which may quote the value) out of every message.
    if (apiKey !== null && (apiKey === '' || !/^[\x21-\x7e]+$/.test(apiKey)))
      throw new MarketplaceError(MARKETPLACE, 'rejected_key', 'that is not a marketplace_a API key')
    // A path under /api/ names its own version (the v1 invoices); the others are v0's.
    const url = path.startsWith('/api/') ? `${origin}${path}` : `${origin}${PREFIX}${path}`
    const headers: Record<string, string> = {
      accept: 'application/json',
      ...(apiKey !== null ? { authorization: `Bearer ${apiKey}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    }
    const write = method !== 'GET' && endpoint !== 'bundles'
    for (let attempt = 0; ; attempt++) {
      if (attempt > 0) await Bun.sleep(BACKOFF_MS * BACKOFF_GROWTH ** (attempt - 1))
      let verdict: Verdict | undefined
      try {
        await pacer.run(apiKey ?? 'anonymous', endpoint, PACE_MS[endpoint], () =>
          recorded(
            options,
            { marketplace: MARKETPLACE, operation, method, url },
            () => send(options, { url, method, headers, body: body === undefined ? undefined : JSON.stringify(body) }),
            (answer) => {
              verdict = judge(answer, attempt < retries, apiKey ?? '', endpoint, write)
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
  const get = (apiKey: string, operation: string, endpoint: Endpoint, path: string) => call(apiKey, operation, endpoint, 'GET', path)

  /** Vast addresses a machine by its numeric id; anything else is not one of its machines. */
  function machineId(machine: MachineRef): number {
    const id = Number(machine.externalMachineId)
    if (!Number.isSafeInteger(id) || id <= 0)
      throw new MarketplaceError(MARKETPLACE, 'refused', `"${machine.externalMachineId.slice(0, 64)}" is not a marketplace_a machine id`)
    return id
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

    async publishOffer(apiKey, offer) {
      if (offer.marketplace !== MARKETPLACE) throw new Error('marketplace_a adapter given a marketplace_b offer')
      const body = await call(apiKey, 'offer.publish', 'create_asks', 'PUT', '/machines/create_asks/', offer.ask)
      const extended = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).extended : undefined
      return { extendedContracts: Number.isSafeInteger(extended) ? (extended as number) : null }
    },

    async withdrawOffer(apiKey, machine) {
      await call(apiKey, 'offer.withdraw', 'unlist', 'DELETE', `/machines/${machineId(machine)}/asks/`)
    },

    maintenance: {
      async announce(apiKey, machine, window) {
        await call(apiKey, 'maintenance.announce', 'dnotify', 'PUT', `/machines/${machineId(machine)}/dnotify/`, {
          client_id: 'me',
          sdate: window.startsAtS,
          duration: window.hours,
          maintenance_category: window.category,
          ...(window.reason !== null ? { maintenance_reason: window.reason } : {}),
        })
      },
      async cancel(apiKey, machine) {
        const id = machineId(machine)
        await call(apiKey, 'maintenance.cancel', 'cancel_maint', 'PUT', `/machines/${id}/cancel_maint/`, { client_id: 'me', machine_id: id })
      },
    },

    idleJob: {
      /** `PUT /machines/create_bids/` {machine, price_gpu, price_inetu, price_inetd, image, args}; traffic prices left out when not given. */
      async set(apiKey, machine, job) {
        await call(apiKey, 'idle_job.set', 'create_bids', 'PUT', '/machines/create_bids/', {
          machine: machineId(machine),
          price_gpu: job.priceGpu,
          ...(job.priceInetu !== null ? { price_inetu: job.priceInetu } : {}),
          ...(job.priceInetd !== null ? { price_inetd: job.priceInetd } : {}),
          image: job.image,
          args: job.args,
        })
      },
      async remove(apiKey, machine) {
        await call(apiKey, 'idle_job.remove', 'defjob', 'DELETE', `/machines/${machineId(machine)}/defjob/`)
      },
    },

    /**
     * `GET /users/me/machine-earnings?owner=me&sday=D&eday=D`: with one day asked, `per_machine` is
     * that day's figure per machine; gpu, storage and both bandwidth earnings summed (USD, after
     * Vast's cut). Needs billing_read: without it the call is missing_permission.
     */
    async dayEarnings(apiKey, day) {
      const body = await get(apiKey, 'earnings.day', 'earnings', `/users/me/machine-earnings?owner=me&sday=${day}&eday=${day}`)
      const rows = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).per_machine : undefined
      return dayEarningsOf(Array.isArray(rows) ? rows : [])
    },

    /**
     * `GET /api/v1/invoices?select_filters={"when":{"gte":from,"lte":to}}&limit=&after_token=`
     * (billing_read), following `next_token` for at most INVOICE_PAGES pages: the account's
     * credits, transfers and payouts in USD.
     */
    async payouts(apiKey, fromS, toS) {
      const out: PayoutRead[] = []
      let token: string | null = null
      for (let page = 0; page < INVOICE_PAGES; page++) {
        const filters = encodeURIComponent(JSON.stringify({ when: { gte: fromS, lte: toS } }))
        const after = token === null ? '' : `&after_token=${encodeURIComponent(token)}`
        const body = await get(apiKey, 'payouts.list', 'invoices', `/api/v1/invoices?select_filters=${filters}&limit=${INVOICE_PAGE}${after}`)
        const b = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {}
        out.push(...payoutsOf(Array.isArray(b.results) ? b.results : []))
        token = typeof b.next_token === 'string' && b.next_token !== '' ? b.next_token : null
        if (token === null) break
      }
      return out
    },

    /** Vast pays out in USD: no wallets. */
    wallets: null,

    /**
     * `GET /machines/{id}/reports/` (machine_read). vast-cli also sends `{"machine_id": id}` as a JSON
     * body on this GET; Vast's OpenAPI documents none, and the path carries the id, so none is sent.
     */
    async machineReports(apiKey, machine) {
      const body = await get(apiKey, 'machine.reports', 'reports', `/machines/${machineId(machine)}/reports/`)
      if (!Array.isArray(body))
        throw new MarketplaceError(MARKETPLACE, 'unavailable', 'marketplace_a answered the reports of a machine with something other than a list')
      return reportsOf(body)
    },

    /** The public offer search (vast-cli `search offers`: POST /bundles/), on-demand asks that can be rented now. */
    async listMarket() {
      const body = await call(null, 'market.list', 'bundles', 'POST', '/bundles/', {
        rentable: { eq: true },
        type: 'on-demand',
        limit: MARKET_LIMIT,
      })
      const list = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).offers : undefined
      if (!Array.isArray(list)) throw new MarketplaceError(MARKETPLACE, 'unavailable', 'marketplace_a answered the offer search without an `offers` array')
      return marketOffersOf(list)
    },
  }
}
