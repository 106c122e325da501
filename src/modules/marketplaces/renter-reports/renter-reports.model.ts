import { Type } from '@sinclair/typebox'
import { Nullable, PageOf, Timestamp, Uuid } from '../../../platform/schemas'
import { MarketplaceId } from '../../../platform/marketplace-id'

/** GET /servers/{id}/renter-reports (docs/marketplaces.md "Renter reports"). */
const RenterReport = Type.Object({
  id: Uuid(),
  server_id: Uuid({ description: 'The server the machine was linked to when gpuhq first read the report' }),
  marketplace: MarketplaceId,
  external_machine_id: Type.String({ maxLength: 128, description: "The platform's id of the machine the renter reported" }),
  problem: Nullable(
    Type.String({ maxLength: 256, description: 'The category the renter picked, as the platform sends it (e.g. "Machine Performance Is Less Than Expected")' }),
  ),
  message: Nullable(Type.String({ maxLength: 2000, description: "The renter's own words" })),
  reported_at: Nullable(Timestamp({ description: "When the renter reported it (the platform's created_at); null when the platform did not say" })),
  seen_at: Timestamp({ description: 'When the marketplaces.sync job first read it' }),
  alerted: Type.Boolean({
    description:
      'Whether it opened an alert incident (kind renter_report) and an `error` notification; false for a report older than the link, kept as history',
  }),
})

export const RenterReportPage = PageOf(RenterReport, { maxItems: 200 })
