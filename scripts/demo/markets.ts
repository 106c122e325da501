import { startMarketplaceA, type MarketplaceASim } from '../sim/marketplace-a'
import { startMarketplaceB, type MarketplaceBSim } from '../sim/marketplace-b'
import { CLORE_KEY, CLORE_MARKET, CLORE_RATES, DEMO_SERVERS, type DemoServer, marketName, VAST_KEY, VAST_MARKET, VAST_OWNER } from './plan'

/**
 * Both marketplace simulators, in this process on loopback, holding the demo owner's machines as
 * the plan lists them and other hosts' offers around them. Their rate limits are a tenth of the
 * platforms' (the demo paces its calls at MARKETPLACE_PACE_PERCENT=10, so it never meets them).
 * `churn` then ends and starts rentals now and then, so the sync sees rentals come and go.
 */
export type DemoMarkets = {
  a: MarketplaceASim
  b: MarketplaceBSim
  /** The rentals running on each marketplace_a machine (the simulator's ids). */
  vastRentals: Map<number, number[]>
  stop: () => Promise<void>
}

const listed = (s: DemoServer) => s.listing !== undefined

export async function startDemoMarkets(): Promise<DemoMarkets> {
  const a = await startMarketplaceA({
    rateScale: 0.05,
    owners: [{ id: VAST_OWNER, email: 'demo-host@example.com', username: 'demo-host', credit: 0, keys: [{ key: VAST_KEY, label: 'demo' }] }],
  })
  const b = await startMarketplaceB({
    requestIntervalMs: 50,
    currencyRatesInUsd: CLORE_RATES,
    owners: {
      [CLORE_KEY]: { label: 'demo', userId: 4, wallets: [{ name: 'CLORE-Blockchain', deposit: 'demo-address', balance: 1500, withdrawal_fee: 1 }] },
      // Other hosts: their public servers are the market every key sees.
      'sim-marketplace-b-market-key': {
        label: 'market',
        userId: 99,
        servers: CLORE_MARKET.map((m, i) => ({
          name: `market-${i + 1}`,
          id: 9001 + i,
          connected: true,
          online: true,
          visibility: 'public' as const,
          pricing: { 'USD-Blockchain': m.usdPerDay },
          specs: { gpu: `${m.gpus}x ${m.gpu}` },
          rentals: [],
        })),
      },
    },
  })
  const nowS = Math.floor(Date.now() / 1000)
  const vastRentals = new Map<number, number[]>()
  for (const s of DEMO_SERVERS.filter(listed)) {
    const l = s.listing!
    if (l.marketplace === 'marketplace_a') {
      // Listed at the plan's prices; the offer the demo publishes through gpuhq then re-states them.
      a.putMachine(VAST_OWNER, l.machineId, {
        hostname: s.name,
        listed: true,
        verification: 'verified',
        reliability2: 0.985,
        gpu_name: marketName(s.model),
        num_gpus: s.gpus,
        gpu_ram: s.memoryMb,
        listed_gpu_cost: l.priceGpuHour,
        min_bid_price: l.minBidHour,
        listed_storage_cost: 0.15,
        listed_inet_up_cost: 0.002,
        listed_inet_down_cost: 0.002,
        listed_min_gpu_count: 1,
        end_date: nowS + 60 * 86400,
        disk_space: 1800,
        inet_up: 850,
        inet_down: 920,
        geolocation: s.group === 'Frankfurt' ? 'Germany, DE' : 'Netherlands, NL',
        timeout: 0,
      })
      vastRentals.set(
        l.machineId,
        l.rented.map((r) => a.addRental(l.machineId, { kind: r.kind, gpus: r.gpus, running: true, end_date: nowS + 3 * 86400 })),
      )
    } else {
      b.putServer(CLORE_KEY, {
        name: s.name,
        id: l.id,
        connected: true,
        online: true,
        initialized: true,
        visibility: 'public',
        pricing: l.pricing,
        mrl: 96,
        allowed_currencies: Object.keys(l.pricing),
        specs: { cpu: 'AMD EPYC 7302', ram: 128, gpu: `${s.gpus}x ${s.model}`, gpuram: Math.round(s.memoryMb / 1024), net: { up: 480, down: 940, cc: 'NL' } },
        rentals: [],
      })
      if (l.order) b.addRental(CLORE_KEY, s.name, { id: l.id * 10, spot: l.order.spot, currency: l.order.currency, price: l.order.pricePerDay, mrl: 96 })
    }
  }
  let ask = 880_001
  for (const [model, prices] of Object.entries(VAST_MARKET))
    for (const dph of prices) {
      const id = ask++
      a.addMarketOffer({ id, machine_id: id - 800_000, host_id: 7000 + (id % 97), gpu_name: model, num_gpus: 1, dph_base: dph, dph_total: dph, rentable: true })
    }
  return {
    a,
    b,
    vastRentals,
    stop: async () => {
      await a.stop()
      await b.stop()
    },
  }
}

/**
 * Renters come and go: every `everyMs` the next listed machine in turn loses its rentals, or, when
 * it had none, gets a renter for half its cards (marketplace_a) or the whole server (marketplace_b).
 * The next `marketplaces.sync` sees the change (a `marketplace.rental_*` event, a `rental`
 * notification, accrual starting or stopping). Answers the function that stops it.
 */
export function churnRentals(m: DemoMarkets, everyMs: number): () => void {
  const listings = DEMO_SERVERS.filter(listed)
  let turn = 0
  let nextOrder = 700_000
  const timer = setInterval(() => {
    const s = listings[turn++ % listings.length]!
    const l = s.listing!
    if (l.marketplace === 'marketplace_a') {
      const running = m.vastRentals.get(l.machineId) ?? []
      for (const id of running) m.a.removeRental(id)
      m.vastRentals.set(
        l.machineId,
        running.length > 0
          ? []
          : [m.a.addRental(l.machineId, { kind: 'on_demand', gpus: Math.ceil(s.gpus / 2), running: true, end_date: Math.floor(Date.now() / 1000) + 86400 })],
      )
    } else {
      const server = m.b.server(CLORE_KEY, s.name)
      const running = (server?.rentals ?? []).filter((r) => !r.expired)
      if (running.length > 0) for (const r of running) m.b.removeRental(r.id)
      else
        m.b.addRental(CLORE_KEY, s.name, { id: nextOrder++, spot: false, currency: Object.keys(l.pricing)[0]!, price: Object.values(l.pricing)[0]!, mrl: 96 })
    }
  }, everyMs)
  return () => clearInterval(timer)
}

export type EarningsRow = { day: string; server_id: string; marketplace: string; earn_usd_accrued: string }

/**
 * Vast's own machine-earnings report for the days given (what `earnings.sample` reads as
 * `earn_usd_day`): what the accrual counted on each machine, less Vast's 25 % cut, plus a little
 * storage income. The demo reports yesterday and today so both figures show side by side.
 */
export function reportVastEarnings(m: DemoMarkets, ids: Map<string, string>, rows: EarningsRow[]): void {
  const machineOf = new Map<string, number>()
  for (const s of DEMO_SERVERS) if (s.listing?.marketplace === 'marketplace_a') machineOf.set(ids.get(s.name)!, s.listing.machineId)
  m.a.addEarnings(
    VAST_OWNER,
    rows.flatMap((r) => {
      const machine = machineOf.get(r.server_id)
      if (r.marketplace !== 'marketplace_a' || machine === undefined) return []
      const gpu = Math.round(Number(r.earn_usd_accrued) * 0.75 * 100) / 100
      return [{ machine_id: machine, day: Date.parse(`${r.day}T00:00:00Z`) / 86_400_000, gpu_earn: gpu, sto_earn: 0.36, bwu_earn: 0.05, bwd_earn: 0.02 }]
    }),
  )
}
