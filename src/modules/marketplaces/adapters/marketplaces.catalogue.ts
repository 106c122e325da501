import type { Config } from '../../../config'
import type { MarketplaceId } from '../../../platform/marketplace-id'
import { createMarketplaceAAdapter } from './marketplace-a/marketplace-a.adapter'
import { createMarketplaceBAdapter } from './marketplace-b/marketplace-b.adapter'
import type { AdapterOptions, MarketplaceAdapter } from './marketplaces.adapter'

/** A deal currency in the platform's own spelling, with the label the cost basis shows. */
export type DealCurrency = { currency: string; label: string }

/** What gpuhq knows of one platform, besides the code that speaks to it. */
export type MarketplaceEntry = {
  /** The platform's name as the documents and the console show it. */
  name: string
  /** Every currency its deals are priced in (the cost basis offers a commission for each). */
  currencies: readonly DealCurrency[]
  /**
   * The currency an earnings row without a per-currency breakdown is taken in; '' when the
   * platform deals in several and the marketplace-wide rate applies (docs/earnings.md "Reconciliation").
   */
  defaultCurrency: string
  /** Its origin in the configuration (MARKETPLACE_<X>_API_URL). */
  baseUrl: (config: Config) => string
  /** Its adapter (adapters/<platform>/). */
  create: (options: AdapterOptions) => MarketplaceAdapter
}

/**
 * The one catalogue of marketplaces: every per-platform fact other modules need, keyed by the ids
 * of src/platform/marketplace-id.ts. A new id fails `tsc` here until its entry exists
 * (docs/development.md "Adding a marketplace").
 */
export const CATALOGUE: Record<MarketplaceId, MarketplaceEntry> = {
  marketplace_a: {
    name: 'Vast.ai',
    currencies: [{ currency: 'USD', label: 'US dollar' }],
    defaultCurrency: 'USD',
    baseUrl: (config) => config.marketplaceAApiUrl,
    create: createMarketplaceAAdapter,
  },
  marketplace_b: {
    name: 'Clore.ai',
    currencies: [
      { currency: 'bitcoin', label: 'Bitcoin (BTC)' },
      { currency: 'CLORE-Blockchain', label: 'CLORE' },
      { currency: 'USD-Blockchain', label: 'USD stablecoin' },
    ],
    defaultCurrency: '',
    baseUrl: (config) => config.marketplaceBApiUrl,
    create: createMarketplaceBAdapter,
  },
}

/** The deal currencies of each marketplace, in its own spelling, with a label (costs' cost basis). */
export const dealCurrencies = (marketplace: MarketplaceId): readonly DealCurrency[] => CATALOGUE[marketplace].currencies

/** The currency an earnings row without a per-currency breakdown is taken in ('' : the marketplace-wide rate). */
export const defaultDealCurrency = (marketplace: MarketplaceId): string => CATALOGUE[marketplace].defaultCurrency
