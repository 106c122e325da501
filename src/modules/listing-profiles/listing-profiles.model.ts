import { Type } from '@sinclair/typebox'
import { DisplayText, Literals, Money, Nullable, Timestamp, Uuid } from '../../platform/schemas'
import { IdleJobBody, MarketplaceId, OfferBody, RollingEndDateBody } from '../marketplaces'

/** A group's listing profile on one marketplace (docs/marketplaces.md "Listing profiles"). */

const EndDateDays = RollingEndDateBody.properties.days

const Settings = {
  offer: Type.Optional(
    Nullable(OfferBody, {
      description:
        "The offer published on each member's link, as PUT /marketplaces/links/{server_id}/{marketplace}/offer takes it: price, `min_bid_hour` (min bid), `min_gpu_count` (min GPU chunk) on marketplace_a; `coin_prices`, `max_rental_hours` on marketplace_b. Null: leave each link's offer as it is (e.g. when a pricing-strategy policy targets the group)",
    }),
  ),
  end_date_days: Type.Optional(Nullable(EndDateDays, { description: 'marketplace_a: the rolling end date each link keeps; null leaves it as it is' })),
  idle_job: Type.Optional(
    Nullable(IdleJobBody, { description: "marketplace_a: the idle job (Vast's default job) set on each machine; null leaves it as it is" }),
  ),
  keep_on: Type.Optional(
    Nullable(
      Type.Boolean({
        description: 'true: keep each member on this marketplace (keep-on re-publishes an outside unlist); false: stop; null leaves it as it is',
      }),
    ),
  ),
}

export const ProfileCreate = Type.Object(
  {
    name: DisplayText({ minLength: 1, maxLength: 128 }),
    group_id: Uuid({ description: 'One of your groups; at most one profile per group and marketplace (409)' }),
    marketplace: MarketplaceId,
    ...Settings,
  },
  { additionalProperties: false },
)

export const ProfilePatch = Type.Object(
  { name: Type.Optional(DisplayText({ minLength: 1, maxLength: 128 })), ...Settings },
  { additionalProperties: false, minProperties: 1 },
)

const ProfileIdleJob = Type.Object({
  image: Type.String({ maxLength: 512 }),
  args: Type.String({ maxLength: 2048 }),
  price_gpu_hour: Money(),
  price_inet_up_tb: Nullable(Money()),
  price_inet_down_tb: Nullable(Money()),
})

export const Profile = Type.Object({
  id: Uuid(),
  name: Type.String({ maxLength: 128 }),
  group_id: Uuid(),
  marketplace: MarketplaceId,
  offer: Nullable(Type.Record(Type.String(), Type.Unknown()), { description: 'As given (the offer body); null: not set by the profile' }),
  end_date_days: Nullable(Type.Integer()),
  idle_job: Nullable(ProfileIdleJob),
  keep_on: Nullable(Type.Boolean()),
  version: Type.Integer(),
  created_at: Timestamp(),
  updated_at: Timestamp(),
  applied_at: Nullable(Timestamp({ description: 'When the owner last applied the profile to its group' })),
  members: Type.Array(
    Type.Object({
      server_id: Uuid(),
      server_name: Type.String({ maxLength: 256 }),
      outcome: Literals(['done', 'refused', 'skipped', 'pending'] as const, {
        description:
          'What the last application did to the server; pending: it has not had the profile yet (the listing-profiles.apply job applies it once the profile was applied)',
      }),
      reason: Nullable(Type.String({ maxLength: 1024 })),
      applied_version: Nullable(Type.Integer({ description: "The profile's version that was applied; behind `version` after a change not applied yet" })),
      applied_at: Nullable(Timestamp()),
    }),
    { description: 'The managed servers of the group now, by name' },
  ),
})

export const ProfileList = Type.Object({ items: Type.Array(Profile, { maxItems: 200 }) })

export const ApplyResult = Type.Object({
  server_id: Uuid(),
  server_name: Type.String({ maxLength: 256 }),
  outcome: Literals(['done', 'refused', 'skipped'] as const, {
    description:
      "done: every setting of the profile is on the link; refused: a step was refused (the reason; later steps not taken); skipped: the server has no link on the profile's marketplace",
  }),
  steps: Type.Array(Literals(['offer', 'end_date', 'idle_job', 'keep_on'] as const), { description: 'The steps taken, in order', maxItems: 4 }),
  reason: Nullable(Type.String({ maxLength: 1024, description: 'Why it was refused or skipped' })),
})

export const ApplyAnswer = Type.Object({ profile: Profile, results: Type.Array(ApplyResult) })
