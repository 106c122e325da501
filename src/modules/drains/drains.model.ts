import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { MarketplaceId } from '../../platform/marketplace-id'
import { DisplayText, Literals, Nullable, PageOf, PageQuery, Timestamp, Uuid } from '../../platform/schemas'

/** The drain's wire shapes (docs/marketplaces.md "Drain"). */

/** The states as db/schema/drains.ts stores them. */
const DRAIN_STATES = ['draining', 'awaiting_rental_end', 'working', 'relisting', 'done', 'cancelled', 'failed'] as const

const CATEGORIES = ['power', 'internet', 'disk', 'gpu', 'software', 'other'] as const

const WindowInput = Type.Object(
  {
    starts_at: Type.Optional(
      Timestamp({
        description:
          'When the work starts, as renters are told: after the latest renter’s end date the platform shows, since no rental is cut; in the future and at most a year ahead. Default: one hour from now',
      }),
    ),
    hours: Type.Optional(Type.Integer({ minimum: 1, maximum: 720, description: 'How long the window lasts, whole hours (default 2)' })),
    category: Type.Optional(Literals(CATEGORIES, { description: 'What the work is, as Vast names it (default software)' })),
  },
  { additionalProperties: false },
)

const WorkInput = Type.Object(
  {
    type: Type.String({ minLength: 1, maxLength: 64, description: 'A command type of the catalogue (POST /commands), e.g. agent.update' }),
    params: Type.Record(Type.String(), Type.Unknown(), { description: "The command's params, as POST /commands takes them" }),
  },
  { additionalProperties: false },
)

export const DrainCreate = Type.Object(
  {
    reason: Type.Optional(
      Nullable(DisplayText({ maxLength: 256 }), { description: 'What the work is, for the event history and the window announced to renters' }),
    ),
    window: Type.Optional(WindowInput),
    commands: Type.Optional(
      Type.Array(WorkInput, {
        maxItems: 10,
        description:
          'The work: commands issued with `requires: after_rental` once the offers are off. Commands of the server already waiting for the rental to end (an agent update offered) are waited for too',
      }),
    ),
  },
  { additionalProperties: false },
)

const DrainLinkView = Type.Object({
  marketplace: MarketplaceId,
  offer: Nullable(Type.Record(Type.String(), Type.Unknown()), {
    description: 'The kept offer, in PUT …/offer names: published again at the end. Null: the link had no offer kept, nothing is relisted',
  }),
  listed: Nullable(Type.Boolean(), { description: 'Whether the platform showed the machine listed when the drain started (null: unknown)' }),
  withdrawn: Type.Boolean({ description: 'The drain took the offer off the market' }),
  window_supported: Type.Boolean({
    description: 'The platform has a maintenance API (marketplace_a: dnotify). marketplace_b has none: the withdrawal alone keeps renters off',
  }),
  window_announced: Type.Boolean({ description: 'The drain announced its window there (and cancels it at the end)' }),
  relisted: Type.Boolean({ description: 'The kept offer was published again' }),
  note: Nullable(Type.String({ maxLength: 1024 }), { description: 'What happened on this platform that the flags do not say (a refusal, no maintenance API)' }),
})

const DrainCommand = Type.Object({
  command_id: Uuid(),
  type: Type.String({ maxLength: 64 }),
  delivery_status: Type.String({ maxLength: 32 }),
  execution_status: Type.String({ maxLength: 32 }),
  error: Nullable(Type.String({ maxLength: 1024 })),
})

export const Drain = Type.Object({
  id: Uuid(),
  server_id: Uuid(),
  group_id: Nullable(Uuid(), { description: 'The group the drain was started for (one drain per server of it)' }),
  state: Literals(DRAIN_STATES, {
    description:
      'draining: taking the offers off and announcing the window; awaiting_rental_end: waits for every running rental to end (none is cut); working: the commands run; relisting: the kept offers go back and the window is cancelled; done; cancelled (the listing restored); failed (see failure)',
  }),
  reason: Nullable(Type.String({ maxLength: 256 })),
  window: Type.Object({ starts_at: Timestamp(), hours: Type.Integer(), category: Type.String({ maxLength: 32 }) }),
  links: Type.Array(DrainLinkView, { maxItems: 16 }),
  commands: Type.Array(DrainCommand, { maxItems: 210, description: 'The work the drain waits for, in the order issued' }),
  failure: Nullable(Type.String({ maxLength: 2048 }), { description: 'Why it failed, and what is left as it is (a withdrawn offer, an announced window)' }),
  failed_step: Nullable(Type.String({ maxLength: 32 }), { description: 'The state it failed in' }),
  created_at: Timestamp(),
  updated_at: Timestamp(),
  finished_at: Nullable(Timestamp()),
  version: Type.Integer({ minimum: 1 }),
})

export const DrainList = PageOf(Drain, { maxItems: 200 })

export const DrainListQuery = t.Object({
  ...PageQuery,
  server_id: t.Optional(t.String({ format: 'uuid' })),
  state: t.Optional(t.Union(DRAIN_STATES.map((s) => t.Literal(s)))),
  live: t.Optional(t.Boolean({ description: 'true: only drains not finished (one per server at most)' })),
})

export const GroupDrainAnswer = Type.Object({
  items: Type.Array(Drain, { maxItems: 512, description: 'One drain per server of the group, as each stands after its first step' }),
  skipped: Type.Array(Type.Object({ server_id: Uuid(), reason: Type.String({ maxLength: 256 }) }), {
    maxItems: 512,
    description: 'Servers of the group not drained (one already is, or it is decommissioned)',
  }),
})
