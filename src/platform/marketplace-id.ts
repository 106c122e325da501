import type { Static } from '@sinclair/typebox'
import { Literals } from './schemas'

/**
 * The marketplaces gpuhq speaks to, by their wire names: the one list every module (and its
 * OpenAPI schemas) names them from. Only the ids live here, so modules below marketplaces in the
 * dependency order (fleet, telemetry, audit) may import them without a cycle; what each platform
 * is (display name, deal currencies, its adapter) is the marketplaces module's catalogue
 * (src/modules/marketplaces/adapters/marketplaces.catalogue.ts, docs/development.md "Adding a marketplace").
 */
export const MARKETPLACES = ['marketplace_a', 'marketplace_b'] as const

/** A marketplace's id on the wire: one of MARKETPLACES (an enum of literals in the OpenAPI document). */
export const MarketplaceId = Literals(MARKETPLACES)
export type MarketplaceId = Static<typeof MarketplaceId>

/** The same schema with its own description (a field that says what the marketplace is for). */
export const describedMarketplaceId = (description: string) => Literals(MARKETPLACES, { description })
