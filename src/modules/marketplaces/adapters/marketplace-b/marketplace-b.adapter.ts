import { decimalToMicrosFloor, formatMoney, parseDecimal } from '../../../../platform/money'
import { type CloreServer, cloreMarketOffers, mapCloreServer } from './marketplace-b.mapping'
import { cloreWire, type Json } from './marketplace-b.wire'
import {
  type AccountIdentity,
  type AdapterOptions,
  type MachineRef,
  type MarketplaceAdapter,
  MarketplaceError,
  type RemoteMachine,
  type WalletRead,
} from '../marketplaces.adapter'

/**
 * marketplace_b speaks Clore.ai's host API (reference sections 2.1–2.2). The key is checked with
 * `my_servers` (code 3 = invalid key). Clore has no "who am I" call: the owner is Clore's numeric
 * user id, the `owner` of any server of ours in `marketplace` (whose `my_servers` lists our ids); an
 * owner with no public server is named by the deposit address of their first wallet instead,
 * which is as stable and as account-wide. The holding programme (PoH, `poh_balance`, a third-party
 * documented read) is CLORE; its USD value uses `spot_marketplace`'s `currency_rates_in_usd`, the
 * only exchange-rate source a key can read, and stays null when either read is missing.
 */

/** A coin balance as plain decimal text, cut (never rounded up) to 12 decimals; null when not a non-negative number. */
function coinText(v: unknown): string | null {
  const d = parseDecimal(v)
  if (!d || d.units < 0n) return null
  const scale = Math.min(d.scale, 12)
  const units = d.units / 10n ** BigInt(d.scale - scale)
  const digits = units.toString().padStart(scale + 1, '0')
  const whole = digits.slice(0, digits.length - scale)
  const frac = digits.slice(digits.length - scale).replace(/0+$/, '')
  return frac === '' ? whole : `${whole}.${frac}`
}

const objects = (v: unknown): Json[] => (Array.isArray(v) ? v.filter((x): x is Json => typeof x === 'object' && x !== null && !Array.isArray(x)) : [])
const ids = (v: unknown): number[] => (Array.isArray(v) ? v.filter((x): x is number => Number.isSafeInteger(x)) : [])

/** Clore addresses a server by its name (the projection's hostname). */
function serverName(machine: MachineRef): string {
  if (!machine.name) throw new MarketplaceError('marketplace_b', 'refused', 'the marketplace_b server has no known name to address it by')
  return machine.name
}

export function createMarketplaceBAdapter(options: AdapterOptions): MarketplaceAdapter {
  const wire = cloreWire(options)

  /** A read that only adds detail: anything but a rejected key leaves it unread (null). */
  async function optional(apiKey: string, operation: string, endpoint: string, body?: Json): Promise<Json | null> {
    try {
      return await wire.get(apiKey, operation, endpoint, body)
    } catch (e) {
      if (e instanceof MarketplaceError && e.failure !== 'rejected_key') return null
      throw e
    }
  }

  async function holdingUsd(apiKey: string, serverIds: number[]): Promise<string | null> {
    const poh = await optional(apiKey, 'account.holding', 'poh_balance')
    const total = parseDecimal((poh?.balance as Json | undefined)?.total)
    if (!total || serverIds.length === 0) return null
    const spot = await optional(apiKey, 'account.rates', `spot_marketplace?market=${serverIds[0]}`)
    const rates = ((spot?.market as Json | undefined)?.currency_rates_in_usd ?? null) as Json | null
    const rate = parseDecimal(rates?.['CLORE-Blockchain'])
    if (!rate) return null
    const micros = decimalToMicrosFloor({ units: total.units * rate.units, scale: total.scale + rate.scale })
    return micros === null ? null : formatMoney(micros)
  }

  return {
    marketplace: 'marketplace_b',

    async verifyKey(apiKey: string): Promise<AccountIdentity> {
      const mine = objects((await wire.get(apiKey, 'account.verify', 'my_servers')).servers)
      const market = mine.length > 0 ? await optional(apiKey, 'account.owner', 'marketplace') : null
      const myIds = ids(market?.my_servers)
      const ownerId = objects(market?.servers).find((s) => myIds.includes(s.id as number) && Number.isSafeInteger(s.owner))?.owner
      let owner = ownerId === undefined ? null : `user ${ownerId}`
      if (owner === null) {
        const deposit = objects((await optional(apiKey, 'account.wallets', 'wallets'))?.wallets).find((w) => typeof w.deposit === 'string')?.deposit
        owner = deposit === undefined ? 'unknown' : `wallet ${String(deposit).slice(0, 100)}`
      }
      return { owner, holdingUsd: await holdingUsd(apiKey, myIds) }
    },

    async listMachines(apiKey: string): Promise<RemoteMachine[]> {
      // Every read here is required: a listing with a silently missing part would show nulls the
      // platform never sent. Any failure fails the listing (the sync retries later).
      const entries = objects((await wire.get(apiKey, 'servers.list', 'my_servers')).servers)
      const servers: CloreServer[] = []
      for (const entry of entries) {
        // The documented my_servers has no id; server_config (keyed by name) carries it.
        const config = typeof entry.name === 'string' ? await wire.get(apiKey, 'servers.config', 'server_config', { server_name: entry.name }) : null
        servers.push({ entry, config: (config?.config as Json | undefined) ?? null, market: null, spot: null })
      }
      const idOf = (s: CloreServer) => [s.entry.id, s.config?.id].find((v): v is number => Number.isSafeInteger(v)) ?? null
      if (servers.some((s) => idOf(s) !== null)) {
        const market = await wire.get(apiKey, 'servers.market', 'marketplace')
        const byId = new Map(objects(market?.servers).map((m) => [m.id, m]))
        for (const s of servers) {
          const id = idOf(s)
          if (id === null) continue
          s.market = byId.get(id) ?? null
          const spot = await wire.get(apiKey, 'servers.spot', `spot_marketplace?market=${id}`)
          s.spot = spot?.exists === false ? null : spot
        }
      }
      return servers.map(mapCloreServer)
    },

    async publishOffer(apiKey, offer) {
      if (offer.marketplace !== 'marketplace_b') throw new Error('marketplace_b adapter given a marketplace_a offer')
      await wire.post(apiKey, 'offer.publish', 'set_server_settings', offer.settings)
      return { extendedContracts: null }
    },

    /** Clore has no unlist endpoint: `availability: false` hides the server (reference 2.3). */
    async withdrawOffer(apiKey, machine) {
      await wire.post(apiKey, 'offer.withdraw', 'set_server_settings', { name: serverName(machine), availability: false })
    },

    /** Clore has no maintenance API (reference 2.3). */
    maintenance: null,
    // Clore's API reads a background job (server_config) but documents no call that sets one (docs/marketplaces.md "Idle jobs").
    idleJob: null,

    /** Clore has no host earnings endpoint (reference 2.3). */
    dayEarnings: null,
    /** Clore has no host endpoint for renter reports (docs/marketplaces.md "Renter reports"). */
    machineReports: null,
    /** Clore has no payout history in its public API (reference 2.3): only the wallets below. */
    payouts: null,

    /**
     * `GET /v1/wallets`: `{wallets: [{name, deposit, balance, withdrawal_fee}]}`, the balance per
     * coin (`name` as Clore spells it: bitcoin, CLORE-Blockchain, USD-Blockchain). A wallet without
     * a name or a readable balance is left out.
     */
    async wallets(apiKey): Promise<WalletRead[]> {
      const out: WalletRead[] = []
      for (const w of objects((await wire.get(apiKey, 'account.wallets', 'wallets')).wallets)) {
        const balance = coinText(w.balance)
        if (typeof w.name === 'string' && w.name !== '' && balance !== null) out.push({ currency: w.name.slice(0, 64), balance })
      }
      return out
    },

    /** The public `marketplace` listing, priced in USD with the rates `spot_marketplace` publishes. */
    async listMarket(apiKey) {
      if (apiKey === null) throw new MarketplaceError('marketplace_b', 'unavailable', 'marketplace_b needs an API key to read its market')
      const servers = objects((await wire.get(apiKey, 'market.list', 'marketplace')).servers)
      const firstId = servers.map((s) => s.id).find((id): id is number => Number.isSafeInteger(id))
      const spot = firstId === undefined ? null : await optional(apiKey, 'market.rates', `spot_marketplace?market=${firstId}`)
      const rates = ((spot?.market as Json | undefined)?.currency_rates_in_usd ?? null) as Json | null
      return cloreMarketOffers(servers, rates)
    },

    readHolding(apiKey: string, machines: RemoteMachine[]): Promise<string | null> {
      // A machine whose id Clore never told is known by its name (the hostname) instead.
      const known = machines
        .filter((m) => m.externalMachineId !== m.remote.hostname)
        .map((m) => Number(m.externalMachineId))
        .filter((id) => Number.isSafeInteger(id) && id > 0)
      return holdingUsd(apiKey, known)
    },
  }
}
