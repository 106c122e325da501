// A local simulator of Clore.ai's host API ("marketplace_b"; docs/marketplaces.md "Simulators"):
// paths under /v1, the `auth:` header (a
// Bearer header is a wrong key, code 3), `code` in every body whatever the HTTP status, 1 request
// per interval per key (code 5 beyond it). Loopback only; never for production. It runs on
// node:http rather than Bun.serve because Bun.serve drops the body of a GET, and Clore's
// `server_config` is a GET with a JSON body.

import { createHash } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import {
  marketplaceEntry,
  myServersEntry,
  orderEntry,
  type SimOwner,
  type SimOwnerInit,
  type SimRental,
  type SimServer,
  serverConfigBody,
  spotMarket,
} from './marketplace-b-state'
import { cancelOrder, setServerSettings, setSpotPrice } from './marketplace-b-writes'

type Json = Record<string, unknown>
type Req = { method: string; url: URL; key: string | null; body: string }
type Mode = 'ok' | 'unreachable' | '5xx' | 'slow'

interface Options {
  port?: number
  hostname?: string
  /** Apikeys → owners present from the start. */
  owners?: Record<string, SimOwnerInit>
  /** Minimum spacing per key ("1 request per second per API key"); 0 turns the limit off. */
  requestIntervalMs?: number
  /** How long 'slow' holds each answer. */
  slowMs?: number
  /** `set_spot_price`: "You can lower spot price once in 600 seconds". */
  spotLowerIntervalMs?: number
  /** `set_spot_price`: max lowering step per currency ("max of 0.00000100 ₿"). */
  spotMaxLowerStep?: Record<string, number>
  /** `spot_marketplace` `market.currency_rates_in_usd` (USD per coin). */
  currencyRatesInUsd?: Record<string, number>
  /** HTTP status per non-zero `code`; the reference leaves it undocumented, so 200 unless set. */
  httpStatusFor?: Partial<Record<number, number>>
  /** Whether `my_servers` entries carry `id` (seen by third parties, not in the documented shape). */
  myServersIncludeId?: boolean
  /**
   * The simulator's clock in unix milliseconds (default the real time): an order with a creation
   * time `ct` (unix seconds) and a length `mrl` (hours) expires once `ct + mrl` hours have passed, as
   * Clore ends a rental at its maximum length. Rate limits keep the real time. A test ties it to the
   * service's test clock.
   */
  clock?: () => number
}

interface LoggedRequest {
  method: string
  path: string
  /** The owner's label, `sha256:<12 hex>` for an unknown key, null without an `auth` header. */
  key: string | null
  status: number
  code: number
  at: number
  /**
   * What the caller sent, so a service test can assert the exact body Clore received (POSTs, and the
   * GET of `server_config`): the parsed JSON, the raw text when it is not JSON, null when empty. A
   * field named `api_key` (at any depth) and the caller's own key anywhere read "[redacted]".
   */
  body: unknown
}

export interface MarketplaceBSim {
  /** The origin; the API lives under `${url}/v1`. */
  readonly url: string
  readonly requests: LoggedRequest[]
  /**
   * Adds an account. Other hosts' servers on the public `marketplace` are other owners: add one with
   * its own key and public servers that have an `id` and prices (`pricing` → `price.on_demand`,
   * `min_spot_pricing` → `price.spot`), e.g. `addOwner('market-key', { label: 'market', userId: 99,
   * servers: [{ name: 'm1', id: 501, visibility: 'public', pricing: { bitcoin: 0.0002 } }] })`. Every
   * key sees them in `marketplace`; only their owner sees them in `my_servers`.
   */
  addOwner(apiKey: string, owner: SimOwnerInit): void
  updateOwner(apiKey: string, patch: Partial<Omit<SimOwnerInit, 'servers'>>): void
  removeOwner(apiKey: string): void
  /** Adds the server, or replaces the one of that name. */
  putServer(apiKey: string, server: SimServer): void
  /** Merges; a key given as undefined is removed (absent from the wire again). */
  updateServer(apiKey: string, name: string, patch: Partial<SimServer>): void
  removeServer(apiKey: string, name: string): void
  server(apiKey: string, name: string): SimServer | undefined
  addRental(apiKey: string, serverName: string, rental: SimRental): void
  updateRental(id: number, patch: Partial<SimRental>): void
  removeRental(id: number): void
  setRates(rates: Record<string, number>): void
  /** Resolves once the listener is closed or open again. */
  setMode(mode: Mode): Promise<void>
  clearRequests(): void
  stop(): Promise<void>
}

const REDACTED = '[redacted]'

/**
 * The body as the log keeps it: parsed JSON, else the raw text, null when empty. Exact except for
 * keys: an `api_key` field at any depth, an `api_key=` or `"api_key": "…"` in text that is not JSON,
 * and the caller's own key wherever it appears read "[redacted]".
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

export async function startMarketplaceB(options: Options = {}): Promise<MarketplaceBSim> {
  const hostname = options.hostname ?? '127.0.0.1'
  const interval = options.requestIntervalMs ?? 1000
  const spotRules = { lowerIntervalMs: options.spotLowerIntervalMs ?? 600_000, maxLowerStep: options.spotMaxLowerStep ?? { bitcoin: 0.000001 } }
  const owners = new Map<string, SimOwner>()
  for (const [key, o] of Object.entries(options.owners ?? {})) owners.set(key, { ...structuredClone(o), servers: structuredClone(o.servers ?? []) })
  let rates = { ...(options.currencyRatesInUsd ?? { 'USD-Blockchain': 1, 'CLORE-Blockchain': 0.0025 }) }
  const lastAllowed = new Map<string, number>()
  const requests: LoggedRequest[] = []
  let mode: Mode = 'ok'

  const ownerOf = (apiKey: string) => {
    const o = owners.get(apiKey)
    if (!o) throw new Error('marketplace_b sim: no owner for that key')
    return o
  }
  const allRentals = () => [...owners.values()].flatMap((o) => o.servers.flatMap((s) => (s.rentals ?? []).map((r) => ({ r, s }))))
  const keyLabel = (key: string | null) =>
    key === null ? null : (owners.get(key)?.label ?? `sha256:${createHash('sha256').update(key).digest('hex').slice(0, 12)}`)

  function readJson(req: Req): Json | null {
    if (req.body === '') return {}
    try {
      const v = JSON.parse(req.body)
      return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : null
    } catch {
      return null
    }
  }

  function route(req: Req, key: string, owner: SimOwner): Json {
    const url = req.url
    const endpoint = `${req.method} ${url.pathname}`
    if (endpoint === 'GET /v1/my_servers')
      return { servers: owner.servers.map((s) => myServersEntry(s, options.myServersIncludeId ?? false)), limit: owner.limit ?? 16, code: 0 }
    if (endpoint === 'GET /v1/marketplace') {
      const servers = [...owners.values()].flatMap((o) =>
        o.servers.filter((s) => s.visibility === 'public' && s.id !== undefined).map((s) => marketplaceEntry(s, o)),
      )
      return { servers, my_servers: owner.servers.flatMap((s) => (s.id === undefined ? [] : [s.id])), code: 0 }
    }
    if (endpoint === 'GET /v1/spot_marketplace') {
      const id = Number(url.searchParams.get('market'))
      if (!url.searchParams.has('market') || !Number.isInteger(id)) return { code: 2 }
      const server = [...owners.values()].flatMap((o) => o.servers).find((s) => s.id === id)
      return server ? { ...spotMarket(server, key, rates), code: 0 } : { exists: false, code: 0 }
    }
    if (endpoint === 'GET /v1/wallets') return { wallets: structuredClone(owner.wallets ?? []), code: 0 }
    if (endpoint === 'GET /v1/poh_balance') {
      const items = structuredClone(owner.poh?.items ?? [])
      return { items, ...(owner.poh ? { balance: structuredClone(owner.poh.balance) } : {}), count: items.length, code: 0 }
    }
    if (endpoint === 'GET /v1/my_orders') {
      const completed = url.searchParams.get('return_completed') === 'true'
      const orders = allRentals().filter(({ r }) => r.renter === key && (completed || !r.expired))
      return { orders: orders.map(({ r, s }) => orderEntry(r, s)), code: 0 }
    }
    const body = readJson(req)
    if (endpoint === 'GET /v1/server_config') {
      const server = owner.servers.find((s) => s.name === body?.server_name)
      return server ? { ...serverConfigBody(server), code: 0 } : { code: 2 }
    }
    const isPost = req.method === 'POST'
    if (isPost && url.pathname === '/v1/set_server_settings') return body ? setServerSettings(body, owner.servers) : { code: 2 }
    const mine = (id: unknown) => allRentals().find(({ r }) => r.id === id && r.renter === key)?.r
    if (isPost && url.pathname === '/v1/set_spot_price') return body ? setSpotPrice(body, mine(body.order_id), spotRules, Date.now()) : { code: 2 }
    if (isPost && url.pathname === '/v1/cancel_order') return body ? cancelOrder(mine(body.id)) : { code: 2 }
    return { code: 4 }
  }

  /** Orders past their length have ended (a test moving the clock sees the rental end). */
  function expireOrders(): void {
    const nowS = (options.clock ?? Date.now)() / 1000
    for (const { r } of allRentals()) if (!r.expired && r.ct !== undefined && r.mrl !== undefined && r.ct + r.mrl * 3600 <= nowS) r.expired = true
  }

  async function handle(req: Req, at: number): Promise<{ status: number; body: Json }> {
    expireOrders()
    const key = req.key
    const sent = loggedBody(req.body, key ? [key] : [])
    const reply = (body: Json, forced?: number) => {
      const code = body.code as number
      const status = forced ?? (code === 0 ? 200 : (options.httpStatusFor?.[code] ?? 200))
      requests.push({ method: req.method, path: req.url.pathname + req.url.search, key: keyLabel(key), status, code, at, body: sent })
      return { status, body }
    }
    if (mode === 'slow') await Bun.sleep(options.slowMs ?? 3000)
    if (mode === '5xx') return reply({ code: 1, error: 'simulated server failure' }, 500)
    const owner = key === null ? undefined : owners.get(key)
    if (key === null || !owner) return reply({ code: 3 })
    if (interval > 0) {
      const last = lastAllowed.get(key)
      if (last !== undefined && at - last < interval) return reply({ code: 5 })
      lastAllowed.set(key, at)
    }
    return reply(route(req, key, owner))
  }

  function onRequest(message: IncomingMessage, res: ServerResponse) {
    const at = Date.now()
    const chunks: Buffer[] = []
    message.on('data', (c: Buffer) => chunks.push(c))
    message.on('end', async () => {
      const auth = message.headers.auth
      const req = {
        method: message.method ?? 'GET',
        url: new URL(message.url ?? '/', 'http://sim'),
        key: typeof auth === 'string' ? auth : null,
        body: Buffer.concat(chunks).toString(),
      }
      const { status, body } = await handle(req, at)
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
    })
  }

  const serve = (port: number) =>
    new Promise<Server>((resolve, reject) => {
      const s = createServer(onRequest)
      s.once('error', reject)
      s.listen(port, hostname, () => resolve(s))
    })
  const close = (s: Server) =>
    new Promise<void>((resolve) => {
      s.close(() => resolve())
      s.closeAllConnections()
    })
  let server: Server | null = await serve(options.port ?? 0)
  const port = (server.address() as { port: number }).port
  let switching = Promise.resolve()

  return {
    url: `http://${hostname}:${port}`,
    requests,
    addOwner: (apiKey, o) => void owners.set(apiKey, { ...structuredClone(o), servers: structuredClone(o.servers ?? []) }),
    updateOwner: (apiKey, patch) => void Object.assign(ownerOf(apiKey), structuredClone(patch)),
    removeOwner: (apiKey) => void owners.delete(apiKey),
    putServer(apiKey, s) {
      const o = ownerOf(apiKey)
      o.servers = [...o.servers.filter((x) => x.name !== s.name), structuredClone(s)]
    },
    updateServer(apiKey, name, patch) {
      const s = ownerOf(apiKey).servers.find((x) => x.name === name)
      if (!s) throw new Error(`marketplace_b sim: no server ${name}`)
      for (const [k, v] of Object.entries(patch)) {
        if (v === undefined) delete (s as unknown as Json)[k]
        else (s as unknown as Json)[k] = structuredClone(v)
      }
    },
    removeServer(apiKey, name) {
      const o = ownerOf(apiKey)
      o.servers = o.servers.filter((x) => x.name !== name)
    },
    server: (apiKey, name) => structuredClone(ownerOf(apiKey).servers.find((x) => x.name === name)),
    addRental(apiKey, serverName, rental) {
      const s = ownerOf(apiKey).servers.find((x) => x.name === serverName)
      if (!s) throw new Error(`marketplace_b sim: no server ${serverName}`)
      s.rentals = [...(s.rentals ?? []), structuredClone(rental)]
    },
    updateRental(id, patch) {
      const found = allRentals().find(({ r }) => r.id === id)
      if (!found) throw new Error(`marketplace_b sim: no rental ${id}`)
      Object.assign(found.r, structuredClone(patch))
    },
    removeRental(id) {
      for (const { s } of allRentals().filter(({ r }) => r.id === id)) s.rentals = (s.rentals ?? []).filter((r) => r.id !== id)
    },
    setRates: (r) => void (rates = { ...r }),
    setMode(next) {
      mode = next
      // 'unreachable' closes the listener and every open connection: connects are refused.
      switching = switching.then(async () => {
        if (mode === 'unreachable' && server) {
          const s = server
          server = null
          await close(s)
        } else if (mode !== 'unreachable' && !server) server = await serve(port)
      })
      return switching
    },
    clearRequests: () => void requests.splice(0),
    async stop() {
      await switching
      if (server) await close(server)
      server = null
    },
  }
}
