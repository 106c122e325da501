import type { MachineFields, OfferFields } from '../../scripts/sim/marketplace-a.types'
import type { RemoteProjection } from '../../src/modules/marketplaces/adapters/marketplaces.adapter'

/**
 * Machines the marketplace tests set up in the simulators, and what they map to. One copy, so the
 * adapter tests and the API tests (links) check the same mapping against the same machine.
 */

/** A Clore server that sets every field the adapter reads; `owner` runs a spot rental on it, `renter` bid on it. */
export function cloreFullServer(owner: string, renter: string) {
  return {
    name: 'rig-full',
    id: 41,
    connected: true,
    online: true,
    initialized: true,
    visibility: 'public' as const,
    pricing: { bitcoin: 0.00010337, 'CLORE-Blockchain': 2000 },
    min_spot_pricing: { bitcoin: 0.00005168 },
    mrl: 72,
    allowed_currencies: ['bitcoin', 'CLORE-Blockchain'],
    autoprice: { bitcoin: 'usd' as const, 'CLORE-Blockchain': false as const },
    reliability: 0.9871234,
    specs: {
      cpu: 'Intel Core i9-11900',
      ram: 64,
      disk: 'NVMe 512GB',
      gpu: '2x NVIDIA GeForce RTX 4090',
      gpuram: 24,
      pcie_width: 16,
      backend_version: 17,
      net: { up: 25.24, down: 119.61, cc: 'CZ' },
    },
    spot_offers: [{ offer_id: 900, bid: 0.00004, active: false, currency: 'bitcoin', renter }],
    rentals: [{ id: 77, spot: true, currency: 'CLORE-Blockchain', price: 1500, renter: owner }],
    extra: {
      partial_rental: true,
      vpn: false,
      partner: true,
      overclock: true,
      update_channel: 'stable',
      target_backend_version: 18,
      driver_status: 'ok',
      driver_version: '550.54.14',
      kernel: '6.5.0-generic',
      max_fair_price_day: 12.5,
      public_ip: '203.0.113.7',
    },
  }
}

/** A Vast machine that sets every field the adapter reads; its next maintenance starts an hour after `nowS`. */
export function vastFullMachine(nowS: number): MachineFields {
  return {
    hostname: 'rig-01',
    listed: true,
    verification: 'verified',
    reliability2: 0.9701771,
    gpu_name: 'RTX 4090',
    num_gpus: 4,
    gpu_occupancy: 'D I x x ',
    current_rentals_running: 2,
    listed_gpu_cost: 0.43000000000000005,
    min_bid_price: 0.3,
    listed_storage_cost: 0.30000000000000004,
    listed_inet_up_cost: 0.005,
    listed_inet_down_cost: 0.0123456,
    listed_min_gpu_count: 2,
    credit_discount_max: 0.03,
    end_date: 1760907030.0,
    earn_day: 39.188177,
    earn_hour: 3.601685e-5,
    gpu_lanes: 16,
    pcie_bw: 54.2,
    inet_up: 4242.4,
    inet_down: 4593.2,
    direct_port_count: 16385,
    machine_maintenance: [
      { id: 1, machine_id: 501, start_time: nowS - 100_000, duration_hours: 2, maintenance_category: 'power' },
      { id: 2, machine_id: 501, start_time: nowS + 3600, duration_hours: 3, maintenance_category: 'gpu', maintenance_reason: 'swap' },
    ],
    error_description: 'GPU 2 fell off the bus',
    public_ipaddr: '203.0.113.10',
    disk_space: 6436.4,
  }
}

/** What vastFullMachine maps to; the ended maintenance window is passed over for the next one. */
export function vastFullRemote(maintenanceStartsAt: string): RemoteProjection {
  return {
    listed: true,
    verification: 'verified',
    hostname: 'rig-01',
    reliability: 0.9701771,
    rentals_running: 2,
    gpu_name: 'RTX 4090',
    gpu_count: 4,
    gpu_occupancy: 'DIxx',
    gpu_model: 'rtx_4090',
    price_gpu_hour: '0.43',
    min_bid_hour: '0.30',
    price_storage_gb_month: '0.30',
    price_inet_up_tb: '5.00',
    price_inet_down_tb: '12.3456',
    min_gpu_count: 2,
    discount_max: 0.03,
    end_date: '2025-10-19T20:50:30.000000Z',
    ask_duration_seconds: null,
    earnings_day: '39.188177',
    earnings_hour: '0.000036',
    gpu_lanes: 16,
    pcie_bandwidth_gbs: 54.2,
    inet_up_mbps: 4242.4,
    inet_down_mbps: 4593.2,
    direct_port_count: 16385,
    maintenance_announced: true,
    maintenance_starts_at: maintenanceStartsAt,
    maintenance_hours: 3,
    error: 'GPU 2 fell off the bus',
    rentals: [],
  }
}

/** A machine that sets nothing: every field null (never zero), no maintenance, no rentals. */
export const NULL_REMOTE: RemoteProjection = {
  listed: null,
  verification: null,
  hostname: null,
  reliability: null,
  rentals_running: null,
  gpu_name: null,
  gpu_count: null,
  gpu_occupancy: null,
  gpu_model: null,
  price_gpu_hour: null,
  min_bid_hour: null,
  price_storage_gb_month: null,
  price_inet_up_tb: null,
  price_inet_down_tb: null,
  min_gpu_count: null,
  discount_max: null,
  end_date: null,
  ask_duration_seconds: null,
  earnings_day: null,
  earnings_hour: null,
  gpu_lanes: null,
  pcie_bandwidth_gbs: null,
  inet_up_mbps: null,
  inet_down_mbps: null,
  direct_port_count: null,
  maintenance_announced: false,
  maintenance_starts_at: null,
  maintenance_hours: null,
  error: null,
  rentals: [],
}

/** Another host's offer on Vast's market: `num_gpus` cards asking `dph_base` USD an hour in all (its machine is id − 1000, its host 7000 + id). */
export const vastMarketOffer = (id: number, gpu_name: string, num_gpus: number, dph_base: number, rentable = true): Partial<OfferFields> => ({
  id,
  machine_id: id - 1000,
  host_id: 7000 + id,
  gpu_name,
  num_gpus,
  dph_base,
  dph_total: dph_base,
  rentable,
})
