// `bun run sim:marketplace-b`: the Clore.ai ("marketplace_b") simulator on loopback, for local runs
// and demos. PORT picks the port (any free one otherwise). Refuses to run in production.

import { startMarketplaceB } from './marketplace-b'

if (process.env.NODE_ENV === 'production') {
  console.error('sim:marketplace-b refuses to start: NODE_ENV is production')
  process.exit(1)
}

const DEMO_KEY = 'sim-marketplace-b-demo-key'
const sim = await startMarketplaceB({
  port: process.env.PORT ? Number(process.env.PORT) : 0,
  currencyRatesInUsd: { bitcoin: 60000, 'CLORE-Blockchain': 0.0025, 'USD-Blockchain': 1 },
  owners: {
    [DEMO_KEY]: {
      label: 'demo',
      userId: 4,
      wallets: [{ name: 'CLORE-Blockchain', deposit: 'demo-address', balance: 1500, withdrawal_fee: 1 }],
      servers: [
        {
          name: 'rig-1',
          id: 6,
          connected: true,
          online: true,
          initialized: true,
          visibility: 'public',
          pricing: { bitcoin: 0.0001, 'CLORE-Blockchain': 2000 },
          min_spot_pricing: { bitcoin: 0.00005, 'CLORE-Blockchain': 1000 },
          mrl: 72,
          allowed_currencies: ['bitcoin', 'CLORE-Blockchain'],
          specs: { cpu: 'Intel Core i9-11900', ram: 64, gpu: '1x GeForce GTX 1080 Ti', gpuram: 11, net: { up: 25.24, down: 119.61, cc: 'CZ' } },
          rentals: [],
        },
      ],
    },
  },
})
console.log(`marketplace_b simulator listening at ${sim.url} (API under ${sim.url}/v1; demo auth key: ${DEMO_KEY})`)
