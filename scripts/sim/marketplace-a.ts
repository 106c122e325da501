import { createHash } from 'node:crypto'
import { json, ROUTES } from './marketplace-a.routes'
import { SimState } from './marketplace-a.state'
import {
  type EarningRow,
  type Endpoint,
  type Invoice,
  type LogEntry,
  type MachineFields,
  type Mode,
  type OfferFields,
  type Report,
  type SimKey,
  type SimOwner,
  type SimRental,
  THRESHOLDS,
} from './marketplace-a.types'

/**
 * A local simulator of Vast.ai's host API ("marketplace_a"; docs/marketplaces.md "Simulators"):
 * `/api/v0` paths, Bearer keys with the legacy `?api_key=`
 * fallback, Vast's error bodies, scoped and 2FA-restricted keys, per-endpoint-and-identity minimum
 * intervals answered with a plain-text 429 and no Retry-After, the public offer search (`/bundles/`:
 * the owners' listed machines plus offers a test puts on the market), and a request log with each
 * request's body that never holds a key. Listens on loopback only; tests and the demo import it,
 * `bun run sim:marketplace-a` runs it.
 */

interface MarketplaceAOptions {
  /** 0 (the default) picks a free port. */
  port?: number
  owners?: SimOwner[]
  /** Minimum interval per endpoint in seconds, over the documented defaults (THRESHOLDS). */
  rateLimits?: Partial<Record<Endpoint, number>>
  /** Multiplies every interval: 0.01 makes a 1.8 s limit 18 ms, 0 turns rate limiting off. */
  rateScale?: number
  /** The 429 body: plain text (the default) or Vast's JSON `{"detail": …}` form. */
  rateLimitBody?: 'text' | 'json'
  /**
   * The simulator's clock in unix milliseconds (default the real time): what "now" is for a window's
   * start, the earnings day and a rental's end (a rental whose end_date passed has ended). Rate limits
   * keep the real time. A test ties it to the service's test clock.
   */
  clock?: () => number
}

export interface MarketplaceASim {
  readonly url: string
  readonly port: number
  addOwner(owner: SimOwner): void
  /** Changes a key's permission groups, 2FA or session expiry. */
  updateKey(key: string, patch: Partial<Omit<SimKey, 'key'>>): void
  /** Deletes a key: from then on it answers 401 "Invalid user key". */
  revokeKey(key: string): void
  /** Adds or replaces a machine of the owner (by id or by one of their keys); unset fields are absent. */
  putMachine(owner: number | string, id: number, fields?: MachineFields): void
  /** Merges fields; a field set to `undefined` becomes absent again. */
  updateMachine(id: number, patch: MachineFields): void
  removeMachine(id: number): void
  /** Attaches a rental; from then on the machine's rental counters, occupancy and client_end_date are derived. */
  addRental(machineId: number, rental: SimRental): number
  updateRental(id: number, patch: Partial<SimRental>): void
  removeRental(id: number): void
  /** Replaces the machine's renter reports (`GET /machines/{id}/reports/`); from then on its `num_reports` counts them. */
  setReports(machineId: number, reports: Report[]): void
  /** What a machine is billed at now and who rents it (the demo's meter counts Vast's earnings from them). */
  billing(machineId: number): { priceGpuHour: number | null; minBidHour: number | null; rentals: SimRental[] } | null
  addEarnings(owner: number | string, rows: EarningRow[]): void
  addInvoices(owner: number | string, invoices: Invoice[]): void
  /**
   * Puts another host's offer on the public search (`/bundles/`), with the numbers the test chooses,
   * and returns its ask id (the given `id`, or a new one). It shows as given, after the listed
   * machines' own offers; a bid search prices it at its `min_bid`.
   */
  addMarketOffer(offer: Partial<OfferFields>): number
  clearMarketOffers(): void
  /** 'unreachable' closes the listener and its connections; leaving it listens again on the same port. */
  setMode(mode: Mode, opts?: { status?: number; delayMs?: number }): Promise<void>
  requests(): LogEntry[]
  clearRequests(): void
  stop(): Promise<void>
}

const sha = (s: string): string => createHash('sha256').update(s).digest('hex')
const authError = (status: number, msg: string) => json(status, { success: false, error: 'auth_error', msg })
const REDACTED = '[redacted]'

/**
 * The body as the log keeps it: parsed JSON, else the raw text, null when empty. Service tests assert
 * it, so it is exact except for keys: an `api_key` field at any depth, an `api_key=` or `"api_key": "…"`
 * in text that is not JSON, and the caller's own key wherever it appears read "[redacted]".
 */
function loggedBody(text: string, keys: string[]): unknown {
  if (!text.trim()) return null
  const scrub = (s: string) => keys.reduce((out, k) => out.replaceAll(k, REDACTED), s)
  const redact = (v: unknown): unknown => {
    if (typeof v === 'string') return scrub(v)
    if (Array.isArray(v)) return v.map(redact)
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, k === 'api_key' ? REDACTED : redact(x)]))
    return v
  }
  try {
    return redact(JSON.parse(text))
  } catch {
    return scrub(text.replace(/(api_key=)[^&\s]*/g, `$1${REDACTED}`).replace(/("api_key"\s*:\s*)"[^"]*"/g, `$1"${REDACTED}"`))
  }
}

export async function startMarketplaceA(options: MarketplaceAOptions = {}): Promise<MarketplaceASim> {
  const state = new SimState()
  const clock = options.clock ?? Date.now
  state.nowS = () => clock() / 1000
  for (const owner of options.owners ?? []) state.addOwner(owner)
  const scale = options.rateScale ?? 1
  const last = new Map<string, number>()
  const log: LogEntry[] = []
  let mode: Mode = 'ok'
  let fiveXx = 502
  let delayMs = 2000

  async function handle(req: Request, ip: string): Promise<Response> {
    const time = Date.now()
    const url = new URL(req.url)
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.get('authorization') ?? '')?.[1]
    const queryKey = url.searchParams.get('api_key') ?? undefined
    const key = bearer ?? queryKey
    const held = key === undefined ? undefined : state.keyOf(key)
    const identity = key === undefined ? 'anonymous' : (held?.key.label ?? `sha256:${sha(key).slice(0, 12)}`)
    const query = new URLSearchParams(url.searchParams)
    query.delete('api_key')
    const path = url.pathname.length > 1 ? url.pathname.replace(/\/+$/, '') : url.pathname
    const route = ROUTES.find((r) => r.method === req.method && r.pattern.test(path))
    const entry: LogEntry = {
      method: req.method,
      path: url.pathname,
      query: query.toString(),
      endpoint: route?.endpoint ?? 'unknown',
      identity,
      status: 0,
      time,
      body: null,
    }
    log.push(entry)
    // Bun.serve drops the body of a GET, so a GET logs null whatever the client sent.
    const text = req.method === 'GET' ? '' : await req.text()
    const sentKeys = [bearer, queryKey].filter((k): k is string => !!k)
    entry.body = loggedBody(text, sentKeys)
    const res = await answer()
    entry.status = res.status
    return res

    async function answer(): Promise<Response> {
      if (mode === '5xx')
        return new Response(`<html><body><h1>${fiveXx} Server Error</h1></body></html>`, { status: fiveXx, headers: { 'content-type': 'text/html' } })
      if (mode === 'slow') await Bun.sleep(delayMs)
      if (!route) return new Response('Not Found', { status: 404, headers: { 'content-type': 'text/html' } })
      const threshold = (options.rateLimits?.[route.endpoint] ?? THRESHOLDS[route.endpoint]) * scale
      const slot = `${route.endpoint}|${sha(`${bearer ?? ''}|${queryKey ?? ''}|${ip}`)}`
      const prev = last.get(slot)
      if (threshold > 0 && prev !== undefined && time - prev < threshold * 1000) {
        const text = `API requests too frequent: endpoint threshold=${+threshold.toFixed(3)}`
        if (options.rateLimitBody === 'json') return json(429, { detail: text.replace(':', '') })
        return new Response(text, { status: 429, headers: { 'content-type': 'text/plain; charset=utf-8' } })
      }
      last.set(slot, time)
      // The public search answers anonymous callers; a key that does come is checked like anywhere else.
      if (key === undefined && !route.anonymous) return authError(403, 'This action requires login.')
      if (key !== undefined && !held) return authError(route.endpoint === 'invoices' ? 404 : 401, 'Invalid user key')
      const k = held?.key
      if (k?.sessionExpired) return json(404, { success: false, error: 'auth_error', msg: 'Session expired. Please log in again.' })
      if (k && (k.twoFactor === true || (Array.isArray(k.twoFactor) && k.twoFactor.includes(route.endpoint)))) {
        return authError(401, 'This endpoint requires Two Factor Authentication: API keys are disabled for it while 2FA is enabled. Please log in with 2FA.')
      }
      if (k && route.permission && !(k.permissions ?? ['machine_read', 'machine_write', 'billing_read']).includes(route.permission)) {
        return authError(k.deniedStatus ?? 403, `This API key does not have the ${route.permission} permission`)
      }
      let body: Record<string, unknown> = {}
      if (text.trim()) {
        try {
          const parsed = JSON.parse(text)
          if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed
        } catch {
          return json(400, { success: false, error: 'invalid_args', msg: 'Invalid JSON body' })
        }
      }
      const ctx = { state, id: Number(route.pattern.exec(path)?.[1] ?? Number.NaN), body, query: url.searchParams, now: clock() / 1000 }
      if (route.anonymous) return route.handle({ ...ctx, owner: held?.owner })
      return held ? route.handle({ ...ctx, owner: held.owner }) : authError(403, 'This action requires login.')
    }
  }

  const listen = (port: number) =>
    Bun.serve({ hostname: '127.0.0.1', port, idleTimeout: 0, fetch: (req, srv) => handle(req, srv.requestIP(req)?.address ?? '') })
  let server: ReturnType<typeof listen> | null = listen(options.port ?? 0)
  const port = server.port as number

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    addOwner: (owner) => state.addOwner(owner),
    updateKey: (key, patch) => state.updateKey(key, patch),
    revokeKey: (key) => state.revokeKey(key),
    putMachine: (owner, id, fields = {}) => state.putMachine(owner, id, fields),
    updateMachine: (id, patch) => state.updateMachine(id, patch),
    removeMachine: (id) => state.removeMachine(id),
    addRental: (machineId, rental) => state.addRental(machineId, rental),
    updateRental: (id, patch) => state.updateRental(id, patch),
    removeRental: (id) => void state.rentals.delete(id),
    setReports: (machineId, reports) => void state.reports.set(machineId, reports),
    billing: (machineId) => {
      const m = state.machines.get(machineId)
      if (!m) return null
      const num = (v: unknown) => (typeof v === 'number' ? v : null)
      const rentals = state.rentalsOf(machineId).map(({ machineId: _m, ...r }) => r)
      return { priceGpuHour: num(m.fields.listed_gpu_cost), minBidHour: num(m.fields.min_bid_price), rentals }
    },
    addEarnings: (owner, rows) => {
      const id = state.ownerOf(owner).id
      state.earnings.set(id, [...(state.earnings.get(id) ?? []), ...rows])
    },
    addInvoices: (owner, invoices) => {
      const id = state.ownerOf(owner).id
      state.invoices.set(id, [...(state.invoices.get(id) ?? []), ...invoices])
    },
    addMarketOffer: (offer) => state.addMarketOffer(offer),
    clearMarketOffers: () => state.marketOffers.clear(),
    async setMode(next, opts = {}) {
      fiveXx = opts.status ?? 502
      delayMs = opts.delayMs ?? 2000
      mode = next
      if (next === 'unreachable' && server) {
        await server.stop(true)
        server = null
      } else if (next !== 'unreachable' && !server) {
        server = listen(port)
      }
    },
    requests: () => structuredClone(log),
    clearRequests: () => void log.splice(0),
    async stop() {
      await server?.stop(true)
      server = null
    },
  }
}
