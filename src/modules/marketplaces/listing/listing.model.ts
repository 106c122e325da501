import { Type } from '@sinclair/typebox'
import { Money, Nullable } from '../../../platform/schemas'

/** PUT /marketplaces/links/{server_id}/{marketplace}/rolling-end-date (docs/marketplaces.md "Rolling end dates"). */
export const RollingEndDateBody = Type.Object(
  {
    days: Type.Integer({
      minimum: 8,
      maximum: 365,
      description:
        'Keep the offer\'s end date at least this many days ahead. At least 8, so the extension always comes before Vast\'s seven-day "listing ending soon" warning; each extension reaches a week past the horizon, to a whole UTC day.',
    }),
  },
  { additionalProperties: false },
)

/** PUT /marketplaces/links/{server_id}/{marketplace}/idle-job (docs/marketplaces.md "Idle jobs"). */
export const IdleJobBody = Type.Object(
  {
    image: Type.String({
      minLength: 1,
      maxLength: 512,
      pattern: '^\\S+$',
      description: 'The container image (no spaces), e.g. "nvidia/cuda:12.4.1-base-ubuntu22.04"',
    }),
    args: Type.Optional(Type.String({ maxLength: 2048, description: 'Arguments passed to the image; empty when omitted' })),
    price_gpu_hour: Money({ description: 'USD per GPU-hour the idle job pays; above 0 (422 too_small)' }),
    price_inet_up_tb: Type.Optional(Nullable(Money({ description: 'USD per TB uploaded (sent to Vast per GB); at least 0; not sent when omitted' }))),
    price_inet_down_tb: Type.Optional(Nullable(Money({ description: 'USD per TB downloaded (sent to Vast per GB); at least 0; not sent when omitted' }))),
  },
  { additionalProperties: false },
)
