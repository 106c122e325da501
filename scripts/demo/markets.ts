import { startMarketplaceA, type MarketplaceASim } from '../sim/marketplace-a'
import { startMarketplaceB, type MarketplaceBSim } from '../sim/marketplace-b'
import {
  CLORE_KEY,
  CLORE_MARKET,
  CLORE_RATES,
  DEMO_SERVERS,
  type DemoServer,
  marketName,
  VAST_COMMISSION_PERCENT,
  VAST_KEY,
  VAST_MARKET,
  VAST_OTHER_INCOME_PER_DAY,
  VAST_OWNER,
} from './plan'

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
        // What Vast's self-test pre-flight reads (docs/readiness.md): every machine meets it but the plan's `selfTestMiss`.
        cuda_max_good: 12.4,
        driver_version: '550.54.15',
        direct_port_count: 200,
        pcie_bw: 24.6,
        gpu_total_ram: s.memoryMb * s.gpus,
        cpu_ram: Math.ceil(s.memoryMb * s.gpus * 1.5),
        cpu_cores: Math.max(32, 4 * s.gpus),
        ...s.selfTestMiss,
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
        cuda_version: '12.4',
        reliability: 0.992,
        specs: {
          cpu: 'AMD EPYC 7302',
          cpus: '16/32',
          ram: 128,
          gpu: `${s.gpus}x ${s.model}`,
          gpuram: Math.round(s.memoryMb / 1024),
          net: { up: 480, down: 940, cc: 'NL' },
        },
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

/** The demo's one renter report: on rig-02, whose renter rents two of its cards. */
const REPORTED_SERVER = 'rig-02'

/**
 * A renter reports rig-02's machine, dated `nowUs` (after the machines were linked): the next
 * marketplaces.sync reads it from the simulator, keeps it, and opens a `renter_report` alert with an
 * `error` notification (docs/marketplaces.md "Renter reports"). The words are the example of Vast's
 * OpenAPI for the endpoint.
 */
export function reportRenterProblem(m: DemoMarkets, nowUs: number): void {
  const listing = DEMO_SERVERS.find((s) => s.name === REPORTED_SERVER)?.listing
  if (listing?.marketplace !== 'marketplace_a') throw new Error(`the demo plan lists ${REPORTED_SERVER} on no marketplace_a machine`)
  m.a.setReports(listing.machineId, [
    { problem: 'Machine Performance Is Less Than Expected', message: 'GPU utilization is inconsistent.', created_at: nowUs / 1_000_000 },
  ])
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

const DAY_MS = 86_400_000
const KEEP = 1 - VAST_COMMISSION_PERCENT / 100
type VastEarning = { machine_id: number; day: number; gpu_earn: number; sto_earn: number; bwu_earn: number; bwd_earn: number }

/**
 * Vast's machine-earnings for one machine over [fromMs, toMs) at `gpuUsdPerHour` (what its renters
 * pay for the cards), cut at each UTC midnight: the GPUs' share after Vast's cut, and the storage and
 * bandwidth income of that time.
 */
function earningsOver(machineId: number, fromMs: number, toMs: number, gpuUsdPerHour: number): VastEarning[] {
  const out: VastEarning[] = []
  for (let start = fromMs; start < toMs; ) {
    const day = Math.floor(start / DAY_MS)
    const end = Math.min(toMs, (day + 1) * DAY_MS)
    const share = (end - start) / DAY_MS
    out.push({
      machine_id: machineId,
      day,
      gpu_earn: ((gpuUsdPerHour * (end - start)) / 3_600_000) * KEEP,
      sto_earn: VAST_OTHER_INCOME_PER_DAY.sto_earn * share,
      bwu_earn: VAST_OTHER_INCOME_PER_DAY.bwu_earn * share,
      bwd_earn: VAST_OTHER_INCOME_PER_DAY.bwd_earn * share,
    })
    start = end
  }
  return out
}

type PastSpell = { fromUs: number; toUs: number; deals: { priceDay: string | null }[] }

/**
 * Vast's own machine-earnings report (what `earnings.sample` reads as `earn_usd_day`) for the
 * demo's past: the very rentals the history accrued (`backfillEarnings`' spells), each at the price
 * its renters paid, less Vast's cut (VAST_COMMISSION_PERCENT), plus storage and bandwidth income.
 * Made from the rentals, never from gpuhq's accrual, so the two can be checked against each other.
 */
export function reportVastEarnings(m: DemoMarkets, spells: Map<string, PastSpell[]>): void {
  const rows: VastEarning[] = []
  for (const s of DEMO_SERVERS) {
    const l = s.listing
    if (l?.marketplace !== 'marketplace_a') continue
    for (const spell of spells.get(s.name) ?? []) {
      const perHour = spell.deals.reduce((sum, d) => sum + Number(d.priceDay ?? 0) / 24, 0)
      rows.push(...earningsOver(l.machineId, spell.fromUs / 1000, spell.toUs / 1000, perHour))
    }
  }
  m.a.addEarnings(VAST_OWNER, rows)
}

/**
 * Vast's meter from `startMs` on: every `everyMs` each marketplace_a machine earns what its running
 * rentals pay now (the cards × the machine's listed price, the minimum bid for interruptible ones),
 * less Vast's cut, plus its storage and bandwidth income, added to the day's machine-earnings. So
 * the platform's figure follows the rentals the churn starts and ends, as Vast's does. Answers the
 * function that stops it (after a last reading).
 */
export function meterVastEarnings(m: DemoMarkets, startMs: number, everyMs: number): () => void {
  let last = startMs
  const read = () => {
    const now = Date.now()
    const rows: VastEarning[] = []
    for (const s of DEMO_SERVERS) {
      const l = s.listing
      if (l?.marketplace !== 'marketplace_a') continue
      const billing = m.a.billing(l.machineId)
      if (!billing) continue
      const perHour = billing.rentals
        .filter((r) => r.running)
        .reduce((sum, r) => sum + r.gpus * ((r.kind === 'interruptible' ? billing.minBidHour : billing.priceGpuHour) ?? 0), 0)
      rows.push(...earningsOver(l.machineId, last, now, perHour))
    }
    if (now > last) m.a.addEarnings(VAST_OWNER, rows)
    last = Math.max(last, now)
  }
  read()
  const timer = setInterval(read, everyMs)
  return () => clearInterval(timer)
}
