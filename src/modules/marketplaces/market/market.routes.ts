import { describe } from '../../../platform/access'
import { apiRoutes } from '../../../platform/api'
import type { Deps } from '../../../platform/context'
import { requestState } from '../../../platform/http'
import { enforceRateLimit } from '../../../platform/rate-limit'
import { responses } from '../../../platform/schemas'
import { Movement, MovementQuery, Prices, Standing, Stats, StatsQuery, Supply } from './market.model'
import { marketPrices, marketStats, marketSupply, priceMovement, priceStanding } from './market.service'

const tags = ['marketplaces']
const READ = { role: 'viewer', scope: 'marketplaces:read', reach: 'server' } as const
/** Public statistics: per client address, 60 requests a minute. */
const STATS_LIMIT = 60

/** Market data from the snapshots the sync keeps (docs/marketplaces.md "Market data"). */
export function marketRoutes(deps: Deps) {
  return apiRoutes('marketplace-market', deps)
    .get(
      '/marketplaces/stats',
      async ({ request, query, set }) => {
        await enforceRateLimit(deps.db, deps.clock, `market-stats:${requestState(request).ip}`, STATS_LIMIT, 60)
        set.headers['cache-control'] = 'public, max-age=60'
        return marketStats(deps, query)
      },
      {
        query: StatsQuery,
        response: responses({ 200: Stats }, [422, 429]),
        detail: describe(
          { public: true },
          {
            tags,
            summary: 'Public market statistics: asking prices by GPU model and marketplace',
            description:
              "No credentials. From each platform's public offer listing as the last marketplaces.sync run read it (every 5 minutes): per normalised GPU model, the rentable offers with a price and their GPUs, and min, p25, median, p75, max in USD per GPU-hour (marketplace_b's per-day coin prices converted with its published rates). `taken_at` says when each marketplace was read. Cached for 60 s; 60 requests a minute per address (429 with Retry-After).",
          },
        ),
      },
    )
    .get('/marketplaces/supply', ({ verb }) => marketSupply(verb.deps, verb.actor), {
      response: responses({ 200: Supply }, [401, 403]),
      detail: describe(READ, {
        tags,
        summary: 'How much of each GPU model you offer against the market',
        description:
          'Your linked machines that are listed, counted per marketplace and model, beside the market in the latest snapshot (which includes yours).',
      }),
    })
    .get('/marketplaces/prices', ({ verb }) => marketPrices(verb.deps, verb.actor), {
      response: responses({ 200: Prices }, [401, 403]),
      detail: describe(READ, {
        tags,
        summary: 'Your offers beside the market for their model',
        description: 'One item per listed link; a token sees the servers of its allowlist.',
      }),
    })
    .get('/marketplaces/prices/movement', ({ query }) => priceMovement(deps, query), {
      query: MovementQuery,
      response: responses({ 200: Movement }, [401, 403, 422]),
      detail: describe(
        { ...READ, reach: 'none' },
        {
          tags,
          summary: 'How asking prices of each model moved',
          description:
            "Per marketplace and model in the latest snapshot: the snapshot `days` ago (the latest at or before then; null when none is that old) and now, with the median's change in USD per GPU-hour and percent. Snapshots are kept 90 days.",
        },
      ),
    })
    .get('/marketplaces/prices/standing', ({ verb }) => priceStanding(verb.deps, verb.actor), {
      response: responses({ 200: Standing }, [401, 403]),
      detail: describe(READ, {
        tags,
        summary: 'Where each of your offers stands in its market',
        description:
          'Per listed link: how many market offers of its model are cheaper, equal and dearer, and the mid-rank percentile 100 × (cheaper + equal ÷ 2) ÷ offers (0 cheapest, 100 dearest).',
      }),
    })
}
