import { startMarketplaceA } from './marketplace-a'

/**
 * `bun run sim:marketplace-a`: the Vast.ai host-API simulator on loopback (PORT, or a free port),
 * seeded with one demo owner (key `sim-demo-key-a`) and two machines. Never in production.
 */

if (process.env.NODE_ENV === 'production') {
  console.error('sim:marketplace-a: refusing to start with NODE_ENV=production (the simulator is for development and tests only)')
  process.exit(1)
}

const sim = await startMarketplaceA({
  port: Number(process.env.PORT ?? 0) || 0,
  owners: [{ id: 456, email: 'demo-host@example.com', username: 'demo-host', credit: 0, keys: [{ key: 'sim-demo-key-a', label: 'demo' }] }],
})
sim.putMachine(456, 67890, {
  hostname: 'demo-host-1',
  listed: true,
  verification: 'verified',
  reliability2: 0.9701771,
  gpu_name: 'RTX 4090',
  num_gpus: 8,
  gpu_ram: 24564,
  gpu_occupancy: 'x x x x x x x x ',
  listed_gpu_cost: 0.43,
  min_bid_price: 0.3,
  bid_gpu_cost: null,
  listed_storage_cost: 0.3,
  listed_inet_up_cost: 0.005,
  listed_inet_down_cost: 0.005,
  end_date: Math.floor(Date.now() / 1000) + 30 * 86400,
  timeout: 0,
})
sim.putMachine(456, 67891, { hostname: 'demo-host-2', listed: false, verification: 'unverified', gpu_name: 'RTX 3090', num_gpus: 4 })
console.log(`marketplace_a simulator listening on ${sim.url} (demo key: sim-demo-key-a)`)
