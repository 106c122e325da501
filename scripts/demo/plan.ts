/**
 * What the demo shows, as data: a dozen GPU servers (their cards, their role, where they are
 * listed and who rents them now) and the rest of each marketplace's market around them. The
 * simulators, the agents and the history are all made from this one description.
 */

type Kind = 'on_demand' | 'interruptible' | 'reserved'

/** A machine on marketplace_a (Vast): per-GPU prices in USD per hour; `rented` are the clients on it now. */
type VastListing = { marketplace: 'marketplace_a'; machineId: number; priceGpuHour: number; minBidHour: number; rented: { kind: Kind; gpus: number }[] }

/** A server on marketplace_b (Clore): per-day prices for the whole server per coin; `order` is the rental on it now. */
type CloreListing = {
  marketplace: 'marketplace_b'
  id: number
  pricing: Record<string, number>
  order: { spot: boolean; currency: string; pricePerDay: number } | null
}

export type DemoServer = {
  /** The hostname its agent reports, which names the server. */
  name: string
  model: string
  gpus: number
  memoryMb: number
  maxPowerW: number
  /** hot: runs at 86–92 °C (a temperature alert); flapping: connects and disconnects about every minute; offline: enrolled, then gone. */
  role?: 'hot' | 'flapping' | 'offline'
  group: 'Frankfurt' | 'Amsterdam'
  tags: string[]
  /** Its own electricity tariff (USD per kWh), where it differs from the fleet's. */
  electricity?: string
  enrolledDaysAgo: number
  listing?: VastListing | CloreListing
  /**
   * Where its marketplace_a machine misses Vast's self-test bar (docs/readiness.md): the machine
   * fields that fail, so readiness shows it not ready and why. Unset: every field meets the bar.
   */
  selfTestMiss?: { pcie_bw?: number; direct_port_count?: number }
}

export const VAST_OWNER = 456
export const VAST_KEY = 'sim-demo-key-a'
export const CLORE_KEY = 'sim-marketplace-b-demo-key'
export const CLORE_RATES = { bitcoin: 60000, 'CLORE-Blockchain': 0.0025, 'USD-Blockchain': 1 }
/**
 * Vast's cut of what renters pay for the GPUs, in percent: the simulator's machine-earnings report
 * is what the rentals paid less this, and the demo enters the same rate in the cost basis, so
 * gpuhq's net estimate and the platform's figure agree (docs/demo.md).
 */
export const VAST_COMMISSION_PERCENT = 25
/** What a Vast machine earns a day besides its GPUs (storage, upload, download), in USD: in the report, never in the accrual. */
export const VAST_OTHER_INCOME_PER_DAY = { sto_earn: 0.36, bwu_earn: 0.05, bwd_earn: 0.02 }

const RTX_4090 = { model: 'NVIDIA GeForce RTX 4090', memoryMb: 24564, maxPowerW: 450 }
const RTX_3090 = { model: 'NVIDIA GeForce RTX 3090', memoryMb: 24576, maxPowerW: 350 }

export const DEMO_SERVERS: DemoServer[] = [
  {
    name: 'rig-01',
    ...RTX_4090,
    gpus: 8,
    group: 'Frankfurt',
    tags: ['site:fra-1', 'owned'],
    enrolledDaysAgo: 7,
    listing: { marketplace: 'marketplace_a', machineId: 50101, priceGpuHour: 0.38, minBidHour: 0.25, rented: [{ kind: 'on_demand', gpus: 6 }] },
  },
  {
    name: 'rig-02',
    ...RTX_4090,
    gpus: 4,
    group: 'Frankfurt',
    tags: ['site:fra-1', 'owned'],
    enrolledDaysAgo: 7,
    listing: { marketplace: 'marketplace_a', machineId: 50102, priceGpuHour: 0.52, minBidHour: 0.3, rented: [{ kind: 'interruptible', gpus: 2 }] },
  },
  {
    name: 'rig-03',
    ...RTX_3090,
    gpus: 4,
    group: 'Frankfurt',
    tags: ['site:fra-1', 'owned'],
    enrolledDaysAgo: 7,
    listing: { marketplace: 'marketplace_a', machineId: 50103, priceGpuHour: 0.22, minBidHour: 0.15, rented: [{ kind: 'on_demand', gpus: 4 }] },
  },
  {
    name: 'rig-04',
    model: 'NVIDIA A100 80GB PCIe',
    memoryMb: 81920,
    maxPowerW: 300,
    gpus: 2,
    group: 'Frankfurt',
    tags: ['site:fra-1', 'colo'],
    enrolledDaysAgo: 7,
    listing: { marketplace: 'marketplace_a', machineId: 50104, priceGpuHour: 1.1, minBidHour: 0.8, rented: [] },
  },
  {
    name: 'rig-05',
    model: 'NVIDIA H100 80GB HBM3',
    memoryMb: 81559,
    maxPowerW: 700,
    gpus: 8,
    group: 'Frankfurt',
    tags: ['site:fra-1', 'colo'],
    electricity: '0.12',
    enrolledDaysAgo: 7,
    listing: { marketplace: 'marketplace_a', machineId: 50105, priceGpuHour: 2.1, minBidHour: 1.5, rented: [{ kind: 'reserved', gpus: 8 }] },
  },
  {
    name: 'rig-06',
    model: 'NVIDIA L40S',
    memoryMb: 46068,
    maxPowerW: 350,
    gpus: 4,
    group: 'Amsterdam',
    tags: ['site:ams-2', 'colo'],
    enrolledDaysAgo: 7,
    listing: { marketplace: 'marketplace_a', machineId: 50106, priceGpuHour: 0.79, minBidHour: 0.5, rented: [] },
    // Idle for a reason: a riser at PCIe ×1 and too few forwarded ports for four GPUs.
    selfTestMiss: { pcie_bw: 1.9, direct_port_count: 10 },
  },
  {
    name: 'rig-07',
    model: 'NVIDIA RTX A6000',
    memoryMb: 49140,
    maxPowerW: 300,
    gpus: 2,
    role: 'hot',
    group: 'Amsterdam',
    tags: ['site:ams-2', 'owned'],
    enrolledDaysAgo: 7,
    listing: { marketplace: 'marketplace_a', machineId: 50107, priceGpuHour: 0.45, minBidHour: 0.3, rented: [{ kind: 'on_demand', gpus: 2 }] },
  },
  {
    name: 'rig-08',
    ...RTX_4090,
    gpus: 2,
    group: 'Amsterdam',
    tags: ['site:ams-2', 'owned'],
    enrolledDaysAgo: 6,
    listing: {
      marketplace: 'marketplace_b',
      id: 8108,
      pricing: { 'USD-Blockchain': 19.2, bitcoin: 0.00032 },
      order: { spot: false, currency: 'USD-Blockchain', pricePerDay: 19.2 },
    },
  },
  {
    name: 'rig-09',
    model: 'NVIDIA GeForce RTX 3080',
    memoryMb: 10240,
    maxPowerW: 320,
    gpus: 6,
    group: 'Amsterdam',
    tags: ['site:ams-2', 'owned'],
    enrolledDaysAgo: 6,
    listing: {
      marketplace: 'marketplace_b',
      id: 8109,
      pricing: { 'CLORE-Blockchain': 5760 },
      order: { spot: true, currency: 'CLORE-Blockchain', pricePerDay: 5000 },
    },
  },
  {
    name: 'rig-10',
    model: 'NVIDIA GeForce RTX 4080',
    memoryMb: 16376,
    maxPowerW: 320,
    gpus: 1,
    group: 'Amsterdam',
    tags: ['site:ams-2', 'owned'],
    enrolledDaysAgo: 5,
    listing: { marketplace: 'marketplace_b', id: 8110, pricing: { bitcoin: 0.0001 }, order: null },
  },
  { name: 'rig-11', ...RTX_3090, gpus: 2, role: 'flapping', group: 'Amsterdam', tags: ['site:ams-2', 'owned', 'flaky-uplink'], enrolledDaysAgo: 4 },
  {
    name: 'rig-12',
    model: 'NVIDIA GeForce RTX 3060',
    memoryMb: 12288,
    maxPowerW: 170,
    gpus: 1,
    role: 'offline',
    group: 'Amsterdam',
    tags: ['site:ams-2', 'owned'],
    enrolledDaysAgo: 3,
  },
]

/** How Vast and Clore spell a model: the nvidia-smi name without the vendor and brand words. */
export const marketName = (model: string) => model.replace(/^NVIDIA (GeForce )?/, '')

/** Other hosts' asks on Vast, USD per GPU-hour, per model: the market the strategy prices against. */
export const VAST_MARKET: Record<string, number[]> = {
  'RTX 4090': [0.34, 0.4, 0.44, 0.48, 0.55, 0.62],
  'RTX 3090': [0.18, 0.21, 0.25, 0.29],
  'A100 80GB PCIe': [0.95, 1.05, 1.2],
  'H100 80GB HBM3': [1.9, 2.2, 2.45],
  L40S: [0.65, 0.72, 0.85],
  'RTX A6000': [0.38, 0.42, 0.5],
}

/** Other hosts' servers on Clore: GPUs and the USD-Blockchain price per day of the whole server. */
export const CLORE_MARKET: { gpu: string; gpus: number; usdPerDay: number }[] = [
  { gpu: 'NVIDIA GeForce RTX 4090', gpus: 1, usdPerDay: 8.4 },
  { gpu: 'NVIDIA GeForce RTX 4090', gpus: 2, usdPerDay: 21.6 },
  { gpu: 'NVIDIA GeForce RTX 3080', gpus: 4, usdPerDay: 10.6 },
  { gpu: 'NVIDIA GeForce RTX 4080', gpus: 1, usdPerDay: 5.3 },
]
