import { AsyncLocalStorage } from 'node:async_hooks'
import { perDeps, type Deps } from '../../../platform/context'
import { MARKETPLACES } from '../../../platform/marketplace-id'
import type { MarketplaceAdapter, MarketplaceCall, MarketplaceId } from './marketplaces.adapter'
import { CATALOGUE } from './marketplaces.catalogue'

/**
 * This process's adapters (one pacer per platform, shared by every tenant's key) and the collector
 * that ties the calls an adapter makes to the tenant and actor that asked for them: a service runs
 * `callsOf(fn)` and writes what came back to the operations log.
 */
const collector = new AsyncLocalStorage<MarketplaceCall[]>()

const adapters = perDeps((deps: Deps): Record<MarketplaceId, MarketplaceAdapter> => {
  const common = {
    nowUs: () => deps.clock.nowUs(),
    onCall: (call: MarketplaceCall) => collector.getStore()?.push(call),
    beforeCall: () => deps.durable.barrier(),
    paceScale: deps.config.marketplacePacePercent / 100,
  }
  return Object.fromEntries(MARKETPLACES.map((m) => [m, CATALOGUE[m].create({ ...common, baseUrl: CATALOGUE[m].baseUrl(deps.config) })])) as Record<
    MarketplaceId,
    MarketplaceAdapter
  >
})

export function adapterFor(deps: Deps, marketplace: MarketplaceId): MarketplaceAdapter {
  return adapters(deps)[marketplace]
}

/** Runs `fn` and answers what it returned (or threw) with every platform call it made meanwhile. */
export async function callsOf<T>(fn: () => Promise<T>): Promise<{ result?: T; error?: unknown; calls: MarketplaceCall[] }> {
  const calls: MarketplaceCall[] = []
  try {
    return { result: await collector.run(calls, fn), calls }
  } catch (error) {
    return { error, calls }
  }
}
